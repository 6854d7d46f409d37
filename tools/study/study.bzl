"""study: an experiment declared as data. Its arms (language models trained from config overlays), its seeds (the
seed plan's, by the experiment's name), the evaluations it runs on each seed's arms (a tool and its arguments per
scale), and the tidy tables the claims engine reads; the macro builds the seeded nodes, the runs table and the
report (experiment_report: section, `bazel run` printer, generic smoke check).

    load("//tools/study:study.bzl", "arm", "evaluation", "study")

    study(
        name = "factual_recall_patching",            # seeds: SEED_PLAN["factual_recall_patching"]
        data = ":shards",                            # what every arm trains on (lm_checkpoint's data)
        arms = {
            "fact_lm_sgatlin": arm(config = {"name": "{run}"}),
            "fact_lm_dense": arm(overlays = ["dense.textproto"], config = {"name": "{run}"}),
        },
        evaluations = {
            "patching": evaluation(
                tool = "//analysis/patching:factual_recall",
                tables = ["recall", "patching"],     # patching_s<seed>/<table>.csv (--out_dir)
                models = {"fact_lm_sgatlin": "--model=", "fact_lm_dense": "--dense_model="},
                message = "Patching the fact LMs, seed %d",
            ),
        },
        runs_table = runs_table(fields = ["parameters"], config_fields = ["seed=runtime.seed"]),
        tables = {"models.csv": [":models.csv"], "recall.csv": "patching/recall"},
    )

Targets, per seed s of any scale (a scale builds its own seeds; the one tag rule, seed_tags, keeps other scales'
seeds and arms with `wildcard = False` out of `bazel build //...`):
  <arm>_s<s>_overlay    the arm's generated overlay (`config`, "{run}" replaced by <arm>_s<s>), when given
  <arm>_s<s>_config     base, the scale's file, the arm's overlays, the generated overlay, runtime.seed
  <arm>_s<s>            lm_checkpoint of that config
  <evaluation>_s<s>     tool_run over the seed's arms: <evaluation>_s<s>/<table>.csv, or with `seed_column`
                        also <table>_s<s>.csv with a leading seed column
A report table is a list of labels, or "<evaluation>/<table>": that table of every seed of the active scale.
"""

load("//tools/report:experiment_report.bzl", "experiment_report")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_labels", "seeded_name")
load("//tools/train:lm_checkpoint.bzl", "checkpoint_snapshot")
load("//tools/train:seeded_lm.bzl", "seeded_lm")
load("//tools/train:summary_table.bzl", "summary_table", "training_curves")
load("//tools/train:tool_run.bzl", "tool_run")

def enum_value(name):
    """An enum field's value in `config` (written bare, not quoted)."""
    return struct(enum_value = name)

def _textproto_value(value, run):
    if type(value) == "string":
        return "\"%s\"" % value.replace("{run}", run).replace("\\", "\\\\").replace("\"", "\\\"")
    if type(value) == "bool":
        return "true" if value else "false"
    if type(value) in ["int", "float"]:
        return str(value)
    if type(value) == "struct":
        return value.enum_value
    fail("config value %r: expected a string, number, bool, enum_value() or a dict (a message)" % (value,))

def textproto(fields, run = ""):
    """`fields` as one line of text format: a dict value is a message, a list a repeated field; "{run}" in a string
    is `run`."""

    # Starlark has no recursion: a work list of formatted parts and messages still to expand, front first.
    todo = [fields]
    parts = []
    for _ in range(100000):
        if not todo:
            break
        item = todo.pop(0)
        if type(item) == "string":
            parts.append(item)
            continue
        expanded = []
        for key, value in item.items():
            for element in (value if type(value) == "list" else [value]):
                if type(element) == "dict":
                    expanded += ["%s {" % key, element, "}"]
                else:
                    expanded.append("%s: %s" % (key, _textproto_value(element, run)))
        todo = expanded + todo
    return " ".join(parts)

def _config_overlay_impl(ctx):
    ctx.actions.write(ctx.outputs.out, ctx.attr.content + "\n")
    return [DefaultInfo(files = depset([ctx.outputs.out]), runfiles = ctx.runfiles(files = [ctx.outputs.out]))]

config_overlay = rule(
    implementation = _config_overlay_impl,
    doc = "<out>: a config overlay written from `content` (text format; a select() per scale).",
    attrs = {
        "content": attr.string(mandatory = True),
        "out": attr.output(mandatory = True),
    },
)

def arm(
        overlays = [],
        config = None,
        overlay_cmd = None,
        overlay_tools = [],
        wildcard = True,
        scales = SCALES,
        judged = True,
        init_from = None,
        **lm_kwargs):
    """A trained arm of a study.

    Args:
      overlays: config overlay files added to base and the scale's file, in order.
      config: fields of a generated overlay after them (textproto()), or {scale: fields} when they differ by scale.
      overlay_cmd: instead of `config`, a genrule command writing the overlay ($@), e.g. a tool computing a shape, or
        {scale: command}; "{run}" is the run's name.
      overlay_tools: the tools overlay_cmd runs.
      wildcard: False keeps the arm out of wildcard builds at every seed (a scale's report still pulls it in).
      scales: the scales that train the arm (their runs table and results include it); its claims read NOT TESTABLE
        at the others through the report's arms_not_run.
      judged: False for an arm no claim names (an upcycling parent): never listed as not run.
      init_from: another arm of the study; the run upcycles from it at the same seed.
      **lm_kwargs: the rest goes to lm_checkpoint (data, tokenizer, threads, snapshot_percents, ...).
    """
    if config != None and overlay_cmd != None:
        fail("an arm takes config or overlay_cmd, not both")
    return struct(
        overlays = overlays,
        config = config,
        overlay_cmd = overlay_cmd,
        overlay_tools = overlay_tools,
        wildcard = wildcard,
        scales = scales,
        judged = judged,
        init_from = init_from,
        lm_kwargs = lm_kwargs,
    )

def evaluation(
        tool,
        tables,
        models = {},
        named_models = {},
        out_flags = None,
        seed_column = False,
        message = None,
        **tool_kwargs):
    """A tool run once per seed over that seed's arms.

    Args:
      tool: the analysis binary.
      tables: the CSV tables it writes, <evaluation>_s<seed>/<table>.csv.
      models: arm -> flag prefix given the arm's checkpoint at the seed ("--model=").
      named_models: arm -> model name, given as --models=<name>=<checkpoint>,... (tool_run's named_checkpoints).
      out_flags: table -> flag prefix given its path; None: the tool takes --out_dir= and names the files itself.
      seed_column: also write <table>_s<seed>.csv with a leading seed column (for a tool whose rows carry none).
      message: the progress message, "%d" the seed.
      **tool_kwargs: the rest goes to tool_run (tokens, token_args, tokenizer, file_args, args, ...).
    """
    return struct(
        tool = tool,
        tables = tables,
        models = models,
        named_models = named_models,
        out_flags = out_flags,
        seed_column = seed_column,
        message = message,
        tool_kwargs = tool_kwargs,
    )

def arm_evaluation(
        tool,
        tables,
        out_flags,
        model_flag,
        arms = None,
        name_flag = None,
        first_seed_tables = [],
        snapshot_flag = None,
        controls = {},
        control_flag = None,
        message = None,
        **tool_kwargs):
    """A tool run once per arm and seed: <arm>_s<seed>_<evaluation> writes <arm>_s<seed>.<table>.csv.

    Args:
      tool: the analysis binary.
      tables: the CSV tables it writes.
      out_flags: table -> flag prefix given its path.
      model_flag: flag prefix given the arm's checkpoint ("--checkpoint=").
      arms: the arms it runs on (default every arm).
      name_flag: flag prefix given the arm's name (the rows' name), first of the arguments.
      first_seed_tables: tables written at the first seed of the plan only (e.g. one map per model).
      snapshot_flag: also run on each snapshot of an arm (arm(snapshot_percents = ...)), this flag prefix given the
        percent: <arm>_s<seed>.at<percent>pct.<table>.csv.
      controls: name -> control(): a random initialisation of an arm's config, run like the arms (rows named by the
        control), its config given to control_flag.
      control_flag: flag prefix given a control's merged config ("--config=").
      message: the progress message, "%s" the run.
      **tool_kwargs: the rest goes to tool_run (bsp_games, args, ...).
    """
    return struct(
        tool = tool,
        tables = tables,
        out_flags = out_flags,
        model_flag = model_flag,
        arms = arms,
        name_flag = name_flag,
        first_seed_tables = first_seed_tables,
        snapshot_flag = snapshot_flag,
        controls = controls,
        control_flag = control_flag,
        message = message,
        tool_kwargs = tool_kwargs,
    )

def control(arm, scales = SCALES, wildcard = True):
    """A random initialisation of `arm`'s config at each seed, evaluated beside the trained arms (arm_evaluation's
    controls); `scales` and `wildcard` as arm()'s."""
    return struct(arm = arm, scales = scales, wildcard = wildcard, judged = True)

def table(source, arms = None, snapshots = False, also = []):
    """A report table from an evaluation, "<evaluation>/<table>", at the active scale's seeds: of `arms` only (default
    the evaluation's arms, then its controls), their snapshots' rows before the finished runs' with `snapshots`,
    then the labels `also`."""
    return struct(source = source, arms = arms, snapshots = snapshots, also = also)

def runs_table(fields, config_fields = [], name = "runs", arms = None, name_from_path = False):
    """<name>.csv: one row per trained run of the active scale (summary_table), `arms` (default every arm) seed by
    seed; `name_from_path` names each row by its run (<arm>_s<seed>) instead of the config's name."""
    return struct(name = name, fields = fields, config_fields = config_fields, arms = arms, name_from_path = name_from_path)

def _lm(study_name, seeds, arm_name, spec, seed, base, scales, data):
    run = seeded_name(arm_name, seed)
    overlay_cmd = spec.overlay_cmd
    if type(overlay_cmd) == "dict":
        overlay_cmd = by_scale({s: c.replace("{run}", run) for s, c in overlay_cmd.items()})
    elif overlay_cmd != None:
        overlay_cmd = overlay_cmd.replace("{run}", run)
    generated = []
    if spec.config != None:
        by_scale_fields = spec.config if sorted(spec.config.keys()) == sorted(SCALES) else None
        config_overlay(
            name = run + "_overlay",
            out = run + "_overlay.textproto",
            content = by_scale({s: textproto(f, run) for s, f in by_scale_fields.items()}) if by_scale_fields else textproto(spec.config, run),
            tags = seed_tags(seed, seeds, in_wildcard = spec.wildcard),
        )
        generated = [":%s_overlay" % run]
    kwargs = dict(spec.lm_kwargs)
    if data != None and "data" not in kwargs:
        kwargs["data"] = data
    seeded_lm(
        name = arm_name,
        seed = seed,
        seeds = seeds,
        base = base,
        scales = scales,
        overlays = spec.overlays + generated,
        overlay_cmd = overlay_cmd,
        overlay_tools = spec.overlay_tools,
        in_wildcard = spec.wildcard,
        init_from = spec.init_from,
        **kwargs
    )
    for percent in kwargs.get("snapshot_percents", []):
        checkpoint_snapshot(
            name = "%s_at%dpct" % (run, percent),
            run = ":" + run,
            percent = percent,
            tags = seed_tags(seed, seeds, in_wildcard = spec.wildcard),
        )

def _evaluation(eval_name, spec, seed, seeds):
    run = seeded_name(eval_name, seed)
    tags = seed_tags(seed, seeds)
    outs = ["%s/%s.csv" % (run, t) for t in spec.tables]
    tool_run(
        name = run,
        tool = spec.tool,
        outs = outs,
        out_flags = [""] * len(outs) if spec.out_flags == None else [spec.out_flags[t] for t in spec.tables],
        out_dir_flag = "--out_dir=" if spec.out_flags == None else "",
        checkpoint_args = {":" + seeded_name(a, seed): flag for a, flag in spec.models.items()},
        named_checkpoints = {":" + seeded_name(a, seed): model for a, model in spec.named_models.items()},
        message = spec.message % seed if spec.message else None,
        tags = tags,
        **spec.tool_kwargs
    )
    if spec.seed_column:
        native.genrule(
            name = run + "_with_seed",
            srcs = outs,
            outs = [seeded_name(t, seed) + ".csv" for t in spec.tables],
            cmd = "for t in %s; do sed '1s/^/seed,/; 2,$$s/^/%d,/' $(RULEDIR)/%s/$$t.csv > $(RULEDIR)/$${t}_s%d.csv; done" % (
                " ".join(spec.tables),
                seed,
                run,
                seed,
            ),
            tags = tags,
        )

def _arm_tool_run(eval_name, spec, run, stem, row_name, tables, tags, checkpoint = None, config = None, extra_args = [], message = None):
    outs = ["%s.%s.csv" % (stem, t) for t in tables]
    kwargs = dict(spec.tool_kwargs)
    args = ([spec.name_flag + row_name] if spec.name_flag else []) + extra_args
    if "args" in kwargs:
        args = args + kwargs.pop("args")
    tool_run(
        name = run + "_" + eval_name,
        tool = spec.tool,
        outs = outs,
        out_flags = [spec.out_flags[t] for t in tables],
        checkpoint_args = {checkpoint: spec.model_flag} if checkpoint else {},
        file_args = {config: spec.control_flag} if config else {},
        args = args,
        message = message,
        tags = tags,
        **kwargs
    )

def _first_seeds(seeds):
    return [scale_seeds[0] for scale_seeds in seeds.values()]

def _arm_evaluation(eval_name, spec, arms, seed, seeds):
    tables = [t for t in spec.tables if t not in spec.first_seed_tables or seed in _first_seeds(seeds)]
    for arm_name in (spec.arms or arms.keys()):
        a = arms[arm_name]
        run = seeded_name(arm_name, seed)
        tags = seed_tags(seed, seeds, in_wildcard = a.wildcard)
        for percent in (a.lm_kwargs.get("snapshot_percents", []) if spec.snapshot_flag else []):
            snapshot = "%s_at%dpct" % (run, percent)
            _arm_tool_run(
                eval_name,
                spec,
                snapshot,
                "%s.at%dpct" % (run, percent),
                arm_name,
                [t for t in spec.tables if t not in spec.first_seed_tables],
                tags,
                checkpoint = ":" + snapshot,
                extra_args = ["%s%d" % (spec.snapshot_flag, percent)],
                message = (spec.message % run + " after %d%% of its training" % percent) if spec.message else None,
            )
        _arm_tool_run(
            eval_name,
            spec,
            run,
            run,
            arm_name,
            tables,
            tags,
            checkpoint = ":" + run,
            message = spec.message % run if spec.message else None,
        )
    for control_name, c in spec.controls.items():
        run = seeded_name(control_name, seed)
        _arm_tool_run(
            eval_name,
            spec,
            run,
            run,
            control_name,
            [t for t in spec.tables if t not in spec.first_seed_tables],
            seed_tags(seed, seeds, in_wildcard = c.wildcard),
            config = ":%s_config" % seeded_name(c.arm, seed),
            message = spec.message % run if spec.message else None,
        )

def _arm_table(study_name, ref, spec, arms):
    """select() of a per-arm evaluation's table files at the active scale (table())."""
    seeds_by_scale = SEED_PLAN[study_name]
    evaluation_name, _, table_name = ref.source.partition("/")
    names = ref.arms or spec.arms or arms.keys()
    controls = {} if ref.arms else spec.controls
    files = {}
    for scale, seeds in seeds_by_scale.items():
        if table_name in spec.first_seed_tables:
            seeds = seeds[:1]
        trained = [n for n in names if scale in arms[n].scales]
        snapshot_files = [
            ":%s.at%dpct.%s.csv" % (seeded_name(n, s), percent, table_name)
            for s in seeds
            for n in trained
            for percent in arms[n].lm_kwargs.get("snapshot_percents", [])
        ] if ref.snapshots else []
        files[scale] = snapshot_files + [":%s.%s.csv" % (seeded_name(n, s), table_name) for s in seeds for n in trained] + [
            ":%s.%s.csv" % (seeded_name(c, s), table_name)
            for s in seeds
            for c, spec_c in controls.items()
            if scale in spec_c.scales
        ]
    return by_scale(files) + ref.also

def study_table(study_name, evaluation_name, table, evaluations):
    """select() of an evaluation's table at every seed of the active scale (its seed-column copies when it has
    them)."""
    seeds = SEED_PLAN[study_name]
    if evaluation_name not in evaluations:
        fail("table %s/%s: %s is not an evaluation of %s" % (evaluation_name, table, evaluation_name, study_name))
    if table not in evaluations[evaluation_name].tables:
        fail("table %s/%s: %s writes no table %s" % (evaluation_name, table, evaluation_name, table))
    if evaluations[evaluation_name].seed_column:
        return seeded_labels([table], seeds, ".csv")
    return seeded_labels([evaluation_name], seeds, "/%s.csv" % table)

def study_runs(study_name, arms, suffixes = ["", "_config"]):
    """select() of the active scale's runs of `arms` (name -> arm()) that the scale trains, seed by seed, each with
    the suffixes in order (a checkpoint, then its merged config)."""
    return by_scale({
        scale: [
            ":%s%s" % (seeded_name(name, s), suffix)
            for s in seeds
            for name, spec in arms.items()
            if scale in spec.scales
            for suffix in suffixes
        ]
        for scale, seeds in SEED_PLAN[study_name].items()
    })

def _is_per_arm(spec):
    return hasattr(spec, "model_flag")

def _arms_not_run(study_name, arms, evaluations):
    """select() of the judged arms and controls the active scale does not train: their claims read NOT TESTABLE."""
    everything = dict(arms)
    for spec in evaluations.values():
        if _is_per_arm(spec):
            everything.update(spec.controls)
    return by_scale({
        scale: [n for n, spec in everything.items() if spec.judged and scale not in spec.scales]
        for scale in SEED_PLAN[study_name]
    })

def study(
        name,
        arms,
        base = "base.textproto",
        scales = None,
        data = None,
        evaluations = {},
        runs_table = None,
        curves = False,
        tables = {},
        results = [],
        **report_kwargs):
    """The study's seeded nodes, runs table, training curves and report.

    Args:
      name: the experiment; its seeds are SEED_PLAN[name].
      arms: arm name -> arm(), trained at every seed of the plan.
      base: the config every arm refines.
      scales: {scale: file} refining base; default <scale>.textproto.
      data: what every arm trains on, unless the arm says otherwise.
      evaluations: name -> evaluation() (once per seed) or arm_evaluation() (once per arm and seed).
      runs_table: a runs_table(), built as <name>.csv.
      curves: build curves.csv, every arm's training loss in 10 bins (training_curves).
      tables: the report's tables: name -> labels, "<evaluation>/<table>" or a table().
      results: more labels for the `results` filegroup (every trained run and table of the active scale).
      **report_kwargs: the rest goes to experiment_report (listings, min_n, ...); arms_not_run defaults to the judged
        arms and controls the active scale does not train.
    """
    seeds = SEED_PLAN[name]
    scales = scales or {s: s + ".textproto" for s in SCALES}
    for seed in all_seeds(seeds):
        for arm_name, spec in arms.items():
            _lm(name, seeds, arm_name, spec, seed, base, scales, data)
        for eval_name, spec in evaluations.items():
            if _is_per_arm(spec):
                _arm_evaluation(eval_name, spec, arms, seed, seeds)
            else:
                _evaluation(eval_name, spec, seed, seeds)
    if runs_table:
        summary_table(
            name = runs_table.name,
            config_fields = runs_table.config_fields,
            fields = runs_table.fields,
            name_from_path = runs_table.name_from_path,
            runs = study_runs(name, {a: arms[a] for a in runs_table.arms} if runs_table.arms else arms),
        )
    if curves:
        training_curves(name = "curves", runs = study_runs(name, arms, [""]))
    resolved = {}
    results_srcs = study_runs(name, arms) + results
    for table_name, source in tables.items():
        if type(source) == "string":
            source = table(source)
        if type(source) == "struct":
            evaluation_name, _, evaluation_table = source.source.partition("/")
            if evaluation_name not in evaluations:
                fail("table %s: %s is not an evaluation of %s" % (source.source, evaluation_name, name))
            spec = evaluations[evaluation_name]
            if evaluation_table not in spec.tables:
                fail("table %s: %s writes no table %s" % (source.source, evaluation_name, evaluation_table))
            if _is_per_arm(spec):
                resolved[table_name] = _arm_table(name, source, spec, arms)
            else:
                resolved[table_name] = study_table(name, evaluation_name, evaluation_table, evaluations) + source.also

            # The report's filegroup of the table (experiment_report): a label may sit in several tables.
            results_srcs = results_srcs + [":%s_table_%s" % (name, table_name.replace(".", "_").replace("/", "_"))]
        else:
            resolved[table_name] = source
    native.filegroup(name = "results", srcs = results_srcs)
    if "arms_not_run" not in report_kwargs:
        report_kwargs["arms_not_run"] = _arms_not_run(name, arms, evaluations)
    experiment_report(name = name, seeds = seeds, tables = resolved, **report_kwargs)
