"""The MoE-X (arXiv:2503.07639) chess BSP study's arms as data for the study rule (//pipelines/study): chess_arm (one
chess GPT, models/<name>.textproto over base and scale; a mixture upcycles from its parent at the same seed), the
scale's model sets, and, only when CHESS_MODEL is set, the user's nanoGPT chess model as the arm `chessgpt`: one
checkpoint measured once (no seed), outside the study's seeded nodes."""

load("@chess_model//:settings.bzl", "CHESS_MODEL")
load("//base/scale:scale.bzl", "SCALES")
load("//pipelines/study:study.bzl", "arm", "control")
load("//pipelines/train:tool_run.bzl", "tool_run")

GAMES = "//datasets/chess:games"

# cpu trains the models of MoE-X's headline comparisons only (Table 1 MoE-X vs GELU, Table 4 upcycled vs
# continued, Fig. 9's router): the full set at 6M characters per model and 3 seeds is about 3 h on 2 cores,
# against the 90-minute budget. Claims on the other models read NOT TESTABLE at cpu (the report's arms_not_run),
# and their targets stay out of wildcard builds at every scale (`bazel test //...` builds at smoke, `bazel build
# //...` at cpu); the report still pulls in what its scale needs.
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
ROWS_PER_EXPERT = {
    "smoke": ["--rows_per_expert=32"],
    "cpu": ["--rows_per_expert=256"],
    "paper": ["--rows_per_expert=256"],
}

# MoE-X Fig. 10 (coverage over training): the percents of its steps after which a model keeps a snapshot; two,
# as each costs a BSP evaluation per seed within the cpu budget.
SNAPSHOT_PERCENTS = [50, 75]

def _scales(in_cpu):
    return SCALES if in_cpu else [s for s in SCALES if s != "cpu"]

def chess_arm(name, init_from = None, snapshots = False, judged = True, in_cpu = None, config = None, claim_group = None):
    """models/<name>.textproto (of the calling package) trained on the games; `snapshots`: also kept at
    SNAPSHOT_PERCENTS of its steps; `in_cpu`: whether cpu trains it (None: name in CPU_MODELS); `config` and
    `claim_group`: arm()'s."""
    in_cpu = name in CPU_MODELS if in_cpu == None else in_cpu
    return arm(
        overlays = ["models/%s.textproto" % name],
        config = config,
        wildcard = in_cpu,
        scales = _scales(in_cpu),
        judged = judged,
        claim_group = claim_group,
        init_from = init_from,
        tokenizer = "//datasets/chess:vocabulary.chars",
        snapshot_percents = SNAPSHOT_PERCENTS if snapshots else [],
    )

def random_controls(models, cpu_controls = CPU_CONTROLS):
    """random_<model>: a random initialisation of each model's config, evaluated like the trained models; cpu
    evaluates those in `cpu_controls`."""
    return {
        "random_" + m: control(m, scales = _scales(m in cpu_controls), wildcard = m in cpu_controls)
        for m in models
    }

# A user's nanoGPT chess model (--repo_env=CHESS_MODEL=/path/to/ckpt.pt: Karvonen's ChessGPT, MoE-X Sec. 5.1's
# base), imported by //pipelines/pretrained:chess_model and measured as the arm `chessgpt` at every scale: one
# checkpoint, so one seed (its imported runtime.seed) and no interval of its own; no claim names it.
PRETRAINED_ARM = "chessgpt"

def pretrained_chess_arm():
    """<PRETRAINED_ARM>_bsp: evaluate_bsp on the user's chess model, when CHESS_MODEL is set."""
    if not CHESS_MODEL:
        return
    tool_run(
        name = PRETRAINED_ARM + "_bsp",
        tool = "//analysis/bsp:evaluate_bsp",
        outs = [PRETRAINED_ARM + ".bsp.csv", PRETRAINED_ARM + ".board.csv"],
        out_flags = ["--out=", "--board_tracking_out="],
        checkpoint_args = {"//pipelines/pretrained:chess_model": "--checkpoint="},
        bsp_games = GAMES,
        args = ["--name=" + PRETRAINED_ARM],
        message = "BSP coverage of the user's chess model (CHESS_MODEL)",
    )

def pretrained_files(suffix):
    """The user's chess model's evaluate_bsp table (suffix ".bsp.csv" or ".board.csv"), when CHESS_MODEL is set."""
    return [":%s%s" % (PRETRAINED_ARM, suffix)] if CHESS_MODEL else []

def pretrained_chess_manifests():
    """The import manifest of the user's chess model (CHESS_MODEL), named in the report's manifest."""
    return ["//pipelines/pretrained:chess_model.manifest.textproto"] if CHESS_MODEL else []
