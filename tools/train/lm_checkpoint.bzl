"""lm_checkpoint: language-model training as a cacheable build action.

The action's inputs are the trainer binary, the merged config and the token shards, so Bazel reruns
it exactly when one of them changes, and a remote cache shares the checkpoint. Training uses
`threads` cores: Bazel 4 cannot reserve them for an action, so the trainer takes a CPU slot lock
(tools/common/cpu_slots.h) and the cpu:N requirement is declared for executors that honour it.
"""

def _lm_checkpoint_impl(ctx):
    checkpoint = ctx.actions.declare_file(ctx.label.name + ".pt")
    log = ctx.actions.declare_file(ctx.label.name + ".csv")
    summary = ctx.actions.declare_file(ctx.label.name + ".summary.textproto")
    shards = {d.basename: d for d in ctx.files.data}
    for split in ["train", "validation"]:
        if split not in shards:
            fail("%s: data %s has no %s shard directory" % (ctx.label, ctx.attr.data.label, split))
    args = [
        "--config=" + ctx.file.config.path,
        "--train_data=%s/train.tokens.textproto" % shards["train"].path,
        "--validation_data=%s/validation.tokens.textproto" % shards["validation"].path,
        "--out=" + checkpoint.path,
        "--log_csv=" + log.path,
        "--summary=" + summary.path,
        "--threads=%d" % ctx.attr.threads,
        "--cpu_slot_dir=/tmp/sparse_layers_cpu_slots",
    ]
    tokenizer = [f for f in ctx.files.tokenizer if f.extension in ["model", "chars"]]
    if tokenizer:
        args.append("--tokenizer=" + tokenizer[0].path)
    parent = [f for f in ctx.files.init_from if f.extension == "pt"]
    if parent:
        args.append("--init_from=" + parent[0].path)
    ctx.actions.run(
        executable = ctx.executable._train,
        arguments = args,
        inputs = [ctx.file.config, shards["train"], shards["validation"]] + tokenizer + parent,
        outputs = [checkpoint, log, summary],
        mnemonic = "TrainLM",
        progress_message = "Training %s" % ctx.label,
        execution_requirements = {"cpu:%d" % ctx.attr.threads: ""},
    )
    outputs = [checkpoint, log, summary]
    return [DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs))]

lm_checkpoint = rule(
    implementation = _lm_checkpoint_impl,
    doc = "<name>.pt (checkpoint), <name>.csv (train/validation loss log), <name>.summary.textproto.",
    attrs = {
        "config": attr.label(mandatory = True, allow_single_file = [".textproto"]),
        "data": attr.label(default = "//datasets/text:shards"),
        "tokenizer": attr.label(default = "//datasets/text:bpe", allow_files = True),
        "threads": attr.int(default = 2),
        "init_from": attr.label(doc = "A parent lm_checkpoint to copy / upcycle from (config.init)."),
        "_train": attr.label(default = "//tools/train:train", executable = True, cfg = "exec"),
    },
)
