"""lm_checkpoint: language-model training as a cacheable build action; replacement_checkpoint: the same
trainer fitting a replacement layer to an activation cache.

The action's inputs are the trainer binary, the merged config, the token shards and
@build_identity//:identity.txt (LibTorch, BLAS, compiler: what Bazel cannot see outside the workspace), so
Bazel reruns it exactly when one of them changes, and a remote cache shares the checkpoint only between
machines whose libraries would produce the same bytes. Training uses
`threads` cores: Bazel 4 cannot reserve them for an action, so the trainer takes one core lock per thread
(base/common/cpu_slots.h) and the cpu:N requirement is declared for executors that honour it. A config's
runtime.threads wins over `threads` and sets the locks (the cpu scale's trainings run on one thread). A killed
training resumes: it checkpoints every RESUME_FLAGS seconds into the user's resume store (outside the sandbox;
tools/bazel makes it writable) under a key of its inputs, and a rerun continues from there to the same bytes.
"""

load("@build_identity//:settings.bzl", "TORCH_ENV")
load("//base/common:cpu_slots.bzl", "CPU_SLOT_FLAG")
load("//datasets/text:text_data.bzl", "TokenShardsInfo")
load(":providers.bzl", "ActivationCacheInfo", "CheckpointInfo", "CheckpointSnapshotsInfo", "split_manifest")

# Constant, so every machine's action keys agree; "~/" is each user's own home (pipelines/train/resume_store.h).
# At most 5 minutes of training are lost to a kill; a checkpoint costs about a second at cpu scale.
RESUME_FLAGS = [
    "--resume_dir=~/.cache/sparse_layers/resume",
    "--checkpoint_every_seconds=300",
]

def _run_trainer(ctx, inputs, leading_args, trailing_args, mnemonic, progress_message, snapshots = {}):
    """One trainer action (`_trainer`: train for an LM, fit for a replacement layer): <name>.pt, <name>.csv
    and <name>.summary.textproto, the output flags between
    the mode's leading and trailing arguments; `snapshots`, percent of the steps -> File, the models kept along
    the way."""
    checkpoint = ctx.actions.declare_file(ctx.label.name + ".pt")
    log = ctx.actions.declare_file(ctx.label.name + ".csv")
    summary = ctx.actions.declare_file(ctx.label.name + ".summary.textproto")
    outputs = [checkpoint, log, summary] + snapshots.values()
    if snapshots:
        trailing_args = trailing_args + ["--snapshots=" + ",".join([
            ("0.0%d:%s" if percent < 10 else "0.%d:%s") % (percent, f.path)
            for percent, f in sorted(snapshots.items())
        ])]
    ctx.actions.run(
        executable = ctx.executable._trainer,
        env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
        arguments = leading_args + [
            "--out=" + checkpoint.path,
            "--log_csv=" + log.path,
            "--summary=" + summary.path,
            "--threads=%d" % ctx.attr.threads,
            CPU_SLOT_FLAG,
            "--build_identity=" + ctx.file._build_identity.path,
        ] + RESUME_FLAGS + trailing_args,
        inputs = inputs + [ctx.file._build_identity],
        outputs = outputs,
        mnemonic = mnemonic,
        progress_message = progress_message,
        execution_requirements = {"cpu:%d" % ctx.attr.threads: ""},
    )
    published = [checkpoint, log, summary]
    return [
        DefaultInfo(files = depset(published), runfiles = ctx.runfiles(files = published)),
        CheckpointInfo(checkpoint = checkpoint, log = log, summary = summary),
        CheckpointSnapshotsInfo(snapshots = snapshots, log = log, summary = summary),
    ]

def _lm_checkpoint_impl(ctx):
    shards = {d.basename: d for d in ctx.files.data}
    for split in ["train", "validation"]:
        if split not in shards:
            fail("%s: data %s has no %s shard directory" % (ctx.label, ctx.attr.data.label, split))

    parent = [ctx.attr.init_from[CheckpointInfo].checkpoint] if ctx.attr.init_from else []
    for percent in ctx.attr.snapshot_percents:
        if percent <= 0 or percent >= 100:
            fail("%s: snapshot_percents must be in (0, 100), got %d" % (ctx.label, percent))
    snapshots = {
        percent: ctx.actions.declare_file("%s.at%dpct.pt" % (ctx.label.name, percent))
        for percent in ctx.attr.snapshot_percents
    }
    providers = _run_trainer(
        ctx,
        inputs = [ctx.file.config, shards["train"], shards["validation"]] + parent,
        leading_args = [
            "--config=" + ctx.file.config.path,
            "--train_data=" + split_manifest(shards["train"], "train", "tokens"),
            "--validation_data=" + split_manifest(shards["validation"], "validation", "tokens"),
        ],
        trailing_args = ["--init_from=" + f.path for f in parent[:1]],
        mnemonic = "TrainLM",
        progress_message = "Training %s" % ctx.label,
        snapshots = snapshots,
    )
    return providers + [OutputGroupInfo(
        sample = depset(_decode_sample(ctx, providers[1].summary)),
        snapshots = depset(snapshots.values()),
    )]

def _decode_sample(ctx, summary):
    """<name>.sample.txt, the training sample as text, built only on request (`--output_groups=sample`): the
    trainer records token ids, so no tokenizer (code or file) is among a training action's inputs."""

    # Token shards name their own tokenizer; other data (chess characters) passes it explicitly.
    if ctx.attr.tokenizer:
        tokenizer = [f for f in ctx.files.tokenizer if f.extension in ["model", "chars"]]
        tokenizer_files = tokenizer
    elif TokenShardsInfo in ctx.attr.data:
        tokenizer = [ctx.attr.data[TokenShardsInfo].tokenizer]
        tokenizer_files = ctx.attr.data[TokenShardsInfo].tokenizer_files
    else:
        return []
    sample = ctx.actions.declare_file(ctx.label.name + ".sample.txt")
    ctx.actions.run(
        executable = ctx.executable._decode_sample,
        env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
        arguments = [
            "--summary=" + summary.path,
            "--tokenizer=" + tokenizer[0].path,
            "--out=" + sample.path,
        ],
        inputs = [summary] + tokenizer_files,
        outputs = [sample],
        mnemonic = "DecodeSample",
        progress_message = "Decoding the sample of %s" % ctx.label,
    )
    return [sample]

lm_checkpoint = rule(
    implementation = _lm_checkpoint_impl,
    doc = "<name>.pt (checkpoint), <name>.csv (train/validation loss log), <name>.summary.textproto; " +
          "<name>.sample.txt on request (`--output_groups=sample`).",
    attrs = {
        "config": attr.label(mandatory = True, allow_single_file = [".textproto"]),
        "data": attr.label(default = "//datasets/text:shards"),
        "tokenizer": attr.label(
            allow_files = True,
            doc = "Decodes the training sample (output group `sample`); defaults to the tokenizer `data` (a " +
                  "token_shards) was encoded with.",
        ),
        "threads": attr.int(default = 2),
        "init_from": attr.label(
            providers = [CheckpointInfo],
            doc = "A parent lm_checkpoint to copy / upcycle from (config.init).",
        ),
        "snapshot_percents": attr.int_list(
            doc = "Also keep the model after this percent of the budget's steps, as <name>.at<percent>pct.pt " +
                  "(output group `snapshots`; checkpoint_snapshot names one): metrics over training.",
        ),
        "_trainer": attr.label(default = "//pipelines/train:train", executable = True, cfg = "target"),
        "_decode_sample": attr.label(default = "//pipelines/train:decode_sample", executable = True, cfg = "target"),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)

def _replacement_checkpoint_impl(ctx):
    base = ctx.attr.base[CheckpointInfo].checkpoint
    caches = ctx.attr.activations[ActivationCacheInfo].splits
    for split in ["train", "validation"]:
        if split not in caches:
            fail("%s: activations %s has no %s split" % (ctx.label, ctx.attr.activations.label, split))
    return _run_trainer(
        ctx,
        inputs = [ctx.file.config, base, caches["train"], caches["validation"]],
        leading_args = [
            "--config=" + ctx.file.config.path,
            "--init_from=" + base.path,
            "--train_activations=" + split_manifest(caches["train"], "train", "activations"),
            "--validation_activations=" + split_manifest(caches["validation"], "validation", "activations"),
        ],
        trailing_args = [],
        mnemonic = "FitReplacement",
        progress_message = "Fitting %s" % ctx.label,
    )

replacement_checkpoint = rule(
    implementation = _replacement_checkpoint_impl,
    doc = "The fit binary: model.replacement fitted to an activation_cache of `base`; the " +
          "checkpoint is `base` with the layer spliced in. <name>.pt, <name>.csv, <name>.summary.textproto.",
    attrs = {
        "config": attr.label(mandatory = True, allow_single_file = [".textproto"]),
        "base": attr.label(
            mandatory = True,
            providers = [CheckpointInfo],
            doc = "The lm_checkpoint the cache was made from.",
        ),
        "activations": attr.label(
            mandatory = True,
            providers = [ActivationCacheInfo],
            doc = "An activation_cache with train and validation splits.",
        ),
        "threads": attr.int(default = 2),
        "_trainer": attr.label(default = "//pipelines/train:fit", executable = True, cfg = "target"),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)

def _checkpoint_snapshot_impl(ctx):
    snapshots = ctx.attr.run[CheckpointSnapshotsInfo]
    if ctx.attr.percent not in snapshots.snapshots:
        fail("%s: %s keeps no snapshot at %d%% (its snapshot_percents: %s)" % (
            ctx.label,
            ctx.attr.run.label,
            ctx.attr.percent,
            sorted(snapshots.snapshots.keys()),
        ))
    snapshot = snapshots.snapshots[ctx.attr.percent]
    return [
        DefaultInfo(files = depset([snapshot])),
        CheckpointInfo(checkpoint = snapshot, log = snapshots.log, summary = snapshots.summary),
    ]

checkpoint_snapshot = rule(
    implementation = _checkpoint_snapshot_impl,
    doc = "One snapshot of an lm_checkpoint (its snapshot_percents) as a checkpoint the analysis tools take; " +
          "log and summary are the whole run's.",
    attrs = {
        "run": attr.label(mandatory = True, providers = [CheckpointSnapshotsInfo]),
        "percent": attr.int(mandatory = True),
    },
)
