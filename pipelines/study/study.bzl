"""study: an experiment declared as data. Its arms (language models trained from config overlays, or a user's
pretrained model), its bases (fixed models whose layers it replaces), its seeds (the seed plan's, by the
experiment's name), the caches and fits it makes, the evaluations it runs (a tool and its arguments per scale) and
the tidy tables the claims engine reads; the macro builds the seeded nodes, the runs table and the report
(experiment_report: section, `bazel run` printer, generic smoke check).

    load("//pipelines/study:study.bzl", "arm", "evaluation", "runs_table", "study")

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
        runs_table = runs_table(name = "models", fields = ["parameters"], config_fields = ["seed=runtime.seed"]),
        tables = {"models.csv": [":models.csv"], "recall.csv": "patching/recall"},
    )

Targets, per seed s of any scale (a scale builds its own seeds; the one tag rule, seed_tags, keeps other scales'
seeds and arms, fits or caches with `wildcard = False` out of `bazel build //...`):
  <arm>_s<s>_overlay    the arm's generated overlay (`config`, "{run}" replaced by <arm>_s<s>), when given
  <arm>_s<s>_config     base, the scale's file, the arm's overlays, the generated overlay, runtime.seed
  <arm>_s<s>            lm_checkpoint of that config (none for a pretrained arm)
  <cache>_s<s>          activation cache of an arm's run (<cache> once for a pretrained arm); <base>_<cache> of a base
  <fit>_s<s>            a fit on an arm's cache; <base>_<fit>_s<s> a fit on a base's cache (_overlay, _config too)
  <evaluation>_s<s>     evaluation(): <evaluation>_s<s>/<table>.csv, or with `seed_column` also <table>_s<s>.csv
  <arm>_s<s>_<evaluation>            arm_evaluation(): <arm>_s<s>.<table>.csv
  <base>_<evaluation>_s<s>           fits_evaluation() or fits_table(): <base>_<evaluation>_s<s><suffix>
  <base>_<evaluation>                pooled_evaluation(): <base>_<evaluation>.csv over every seed
A report table is a list of labels, "<evaluation>/<table or suffix>" or a table(): that table of every seed of the
active scale.
"""

load("//base/scale:scale.bzl", "SCALES", "by_scale")
load("//base/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_config", "seeded_labels", "seeded_name")
load("//config:config.bzl", "experiment_config")
load("//pipelines/activations:activation_cache.bzl", "activation_cache")
load("//pipelines/report:experiment_report.bzl", "experiment_report", "listing")
load("//pipelines/train:lm_checkpoint.bzl", "checkpoint_snapshot", "replacement_checkpoint")
load("//pipelines/train:seeded_lm.bzl", "seeded_lm")
load("//pipelines/train:summary_table.bzl", "summary_table", "training_curves")
load("//pipelines/train:tool_run.bzl", "tool_run")

def literal(text):
    """A config value written as is, not quoted: an enum value ("NONE") or a decimal number kept exactly ("0.0625")."""
    return struct(literal = text)

def _textproto_value(value, run):
    if type(value) == "string":
        return "\"%s\"" % value.replace("{run}", run).replace("\\", "\\\\").replace("\"", "\\\"")
    if type(value) == "bool":
        return "true" if value else "false"
    if type(value) in ["int", "float"]:
        return str(value)
    if type(value) == "struct":
        return value.literal
    fail("config value %r: expected a string, number, bool, literal() or a dict (a message)" % (value,))

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
        claim_group = None,
        init_from = None,
        pretrained = None,
        **lm_kwargs):
    """A trained arm of a study, or a user's pretrained model in its place.

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
      claim_group: the value of another column by which claims name this arm's rows with others' (its ffn, "moe_x",
        for a claim over the routed widths of moe_x_k1, _k2, _k4): listed as not run at a scale training no arm of it.
      init_from: another arm of the study; the run upcycles from it at the same seed.
      pretrained: a pretrained model's label (//pipelines/pretrained:model) that stands for the arm at every seed:
        nothing is trained, <arm>_s<seed>_config is its config with the seed (the fits' initialisation and row
        order), and its caches are made once.
      **lm_kwargs: the rest goes to lm_checkpoint (data, tokenizer, threads, snapshot_percents, ...).
    """
    if config != None and overlay_cmd != None:
        fail("an arm takes config or overlay_cmd, not both")
    if pretrained and (overlays or config != None or overlay_cmd != None or init_from or lm_kwargs):
        fail("a pretrained arm is the model as it is: no overlays, config, overlay_cmd, init_from or training settings")
    return struct(
        overlays = overlays,
        config = config,
        overlay_cmd = overlay_cmd,
        overlay_tools = overlay_tools,
        wildcard = wildcard,
        scales = scales,
        judged = judged,
        claim_group = claim_group,
        init_from = init_from,
        pretrained = pretrained,
        lm_kwargs = lm_kwargs,
    )

def evaluation(
        tool,
        tables,
        models = {},
        named_models = {},
        fits = [],
        caches = [],
        caches_flag = "--caches=",
        cache_args = {},
        out_flags = None,
        seed_column = False,
        message = None,
        **tool_kwargs):
    """A tool run once per seed over that seed's arms, and the fits and caches made on them.

    Args:
      tool: the analysis binary.
      tables: the CSV tables it writes, <evaluation>_s<seed>/<table>.csv (a name with an extension as it is).
      models: arm -> flag prefix given the arm's checkpoint at the seed ("--model=").
      named_models: arm -> model name, given as --models=<name>=<checkpoint>,... (tool_run's named_checkpoints).
      fits: the seed's fits of the study (on an arm), passed last; or {scale: fits}.
      caches: the seed's caches of the study (on an arm), given as caches_flag <layer>=<manifest>,...
      cache_args: cache of the study (on an arm) -> flag prefix given the seed's cache's test-split manifest.
      out_flags: table -> flag prefix given its path; None: the tool takes --out_dir= and names the files itself.
      seed_column: also write <table>_s<seed>.csv with a leading seed column (for a tool whose rows carry none).
      message: the progress message, "%d" the seed.
      **tool_kwargs: the rest goes to tool_run (tokens, token_args, tokenizer, file_args, args, ...).
    """
    return struct(
        kind = "seed",
        tool = tool,
        tables = tables,
        models = models,
        named_models = named_models,
        fits = fits,
        caches = caches,
        caches_flag = caches_flag,
        cache_args = cache_args,
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
        kind = "arm",
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
    then `also`: labels (or a select() of them), or another evaluation's table of the study as "<evaluation>/<table>"
    (its rows after)."""
    return struct(source = source, arms = arms, snapshots = snapshots, also = also)

# A language-model study's runs-table fields (trainer summaries): perplexity, loss and size of each run.
LM_RUN_FIELDS = [
    "name",
    "validation_perplexity",
    "validation_loss",
    "parameters",
    "steps",
    "tokens",
]

def runs_table(fields, config_fields = [], name = "runs", arms = None, name_from_path = False):
    """<name>.csv: one row per trained run of the active scale (summary_table), `arms` (default every arm) seed by
    seed; `name_from_path` names each row by its run (<arm>_s<seed>) instead of the config's name."""
    return struct(name = name, fields = fields, config_fields = config_fields, arms = arms, name_from_path = name_from_path)

def _per_scale(value):
    """`value` when it is {scale: ...} with every scale, None when it is a plain value; fails on some scales only."""
    if type(value) != "dict" or not any([k in SCALES for k in value]):
        return None
    if sorted(value.keys()) != sorted(SCALES):
        fail("%r: a per-scale value names every scale (%s)" % (value, ", ".join(SCALES)))
    return value

def _at_scale(value, scale):
    """`value` at `scale`: its entry when it is a per-scale value (_per_scale), else itself."""
    return value[scale] if _per_scale(value) else value

def _write_overlay(run, contents, tags):
    """<run>_overlay: a config overlay of {scale: text}, one text when every scale's is the same."""
    config_overlay(
        name = run + "_overlay",
        out = run + "_overlay.textproto",
        content = by_scale(contents) if len({c: None for c in contents.values()}) > 1 else contents["smoke"],
        tags = tags,
    )

def _lm(seeds, arm_name, spec, seed, base, scales, data):
    run = seeded_name(arm_name, seed)
    if spec.pretrained:
        # No training: the pretrained model's config with the seed, the base config of the fits on it.
        seeded_config(
            name = run,
            seed = seed,
            base = spec.pretrained + ".textproto",
            scales = None,
            tags = seed_tags(seed, seeds, in_wildcard = spec.wildcard),
        )
        return
    overlay_cmd = spec.overlay_cmd
    if _per_scale(overlay_cmd):
        overlay_cmd = by_scale({s: c.replace("{run}", run) for s, c in overlay_cmd.items()})
    elif overlay_cmd != None:
        overlay_cmd = overlay_cmd.replace("{run}", run)
    generated = []
    if spec.config != None:
        _write_overlay(
            run,
            {scale: textproto(_at_scale(spec.config, scale), run) for scale in SCALES},
            seed_tags(seed, seeds, in_wildcard = spec.wildcard),
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

def _file(table):
    """A table's file name: "<table>.csv", or the name itself when it has an extension."""
    return table if "." in table else table + ".csv"

def _arm_checkpoint(arms, name, seed):
    """The checkpoint of arm `name` at `seed`: its run, or the pretrained model standing for it."""
    return arms[name].pretrained or ":" + seeded_name(name, seed)

def _seed_fits(fits, seed):
    """The labels of `fits` (names, or {scale: names}) at `seed`: a list, or a select()."""
    if type(fits) == "dict":
        return by_scale({scale: [":" + seeded_name(f, seed) for f in names] for scale, names in fits.items()})
    return [":" + seeded_name(f, seed) for f in fits]

def _evaluation(eval_name, spec, seed, seeds, arms, caches):
    run = seeded_name(eval_name, seed)
    read = list(spec.models.keys()) + list(spec.named_models.keys())
    tags = seed_tags(seed, seeds, in_wildcard = all([arms[a].wildcard for a in read]))
    outs = ["%s/%s" % (run, _file(t)) for t in spec.tables]
    kwargs = dict(spec.tool_kwargs)
    if spec.caches:
        kwargs["layered_activations"] = [_arm_cache_label(c, caches[c], arms, seed) for c in spec.caches]
        kwargs["layered_activations_flag"] = spec.caches_flag
    if spec.cache_args:
        if "activation_args" in kwargs:
            fail("evaluation %s: give caches by cache_args or activation_args, not both" % eval_name)
        for c in spec.cache_args:
            if c not in caches or caches[c].arm == None:
                fail("evaluation %s: cache_args names %s, which is not a cache of an arm of the study" % (eval_name, c))
        kwargs["activation_args"] = {_arm_cache_label(c, caches[c], arms, seed): flag for c, flag in spec.cache_args.items()}
    tool_run(
        name = run,
        tool = spec.tool,
        outs = outs,
        out_flags = [""] * len(outs) if spec.out_flags == None else [spec.out_flags[t] for t in spec.tables],
        out_dir_flag = "--out_dir=" if spec.out_flags == None else "",
        checkpoint_args = {_arm_checkpoint(arms, a, seed): flag for a, flag in spec.models.items()},
        named_checkpoints = {_arm_checkpoint(arms, a, seed): model for a, model in spec.named_models.items()},
        checkpoints = _seed_fits(spec.fits, seed),
        message = spec.message % seed if spec.message else None,
        tags = tags,
        **kwargs
    )
    if spec.seed_column:
        native.genrule(
            name = run + "_with_seed",
            srcs = outs,
            outs = [seeded_name(t, seed) + ".csv" for t in spec.tables],
            cmd = "for t in %s; do sed '1s/^/seed,/; 2,$$s/^/%d,/' $(RULEDIR)/%s/$$t.csv > $(RULEDIR)/$${t}_s%d.csv; done" % (
                " ".join([_file(t)[:-len(".csv")] for t in spec.tables]),
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
        for percent in (a.lm_kwargs.get("snapshot_percents", []) if spec.snapshot_flag and not a.pretrained else []):
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
            checkpoint = _arm_checkpoint(arms, arm_name, seed),
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
    first_seed = table_name in spec.first_seed_tables
    controls = {} if ref.arms or first_seed else spec.controls
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
        ] if ref.snapshots and not first_seed else []
        files[scale] = snapshot_files + [":%s.%s.csv" % (seeded_name(n, s), table_name) for s in seeds for n in trained] + [
            ":%s.%s.csv" % (seeded_name(c, s), table_name)
            for s in seeds
            for c, spec_c in controls.items()
            if scale in spec_c.scales
        ]
    return by_scale(files)

def _study_table(study_name, evaluation_name, table, evaluations):
    """select() of an evaluation's table at every seed of the active scale (its seed-column copies when it has
    them)."""
    seeds = SEED_PLAN[study_name]
    if evaluation_name not in evaluations:
        fail("table %s/%s: %s is not an evaluation of %s" % (evaluation_name, table, evaluation_name, study_name))
    if table not in evaluations[evaluation_name].tables:
        fail("table %s/%s: %s writes no table %s" % (evaluation_name, table, evaluation_name, table))
    if evaluations[evaluation_name].seed_column:
        return seeded_labels([table], seeds, ".csv")
    return seeded_labels([evaluation_name], seeds, "/" + _file(table))

def _study_runs(study_name, arms, suffixes = ["", "_config"]):
    """select() of the active scale's runs of `arms` (name -> arm()) that the scale trains, seed by seed, each with
    the suffixes in order (a checkpoint, then its merged config)."""
    return by_scale({
        scale: [
            ":%s%s" % (seeded_name(name, s), suffix)
            for s in seeds
            for name, spec in arms.items()
            if scale in spec.scales and not spec.pretrained
            for suffix in suffixes
        ]
        for scale, seeds in SEED_PLAN[study_name].items()
    })

# Replacement fits on fixed base models (the MxD experiments, the atlas): every fit of a study is fitted once per
# base and seed on a cache of that base, <base>_<fit>_s<seed>; an evaluation runs once per base and seed over its
# fits, <base>_<evaluation>_s<seed><suffix>; a pooled evaluation once per base over every seed's tables,
# <base>_<evaluation><suffix>. A base is a struct with name, checkpoint, config, tokens, tokenizer and layer (the
# replaced block, None: the fit scale file's), e.g. //experiments/mxd_frontier:mxd.bzl base_models().

def cache(layer, rows, bases = None, arm = None, data = None, site = "ffn", sequence_length = 0):
    """<base>_<cache>: an activation cache of each base (of `bases`, default every one) at `layer` (a select()), or
    at the base's own replaced block when it has one (a pretrained model's). With `arm`, instead <cache>_s<seed>: a
    cache of the arm's run at each seed on `data`, made once (<cache>) when a pretrained model stands for the arm.
    site: "ffn" or "attn"; sequence_length: the window (0: the model's context)."""
    return struct(layer = layer, rows = rows, bases = bases, arm = arm, data = data, site = site, sequence_length = sequence_length)

def fit(ffn, top_k = 0, on_output = False, cache = "activations", layer = None, replacement = {}, layer_options = {}, bases = None, wildcard = True):
    """A replacement layer fitted per base and seed (<base>_<fit>_s<seed>), or, on a cache of an arm, per seed
    (<fit>_s<seed>, its config the arm's run's with the fit settings).

    Args:
      ffn: the layer's registry name, "{base}" the base's name ("mxd_{base}").
      top_k: K, or {scale: K}.
      on_output: fit the FFN's output alone (an SAE) instead of its input -> output map.
      cache: the study's cache it fits on, or a label with "{base}" (another study's cache).
      layer: the replaced block, an int or {scale: int}; None: the base's (its own layer, else the fit scale file's).
      replacement: more model.replacement fields, values as textproto() takes, a {scale: value} per scale.
      layer_options: model.layer_options fields.
      bases: the bases it is fitted on (default every one).
      wildcard: False keeps the fit out of wildcard builds (a grid point only a larger scale's report reads).
    """
    return struct(
        ffn = ffn,
        wildcard = wildcard,
        top_k = top_k,
        on_output = on_output,
        cache = cache,
        layer = layer,
        replacement = replacement,
        layer_options = layer_options,
        bases = bases,
    )

def fits_evaluation(
        tool,
        fits,
        outs,
        bases = None,
        cache = None,
        token_args = {},
        tokenizer = False,
        seed_flag = None,
        log = None,
        args = [],
        message = None,
        **tool_kwargs):
    """A tool run once per base and seed over that seed's fits of the base: <base>_<evaluation>_s<seed><suffix>.

    Args:
      tool: the analysis binary; it is given --base=<the base's checkpoint> and --base_name=<the base's name> first.
      fits: the fits it reads, in order: fit names of the study, or labels with "{base}" and "{seed}"; or
        {base name: that list}.
      outs: suffix -> flag prefix given that output's path (".csv": "--out=").
      bases: the bases it runs on (default every one the fits exist on).
      cache: the study's cache (or a "{base}" label) given as --activations= (its test split).
      token_args: flag prefix -> split of the base's token shards.
      tokenizer: give the base's tokenizer (--tokenizer=).
      seed_flag: flag prefix given the seed (a tool's own draws: random controls, samples).
      log: a suffix for the tool's stderr kept as an output.
      args: more arguments after --base_name (and the seed).
      message: the progress message, "%s" the base's name.
      **tool_kwargs: the rest goes to tool_run (file_list_args, ...).
    """
    return struct(
        kind = "fits",
        tool = tool,
        fits = fits,
        outs = outs,
        bases = bases,
        cache = cache,
        token_args = token_args,
        tokenizer = tokenizer,
        seed_flag = seed_flag,
        log = log,
        args = args,
        message = message,
        tool_kwargs = tool_kwargs,
    )

def fits_table(fits, fields, config_fields = [], constant_columns = [], bases = None):
    """Per base and seed, <base>_<evaluation>_s<seed>.csv: one row per fit from its trainer summary and merged config
    (summary_table); fits as fits_evaluation's, "{base}" in constant_columns the base's name. Fits on an arm's cache
    give one table per seed, <evaluation>_s<seed>.csv."""
    return struct(
        kind = "fits",
        fits = fits,
        fields = fields,
        config_fields = config_fields,
        constant_columns = constant_columns,
        bases = bases,
        outs = {".csv": None},
        log = None,
        summary = True,
    )

def pooled_evaluation(tool, inputs, bases = None, message = None):
    """A tool run once per base over every seed's table of other evaluations at the active scale:
    <base>_<evaluation>.csv (--out=). inputs: flag prefix -> "<evaluation>/<suffix>", the files joined by commas."""
    return struct(kind = "pooled", tool = tool, inputs = inputs, bases = bases, message = message)

def _fits_of(spec):
    return spec.kind == "fits"

def _base_names(bases, names):
    return [b.name for b in bases if names == None or b.name in names]

def _on_base(spec, base):
    """Whether a cache, fit or pooled evaluation (its `bases`) exists on `base`."""
    return spec.bases == None or base.name in spec.bases

def _cache_label(cache_name, base_name):
    if cache_name.startswith("//") or cache_name.startswith(":"):
        return cache_name.replace("{base}", base_name)
    return ":%s_%s" % (base_name, cache_name)

def _fit_overlay_fields(spec, base, run, scale):
    layer_of = spec.layer if spec.layer != None or not base else base.layer
    replacement = {
        "ffn": spec.ffn.replace("{base}", base.name) if base else spec.ffn,
        "top_k": _at_scale(spec.top_k, scale),
        "on_output": spec.on_output,
    }
    layer = _at_scale(layer_of, scale)
    if layer != None:
        replacement["layer"] = layer
    for key, value in spec.replacement.items():
        replacement[key] = _at_scale(value, scale)
    model = {"replacement": replacement}
    if spec.layer_options:
        model["layer_options"] = spec.layer_options
    return textproto({"name": "{run}", "model": model}, run)

def _fit_run(run, spec, base, seed, tags, base_checkpoint, base_config, activations, fit_scales, fit_overlays):
    """<run>: the fit's overlay (its model.replacement, layer_options and name, one text or one per scale), config
    (base_config, fit_scales, fit_overlays, the overlay, then runtime.seed when `seed` is given: a base config that
    carries another seed) and replacement_checkpoint on `activations` of `base_checkpoint`."""
    _write_overlay(run, {scale: _fit_overlay_fields(spec, base, run, scale) for scale in SCALES}, tags)
    if seed == None:
        experiment_config(
            name = run + "_config",
            base = base_config,
            scales = fit_scales,
            overlays = fit_overlays + [":%s_overlay" % run],
            tags = tags,
        )
    else:
        seeded_config(
            name = run,
            seed = seed,
            base = base_config,
            scales = fit_scales,
            overlays = fit_overlays + [":%s_overlay" % run],
            tags = tags,
        )
    replacement_checkpoint(
        name = run,
        config = ":%s_config" % run,
        base = base_checkpoint,
        activations = activations,
        tags = tags,
    )

def _fit(seeds, fit_name, spec, base, seed, fit_scales, fit_overlays):
    """<base>_<fit>_s<seed> on the base's cache; the base's config carries its own seed, so the fit's is added."""
    _fit_run(
        seeded_name("%s_%s" % (base.name, fit_name), seed),
        spec,
        base,
        seed,
        seed_tags(seed, seeds, in_wildcard = spec.wildcard),
        base.checkpoint,
        base.config,
        _cache_label(spec.cache, base.name),
        fit_scales,
        fit_overlays,
    )

def _arm_cache_label(cache_name, spec, arms, seed):
    """The label of an arm's cache at `seed`: <cache>_s<seed>, or <cache> when a pretrained model stands for the arm."""
    return ":" + (cache_name if arms[spec.arm].pretrained else seeded_name(cache_name, seed))

def _arm_fit(seeds, fit_name, spec, arms, cache_spec, seed, fit_scales, fit_overlays):
    """<fit>_s<seed> on the arm's cache at `seed`, configured from the arm's run's config (which holds the seed)."""
    _fit_run(
        seeded_name(fit_name, seed),
        spec,
        None,
        None,
        seed_tags(seed, seeds, in_wildcard = spec.wildcard),
        _arm_checkpoint(arms, cache_spec.arm, seed),
        ":%s_config" % seeded_name(cache_spec.arm, seed),
        _arm_cache_label(spec.cache, cache_spec, arms, seed),
        fit_scales,
        fit_overlays,
    )

def _arm_caches(seeds, caches, arms):
    for cache_name, spec in caches.items():
        if spec.arm == None:
            continue
        arm_spec = arms[spec.arm]
        for seed in ([None] if arm_spec.pretrained else all_seeds(seeds)):
            activation_cache(
                name = cache_name if seed == None else seeded_name(cache_name, seed),
                checkpoint = arm_spec.pretrained or ":" + seeded_name(spec.arm, seed),
                data = spec.data,
                layer = spec.layer,
                rows = spec.rows,
                sequence_length = spec.sequence_length,
                site = spec.site,
                tags = [] if seed == None else seed_tags(seed, seeds, in_wildcard = arm_spec.wildcard),
            )

def _fit_label(ref, base_name, seed, fits):
    if ref.startswith("//") or ref.startswith(":"):
        return ref.replace("{base}", base_name).replace("{seed}", str(seed))
    if ref not in fits:
        fail("fit %s is not a fit of this study" % ref)
    return ":" + seeded_name("%s_%s" % (base_name, ref), seed)

def _evaluation_fits(spec, base_name):
    return spec.fits.get(base_name, []) if type(spec.fits) == "dict" else spec.fits

def run_fits_evaluation(name, spec, base, checkpoints, tags = [], seed = None, base_name = None):
    """`spec` (a fits_evaluation) as one tool_run `name` on `base` over `checkpoints` (labels): a study's
    evaluation node, or one the study does not declare (a user's imported fit, its rows named `base_name`)."""
    outs = [name + suffix for suffix in spec.outs]
    kwargs = dict(spec.tool_kwargs)
    if spec.token_args:
        kwargs["tokens"] = base.tokens
        kwargs["token_args"] = spec.token_args
    if spec.tokenizer:
        kwargs["tokenizer"] = base.tokenizer
    if spec.cache:
        kwargs["activation_args"] = {_cache_label(spec.cache, base.name): "--activations="}
    tool_run(
        name = name,
        tool = spec.tool,
        outs = outs,
        out_flags = spec.outs.values(),
        log = name + spec.log if spec.log else None,
        checkpoint_args = {base.checkpoint: "--base="},
        args = ["--base_name=" + (base_name or base.name)] + (["%s%d" % (spec.seed_flag, seed)] if spec.seed_flag else []) + spec.args,
        checkpoints = checkpoints,
        message = spec.message % base.name if spec.message else None,
        tags = tags,
        **kwargs
    )

def _pooled_filegroup(base_name, eval_name, flag_index):
    return "%s_%s_inputs%d" % (base_name, eval_name, flag_index)

def _pooled(study_name, eval_name, spec, base, evaluations, base_scales):
    name = "%s_%s" % (base.name, eval_name)
    file_list_args = {}
    for i, (flag, ref) in enumerate(spec.inputs.items()):
        native.filegroup(
            name = _pooled_filegroup(base.name, eval_name, i),
            srcs = _base_table(study_name, ref, [base.name], evaluations, base_scales),
        )
        file_list_args[":" + _pooled_filegroup(base.name, eval_name, i)] = flag
    tool_run(
        name = name,
        tool = spec.tool,
        outs = [name + ".csv"],
        out_flags = ["--out="],
        file_list_args = file_list_args,
        cpu_slot = False,
        message = spec.message % base.name if spec.message else None,
    )

def _base_seeds(study_name, base_name, base_scales):
    """The study's seeds of a base per scale: none at a scale that does not measure the base (base_scales)."""
    scales = base_scales.get(base_name, SCALES)
    return {scale: seeds if scale in scales else [] for scale, seeds in SEED_PLAN[study_name].items()}

def _base_table(study_name, ref, base_names, evaluations, base_scales):
    """select() (or a list, for a pooled evaluation of bases every scale measures) of "<evaluation>/<suffix>" for
    each base of `base_names`, at the scales that measure it (base_scales)."""
    evaluation_name, _, suffix = ref.partition("/")
    if evaluation_name not in evaluations:
        fail("table %s: %s is not an evaluation of %s" % (ref, evaluation_name, study_name))
    spec = evaluations[evaluation_name]
    if spec.kind == "pooled":
        labels = []
        for b in base_names:
            label = ":%s_%s%s" % (b, evaluation_name, suffix)
            if b in base_scales:
                labels = labels + by_scale({scale: [label] if scale in base_scales[b] else [] for scale in SCALES})
            else:
                labels = labels + [label]
        return labels
    if suffix not in spec.outs and suffix != spec.log:
        fail("table %s: %s writes no %s" % (ref, evaluation_name, suffix))
    labels = []
    for b in base_names:
        labels = labels + seeded_labels(["%s_%s" % (b, evaluation_name)], _base_seeds(study_name, b, base_scales), suffix)
    return labels

def _evaluation_bases(spec, bases, fits):
    names = _base_names(bases, spec.bases)
    if _fits_of(spec) and type(spec.fits) == "dict":
        names = [n for n in names if n in spec.fits]
    if _fits_of(spec) and type(spec.fits) != "dict":
        # Only the bases every named fit of the study exists on.
        for ref in spec.fits:
            if ref in fits and fits[ref].bases != None:
                names = [n for n in names if n in fits[ref].bases]
    return names

def fit_labels(study_name, bases, names):
    """select() of the fits `names` of every base at the active scale's seeds, base by base, seed by seed: their
    training logs (training_curves)."""
    labels = []
    for b in bases:
        labels = labels + seeded_labels(["%s_%s" % (b.name, n) for n in names], SEED_PLAN[study_name])
    return labels

def _on_arm_caches(spec, fits, caches):
    """Whether a fits_table() reads fits made on arms' caches (one table per seed, <evaluation>_s<seed>.csv) rather
    than on fixed bases."""
    on_arms = [f in fits and fits[f].cache in caches and caches[fits[f].cache].arm != None for f in spec.fits]
    if not any(on_arms):
        return False
    if not all(on_arms) or not getattr(spec, "summary", False):
        fail("a fits_table() reads fits on arms' caches or fits on bases, not both; fits_evaluation() needs bases")
    return True

def _fits_summary(run, spec, labels, constant_columns, tags):
    """<run>.csv of a fits_table(): one row per fit of `labels` from its trainer summary and merged config."""
    summary_table(
        name = run,
        runs = labels + [label + "_config" for label in labels],
        fields = spec.fields,
        constant_columns = constant_columns,
        config_fields = spec.config_fields,
        tags = tags,
    )

def _fit_nodes(name, seeds, arms, bases, caches, fits, evaluations, fit_scales, fit_overlays, base_scales):
    _arm_caches(seeds, caches, arms)
    for cache_name, spec in caches.items():
        if spec.arm != None:
            continue
        for base in bases:
            if _on_base(spec, base):
                activation_cache(
                    name = "%s_%s" % (base.name, cache_name),
                    checkpoint = base.checkpoint,
                    data = spec.data or base.tokens,
                    layer = spec.layer if base.layer == None else base.layer,
                    rows = spec.rows,
                    sequence_length = spec.sequence_length,
                    site = spec.site,
                )
    for seed in all_seeds(seeds):
        for fit_name, spec in fits.items():
            if spec.cache in caches and caches[spec.cache].arm != None:
                _arm_fit(seeds, fit_name, spec, arms, caches[spec.cache], seed, fit_scales, fit_overlays)
                continue
            for base in bases:
                if _on_base(spec, base):
                    _fit(seeds, fit_name, spec, base, seed, fit_scales, fit_overlays)
        for eval_name, spec in evaluations.items():
            if not _fits_of(spec):
                continue
            if _on_arm_caches(spec, fits, caches):
                _fits_summary(seeded_name(eval_name, seed), spec, [":" + seeded_name(f, seed) for f in spec.fits], spec.constant_columns, seed_tags(seed, seeds))
                continue
            for base in bases:
                if base.name not in _evaluation_bases(spec, bases, fits):
                    continue
                run = seeded_name("%s_%s" % (base.name, eval_name), seed)
                labels = [_fit_label(f, base.name, seed, fits) for f in _evaluation_fits(spec, base.name)]
                if getattr(spec, "summary", False):
                    _fits_summary(run, spec, labels, [c.replace("{base}", base.name) for c in spec.constant_columns], seed_tags(seed, seeds))
                else:
                    run_fits_evaluation(run, spec, base, labels, tags = seed_tags(seed, seeds), seed = seed)
    for eval_name, spec in evaluations.items():
        if spec.kind == "pooled":
            for base in bases:
                if _on_base(spec, base):
                    _pooled(name, eval_name, spec, base, evaluations, base_scales)

def _is_per_arm(spec):
    return spec.kind == "arm"

def _arms_not_run(study_name, arms, evaluations):
    """select() of the judged arms and controls the active scale does not train: their claims read NOT TESTABLE."""
    everything = dict(arms)
    for spec in evaluations.values():
        if _is_per_arm(spec):
            everything.update(spec.controls)
    not_run = {}
    for scale in SEED_PLAN[study_name]:
        names = [n for n, spec in everything.items() if spec.judged and scale not in spec.scales]
        group_names = {}
        for spec in arms.values():
            if spec.claim_group:
                group_names[spec.claim_group] = group_names.get(spec.claim_group, False) or scale in spec.scales
        not_run[scale] = names + sorted([g for g, run in group_names.items() if not run])
    return by_scale(not_run)

def study(
        name,
        arms = {},
        base = "base.textproto",
        scales = None,
        data = None,
        bases = [],
        base_scales = {},
        caches = {},
        fits = {},
        fit_scales = None,
        fit_overlays = [],
        evaluations = {},
        runs_table = None,
        curves = False,
        tables = {},
        listings = [],
        results = [],
        **report_kwargs):
    """The study's seeded nodes, runs table, training curves and report.

    Args:
      name: the experiment; its seeds are SEED_PLAN[name].
      arms: arm name -> arm(), trained at every seed of the plan.
      base: the config every arm refines.
      scales: {scale: file} refining base; default <scale>.textproto.
      data: what every arm trains on, unless the arm says otherwise.
      bases: fixed base models the fits replace a layer of (structs: name, checkpoint, config, tokens, tokenizer,
        layer).
      base_scales: base name -> the scales that measure it (default every scale): at the others its fits and
        evaluations stay out of the report's tables and its claims ("base=<name>") read NOT TESTABLE.
      caches: name -> cache(): one per base, or with `arm` one per seed of the arm's run.
      fits: name -> fit(): one per base and seed, or on an arm's cache one per seed.
      fit_scales: {scale: file} refining each fit's config (the base's config) first.
      fit_overlays: config files every fit adds after fit_scales' (its generated overlay last).
      evaluations: name -> evaluation() (once per seed), arm_evaluation() (once per arm and seed), fits_evaluation()
        (once per base and seed) or pooled_evaluation() (once per base, over every seed).
      runs_table: a runs_table(), built as <name>.csv.
      curves: build curves.csv, every arm's training loss in 10 bins (training_curves).
      tables: the report's tables: name -> labels, "<evaluation>/<table or suffix>" or a table().
      listings: the report's listings (listing()), their files as labels or "<evaluation>/<suffix>".
      results: more labels for the `results` filegroup (every trained run and table of the active scale).
      **report_kwargs: the rest goes to experiment_report (min_n, pretrained, ...); arms_not_run defaults to the judged
        arms and controls the active scale does not train.
    """
    seeds = SEED_PLAN[name]
    scales = scales or {s: s + ".textproto" for s in SCALES}
    for seed in all_seeds(seeds):
        for arm_name, spec in arms.items():
            _lm(seeds, arm_name, spec, seed, base, scales, data)
        for eval_name, spec in evaluations.items():
            if _is_per_arm(spec):
                _arm_evaluation(eval_name, spec, arms, seed, seeds)
            elif spec.kind == "seed":
                _evaluation(eval_name, spec, seed, seeds, arms, caches)
    _fit_nodes(name, seeds, arms, bases, caches, fits, evaluations, fit_scales, fit_overlays, base_scales)
    if runs_table:
        summary_table(
            name = runs_table.name,
            config_fields = runs_table.config_fields,
            fields = runs_table.fields,
            name_from_path = runs_table.name_from_path,
            runs = _study_runs(name, {a: arms[a] for a in runs_table.arms} if runs_table.arms else arms),
        )
    if curves:
        training_curves(name = "curves", runs = _study_runs(name, arms, [""]))

    for base_name, base_scale_list in base_scales.items():
        if base_name not in [b.name for b in bases] or [s for s in base_scale_list if s not in SCALES]:
            fail("base_scales: %s is not a base of %s, or names a scale not in %s" % (base_name, name, SCALES))
    context = struct(
        name = name,
        arms = arms,
        bases = bases,
        base_scales = base_scales,
        caches = caches,
        fits = fits,
        evaluations = evaluations,
    )
    resolved = {}
    results_srcs = _study_runs(name, arms) + results
    for table_name, source in tables.items():
        if type(source) == "string" or type(source) == "struct":
            resolved[table_name] = _resolve_table(context, table(source) if type(source) == "string" else source)
        else:
            resolved[table_name] = source

        # The report's filegroup of the table (experiment_report): a label may sit in several tables.
        results_srcs = results_srcs + [":%s_table_%s" % (name, table_name.replace(".", "_").replace("/", "_"))]
    native.filegroup(name = "results", srcs = results_srcs)
    if "arms_not_run" not in report_kwargs:
        report_kwargs["arms_not_run"] = _arms_not_run(name, arms, evaluations)
    if base_scales:
        report_kwargs["arms_not_run"] = report_kwargs["arms_not_run"] + by_scale({
            scale: ["base=" + b for b, b_scales in sorted(base_scales.items()) if scale not in b_scales]
            for scale in SCALES
        })
    experiment_report(
        name = name,
        seeds = seeds,
        tables = resolved,
        listings = [
            listing(spec.file, _resolve_table(context, table(spec.files)), spec.title, spec.head) if type(spec.files) == "string" else spec
            for spec in listings
        ],
        **report_kwargs
    )

def _resolve_table(context, ref):
    """The files of a table() of the study (context: its name, arms, bases, fits and evaluations)."""
    if type(ref.also) != "list":
        return _evaluation_files(context, ref) + ref.also  # A select() of labels.
    also = []
    for item in ref.also:
        if item.startswith(":") or item.startswith("//"):
            also = also + [item]
        else:
            also = also + _evaluation_files(context, table(item))
    return _evaluation_files(context, ref) + also

def _evaluation_files(context, ref):
    name = context.name
    evaluations = context.evaluations
    evaluation_name, _, part = ref.source.partition("/")
    if evaluation_name not in evaluations:
        fail("table %s: %s is not an evaluation of %s" % (ref.source, evaluation_name, name))
    spec = evaluations[evaluation_name]
    if spec.kind == "pooled":
        return _base_table(name, ref.source, _base_names(context.bases, spec.bases), evaluations, context.base_scales)
    if _fits_of(spec) and _on_arm_caches(spec, context.fits, context.caches):
        if part not in spec.outs:
            fail("table %s: %s writes no %s" % (ref.source, evaluation_name, part))
        return seeded_labels([evaluation_name], SEED_PLAN[name], part)
    if _fits_of(spec):
        return _base_table(name, ref.source, _evaluation_bases(spec, context.bases, context.fits), evaluations, context.base_scales)
    if part not in spec.tables:
        fail("table %s: %s writes no table %s" % (ref.source, evaluation_name, part))
    if _is_per_arm(spec):
        return _arm_table(name, ref, spec, context.arms)
    return _study_table(name, evaluation_name, part, evaluations)
