"""summary_table: trainer summaries and merged configs as one tidy CSV (//pipelines/train:summary_table), a table an
experiment's report declares; training_curves: the runs' loss over training (their logs).

    summary_table(
        name = "runs",                       # runs.csv
        runs = [":dense_s1", ":dense_s1_config", ...],   # checkpoints (their summaries) and merged configs
        fields = ["validation_loss", "steps"],
        config_fields = ["seed=runtime.seed"],
    )
"""

load(":providers.bzl", "CheckpointInfo")

def _summary_table_impl(ctx):
    files = []
    for run in ctx.attr.runs:
        if CheckpointInfo in run:
            files.append(run[CheckpointInfo].summary)
        else:
            files.extend(run.files.to_list())
    args = ctx.actions.args()
    args.add("--out=" + ctx.outputs.out.path)
    if ctx.attr.fields:
        args.add("--fields=" + ",".join(ctx.attr.fields))
    if ctx.attr.config_fields:
        args.add("--config_fields=" + ",".join(ctx.attr.config_fields))
    if ctx.attr.constant_columns:
        args.add("--constant_columns=" + ",".join(ctx.attr.constant_columns))
    if ctx.attr.name_from_path:
        args.add("--name_from_path")
    args.add_all(files)
    ctx.actions.run(
        executable = ctx.executable._summary_table,
        arguments = [args],
        inputs = files,
        outputs = [ctx.outputs.out],
        mnemonic = "SummaryTable",
        progress_message = "Tabulating the runs of %s" % ctx.label,
    )

_summary_table = rule(
    implementation = _summary_table_impl,
    attrs = {
        "runs": attr.label_list(mandatory = True, allow_files = True, doc = "Checkpoints and merged configs, in row order."),
        "fields": attr.string_list(doc = "TrainingSummary fields, each field or column=field."),
        "config_fields": attr.string_list(doc = "ExperimentConfig dotted paths, each path or column=path."),
        "constant_columns": attr.string_list(doc = "Columns of one value for every row, each column=value."),
        "name_from_path": attr.bool(doc = "Name each run by its file instead of the name inside it."),
        "out": attr.output(mandatory = True),
        "_summary_table": attr.label(default = "//pipelines/train:summary_table", executable = True, cfg = "target"),
    },
)

def summary_table(name, runs, fields = [], config_fields = [], constant_columns = [], name_from_path = False, **kwargs):
    """<name>.csv: one row per run."""
    _summary_table(
        name = name,
        runs = runs,
        fields = fields,
        config_fields = config_fields,
        constant_columns = constant_columns,
        name_from_path = name_from_path,
        out = name + ".csv",
        **kwargs
    )

def _training_curves_impl(ctx):
    logs = [run[CheckpointInfo].log for run in ctx.attr.runs]
    args = ctx.actions.args()
    args.add("--out=" + ctx.outputs.out.path)
    args.add("--points=%d" % ctx.attr.points)
    args.add_all(logs)
    ctx.actions.run(
        executable = ctx.executable._training_curves,
        arguments = [args],
        inputs = logs,
        outputs = [ctx.outputs.out],
        mnemonic = "TrainingCurves",
        progress_message = "Tabulating the training curves of %s" % ctx.label,
    )

_training_curves = rule(
    implementation = _training_curves_impl,
    attrs = {
        "runs": attr.label_list(mandatory = True, providers = [CheckpointInfo], doc = "Seeded checkpoints or fits, in row order."),
        "points": attr.int(default = 10, doc = "Equal bins of steps per run."),
        "out": attr.output(mandatory = True),
        "_training_curves": attr.label(default = "//pipelines/train:training_curves", executable = True, cfg = "target"),
    },
)

def training_curves(name, runs, points = 10, **kwargs):
    """<name>.csv: `points` bins of each run's steps (pipelines/train/training_curves.h): arm,seed,step,tokens,
    train_loss,train_perplexity for language models, arm,seed,step,rows,train_nmse for fits."""
    _training_curves(name = name, runs = runs, points = points, out = name + ".csv", **kwargs)
