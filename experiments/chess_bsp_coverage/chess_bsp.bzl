"""chess_model: one chess GPT of the MoE-X (arXiv:2503.07639) BSP study at every seed, as build targets
<name>_s<seed>_config, <name>_s<seed> (lm_checkpoint; a mixture upcycles from its parent at the same seed) and
<name>_s<seed>_bsp (its coverage / reconstruction CSV and its board-tracking CSV, legal-move rate and loss
against the uniform-legal-move floor; rows are named <name>, the seed is their `seed` column), for a mixture
also <name>_s<seed>_experts (its experts' encoder rows against its random initialisation's, Fig. 6); chess_control:
the same metrics for a random initialisation of a model's config at each seed; chess_results: the active
scale's outputs for the report."""

load("@chess_model//:settings.bzl", "CHESS_MODEL")
load("//tools/scale:scale.bzl", "by_scale")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_name")
load("//tools/train:lm_checkpoint.bzl", "checkpoint_snapshot")
load("//tools/train:seeded_lm.bzl", "seeded_lm")
load("//tools/train:tool_run.bzl", "tool_run")

SCALE_CONFIGS = {
    "smoke": "smoke.textproto",
    "cpu": "cpu.textproto",
    "paper": "paper.textproto",
}

# cpu trains the models of MoE-X's headline comparisons only (Table 1 MoE-X vs GELU, Table 4 upcycled vs
# continued, Fig. 9's router): the full set at 6M characters per model and 3 seeds is about 3 h on 2 cores,
# against the 90-minute budget. Claims on the other models read NOT TESTABLE at cpu (arms_not_run), and their
# targets are manual there.
CPU_MODELS = [
    "gelu",
    "gelu_continued",
    "parent_relu",
    "moe_x",
]

CPU_CONTROLS = [
    "gelu",
    "moe_x",
]

# `bazel test //...` builds at smoke and `bazel build //...` at cpu: seeds only cpu or paper use, and models the
# cpu scale does not train (CPU_MODELS), stay out of wildcard builds; the report still pulls in what
# its scale needs.

_GAMES = "//datasets/chess:games"

# The mixtures, whose experts' encoder rows Fig. 6 maps.
MIXTURES = [
    "switch",
    "moe_x",
    "moe_gelu_sparsity_router",
    "moe_relu_topk_router",
    "moe_x_scratch",
]

# Each expert's first encoder rows read: 8 x 256 = 2,048 points for the exact t-SNE (O(n^2)); 32 at smoke keeps
# the test seconds.
_ROWS_PER_EXPERT = {
    "smoke": ["--rows_per_expert=32"],
    "cpu": ["--rows_per_expert=256"],
    "paper": ["--rows_per_expert=256"],
}

def _first_seeds():
    """The seeds whose encoder rows are also drawn as a t-SNE map: each scale's first (one map per model)."""
    return [seeds[0] for seeds in SEED_PLAN["chess_bsp_coverage"].values()]

# MoE-X Fig. 10 (coverage over training): the percents of its steps after which a model keeps a snapshot; two,
# as each costs a BSP evaluation per seed within the cpu budget.
SNAPSHOT_PERCENTS = [50, 75]

def _evaluate_bsp(name, stem, arm, message, checkpoint = None, config = None, extra_args = [], tags = []):
    """evaluate_bsp of a trained `checkpoint` or of a random initialisation of `config`: <stem>.bsp.csv (coverage
    and reconstruction per block) and <stem>.board.csv (board tracking), rows named `arm`."""
    tool_run(
        name = name,
        tool = "//analysis/bsp:evaluate_bsp",
        outs = [stem + ".bsp.csv", stem + ".board.csv"],
        out_flags = ["--out=", "--board_tracking_out="],
        checkpoint_args = {checkpoint: "--checkpoint="} if checkpoint else {},
        file_args = {config: "--config="} if config else {},
        bsp_games = _GAMES,
        args = ["--name=" + arm] + extra_args,
        message = message,
        tags = tags,
    )

def chess_model(name, init_from = None, snapshots = False):
    """`snapshots`: also keep the model at SNAPSHOT_PERCENTS of its steps and evaluate each like the final one
    (rows named <name>, their `training_percent` column the snapshot's; <run>.at<percent>pct.bsp.csv)."""
    for seed in all_seeds(SEED_PLAN["chess_bsp_coverage"]):
        tags = seed_tags(seed, SEED_PLAN["chess_bsp_coverage"], in_wildcard = name in CPU_MODELS)
        run = seeded_lm(
            name = name,
            seed = seed,
            seeds = SEED_PLAN["chess_bsp_coverage"],
            in_wildcard = name in CPU_MODELS,
            base = "base.textproto",
            scales = SCALE_CONFIGS,
            overlays = ["models/%s.textproto" % name],
            data = _GAMES,
            tokenizer = "//datasets/chess:vocabulary.chars",
            init_from = init_from,
            snapshot_percents = SNAPSHOT_PERCENTS if snapshots else [],
        )
        for percent in (SNAPSHOT_PERCENTS if snapshots else []):
            snapshot = "%s_at%dpct" % (run, percent)
            checkpoint_snapshot(
                name = snapshot,
                run = ":" + run,
                percent = percent,
                tags = tags,
            )
            _evaluate_bsp(
                snapshot + "_bsp",
                "%s.at%dpct" % (run, percent),
                name,
                "BSP coverage of %s after %d%% of its training" % (run, percent),
                checkpoint = ":" + snapshot,
                extra_args = ["--training_percent=%d" % percent],
                tags = tags,
            )
        _evaluate_bsp(run + "_bsp", run, name, "BSP coverage of " + run, checkpoint = ":" + run, tags = tags)
        if name not in MIXTURES:
            continue
        mapped = seed in _first_seeds()
        tool_run(
            name = run + "_experts",
            tool = "//analysis/expert_geometry:expert_encoder_map",
            outs = [run + ".experts.csv"] + ([run + ".expert_map.csv"] if mapped else []),
            out_flags = ["--out="] + (["--map_out="] if mapped else []),
            checkpoint_args = {":" + run: "--checkpoint="},
            args = ["--name=" + name] + by_scale(_ROWS_PER_EXPERT),
            message = "Expert encoder rows of " + run,
            tags = tags,
        )

def chess_control(name, model):
    for seed in all_seeds(SEED_PLAN["chess_bsp_coverage"]):
        run = seeded_name(name, seed)
        _evaluate_bsp(
            run + "_bsp",
            run,
            name,
            "BSP coverage of " + run,
            config = ":%s_config" % seeded_name(model, seed),
            tags = seed_tags(seed, SEED_PLAN["chess_bsp_coverage"], in_wildcard = model in CPU_CONTROLS),
        )

# A user's nanoGPT chess model (--repo_env=CHESS_MODEL=/path/to/ckpt.pt: Karvonen's ChessGPT, MoE-X Sec. 5.1's
# base), imported by //datasets/pretrained:chess_model and measured as the arm `chessgpt` at every scale: one
# checkpoint, so one seed (its imported runtime.seed) and no interval of its own; no claim names it.
PRETRAINED_ARM = "chessgpt"

def pretrained_chess_arm():
    """<PRETRAINED_ARM>_bsp: evaluate_bsp on the user's chess model, when CHESS_MODEL is set."""
    if not CHESS_MODEL:
        return
    _evaluate_bsp(
        PRETRAINED_ARM + "_bsp",
        PRETRAINED_ARM,
        PRETRAINED_ARM,
        "BSP coverage of the user's chess model (CHESS_MODEL)",
        checkpoint = "//datasets/pretrained:chess_model",
    )

def _pretrained_files(suffix):
    return [":%s%s" % (PRETRAINED_ARM, suffix)] if CHESS_MODEL else []

def pretrained_chess_manifests():
    """The import manifest of the user's chess model (CHESS_MODEL), named in the report's manifest."""
    return ["//datasets/pretrained:chess_model.manifest.textproto"] if CHESS_MODEL else []

def chess_runs(models):
    """select() of the active scale's trained models and their merged configs (the runs table's inputs).

    models: scale -> the models trained there."""
    return by_scale({
        scale: [":" + seeded_name(m, s) + suffix for s in seeds for m in models[scale] for suffix in ["", "_config"]]
        for scale, seeds in SEED_PLAN["chess_bsp_coverage"].items()
    })

def chess_checkpoints(models):
    """select() of the active scale's trained models (their logs make the training curves)."""
    return by_scale({
        scale: [":" + seeded_name(m, s) for s in seeds for m in models[scale]]
        for scale, seeds in SEED_PLAN["chess_bsp_coverage"].items()
    })

def chess_evaluations(models, controls, suffix):
    """select() of the active scale's evaluate_bsp tables (suffix ".bsp.csv" or ".board.csv"): the models, their
    random controls, then the user's chess model."""
    return by_scale({
        scale: [":" + seeded_name(m, s) + suffix for s in seeds for m in models[scale]] +
               [":" + seeded_name("random_" + m, s) + suffix for s in seeds for m in controls[scale]] +
               _pretrained_files(suffix)
        for scale, seeds in SEED_PLAN["chess_bsp_coverage"].items()
    })

def dynamics_tables(model, suffix):
    """select() of `model`'s evaluate_bsp tables (suffix ".bsp.csv" or ".board.csv") over its training at the
    active scale's seeds: each snapshot's, then the finished run's (MoE-X Fig. 10)."""
    return by_scale({
        scale: [
            ":%s.at%dpct%s" % (seeded_name(model, s), percent, suffix)
            for s in seeds
            for percent in SNAPSHOT_PERCENTS
        ] + [":" + seeded_name(model, s) + suffix for s in seeds]
        for scale, seeds in SEED_PLAN["chess_bsp_coverage"].items()
    })

def expert_tables(models, suffix):
    """select() of the active scale's expert_encoder_map tables: ".experts.csv" of every seed, ".expert_map.csv"
    of the scale's first seed, for the mixtures among `models`."""
    return by_scale({
        scale: [
            ":" + seeded_name(m, s) + suffix
            for s in (seeds if suffix == ".experts.csv" else seeds[:1])
            for m in models[scale]
            if m in MIXTURES
        ]
        for scale, seeds in SEED_PLAN["chess_bsp_coverage"].items()
    })

def arms_not_run(models, controls, judged):
    """select() of the judged arms (models and random_<control>s) the active scale does not train: their claims
    read NOT TESTABLE."""
    return by_scale({
        scale: [m for m in judged if m not in models[scale]] +
               ["random_" + m for m in controls["paper"] if m not in controls[scale]]
        for scale in SEED_PLAN["chess_bsp_coverage"]
    })
