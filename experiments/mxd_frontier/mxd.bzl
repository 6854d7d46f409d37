"""replacement_fit: one replacement layer of the MxD experiments as build targets: <name>_overlay (its
model.replacement), <name>_seed (runtime.seed), <name>_config (base model config + fit settings + overlays)
and <name> (replacement_checkpoint: the fit, cached like any training run). Every fit a claim compares is
built once per seed of //tools/seeds (<name>_s<seed>); so are the frontier evaluations, probes and steering
runs made from them (issue 20: seeds as a build dimension)."""

load("@hf_model//:settings.bzl", "HF_MODEL", "HF_MODEL_BASE", "HF_MODEL_LAYER")
load("@saelens_sae//:settings.bzl", "SAELENS_BASE", "SAELENS_SAE")
load("//datasets/pretrained:pretrained.bzl", "saelens_fit")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_config", "seeded_labels", "seeded_name")
load("//tools/train:lm_checkpoint.bzl", "replacement_checkpoint")
load("//tools/train:tool_run.bzl", "tool_run")

FIT_SCALES = {
    "smoke": "//experiments/mxd_frontier:fit_smoke.textproto",
    "cpu": "//experiments/mxd_frontier:fit_cpu.textproto",
    "paper": "//experiments/mxd_frontier:fit_paper.textproto",
}

# The MxD reports' first line when the base is a user's pretrained model (experiment_report's pretrained_line).
PRETRAINED_BASE_LINE = ("Base model: the pretrained %s of HF_MODEL, in place of our base with its FFN (GELU for " +
                        "GPT-2 and GPT-NeoX, SwiGLU for Llama)")

def base_models():
    """The base LMs the MxD experiments (frontier, probing, steering) fit and compare layers on: our GELU-MLP
    (GPT-2 / Pythia analogue) and SwiGLU (Llama analogue) models, or, with --repo_env=HF_MODEL, the user's
    pretrained model alone (datasets/pretrained), named by its FFN family so the claims read it as that base.
    Each: name, checkpoint, config (what fits build on), tokens, tokenizer, layer (the replaced block; None: the
    scale's, REPLACED_BLOCK) and extra_results (files the report's manifest records)."""
    if HF_MODEL:
        return [struct(
            name = HF_MODEL_BASE,
            checkpoint = "//datasets/pretrained:model",
            config = "//datasets/pretrained:model.textproto",
            tokens = "//datasets/pretrained:shards",
            tokenizer = "//datasets/pretrained:model",
            layer = HF_MODEL_LAYER,
            extra_results = ["//datasets/pretrained:model.manifest.textproto"],
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

def base_files(stem, suffix):
    """select() of every base's <base><stem>_s<seed><suffix> (e.g. "_probe", ".csv") at the active scale's
    seeds, bases in order: a table of the experiment's report."""
    labels = []
    for base in base_models():
        labels = labels + seeded_labels([base.name + stem], SEED_PLAN["mxd_frontier"], suffix)
    return labels

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

def _overlay_cmd(name, ffn, top_k, on_output, layer, cp_rank_fraction, random_k, sparsity, penalty):
    """The genrule command writing replacement_fit's overlay (sparsity: a rule the ffn does not fix by its name,
    or None; penalty: one scale's lambda, or None)."""
    return "printf 'name: \"%s\"\\nmodel { replacement { ffn: \"%s\" top_k: %d on_output: %s%s%s%s }%s }\\n' > $@" % (
        name,
        ffn,
        top_k,
        "true" if on_output else "false",
        "" if layer == None else " layer: %d" % layer,
        "" if cp_rank_fraction == None else " cp_rank_fraction: %s" % cp_rank_fraction,
        ("" if sparsity == None else " sparsity: %s" % sparsity) +
        ("" if penalty == None else " sparsity_penalty: %s" % penalty),
        " layer_options { random_k: true }" if random_k else "",
    )

def _at_scale(value, scale):
    """`value` at `scale`: its entry when it is a {scale: value} dict, else itself."""
    return value[scale] if type(value) == "dict" else value

def replacement_fit(name, base, base_config, activations, ffn, top_k, seed, on_output = False, layer = None, random_k = False, cp_rank_fraction = None, l1_penalty = None, sae_penalty = None):
    """`ffn` (a registry name) with K = top_k fitted to `activations` of the lm_checkpoint `base`; `seed`
    sets the layer's initialisation and the order of the cached rows; `layer`, when set, the replaced block
    ({scale: block} or one for all; else fit_<scale>.textproto's); `random_k`, training with a random K' per
    step (MxD App. C.2);
    `cp_rank_fraction`, the decoder rank of a "cp_moe" as a share of min(H, d) (MxD App. B.4.1);
    `l1_penalty`, {scale: lambda}: ReLU + L1 codes with that penalty instead of TopK (MxD App. B.6.1; top_k 0);
    `sae_penalty`, {scale: lambda}: the penalty of an SAE whose name fixes a penalised rule (relu_sae, jump_relu_sae)."""
    if l1_penalty != None and sae_penalty != None:
        fail("%s: l1_penalty sets the rule, sae_penalty is for an SAE whose name fixes it; give one" % name)
    penalty = l1_penalty if l1_penalty != None else sae_penalty
    per_scale = penalty != None or type(layer) == "dict"
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        cmd = by_scale({
            scale: _overlay_cmd(
                name,
                ffn,
                top_k,
                on_output,
                _at_scale(layer, scale),
                cp_rank_fraction,
                random_k,
                None if l1_penalty == None else "RELU_L1",
                _at_scale(penalty, scale),
            )
            for scale in SCALES
        }) if per_scale else _overlay_cmd(name, ffn, top_k, on_output, layer, cp_rank_fraction, random_k, None, None),
    )
    seeded_config(
        name = name,
        seed = seed,
        base = base_config,
        scales = FIT_SCALES,
        overlays = ["//experiments/mxd_frontier:fit.textproto", ":%s_overlay" % name],
    )
    replacement_checkpoint(
        name = name,
        config = ":%s_config" % name,
        base = base,
        activations = activations,
        tags = seed_tags(seed, SEED_PLAN["mxd_frontier"]),
    )

def replacement_grid(prefix, base, base_config, activations, methods, ks = K_GRID, seeds = all_seeds(SEED_PLAN["mxd_frontier"]), layer = None):
    """replacement_fit for every method x K x seed: <prefix>_<method>_k<K>_s<seed> (every scale's seeds
    are declared; only the active scale's are built). Returns {seed: [target names]}."""
    names = {}
    for seed in seeds:
        names[seed] = []
        for method, ffn in methods.items():
            for k in ks:
                name = seeded_name("%s_%s_k%d" % (prefix, method, k), seed)
                replacement_fit(name, base, base_config, activations, ffn, k, seed, layer = layer)
                names[seed].append(name)
    return names

def _label(target):
    """A fit's label: `target` when it is one, else the package's target of that name."""
    return target if target.startswith("//") or target.startswith(":") else ":" + target

def frontier_evaluation(name, base_name, base, activations, fits, tokens, seed):
    """<name>.csv: CE (base, zero-ablated, each fit), CE recovered, NMSE, l0, dead and dense units and MxD
    expert rank of every fit (`fits`: target names here, or labels), on the held-out test split
    (analysis/replacement:evaluate_replacements), and each fit's seed; <name>_units.csv: each fit's unit firing-frequency histogram (MxD Fig. 20). Every fit is
    evaluated on the same test batches, so arms are paired within a seed."""
    tool_run(
        name = name,
        tool = "//analysis/replacement:evaluate_replacements",
        outs = [name + ".csv", name + "_units.csv"],
        out_flags = ["--out=", "--unit_frequencies_out="],
        checkpoint_args = {base: "--base="},
        tokens = tokens,
        token_args = {"--tokens=": "test"},
        activation_args = {activations: "--activations="},
        args = ["--base_name=" + base_name],
        checkpoints = [_label(f) for f in fits],
        message = "Evaluating the %s replacement frontier" % base_name,
        tags = seed_tags(seed, SEED_PLAN["mxd_frontier"]),
    )

def faithfulness_evaluation(name, base_name, base, fits, tokens, tokenizer, seed):
    """<name>.csv: each fit's next-token KL from the base model, top-1 agreement and greedy prefix match, beside
    the zero-ablated FFN's; <name>_prefix.csv: the prefix-match curves, t = 1..32 (MxD App. B.1, Figs. 6-7);
    <name>_examples.txt: the first prompts' continuations at K = FEATURE_K (Figs. 8-9); on prompts from the
    held-out test split (analysis/replacement:output_faithfulness)."""
    tool_run(
        name = name,
        tool = "//analysis/replacement:output_faithfulness",
        outs = [name + ".csv", name + "_prefix.csv", name + "_examples.txt"],
        out_flags = ["--out=", "--prefix_match_out=", "--examples_out="],
        checkpoint_args = {base: "--base="},
        tokens = tokens,
        tokenizer = tokenizer,
        token_args = {"--tokens=": "test"},
        # The paper samples 1000 snippets at full scale (the spec's recommendation); 128 prompts below it.
        args = ["--base_name=" + base_name, "--examples_k=%d" % FEATURE_K] + by_scale({
            "smoke": [],
            "cpu": [],
            "paper": ["--prompt_batches=32"],
        }),
        checkpoints = [":" + f for f in fits],
        message = "Comparing the %s fits' outputs with the base model's" % base_name,
        tags = seed_tags(seed, SEED_PLAN["mxd_frontier"]),
    )

def frontier_evaluations(name, base_name, base, activations, fits, tokens, tokenizer, faithfulness):
    """frontier_evaluation <name>_s<seed> and faithfulness_evaluation <faithfulness>_s<seed> of each seed's fits
    ({seed: names}, as replacement_grid returns), on the test split of `tokens`."""
    for seed, names in fits.items():
        frontier_evaluation(seeded_name(name, seed), base_name, base, activations, names, tokens, seed)
        faithfulness_evaluation(seeded_name(faithfulness, seed), base_name, base, names, tokens, tokenizer, seed)

# The K of the probing and steering layers: the paper's are K = 32 at d = 768, K/d = 0.04 (MxD Sec. 3.2,
# the value from its released code); K = 8 is the grid point nearest that ratio at d = 128.
FEATURE_K = 8

def sae_fit(name, base, base_config, activations, seeds = all_seeds(SEED_PLAN["mxd_frontier"]), layer = None):
    """A TopK SAE on the FFN output (the probing and steering baseline, MxD Sec. 3.2), K = FEATURE_K, one
    per seed: <name>_s<seed>."""
    for seed in seeds:
        replacement_fit(
            seeded_name(name, seed),
            base,
            base_config,
            activations,
            "topk_sae",
            FEATURE_K,
            seed,
            on_output = True,
            layer = layer,
        )

def random_k_comparison(base, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. C.2 (Figs. 21-22) on one base, per seed: <base>_mxd_randk_k<FEATURE_K>_s<seed>, the MxD at
    FEATURE_K trained with random K', and <base>_random_k_s<seed>, the frontier evaluation of it beside the
    default MxD of the frontier grid at the same K and seed (CE, NMSE, shared-expert rate)."""
    for seed in seeds:
        fit = seeded_name("%s_mxd_randk_k%d" % (base.name, FEATURE_K), seed)
        replacement_fit(
            fit,
            base.checkpoint,
            base.config,
            ":%s_activations" % base.name,
            "mxd_" + base.name,
            FEATURE_K,
            seed,
            layer = base.layer,
            random_k = True,
        )
        frontier_evaluation(
            seeded_name("%s_random_k" % base.name, seed),
            base.name,
            base.checkpoint,
            ":%s_activations" % base.name,
            [seeded_name("%s_mxd_k%d" % (base.name, FEATURE_K), seed), fit],
            base.tokens,
            seed,
        )

# MxD Fig. 12 (App. B.4.1): the CP-MoE's normalised decoder ranks R / min(H, d), {1/16, 1/4, 1} of the
# spec's suggested five (three fits as in the paper), as <label>: <fraction> ("r1of16" names 1/16).
CP_RANK_FRACTIONS = {
    "r1of16": "0.0625",
    "r1of4": "0.25",
    "r1": "1",
}

def cp_rank_comparison(base, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. B.4.1 (Fig. 12) on the GELU base (the paper's GPT-2; the CP-MoE has the GELU encoder), per
    seed: <base>_cp_<label>_k<FEATURE_K>_s<seed>, parameter-matched CP-MoEs at each of CP_RANK_FRACTIONS, and
    <base>_cp_rank_s<seed>, the frontier evaluation of them beside the frontier grid's MxD and Transcoder at the
    same K and seed (CE, NMSE, measured expert rank)."""
    for seed in seeds:
        fits = []
        for label, fraction in CP_RANK_FRACTIONS.items():
            fit = seeded_name("%s_cp_%s_k%d" % (base.name, label, FEATURE_K), seed)
            replacement_fit(
                fit,
                base.checkpoint,
                base.config,
                ":%s_activations" % base.name,
                "cp_moe",
                FEATURE_K,
                seed,
                layer = base.layer,
                cp_rank_fraction = fraction,
            )
            fits.append(fit)
        frontier_evaluation(
            seeded_name("%s_cp_rank" % base.name, seed),
            base.name,
            base.checkpoint,
            ":%s_activations" % base.name,
            fits + [seeded_name("%s_%s_k%d" % (base.name, method, FEATURE_K), seed) for method in ["mxd", "tc"]],
            base.tokens,
            seed,
        )

def cp_rank_bases():
    """The bases with the CP-MoE comparison: the GELU-MLP family (ours, or a pretrained GPT-2-like model)."""
    return [base for base in base_models() if base.name == "gelu"]

def cp_rank_files():
    """select() of every cp_rank_comparison table at the active scale's seeds."""
    labels = []
    for base in cp_rank_bases():
        labels = labels + seeded_labels([base.name + "_cp_rank"], SEED_PLAN["mxd_frontier"], ".csv")
    return labels

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

def l1_comparison(base, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. B.6.1 (Fig. 18) on one base, per seed: <base>_mxd_<label>_s<seed>, the MxD trained with ReLU + L1
    at each of L1_PENALTIES; <base>_relu_l1_s<seed>, their frontier evaluation beside the TopK grid's MxDs at
    every K; and <base>_relu_l1_gap.csv, each seed's L1 fits against that seed's TopK frontier interpolated at
    their L0 (frontier_gap)."""
    for seed in seeds:
        fits = []
        for label, penalty in L1_PENALTIES.items():
            fit = seeded_name("%s_mxd_%s" % (base.name, label), seed)
            replacement_fit(
                fit,
                base.checkpoint,
                base.config,
                ":%s_activations" % base.name,
                "mxd_" + base.name,
                0,
                seed,
                layer = base.layer,
                l1_penalty = penalty,
            )
            fits.append(fit)
        evaluation = seeded_name("%s_relu_l1" % base.name, seed)
        frontier_evaluation(
            evaluation,
            base.name,
            base.checkpoint,
            ":%s_activations" % base.name,
            fits + [seeded_name("%s_mxd_k%d" % (base.name, k), seed) for k in K_GRID],
            base.tokens,
            seed,
        )
    frontier_gap(
        name = base.name + "_relu_l1_gap",
        tables = seeded_labels([base.name + "_relu_l1"], SEED_PLAN["mxd_frontier"], ".csv"),
        message = "Placing the %s ReLU + L1 MxDs against the TopK frontier" % base.name,
    )

def frontier_gap(name, tables, message):
    """<name>.csv: analysis/replacement:frontier_gap over `tables` (every seed's frontier evaluation, a select()
    of seeded_labels), so a level with any seed's fit outside its TopK range is left out at every seed."""
    native.filegroup(name = name + "_tables", srcs = tables)
    tool_run(
        name = name,
        tool = "//analysis/replacement:frontier_gap",
        outs = [name + ".csv"],
        out_flags = ["--out="],
        file_list_args = {":%s_tables" % name: "--frontier="},
        cpu_slot = False,
        message = message,
    )

def l1_bases():
    """The bases with the ReLU + L1 comparison: the GELU-MLP family (the paper's GPT-2)."""
    return [base for base in base_models() if base.name == "gelu"]

def l1_files(suffix):
    """select() of every l1_comparison table (suffix ".csv", each seed's evaluation, or "_gap.csv", the base's one
    gap table) at the active scale's seeds."""
    if suffix == "_gap.csv":
        return [":%s_relu_l1_gap.csv" % base.name for base in l1_bases()]
    labels = []
    for base in l1_bases():
        labels = labels + seeded_labels([base.name + "_relu_l1"], SEED_PLAN["mxd_frontier"], suffix)
    return labels

# MxD App. B.3 (Fig. 11): the frontier at another block, at 4 of the grid's K as the paper's other layers. The
# last block at smoke and cpu (at cpu its FFN costs 0.03-0.06 nats to zero-ablate against block 0's 4.6,
# ffn_ablation.csv: the CE claims then read NOT TESTABLE by control ffn_matters_other_block), block 4 of 12 at
# paper scale (the frontier's is 8).
OTHER_BLOCK = {"smoke": 1, "cpu": 3, "paper": 4}
OTHER_BLOCK_KS = [2, 4, 8, 32]

def other_block_frontier(base, activations, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. B.3 (Fig. 11) on one base, per seed: <base>_other_block_<method>_k<K>_s<seed>, the Transcoder,
    Skip Transcoder and MxD at OTHER_BLOCK_KS fitted on `activations` (the OTHER_BLOCK cache), and
    <base>_other_block_s<seed>, their frontier evaluation (CE with that block's FFN replaced or zero-ablated)."""
    fits = replacement_grid(
        prefix = base.name + "_other_block",
        base = base.checkpoint,
        base_config = base.config,
        activations = activations,
        methods = {"tc": "transcoder", "stc": "skip_transcoder", "mxd": "mxd_" + base.name},
        ks = OTHER_BLOCK_KS,
        seeds = seeds,
        layer = OTHER_BLOCK,
    )
    for seed, names in fits.items():
        frontier_evaluation(
            seeded_name(base.name + "_other_block", seed),
            base.name,
            base.checkpoint,
            activations,
            names,
            base.tokens,
            seed,
        )

def other_block_bases():
    """The bases with the other block's frontier: the GELU-MLP family (ours, or a pretrained GPT-2-like model)."""
    return [base for base in base_models() if base.name == "gelu" and base.layer == None]

def other_block_files():
    """select() of every other_block_frontier table at the active scale's seeds."""
    labels = []
    for base in other_block_bases():
        labels = labels + seeded_labels([base.name + "_other_block"], SEED_PLAN["mxd_frontier"], ".csv")
    return labels

# MxD App. B.6.2 (Fig. 19): the encoders each base's MxD is compared against (its own, mxd_<base>, is the
# frontier grid's): ReLU on the GELU base; ReLU-MLP and GELU-MLP on the SwiGLU base (the paper's Llama panel).
ENCODER_ALTERNATIVES = {
    "gelu": ["mxd_relu"],
    "swiglu": ["mxd_gelu", "mxd_relu"],
}

def encoder_comparison(base, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. B.6.2 (Fig. 19) on one base, per seed: <base>_<encoder>_k<FEATURE_K>_s<seed>, the MxD with each
    of ENCODER_ALTERNATIVES' encoders at FEATURE_K (parameter-matched like the grid's), and <base>_encoders_s<seed>,
    the frontier evaluation of them beside the grid's MxD with the base's own encoder at the same K and seed."""
    for seed in seeds:
        fits = [seeded_name("%s_mxd_k%d" % (base.name, FEATURE_K), seed)]
        for ffn in ENCODER_ALTERNATIVES.get(base.name, []):
            fit = seeded_name("%s_%s_k%d" % (base.name, ffn, FEATURE_K), seed)
            replacement_fit(
                fit,
                base.checkpoint,
                base.config,
                ":%s_activations" % base.name,
                ffn,
                FEATURE_K,
                seed,
                layer = base.layer,
            )
            fits.append(fit)
        frontier_evaluation(
            seeded_name("%s_encoders" % base.name, seed),
            base.name,
            base.checkpoint,
            ":%s_activations" % base.name,
            fits,
            base.tokens,
            seed,
        )

def expert_tokens(base, seeds = all_seeds(SEED_PLAN["mxd_frontier"])):
    """MxD App. C.3 (Figs. 23-24) on one base, per seed: <base>_expert_tokens_s<seed>.csv, the first 8 units of
    the MxD and the Transcoder at FEATURE_K (firing rate, the modal token's share of the firings), and .txt,
    their top contexts on the held-out test split (analysis/replacement:expert_tokens)."""
    for seed in seeds:
        name = seeded_name("%s_expert_tokens" % base.name, seed)
        tool_run(
            name = name,
            tool = "//analysis/replacement:expert_tokens",
            outs = [name + ".csv", name + ".txt"],
            out_flags = ["--out=", "--listing_out="],
            checkpoint_args = {base.checkpoint: "--base="},
            tokens = base.tokens,
            token_args = {"--tokens=": "test"},
            tokenizer = base.tokenizer,
            args = ["--base_name=" + base.name],
            checkpoints = [":" + seeded_name("%s_%s_k%d" % (base.name, method, FEATURE_K), seed) for method in ["mxd", "tc"]],
            message = "Listing the first units of the %s fits" % base.name,
            tags = seed_tags(seed, SEED_PLAN["mxd_frontier"]),
        )

def random_k_fits():
    """select() of the default and random-K MxD fits at FEATURE_K of every base at the active scale's seeds
    (their training logs: MxD Fig. 22's curves)."""
    labels = []
    for base in base_models():
        fits = ["%s_mxd_%sk%d" % (base.name, variant, FEATURE_K) for variant in ["", "randk_"]]
        labels = labels + seeded_labels(fits, SEED_PLAN["mxd_frontier"])
    return labels

def feature_layers(base_name, seed):
    """The fits of `seed` the probing and steering experiments compare: TC, STC and MxD of the frontier at
    FEATURE_K and the SAE of `base_name`."""
    return [
        "//experiments/mxd_frontier:" + seeded_name("%s_%s_k%d" % (base_name, method, FEATURE_K), seed)
        for method in ["tc", "stc", "mxd"]
    ] + ["//experiments/mxd_frontier:" + seeded_name("%s_sae_k%d" % (base_name, FEATURE_K), seed)]

def feature_analysis(
        name,
        tool,
        base_name,
        base,
        extra_args,
        extra = {},
        examples = False,
        more_tables = {},
        seeds = all_seeds(SEED_PLAN["mxd_frontier"]),
        tokenizer = "//datasets/text:bpe",
        layers = feature_layers):
    """Per seed, <name>_s<seed>.csv from `tool` (sparse_probe or steer) over the base model and that seed's
    `layers(base_name, seed)` (default feature_layers) with --seed=<seed> (random control and splits, or
    samples), and <name>_s<seed>.txt: the tool's --examples when `examples`, else its log. `more_tables`:
    {suffix: flag} of the tool's other CSVs, <name>_s<seed><suffix>. `extra`: more tool_run attributes
    (token_args, ...)."""
    for seed in seeds:
        fits = layers(base_name, seed)
        run = seeded_name(name, seed)
        tool_run(
            name = run,
            tool = tool,
            outs = [run + ".csv"] + [run + suffix for suffix in more_tables] + ([run + ".txt"] if examples else []),
            out_flags = ["--out="] + [more_tables[suffix] for suffix in more_tables] + (["--examples="] if examples else []),
            log = None if examples else run + ".txt",
            checkpoint_args = {base: "--base="},
            tokenizer = tokenizer,
            args = ["--base_name=" + base_name, "--seed=%d" % seed] + extra_args,
            checkpoints = fits,
            message = "Running %s on the %s features" % (Label(tool).name, base_name),
            tags = seed_tags(seed, SEED_PLAN["mxd_frontier"]),
            **extra
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
    frontier_evaluation(
        "saelens_%s_frontier" % base.name,
        base.name + "_saelens",
        base.checkpoint,
        ":%s_activations" % base.name,
        ["saelens_" + base.name],
        base.tokens,
        all_seeds(SEED_PLAN["mxd_frontier"])[0],
    )

def saelens_files(suffix):
    """The SAELens arm's file with `suffix` ("_frontier.csv", "_frontier_units.csv", ".txt"), or none."""
    base = _saelens_base()
    return [":saelens_%s%s" % (base.name, suffix)] if base else []
