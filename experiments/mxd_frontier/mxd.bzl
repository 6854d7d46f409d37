"""The MxD experiments (arXiv:2505.21364; mxd_frontier, sparse_probing, steering, and the atlas that reads their
fits) as data for the study rule (//pipelines/study): the bases, the fits every base gets per seed (MXD_FITS:
<base>_<fit>_s<seed>), the evaluations over them (frontier(), faithfulness, the App. B and C comparisons,
feature_analysis() for probing and steering) and the user's SAELens SAE as an extra arm."""

load("@hf_model//:settings.bzl", "HF_MODEL", "HF_MODEL_BASE", "HF_MODEL_LAYER")
load("@saelens_sae//:settings.bzl", "SAELENS_BASE", "SAELENS_SAE")
load("//base/scale:scale.bzl", "by_scale")
load("//base/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags")
load("//pipelines/pretrained:pretrained.bzl", "saelens_fit")
load("//pipelines/study:study.bzl", "fit", "fits_evaluation", "literal", "pooled_evaluation", "run_fits_evaluation")

FIT_SCALES = {
    "smoke": "//experiments/mxd_frontier:fit_smoke.textproto",
    "cpu": "//experiments/mxd_frontier:fit_cpu.textproto",
    "paper": "//experiments/mxd_frontier:fit_paper.textproto",
}

# Every fit's settings after FIT_SCALES' (its generated overlay last).
FIT_OVERLAYS = ["//experiments/mxd_frontier:fit.textproto"]

# The MxD reports' first line when the base is a user's pretrained model (experiment_report's pretrained_line).
PRETRAINED_BASE_LINE = ("Base model: the pretrained %s of HF_MODEL, in place of our base with its FFN (GELU for " +
                        "GPT-2 and GPT-NeoX, SwiGLU for Llama)")

def base_models():
    """The base LMs the MxD experiments (frontier, probing, steering) fit and compare layers on: our GELU-MLP
    (GPT-2 / Pythia analogue) and SwiGLU (Llama analogue) models, or, with --repo_env=HF_MODEL, the user's
    pretrained model alone (pipelines/pretrained), named by its FFN family so the claims read it as that base.
    Each: name, checkpoint, config (what fits build on), tokens, tokenizer, layer (the replaced block; None: the
    scale's, BUILD.bazel's REPLACED_BLOCK) and extra_results (files the report's manifest records)."""
    if HF_MODEL:
        return [struct(
            name = HF_MODEL_BASE,
            checkpoint = "//pipelines/pretrained:model",
            config = "//pipelines/pretrained:model.textproto",
            tokens = "//pipelines/pretrained:shards",
            tokenizer = "//pipelines/pretrained:model",
            layer = HF_MODEL_LAYER,
            extra_results = ["//pipelines/pretrained:model.manifest.textproto"],
        )]
    return [
        struct(
            name = "gelu",
            checkpoint = "//experiments/lm_baseline",
            config = "//experiments/lm_baseline:config",
            tokens = "//datasets/text:shards",
            tokenizer = "//datasets/text:bpe",
            layer = None,
            extra_results = [],
        ),
        struct(
            name = "swiglu",
            checkpoint = "//experiments/mxd_frontier:swiglu_lm",
            config = "//experiments/mxd_frontier:swiglu_lm_config",
            tokens = "//datasets/text:shards",
            tokenizer = "//datasets/text:bpe",
            layer = None,
            extra_results = [],
        ),
    ]

def bases_not_run():
    """The arms "base=<name>" of our two bases that have no model here (with HF_MODEL, the other family's):
    their claims read NOT TESTABLE."""
    run = [base.name for base in base_models()]
    return ["base=" + name for name in ["gelu", "swiglu"] if name not in run]

def pretrained_manifests():
    """The import manifests of a user's pretrained base (HF_MODEL), named in the reports' manifests."""
    return [f for base in base_models() for f in base.extra_results]

# The grid of Fig. 3 at our scale: active units K per token.
K_GRID = [2, 4, 8, 16, 32]

# The K of the probing and steering layers: the paper's are K = 32 at d = 768, K/d = 0.04 (MxD Sec. 3.2,
# the value from its released code); K = 8 is the grid point nearest that ratio at d = 128.
FEATURE_K = 8

# Parameter-matched layers (MxD Sec. 3.1): Transcoder width = expansion x d; Skip Transcoder = the same plus a d x d
# skip; MxD with H = the base FFN's width and N solved so its parameters equal the Transcoder's ("{base}": the
# base's own encoder family).
METHODS = {
    "tc": "transcoder",
    "stc": "skip_transcoder",
    "mxd": "mxd_{base}",
}

# MxD Fig. 12 (App. B.4.1): the CP-MoE's normalised decoder ranks R / min(H, d), {1/16, 1/4, 1} of the
# spec's suggested five (three fits as in the paper), as <label>: <fraction> ("r1of16" names 1/16).
CP_RANK_FRACTIONS = {
    "r1of16": "0.0625",
    "r1of4": "0.25",
    "r1": "1",
}

# MxD App. B.6.1 (Fig. 18): the ReLU + L1 MxD's penalties lambda per scale, as <label>: {scale: lambda}. The
# penalty's pull against the NMSE depends on the scale (N experts, the NMSE's size, the steps), so each scale's
# grid comes from a pilot of L0 against lambda on seed 1 (2026-11-28), chosen to fall inside the TopK grid's L0
# (2 to 32): smoke L0 7.6, 7.8, 10.4, 29 at 1e-3..1e-6; cpu 20.1 at 0.01, 16.5 at 0.03, 14.5 at 0.1 (0.001 gave
# 36, 0.3 and 1 about 12 at twice the zero-ablated FFN's distance). Paper: around the released code's default
# 1e-5, untested. Fits whose L0 falls outside the TopK grid's range are listed, not compared.
L1_PENALTIES = {
    "l1a": {"smoke": "0.001", "cpu": "0.1", "paper": "0.001"},
    "l1b": {"smoke": "0.0001", "cpu": "0.03", "paper": "0.0001"},
    "l1c": {"smoke": "0.00001", "cpu": "0.01", "paper": "0.00001"},
    "l1d": {"smoke": "0.000001", "cpu": "0.003", "paper": "0.000001"},
}

# MxD App. B.3 (Fig. 11): the frontier at another block, at 4 of the grid's K as the paper's other layers. The
# last block at smoke and cpu (at cpu its FFN costs 0.03-0.06 nats to zero-ablate against block 0's 4.6,
# ffn_ablation.csv: the CE claims then read NOT TESTABLE by control ffn_matters_other_block), block 4 of 12 at
# paper scale (the frontier's is 8).
OTHER_BLOCK = {"smoke": 1, "cpu": 3, "paper": 4}
OTHER_BLOCK_KS = [2, 4, 8, 32]

# MxD App. B.6.2 (Fig. 19): the encoders each base's MxD is compared against (its own, mxd_<base>, is the
# frontier grid's): ReLU on the GELU base; ReLU-MLP and GELU-MLP on the SwiGLU base (the paper's Llama panel).
ENCODER_ALTERNATIVES = {
    "gelu": ["mxd_relu"],
    "swiglu": ["mxd_gelu", "mxd_relu"],
}

def _names(bases):
    return [base.name for base in bases]

def cp_rank_bases():
    """The bases with the CP-MoE comparison: the GELU-MLP family (ours, or a pretrained GPT-2-like model)."""
    return [base for base in base_models() if base.name == "gelu"]

def l1_bases():
    """The bases with the ReLU + L1 comparison: the GELU-MLP family (the paper's GPT-2)."""
    return [base for base in base_models() if base.name == "gelu"]

def other_block_bases():
    """The bases with the other block's frontier: the GELU-MLP family (ours, or a pretrained GPT-2-like model)."""
    return [base for base in base_models() if base.name == "gelu" and base.layer == None]

def _grid(prefix, ks, **kwargs):
    return {"%s%s_k%d" % (prefix, method, k): fit(ffn, top_k = k, **kwargs) for method, ffn in METHODS.items() for k in ks}

def _grid_names(prefix, ks):
    return ["%s%s_k%d" % (prefix, method, k) for method in METHODS for k in ks]

def _mxd_fits():
    fits = {}

    # The Transcoder, Skip Transcoder and MxD grid of Fig. 3.
    fits.update(_grid("", K_GRID))

    # The TopK SAE on the FFN output (the probing and steering baseline, MxD Sec. 3.2).
    fits["sae_k%d" % FEATURE_K] = fit("topk_sae", top_k = FEATURE_K, on_output = True)

    # The MxD trained with a random K' per step (App. C.2).
    fits["mxd_randk_k%d" % FEATURE_K] = fit("mxd_{base}", top_k = FEATURE_K, layer_options = {"random_k": True})

    # The parameter-matched CP-MoEs of Fig. 12.
    for label, fraction in CP_RANK_FRACTIONS.items():
        fits["cp_%s_k%d" % (label, FEATURE_K)] = fit(
            "cp_moe",
            top_k = FEATURE_K,
            replacement = {"cp_rank_fraction": literal(fraction)},
            bases = _names(cp_rank_bases()),
        )

    # The ReLU + L1 MxDs of Fig. 18 (K = 0: the penalty sets the sparsity).
    for label, penalty in L1_PENALTIES.items():
        fits["mxd_" + label] = fit(
            "mxd_{base}",
            replacement = {
                "sparsity": literal("RELU_L1"),
                "sparsity_penalty": {scale: literal(value) for scale, value in penalty.items()},
            },
            bases = _names(l1_bases()),
        )

    # The other block's grid of Fig. 11.
    fits.update(_grid(
        "other_block_",
        OTHER_BLOCK_KS,
        cache = "activations_other_block",
        layer = OTHER_BLOCK,
        bases = _names(other_block_bases()),
    ))

    # The encoder alternatives of Fig. 19.
    for ffn in ["mxd_relu", "mxd_gelu"]:
        fits["%s_k%d" % (ffn, FEATURE_K)] = fit(
            ffn,
            top_k = FEATURE_K,
            bases = [b for b, alternatives in ENCODER_ALTERNATIVES.items() if ffn in alternatives],
        )
    return fits

# Every fit of mxd_frontier per base and seed, <base>_<fit>_s<seed>.
MXD_FITS = _mxd_fits()

def frontier(fits, bases = None, cache = "activations"):
    """CE (base, zero-ablated, each fit), CE recovered, NMSE, L0, dead and dense units and MxD expert rank of every
    fit (.csv), each fit's unit firing-frequency histogram (_units.csv, MxD Fig. 20), on the held-out test split
    (analysis/replacement:evaluate_replacements); every fit on the same test batches, so arms pair within a seed."""
    return fits_evaluation(
        tool = "//analysis/replacement:evaluate_replacements",
        fits = fits,
        outs = {".csv": "--out=", "_units.csv": "--unit_frequencies_out="},
        bases = bases,
        cache = cache,
        token_args = {"--tokens=": "test"},
        message = "Evaluating the %s replacement frontier",
    )

def frontier_gap(table, bases = None):
    """Each seed's penalised fits against that seed's TopK frontier interpolated at their L0
    (analysis/replacement:frontier_gap) over every seed's `table` at once, so a level with any seed's fit outside
    its TopK range is left out at every seed."""
    return pooled_evaluation(
        tool = "//analysis/replacement:frontier_gap",
        inputs = {"--frontier=": table},
        bases = bases,
        message = "Placing the %s fits against the TopK frontier",
    )

# The evaluations of mxd_frontier per base and seed, <base>_<evaluation>_s<seed>.csv, and per base.
MXD_EVALUATIONS = {
    "frontier": frontier(_grid_names("", K_GRID)),
    # Each fit's next-token KL from the base model, top-1 agreement and greedy prefix match beside the zero-ablated
    # FFN's; _prefix.csv: the prefix-match curves, t = 1..32 (MxD App. B.1, Figs. 6-7); _examples.txt: the first
    # prompts' continuations at K = FEATURE_K (Figs. 8-9) (analysis/replacement:output_faithfulness).
    "faithfulness": fits_evaluation(
        tool = "//analysis/replacement:output_faithfulness",
        fits = _grid_names("", K_GRID),
        outs = {".csv": "--out=", "_prefix.csv": "--prefix_match_out=", "_examples.txt": "--examples_out="},
        token_args = {"--tokens=": "test"},
        tokenizer = True,
        # The paper samples 1000 snippets at full scale (the spec's recommendation); 128 prompts below it.
        args = ["--examples_k=%d" % FEATURE_K] + by_scale({
            "smoke": [],
            "cpu": [],
            "paper": ["--prompt_batches=32"],
        }),
        message = "Comparing the %s fits' outputs with the base model's",
    ),
    # App. C.2 (Figs. 21-22): the random-K' MxD beside the default one.
    "random_k": frontier(["mxd_k%d" % FEATURE_K, "mxd_randk_k%d" % FEATURE_K]),
    # App. B.4.1 (Fig. 12): the CP-MoEs beside the grid's MxD and Transcoder at the same K (measured expert rank).
    "cp_rank": frontier(
        ["cp_%s_k%d" % (label, FEATURE_K) for label in CP_RANK_FRACTIONS] + ["mxd_k%d" % FEATURE_K, "tc_k%d" % FEATURE_K],
    ),
    # App. B.6.1 (Fig. 18): the ReLU + L1 MxDs beside the TopK grid's MxDs at every K, and their gap to it.
    "relu_l1": frontier(["mxd_" + label for label in L1_PENALTIES] + ["mxd_k%d" % k for k in K_GRID]),
    "relu_l1_gap": frontier_gap("relu_l1/.csv", bases = _names(l1_bases())),
    # App. B.3 (Fig. 11): the other block's frontier (CE with that block's FFN replaced or zero-ablated).
    "other_block": frontier(_grid_names("other_block_", OTHER_BLOCK_KS), cache = "activations_other_block"),
    # App. B.6.2 (Fig. 19): the MxD with each alternative encoder beside the grid's MxD with the base's own.
    "encoders": frontier({
        base.name: ["mxd_k%d" % FEATURE_K] + ["%s_k%d" % (ffn, FEATURE_K) for ffn in ENCODER_ALTERNATIVES.get(base.name, [])]
        for base in base_models()
    }),
    # App. C.3 (Figs. 23-24): the first 8 units of the MxD and the Transcoder at FEATURE_K (firing rate, the modal
    # token's share of the firings) and their top contexts on the test split (analysis/replacement:expert_tokens).
    "expert_tokens": fits_evaluation(
        tool = "//analysis/replacement:expert_tokens",
        fits = ["mxd_k%d" % FEATURE_K, "tc_k%d" % FEATURE_K],
        outs = {".csv": "--out=", ".txt": "--listing_out="},
        token_args = {"--tokens=": "test"},
        tokenizer = True,
        message = "Listing the first units of the %s fits",
    ),
}

def feature_layers():
    """The fits of mxd_frontier the probing and steering experiments compare: TC, STC and MxD at FEATURE_K and the
    TopK SAE, as labels of any package ("{base}", "{seed}")."""
    return ["//experiments/mxd_frontier:{base}_%s_k%d_s{seed}" % (method, FEATURE_K) for method in METHODS] + [
        "//experiments/mxd_frontier:{base}_sae_k%d_s{seed}" % FEATURE_K,
    ]

# The steering tool's settings per scale (MxD arXiv:2505.21364 Fig. 5 at our scale): //experiments/steering's, and
# the atlas's steering of its own SAEs on the same terms.
STEERING_ARGS = by_scale({
    "smoke": [
        "--units=3",
        "--samples=2",
        "--new_tokens=8",
        "--reference_batches=2",
        "--calibration_units=2",
        "--sweep_batches=1",
        "--alpha_grid=1,4",
    ],
    "cpu": [
        "--units=32",
        "--samples=4",
        "--new_tokens=32",
    ],
    "paper": [
        "--units=100",
        "--samples=10",
        "--new_tokens=32",
    ],
})

def feature_analysis(tool, fits, outs, **kwargs):
    """`tool` (sparse_probe or steer) over the base model and each seed's `fits` with --seed=<seed> (its random
    control and splits, or samples); kwargs as fits_evaluation's."""
    return fits_evaluation(
        tool = tool,
        fits = fits,
        outs = outs,
        seed_flag = "--seed=",
        tokenizer = True,
        message = "Running %s on the %%s features" % Label(tool).name,
        **kwargs
    )

def _saelens_base():
    """The base the user's SAELens SAE (SAELENS_SAE) reads: SAELENS_BASE, else the first base; None when unset."""
    if not SAELENS_SAE:
        return None
    bases = base_models()
    if not SAELENS_BASE:
        return bases[0]
    named = [base for base in bases if base.name == SAELENS_BASE]
    if not named:
        fail("SAELENS_BASE=%s is not a base of the MxD experiments here (%s)" % (
            SAELENS_BASE,
            ", ".join([base.name for base in bases]),
        ))
    return named[0]

def saelens_arm():
    """With --repo_env=SAELENS_SAE=/path/to/sae_dir: the user's SAELens SAE imported onto its base
    (saelens_<base>.pt, and saelens_<base>.txt: its files' SHA-256 and cfg.json) and measured by the frontier's
    own evaluation on the same held-out batches as our fits (saelens_<base>_frontier.csv, _units.csv). Its rows
    carry the base name <base>_saelens, so no claim on our fits reads them: one fit, n = 1."""
    base = _saelens_base()
    if not base:
        return
    saelens_fit(
        name = "saelens_" + base.name,
        sae = "@saelens_sae//:files",
        base = base.checkpoint,
    )

    # The frontier's own evaluation (same tool, batches and metrics); tagged as the first seed's nodes are.
    run_fits_evaluation(
        "saelens_%s_frontier" % base.name,
        MXD_EVALUATIONS["frontier"],
        base,
        [":saelens_" + base.name],
        tags = seed_tags(all_seeds(SEED_PLAN["mxd_frontier"])[0], SEED_PLAN["mxd_frontier"]),
        base_name = base.name + "_saelens",
    )

def saelens_files(suffix):
    """The SAELens arm's file with `suffix` ("_frontier.csv", "_frontier_units.csv", ".txt"), or none."""
    base = _saelens_base()
    return [":saelens_%s%s" % (base.name, suffix)] if base else []
