"""activation_cache: one block's (FFN input, FFN output) pairs, or with site = "attn" its (attention input,
attention output) pairs in whole windows, of a trained model, per token split, as cached build outputs
(<name>/<split>/<split>.activations.textproto + shards). The checkpoint's digest is in the manifest, and the
checkpoint is an input, so retraining the model re-caches."""

load("@build_identity//:settings.bzl", "TORCH_ENV")
load("//base/common:cpu_slots.bzl", "CPU_SLOT_FLAG")
load("//pipelines/train:providers.bzl", "ActivationCacheInfo", "CheckpointInfo", "split_manifest")

def _activation_cache_impl(ctx):
    checkpoint = ctx.attr.checkpoint[CheckpointInfo].checkpoint
    shards = {d.basename: d for d in ctx.files.data}
    outputs = []
    splits = {}
    for split, rows in ctx.attr.rows.items():
        if split not in shards:
            fail("%s: data %s has no %s split" % (ctx.label, ctx.attr.data.label, split))
        directory = ctx.actions.declare_directory("%s/%s" % (ctx.label.name, split))
        ctx.actions.run(
            executable = ctx.executable._cache_activations,
            env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
            arguments = [
                "--checkpoint=" + checkpoint.path,
                "--tokens=" + split_manifest(shards[split], split, "tokens"),
                "--layer=%d" % ctx.attr.layer,
                "--site=" + ctx.attr.site,
                "--rows=%d" % int(rows),
                "--out_dir=" + directory.path,
                "--threads=2",
                CPU_SLOT_FLAG,
            ] + (["--sequence_length=%d" % ctx.attr.sequence_length] if ctx.attr.sequence_length else []),
            inputs = [checkpoint, shards[split]],
            outputs = [directory],
            mnemonic = "CacheActivations",
            progress_message = "Caching block %d %s activations of %s (%s)" % (ctx.attr.layer, ctx.attr.site, ctx.attr.checkpoint.label, split),
            execution_requirements = {"cpu:2": ""},
        )
        outputs.append(directory)
        splits[split] = directory
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        ActivationCacheInfo(splits = splits, layer = ctx.attr.layer, site = ctx.attr.site, checkpoint = checkpoint),
    ]

activation_cache = rule(
    implementation = _activation_cache_impl,
    doc = "FFN (or attention) input/output pairs of block `layer`: rows per split, e.g. {\"train\": 262144, \"test\": 32768}.",
    attrs = {
        "checkpoint": attr.label(mandatory = True, providers = [CheckpointInfo], doc = "An lm_checkpoint."),
        "data": attr.label(default = "//datasets/text:shards"),
        "layer": attr.int(mandatory = True),
        "site": attr.string(default = "ffn", values = ["ffn", "attn"], doc = "ffn or attn (whole windows)."),
        "rows": attr.string_dict(mandatory = True),
        "sequence_length": attr.int(default = 0, doc = "Window length (0: the model's context)."),
        "_cache_activations": attr.label(
            default = "//pipelines/activations:cache_activations",
            executable = True,
            cfg = "target",
        ),
    },
)
