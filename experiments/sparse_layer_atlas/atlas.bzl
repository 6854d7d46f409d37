"""The sparse-layer atlas: every sparse replacement layer of the project fitted to the same block of the same
base, measured by the same tools, one row per layer x K x seed. The Transcoder, Skip Transcoder and MxD grid
and the TopK SAE at FEATURE_K are //experiments/mxd_frontier's nodes (shared, not refitted); the atlas adds
the TopK SAE at the rest of the grid and the SAE variants researchers compare today: BatchTopK (Bussmann et
al., arXiv:2412.06410), ReLU + L1 (Bricken et al. 2023 with the decoder-norm-weighted penalty) and JumpReLU
(Rajamanoharan et al., arXiv:2407.14435), each an SAE on the FFN output."""

load("//experiments/mxd_frontier:mxd.bzl", "FEATURE_K", "K_GRID", "feature_layers", "frontier_evaluation", "frontier_gap", "replacement_fit")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_labels", "seeded_name")
load("//tools/train:summary_table.bzl", "summary_table")
load("//tools/train:tool_run.bzl", "tool_run")

MXD_FRONTIER = "//experiments/mxd_frontier:"

# The atlas reads the frontier's fits seed by seed, so its seeds are the frontier's (SEED_PLAN says so).
SEEDS = SEED_PLAN["sparse_layer_atlas"]

# The frontier's layers (mxd_frontier's replacement_grid methods) on the FFN, at every K of K_GRID.
FRONTIER_METHODS = ["tc", "stc", "mxd"]

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
# threshold (arXiv:2407.14435 Eq. 12); the threshold starts at 0.001 and Adam moves its log by about the
# learning rate per step, so at 600 steps it cannot rise to the codes' scale: the pilot's L0 was 1839 of 4,096
# units at both lambda = 1 and 0.001. Two lambdas three decades apart show that; a threshold initialised from
# the activation scale needs a trainer change. Paper scale: the cpu values, untested there. A fit whose L0
# falls outside the TopK SAEs' range is listed, not compared (analysis/replacement:frontier_gap).
PENALISED_SAES = {
    "relu_sae": {
        "l1a": {"smoke": "0.0005", "cpu": "0.03", "paper": "0.03"},
        "l1b": {"smoke": "0.0003", "cpu": "0.01", "paper": "0.01"},
        "l1c": {"smoke": "0.0002", "cpu": "0.005", "paper": "0.005"},
        "l1d": {"smoke": "0.0001", "cpu": "0.003", "paper": "0.003"},
    },
    "jump_relu_sae": {
        "l0a": {"smoke": "1", "cpu": "1", "paper": "1"},
        "l0b": {"smoke": "0.001", "cpu": "0.001", "paper": "0.001"},
    },
}

# The penalised SAE of each rule that the probing run reads beside the K = FEATURE_K layers: the lambda whose
# expected L0 is nearest FEATURE_K at cpu (fixed with the lambdas, before the run); JumpReLU's two are alike.
PROBED_PENALTY = {
    "relu_sae": "l1c",
    "jump_relu_sae": "l0a",
}

def _check_seeds():
    if SEEDS != SEED_PLAN["mxd_frontier"]:
        fail("the atlas reads mxd_frontier's fits seed by seed: SEED_PLAN's two entries must agree")

def atlas_fits(base, seed):
    """Declares the atlas's own SAEs of `seed` on `base` (an mxd.bzl base_models() entry) and returns the
    labels of every layer the atlas evaluates at that seed: the frontier's layers, then the SAEs."""
    _check_seeds()
    labels = [
        MXD_FRONTIER + seeded_name("%s_%s_k%d" % (base.name, method, k), seed)
        for method in FRONTIER_METHODS
        for k in K_GRID
    ]
    fit_args = dict(
        base = base.checkpoint,
        base_config = base.config,
        activations = MXD_FRONTIER + base.name + "_activations",
        seed = seed,
        on_output = True,
        layer = base.layer,
    )
    for label, ffn in K_SAES.items():
        for k in K_GRID:
            name = seeded_name("%s_%s_k%d" % (base.name, label, k), seed)
            if label == "sae" and k == FEATURE_K:
                labels.append(MXD_FRONTIER + name)
                continue
            replacement_fit(name = name, ffn = ffn, top_k = k, **fit_args)
            labels.append(":" + name)
    for ffn, penalties in PENALISED_SAES.items():
        for label, penalty in penalties.items():
            name = seeded_name("%s_%s_%s" % (base.name, ffn, label), seed)
            replacement_fit(name = name, ffn = ffn, top_k = 0, sae_penalty = penalty, **fit_args)
            labels.append(":" + name)
    return labels

def probed_layers(base_name, seed):
    """The layers of `seed` the atlas probes: the frontier's at FEATURE_K and its TopK SAE (feature_layers),
    the BatchTopK SAE at FEATURE_K, and each penalised SAE at PROBED_PENALTY."""
    return feature_layers(base_name, seed) + [
        "//experiments/sparse_layer_atlas:" + seeded_name("%s_batch_topk_sae_k%d" % (base_name, FEATURE_K), seed),
    ] + [
        "//experiments/sparse_layer_atlas:" + seeded_name("%s_%s_%s" % (base_name, ffn, label), seed)
        for ffn, label in PROBED_PENALTY.items()
    ]

def atlas(base):
    """Per seed of SEEDS on `base`: the fits (atlas_fits); <base>_atlas_s<seed>.csv and _units.csv, every layer's
    frontier evaluation on the same held-out batches (CE, CE recovered, NMSE, L0, dead and dense fractions,
    parameters); <base>_atlas_s<seed>_cost.csv, each fit's parameters, forward FLOPs per
    token and fitting throughput from its trainer summary. Then <base>_atlas_gap.csv: every non-TopK SAE of every
seed against the TopK SAE's frontier of its seed at its own L0 (frontier_gap, over all seeds at once), and
<base>_atlas_usefulness.csv: each probed fit's mean probing F1 beside its CE recovered, NMSE and L0
(analysis/replacement:probing_vs_fidelity; the probing runs are the BUILD file's <base>_atlas_probe)."""
    for seed in all_seeds(SEEDS):
        layers = atlas_fits(base, seed)
        evaluation = seeded_name("%s_atlas" % base.name, seed)
        frontier_evaluation(
            evaluation,
            base.name,
            base.checkpoint,
            MXD_FRONTIER + base.name + "_activations",
            layers,
            base.tokens,
            seed,
        )
        summary_table(
            name = evaluation + "_cost",
            runs = layers + [label + "_config" for label in layers],
            fields = ["parameters", "forward_flops_per_token", "tokens", "wall_seconds", "rows_per_second=tokens_per_second"],
            constant_columns = ["base=" + base.name],
            config_fields = ["method=model.replacement.ffn", "k=model.replacement.top_k", "sparsity_penalty=model.replacement.sparsity_penalty", "seed=runtime.seed"],
            tags = seed_tags(seed, SEEDS),
        )
    frontier_gap(
        name = base.name + "_atlas_gap",
        tables = seeded_labels([base.name + "_atlas"], SEEDS, ".csv"),
        message = "Placing the %s SAE variants against the TopK SAE frontier" % base.name,
    )
    native.filegroup(
        name = base.name + "_atlas_probes",
        srcs = seeded_labels([base.name + "_atlas_probe"], SEEDS, ".csv"),
    )
    tool_run(
        name = base.name + "_atlas_usefulness",
        tool = "//analysis/replacement:probing_vs_fidelity",
        outs = [base.name + "_atlas_usefulness.csv"],
        out_flags = ["--out="],
        file_list_args = {
            ":%s_atlas_gap_tables" % base.name: "--frontier=",
            ":%s_atlas_probes" % base.name: "--probing=",
        },
        cpu_slot = False,
        message = "Setting the %s fits' probing F1 beside their fidelity" % base.name,
    )

def atlas_files(base_names, suffix):
    """select() of every base's <base>_atlas_s<seed><suffix> (or, for suffix "_probe.csv", the probing run
    <base>_atlas_probe_s<seed>.csv; for "_gap.csv" and "_usefulness.csv", the base's one table) at the active scale's seeds."""
    labels = []
    for name in base_names:
        if suffix in ["_gap.csv", "_usefulness.csv"]:
            labels.append(":%s_atlas%s" % (name, suffix))
        elif suffix == "_probe.csv":
            labels = labels + seeded_labels([name + "_atlas_probe"], SEEDS, ".csv")
        else:
            labels = labels + seeded_labels([name + "_atlas"], SEEDS, suffix)
    return labels
