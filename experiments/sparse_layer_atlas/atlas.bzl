"""The sparse-layer atlas: every sparse replacement layer of the project fitted to the same block of the same
base, measured by the same tools, one row per layer x K x seed. The Transcoder, Skip Transcoder and MxD grid
and the TopK SAE at FEATURE_K are //experiments/mxd_frontier's nodes (shared, not refitted); the atlas adds
the TopK SAE at the rest of the grid and the SAE variants researchers compare today: BatchTopK (Bussmann et
al., arXiv:2412.06410), ReLU + L1 (Bricken et al. 2023 with the decoder-norm-weighted penalty) and JumpReLU
(Rajamanoharan et al., arXiv:2407.14435), each an SAE on the FFN output. This file holds the atlas's layers as
data for the study rule (//pipelines/study): ATLAS_FITS, ATLAS_LAYERS, PROBED_LAYERS, OWN_FEATURE_LAYERS,
ABSORPTION_LAYERS, ATLAS_BASE_SCALES and steering_tables()."""

load("//base/scale:scale.bzl", "SCALES", "by_scale")
load("//base/seeds:seeds.bzl", "SEED_PLAN")
load("//experiments/mxd_frontier:mxd.bzl", "FEATURE_K", "K_GRID", "METHODS", "base_models", "feature_layers")
load("//pipelines/study:study.bzl", "fit", "literal")

# The frontier's cache of each base: the atlas fits the same rows.
FRONTIER_CACHE = "//experiments/mxd_frontier:{base}_activations"

def _frontier_fit(name):
    """mxd_frontier's fit `name` of the base and seed (a shared node)."""
    return "//experiments/mxd_frontier:{base}_%s_s{seed}" % name

# The atlas reads the frontier's fits seed by seed, so its seeds are the frontier's.
(SEED_PLAN["sparse_layer_atlas"] == SEED_PLAN["mxd_frontier"]) or fail(
    "the atlas reads mxd_frontier's fits seed by seed: SEED_PLAN's two entries must agree",
)

# The SAEs whose rule has a K (the target L0): <base>_<label>_k<K>, every K of K_GRID. The TopK SAE at
# FEATURE_K is the frontier's probing baseline, <base>_sae_k<FEATURE_K>.
K_SAES = {
    "sae": "topk_sae",
    "batch_topk_sae": "batch_topk_sae",
}

# The penalised SAEs' lambdas per scale, <base>_<rule>_<label>, chosen on 2026-11-28 before any run of the
# atlas's tables from a pilot of L0 against lambda on seed 1 of the GELU base (trainer summaries; the TopK SAEs'
# L0 range is 2 to 32 at cpu, 2 to 27 at smoke). RELU_L1 adds lambda mean_b sum_n a_bn |d_n| to the normalised
# MSE: cpu L0 2.0 at 0.03, 3.9 at 0.01, 17 at 0.003, 192 at 0.001 (1.5 at 0.1); smoke 1.1 at 1e-3, 21 at 1e-4,
# 27-28 at 1e-5 and below. JUMP_RELU adds lambda mean_b L0_b, which reaches the codes only through the
# threshold (arXiv:2407.14435 Eq. 12); Adam moves log theta by about the learning rate per step, so in 600 steps
# the threshold stays near its start and sets L0, not lambda: from the paper's 0.001, L0 was 1839 of 4,096 units
# at both lambda = 1 and 0.001. The JumpReLU fits therefore start from thresholds chosen by a second pilot
# (2026-11-29, seed 1 of the cpu GELU base, lambda 0.01, L0 from the summaries): initial threshold 0.03 -> L0
# 1757 (1757 at lambda 1 too), 0.1 -> 1520 (1519 at lambda 1), 0.3 -> 655, 1 -> 77, 3 -> 10.0, 10 -> 1.2. Log-log
# interpolation puts L0 24, 8, 5 and 3 (inside the TopK SAEs' range 2-32, whose ends a seed's fit would leave by
# chance) at about 1.9, 3.4, 4.5 and 6 (JUMP_RELU_THRESHOLDS);
# each is paired with its own lambda (0.001, 0.1, 0.3, 1; none of the ReLU SAE's), so the tables' sparsity_penalty
# column names the setting.
# Paper scale and the SwiGLU base: the same values, untested there. A fit whose L0 falls outside the TopK SAEs'
# range is listed, not compared (analysis/replacement:frontier_gap).
PENALISED_SAES = {
    "relu_sae": {
        "l1a": {"smoke": "0.0005", "cpu": "0.03", "paper": "0.03"},
        "l1b": {"smoke": "0.0003", "cpu": "0.01", "paper": "0.01"},
        "l1c": {"smoke": "0.0002", "cpu": "0.005", "paper": "0.005"},
        "l1d": {"smoke": "0.0001", "cpu": "0.003", "paper": "0.003"},
    },
    "jump_relu_sae": {
        "t1": {"smoke": "0.001", "cpu": "0.001", "paper": "0.001"},
        "t2": {"smoke": "0.1", "cpu": "0.1", "paper": "0.1"},
        "t3": {"smoke": "0.3", "cpu": "0.3", "paper": "0.3"},
        "t4": {"smoke": "1", "cpu": "1", "paper": "1"},
    },
}

# The JumpReLU fits' initial thresholds (model.replacement.jump_relu_initial_threshold): expected L0 about 24, 8, 5
# and 3 at cpu (the pilot above), the same at paper scale; at smoke the paper's 0.001, as the 20-step smoke bases'
# codes are far smaller (at 3.4 no unit of the smoke GELU base's t2 fired on the steering text).
JUMP_RELU_THRESHOLDS = {
    label: {"smoke": "0.001", "cpu": value, "paper": value}
    for label, value in {
        "t1": "1.9",
        "t2": "3.4",
        "t3": "4.5",
        "t4": "6",
    }.items()
}

# The penalised SAE of each rule that the probing run reads beside the K = FEATURE_K layers: the setting whose
# expected L0 is nearest FEATURE_K at cpu (fixed with the lambdas and thresholds, before the run).
PROBED_PENALTY = {
    "relu_sae": "l1c",
    "jump_relu_sae": "t2",
}

def _k_sae_name(label, k):
    return "%s_k%d" % (label, k)

def _atlas_fits():
    fits = {}
    for label, ffn in K_SAES.items():
        for k in K_GRID:
            if label == "sae" and k == FEATURE_K:
                continue  # the frontier's probing baseline
            fits[_k_sae_name(label, k)] = fit(ffn, top_k = k, on_output = True, cache = FRONTIER_CACHE)
    for ffn, penalties in PENALISED_SAES.items():
        for label, penalty in penalties.items():
            fits["%s_%s" % (ffn, label)] = fit(
                ffn,
                on_output = True,
                cache = FRONTIER_CACHE,
                replacement = dict(
                    {"sparsity_penalty": {scale: literal(value) for scale, value in penalty.items()}},
                    **({"jump_relu_initial_threshold": {scale: literal(value) for scale, value in JUMP_RELU_THRESHOLDS[label].items()}} if ffn == "jump_relu_sae" else {})
                ),
            )
    return fits

# The atlas's own SAEs per base and seed, <base>_<fit>_s<seed>.
ATLAS_FITS = _atlas_fits()

# Every layer the atlas evaluates, in its tables' order: the frontier's layers, then the SAEs (the TopK SAE at
# FEATURE_K the frontier's).
ATLAS_LAYERS = [_frontier_fit("%s_k%d" % (method, k)) for method in METHODS for k in K_GRID] + [
    _frontier_fit(_k_sae_name(label, k)) if label == "sae" and k == FEATURE_K else _k_sae_name(label, k)
    for label in K_SAES
    for k in K_GRID
] + ["%s_%s" % (ffn, label) for ffn, penalties in PENALISED_SAES.items() for label in penalties]

# The layers the atlas probes: the frontier's at FEATURE_K and its TopK SAE, the BatchTopK SAE at FEATURE_K, and
# each penalised SAE at PROBED_PENALTY.
# The atlas's own SAEs among them: steered here (the frontier's are steered by //experiments/steering).
OWN_FEATURE_LAYERS = [_k_sae_name("batch_topk_sae", FEATURE_K)] + [
    "%s_%s" % (ffn, label)
    for ffn, label in PROBED_PENALTY.items()
]

PROBED_LAYERS = feature_layers() + OWN_FEATURE_LAYERS

# The SAEs whose feature absorption the atlas measures (analysis/probing:feature_absorption; Chanin et al.,
# arXiv:2409.14507): the TopK SAE at every K (absorption against L0) and the probed SAE of each other rule. The
# Transcoders and MxD are left out: the first-letter probe lives in the FFN output, where only an SAE's decoder
# rows are.
ABSORPTION_LAYERS = [
    _frontier_fit(_k_sae_name("sae", k)) if k == FEATURE_K else _k_sae_name("sae", k)
    for k in K_GRID
] + OWN_FEATURE_LAYERS

# The scales that measure each base (the study's base_scales): empty, so every scale measures both bases (and a
# user's pretrained model, HF_MODEL, is the only base). Amendment of 2026-11-30 (claims.textproto): measured
# alone on an idle machine, the atlas's own actions on the SwiGLU base held 31.3 min at cea46d4, and on the GELU
# base 48.1 min at 1d37078: 79.4 min for both, under issue 48's 90 minutes beyond the MxD experiments' nodes.
ATLAS_BASE_SCALES = {}

# The atlas's steering table joins //experiments/steering's files seed by seed: both read the same seeds.
(SEED_PLAN["steering"] == SEED_PLAN["sparse_layer_atlas"]) or fail("steering_tables() needs the atlas's seeds to be steering's")

def steering_tables():
    """select() of //experiments/steering's table files (the frontier's layers and the base neurons), per base and
    seed of the active scale: the atlas's steering table adds its own SAEs' rows to them."""
    return by_scale({
        scale: [
            "//experiments/steering:%s_steering_s%d.csv" % (base.name, seed)
            for seed in seeds
            for base in base_models()
            if scale in ATLAS_BASE_SCALES.get(base.name, SCALES)
        ]
        for scale, seeds in SEED_PLAN["steering"].items()
    })
