"""The Lorsa experiment's build graph, one seed at a time (lorsa_seed): the base LM lm_s<seed>, per-block
attention caches of it, Lorsa / TopK SAE fits on them (<method>_b<slot>_k_s<seed>, <method>_b<slot>_grid<i>_s<seed>:
overlay, config, replacement_checkpoint), evaluation_s<seed> (evaluate_lorsa's tidy CSVs), and the ablations' Lorsa
fits with their fits.csv: binding (lorsa_b<slot>_qk<H_QK>_s<seed>, binding_s<seed>), QK dimension
(lorsa_b<slot>_dqk<D_QK>_s<seed>, qk_dim_s<seed>) and QK initialisation (lorsa_b<slot>_qk_from_attention*_s<seed>,
qk_init_s<seed>). The seed sets the
base LM's initialisation and data order (runtime.seed) and, through its config, the fits' (issue 20).

With --repo_env=HF_MODEL=/path/to/model_dir the user's pretrained model (datasets/pretrained) is every seed's
base instead: nothing is trained but the fits, the caches are made once at the paper's window length, the blocks
spread over the model's depth, the Lorsa shape follows the paper's rule for the model's heads, and the seed varies
the fits alone."""

load("@hf_model//:settings.bzl", "HF_MODEL", "HF_MODEL_HEAD_DIM", "HF_MODEL_N_HEADS", "HF_MODEL_N_LAYERS", "HF_MODEL_TYPE")
load("//datasets/activations:activation_cache.bzl", "activation_cache")
load("//tools/config:config.bzl", "experiment_config")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load(
    "//tools/seeds:seeds.bzl",
    "SEED_PLAN",
    "all_seeds",
    "seed_tags",
    "seeded_config",
    "seeded_labels",
    "seeded_name",
)
load("//tools/train:lm_checkpoint.bzl", "replacement_checkpoint")
load("//tools/train:seeded_lm.bzl", "seeded_lm")
load("//tools/train:summary_table.bzl", "summary_table")
load("//tools/train:tool_run.bzl", "tool_run")

# A user's pretrained model is the base (HF_MODEL); else each seed trains its own LM.
PRETRAINED = bool(HF_MODEL)
PRETRAINED_MODEL = "//datasets/pretrained:model"

# The base LM's tokenizer: the pretrained model's own, or the LM core's small BPE.
LORSA_TOKENIZER = PRETRAINED_MODEL if PRETRAINED else "//datasets/text:bpe_small"

# Cached blocks: four slots, every block of the smoke and cpu LMs, every third of the paper one, and a
# pretrained model's blocks 0, n/4, n/2 and 3n/4 (the paper fits all, Sec. 4.1; its K sweep is Pythia's
# block 3, slot 1 of a 12-block model).
BLOCK_SLOTS = [0, 1, 2, 3]

def _block(slot, scale):
    if PRETRAINED:
        return slot * HF_MODEL_N_LAYERS // len(BLOCK_SLOTS)
    return 3 * slot if scale == "paper" else slot

def block_of(slot):
    return by_scale({scale: _block(slot, scale) for scale in SCALES})

def _pretrained_shape():
    """arXiv:2504.20938 Sec. 4.1's rule for Pythia-160M and Llama-3.1-8B: H_QK = 8 H_MHSA QK heads of the
    model's head dim D_QK, G = D_QK OV heads each (H = H_QK D_QK), K = D_QK (64 and 128), the K sweep at K/4,
    K/2 and 2K."""
    k = HF_MODEL_HEAD_DIM
    return struct(
        qk_heads = 8 * HF_MODEL_N_HEADS,
        qk_dim = HF_MODEL_HEAD_DIM,
        ov_heads = 8 * HF_MODEL_N_HEADS * HF_MODEL_HEAD_DIM,
        k = k,
        other_ks = [k // 4, k // 2, 2 * k],
    )

# Lorsa shape per scale (arXiv:2504.20938 Sec. 3.1, Table 1): QK heads H_QK, OV heads H (the paper's
# Pythia-160M: 96 QK heads, H = 96 x 64 = 6,144); qk_dim is D_QK, the base LM's head width d_model / n_heads
# of <scale>.textproto (the trainer takes D_QK from the base; this copy only sizes the SAE). The SAE is
# parameter-matched: 2 d F = 2 d H + 2 d H_QK D_QK, F = H + H_QK D_QK (2); claim
# D_sae_matches_lorsa_parameters checks the fits' parameter counts, so a stale qk_dim fails the report.
LORSA_SHAPE = {scale: _pretrained_shape() for scale in SCALES} if PRETRAINED else {
    "smoke": struct(qk_heads = 4, qk_dim = 16, ov_heads = 64, k = 4, other_ks = [2, 8, 16]),
    "cpu": struct(qk_heads = 8, qk_dim = 8, ov_heads = 256, k = 16, other_ks = [4, 8, 32]),
    "paper": struct(qk_heads = 96, qk_dim = 64, ov_heads = 6144, k = 64, other_ks = [16, 32, 128]),
}

# The binding ablation (Lorsa App. B, Fig. 9): H_QK besides the shape's own, OV heads H and K fixed, on GRID_SLOT,
# from below the base's H_MHSA (2 at smoke, 8 at cpu, 12 at paper) to 8 H_MHSA (the paper's Pythia H_QK = 96 = 8 x
# 12); fits.csv's qk_heads_per_mhsa_head (H_QK / H_MHSA) is the claims' arm, and each list holds 0.5, 1 and 8.
def _pretrained_qk_head_sweep():
    n = HF_MODEL_N_HEADS  # H = 8 n D_QK: every H_QK below divides it.
    return ([n // 4] if n % 4 == 0 else []) + ([n // 2] if n % 2 == 0 else []) + [n, 2 * n, 4 * n]

QK_HEAD_SWEEP = {scale: _pretrained_qk_head_sweep() for scale in SCALES} if PRETRAINED else {
    "smoke": [1, 2, 8, 16],
    "cpu": [1, 2, 4, 16, 32, 64],
    "paper": [3, 6, 12, 24, 48],
}

# The QK-dimension ablation (Lorsa App. B, Fig. 8): D_QK around the base's head width d_h at a fixed budget, OV
# heads H and K fixed, G = D_QK OV heads per QK head so H_QK = H / D_QK (the paper's "4 d per head": every point
# has 4 H d parameters), on GRID_SLOT. fits.csv's qk_dim_per_head_dim (D_QK / d_h) is the claims' arm; each
# list holds 0.5 and 1.
def _pretrained_qk_dim_sweep():
    d = HF_MODEL_HEAD_DIM
    return [d // 4, d // 2, d, 2 * d]

QK_DIM_SWEEP = {scale: _pretrained_qk_dim_sweep() for scale in SCALES} if PRETRAINED else {
    "smoke": [4, 8, 16, 32],
    "cpu": [2, 4, 8, 16, 32],
    "paper": [16, 32, 64, 128, 256],
}

# The QK initialisations of Lorsa App. B.3 (Table 3) beside the per-layer K fit's random start, on GRID_SLOT.
QK_INITS = ["QK_FROM_ATTENTION", "QK_FROM_ATTENTION_FROZEN"]

# Window length of the caches and the evaluation: a pretrained model's is the paper's n (256 for Pythia,
# 1,024 for Llama, Lorsa Sec. 4.1), not its whole context; our LMs' is their context (0).
SEQUENCE_LENGTH = (1024 if HF_MODEL_TYPE == "llama" else 256) if PRETRAINED else 0

# Every slot gets the per-layer K (Fig. 3); this slot also the other Ks of the grid (Fig. 2).
GRID_SLOT = 1

# Held-out rows per split, in whole windows of the LM's context.
CACHE_ROWS = by_scale({
    "smoke": {"train": "8192", "validation": "1024", "test": "2048"},
    "cpu": {"train": "131072", "validation": "16384", "test": "32768"},
    "paper": {"train": "8388608", "validation": "131072", "test": "262144"},
})

FIT_SCALES = {scale: "//experiments/lorsa_attention:fit_%s.textproto" % scale for scale in SCALES}

def _cache_name(slot, seed):
    """attn_cache_b<slot>_s<seed>; one attn_cache_b<slot> for every seed of a pretrained base."""
    return "attn_cache_b%d" % slot if PRETRAINED else seeded_name("attn_cache_b%d" % slot, seed)

def attention_caches(checkpoint, seed):
    """_cache_name(slot, seed) of `checkpoint` for every slot; returns their names."""
    names = []
    for slot in BLOCK_SLOTS:
        names.append(_cache_name(slot, seed))
        activation_cache(
            name = names[-1],
            checkpoint = checkpoint,
            data = ":shards",
            layer = block_of(slot),
            rows = CACHE_ROWS,
            sequence_length = SEQUENCE_LENGTH,
            site = "attn",
            tags = [] if PRETRAINED else seed_tags(seed, SEED_PLAN["lorsa_attention"]),
        )
    return names

def _overlay_text(name, method, slot, k, scale, qk_heads = None, qk_dim = None, qk_init = None):
    shape = LORSA_SHAPE[scale]
    block = _block(slot, scale)
    if method == "lorsa":
        layer = 'ffn: \\"lorsa\\" site: ATTN layer: %d d_ffn: %d qk_heads: %d top_k: %d' % (
            block,
            shape.ov_heads,
            qk_heads or shape.qk_heads,
            k,
        )
        if qk_dim:
            # G = D_QK: H_QK = H / D_QK (at least 1 where a scale never builds this fit).
            layer = 'ffn: \\"lorsa\\" site: ATTN layer: %d d_ffn: %d qk_heads: %d qk_dim: %d top_k: %d' % (
                block,
                shape.ov_heads,
                max(1, shape.ov_heads // qk_dim),
                qk_dim,
                k,
            )
        if qk_init:
            layer += " qk_init: " + qk_init
    else:
        layer = 'ffn: \\"topk_sae\\" on_output: true site: ATTN layer: %d d_ffn: %d top_k: %d' % (
            block,
            shape.ov_heads + shape.qk_heads * shape.qk_dim,
            k,
        )
    return 'name: \\"%s\\" model { replacement { %s } }' % (name, layer)

def attention_fit(name, method, slot, k_of_scale, base, base_config, seed, qk_heads = None, qk_dim = None, qk_init = None, in_wildcard = True):
    """One Lorsa ("lorsa") or SAE ("sae") fit on slot's cache of `base` (trained with `seed`, which
    base_config carries into the fit: its initialisation and row order); k_of_scale: {scale: K}; qk_heads: the
    Lorsa's H_QK at every scale (None: the shape's); qk_dim: its D_QK with H_QK = H / D_QK (None: the base's head
    width); qk_init: a model.replacement.qk_init value (None: random); in_wildcard as seed_tags'."""
    tags = seed_tags(seed, SEED_PLAN["lorsa_attention"], in_wildcard)
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        cmd = by_scale({
            scale: 'echo "%s" > $@' % _overlay_text(name, method, slot, k_of_scale[scale], scale, qk_heads, qk_dim, qk_init)
            for scale in SCALES
        }),
        tags = tags,
    )
    experiment_config(
        name = name + "_config",
        base = base_config,
        scales = FIT_SCALES,
        overlays = ["//experiments/lorsa_attention:fit.textproto", ":%s_overlay" % name],
        tags = tags,
    )
    replacement_checkpoint(
        name = name,
        config = ":%s_config" % name,
        base = base,
        activations = ":" + _cache_name(slot, seed),
        tags = tags,
    )

def _binding_fit_name(qk_heads, seed):
    return seeded_name("lorsa_b%d_qk%d" % (GRID_SLOT, qk_heads), seed)

def _grid_lorsa_fit(name, base, base_config, seed, **kwargs):
    """A Lorsa fit on GRID_SLOT at the per-layer K (the ablations' common ground); kwargs as attention_fit's."""
    attention_fit(name, "lorsa", GRID_SLOT, {s: LORSA_SHAPE[s].k for s in SCALES}, base, base_config, seed, **kwargs)

def binding_fits(base, base_config, seed):
    """The binding ablation's Lorsa fits at every H_QK of any scale's QK_HEAD_SWEEP (lorsa_b<GRID_SLOT>_qk<H_QK>_s<seed>,
    at the per-layer K; manual unless smoke sweeps that H_QK, so no scale builds an H_QK it does not divide H by);
    returns {scale: its fits' labels}, the shape's own H_QK being the per-layer K fit."""
    for qk_heads in sorted({h: None for scale in SCALES for h in QK_HEAD_SWEEP[scale]}.keys()):
        _grid_lorsa_fit(
            _binding_fit_name(qk_heads, seed),
            base,
            base_config,
            seed,
            qk_heads = qk_heads,
            in_wildcard = qk_heads in QK_HEAD_SWEEP["smoke"],
        )
    own = ":" + seeded_name("lorsa_b%d_k" % GRID_SLOT, seed)
    return {scale: [own] + [":" + _binding_fit_name(h, seed) for h in QK_HEAD_SWEEP[scale]] for scale in SCALES}

def _head_width(scale):
    """The base's head width d_h at `scale` (D_QK of the shape)."""
    return LORSA_SHAPE[scale].qk_dim

def _qk_dim_fit_name(qk_dim, seed):
    return seeded_name("lorsa_b%d_dqk%d" % (GRID_SLOT, qk_dim), seed)

def _qk_dim_label(scale, qk_dim, seed):
    """The fit at D_QK = qk_dim of `scale`'s sweep: at D_QK = d_h the one with H_QK = H / d_h already fitted (the
    per-layer K fit, or the binding ablation's), else its own."""
    shape = LORSA_SHAPE[scale]
    if qk_dim != _head_width(scale):
        return ":" + _qk_dim_fit_name(qk_dim, seed)
    if shape.ov_heads // qk_dim == shape.qk_heads:
        return ":" + seeded_name("lorsa_b%d_k" % GRID_SLOT, seed)
    return ":" + _binding_fit_name(shape.ov_heads // qk_dim, seed)

def qk_dim_fits(base, base_config, seed):
    """The QK-dimension ablation's Lorsa fits (lorsa_b<GRID_SLOT>_dqk<D_QK>_s<seed>, at the per-layer K) at every
    D_QK of any scale's QK_DIM_SWEEP, manual unless smoke sweeps it; returns {scale: its fits' labels}."""
    for qk_dim in sorted({d: None for scale in SCALES for d in QK_DIM_SWEEP[scale]}.keys()):
        _grid_lorsa_fit(
            _qk_dim_fit_name(qk_dim, seed),
            base,
            base_config,
            seed,
            qk_dim = qk_dim,
            in_wildcard = qk_dim in QK_DIM_SWEEP["smoke"] and qk_dim != _head_width("smoke"),
        )
    return {scale: [_qk_dim_label(scale, d, seed) for d in QK_DIM_SWEEP[scale]] for scale in SCALES}

def qk_init_fits(base, base_config, seed):
    """Lorsa App. B.3's QK initialisations (lorsa_b<GRID_SLOT>_<init>_s<seed>, the shape's H_QK and D_QK at the
    per-layer K); returns their labels and the per-layer K fit's (the random start)."""
    labels = [":" + seeded_name("lorsa_b%d_k" % GRID_SLOT, seed)]
    for qk_init in QK_INITS:
        name = seeded_name("lorsa_b%d_%s" % (GRID_SLOT, qk_init.lower()), seed)
        _grid_lorsa_fit(name, base, base_config, seed, qk_init = qk_init)
        labels.append(":" + name)
    return labels

def attention_fits(base, base_config, seed):
    """Lorsa and SAE at the per-layer K on every slot (<method>_b<slot>_k_s<seed>), and at the scale's other
    Ks on GRID_SLOT (<method>_b<GRID_SLOT>_grid<i>_s<seed>). Returns the fit names."""
    names = []
    for method in ["lorsa", "sae"]:
        for slot in BLOCK_SLOTS:
            names.append(seeded_name("%s_b%d_k" % (method, slot), seed))
            attention_fit(names[-1], method, slot, {s: LORSA_SHAPE[s].k for s in SCALES}, base, base_config, seed)
        for i in range(len(LORSA_SHAPE["cpu"].other_ks)):
            names.append(seeded_name("%s_b%d_grid%d" % (method, GRID_SLOT, i), seed))
            attention_fit(
                names[-1],
                method,
                GRID_SLOT,
                {s: LORSA_SHAPE[s].other_ks[i] for s in SCALES},
                base,
                base_config,
                seed,
            )
    return names

# evaluate_lorsa's tidy CSVs (each with the seed column) and its listing.
EVALUATION_FILES = [
    "fits.csv",
    "attribution.csv",
    "attribution_shares.csv",
    "heads.csv",
    "probe_heads.csv",
    "probe.csv",
    "induction_heads.csv",
    "errors.csv",
    "qk_spectra.csv",
    "qk_rank.csv",
    "qk_rank_summary.csv",
    "operand_heads.csv",
    "operand_summary.csv",
    "operand_grid.csv",
    "top_activations.txt",
]

def _evaluation(name, base, caches, fits, seed):
    tool_run(
        name = name,
        tool = "//analysis/attention:evaluate_lorsa",
        outs = ["%s/%s" % (name, f) for f in EVALUATION_FILES],
        out_flags = [""] * len(EVALUATION_FILES),
        out_dir_flag = "--out_dir=",
        checkpoint_args = {base: "--base="},
        tokens = ":shards",
        token_args = {"--tokens=": "test"},
        tokenizer = LORSA_TOKENIZER,
        layered_activations = [":" + c for c in caches],
        layered_activations_flag = "--caches=",
        file_args = {":span_words.txt": "--probe_words="},
        args = ["--threads=2", "--sequence_length=%d" % SEQUENCE_LENGTH],
        checkpoints = [":" + f for f in fits],
        message = "Evaluating the Lorsa and SAE fits of seed %d" % seed,
        tags = seed_tags(seed, SEED_PLAN["lorsa_attention"]),
    )

def _fits_evaluation(name, base, fits_by_scale, seed, what):
    """<name>/fits.csv: evaluate_lorsa --fits_only on an ablation's fits ({scale: labels}) on GRID_SLOT's cache."""
    tool_run(
        name = name,
        tool = "//analysis/attention:evaluate_lorsa",
        outs = [name + "/fits.csv"],
        out_flags = [""],
        out_dir_flag = "--out_dir=",
        checkpoint_args = {base: "--base="},
        tokens = ":shards",
        token_args = {"--tokens=": "test"},
        tokenizer = LORSA_TOKENIZER,
        layered_activations = [":" + _cache_name(GRID_SLOT, seed)],
        layered_activations_flag = "--caches=",
        args = ["--threads=2", "--sequence_length=%d" % SEQUENCE_LENGTH, "--fits_only"],
        checkpoints = by_scale(fits_by_scale),
        message = "Evaluating the %s of seed %d" % (what, seed),
        tags = seed_tags(seed, SEED_PLAN["lorsa_attention"]),
    )

def lorsa_seeds(base_config, scale_configs):
    """lorsa_seed for every seed of SEED_PLAN["lorsa_attention"]; with a pretrained base, its caches first, once."""
    if PRETRAINED:
        attention_caches(PRETRAINED_MODEL, None)
    for seed in all_seeds(SEED_PLAN["lorsa_attention"]):
        lorsa_seed(seed, base_config, scale_configs)

def lorsa_seed(seed, base_config, scale_configs):
    """Everything one seed builds: lm_s<seed>_config (base_config + scale_configs + the run's name
    lorsa_base_lm_s<seed> + runtime.seed), lm_s<seed> on :shards, its caches and fits, and
    evaluation_s<seed>. With a pretrained base: lm_s<seed>_config is its config + runtime.seed (the fits'
    base config; no scale refines a model that exists), and the fits use the shared caches."""
    lm = seeded_name("lm", seed)
    if PRETRAINED:
        seeded_config(name = lm, seed = seed, base = PRETRAINED_MODEL + ".textproto", scales = None)
        base = PRETRAINED_MODEL
        caches = [_cache_name(slot, seed) for slot in BLOCK_SLOTS]
    else:
        seeded_lm(
            name = "lm",
            seed = seed,
            seeds = SEED_PLAN["lorsa_attention"],
            base = base_config,
            scales = scale_configs,
            overlay_cmd = "echo 'name: \"%s\"' > $@" % seeded_name("lorsa_base_lm", seed),
            data = ":shards",
        )
        base = ":" + lm
        caches = attention_caches(base, seed)
    fits = attention_fits(base = base, base_config = ":%s_config" % lm, seed = seed)
    _evaluation(seeded_name("evaluation", seed), base, caches, fits, seed)
    binding = binding_fits(base = base, base_config = ":%s_config" % lm, seed = seed)
    _fits_evaluation(seeded_name("binding", seed), base, binding, seed, "QK-head binding ablation")
    qk_dims = qk_dim_fits(base = base, base_config = ":%s_config" % lm, seed = seed)
    _fits_evaluation(seeded_name("qk_dim", seed), base, qk_dims, seed, "QK-dimension ablation")
    qk_inits = qk_init_fits(base = base, base_config = ":%s_config" % lm, seed = seed)
    _fits_evaluation(seeded_name("qk_init", seed), base, {s: qk_inits for s in SCALES}, seed, "QK initialisations")

def evaluation_files(file):
    """select() of each seed's evaluation_s<seed>/<file> (one of EVALUATION_FILES) at the active scale."""
    return seeded_labels(["evaluation"], SEED_PLAN["lorsa_attention"], "/" + file)

def ablation_files(ablation):
    """select() of each seed's <ablation>_s<seed>/fits.csv at the active scale: "binding" (Fig. 9), "qk_dim"
    (Fig. 8) or "qk_init" (Table 3)."""
    return seeded_labels([ablation], SEED_PLAN["lorsa_attention"], "/fits.csv")

def lorsa_lm_table(name):
    """<name>.csv: one row per base LM (size, steps, loss, seed) from the trainer summaries; with a pretrained
    base, the header alone (no LM is trained here)."""
    if PRETRAINED:
        native.genrule(
            name = name,
            outs = [name + ".csv"],
            cmd = "echo 'arm,parameters,steps,validation_loss,seed' > $@",
        )
        return
    summary_table(
        name = name,
        config_fields = ["seed=runtime.seed"],
        fields = ["parameters", "steps", "validation_loss"],
        runs = seeded_labels(["lm"], SEED_PLAN["lorsa_attention"]) +
               seeded_labels(["lm"], SEED_PLAN["lorsa_attention"], "_config"),
    )

def pretrained_lorsa_manifests():
    """The import manifest of a pretrained base (HF_MODEL), named in the report's manifest."""
    return [PRETRAINED_MODEL + ".manifest.textproto"] if PRETRAINED else []
