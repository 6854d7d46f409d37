"""The Lorsa experiment (arXiv:2504.20938) as data for the study rule (//pipelines/study): the base LM arm (trained per
seed, or a user's pretrained model with --repo_env=HF_MODEL=/path/to/model_dir), its per-block attention caches,
the Lorsa and TopK SAE fits on them (LORSA_FITS: <method>_b<slot>_k_s<seed>, <method>_b<slot>_grid<i>_s<seed>,
and the ablations' lorsa_b<slot>_qk<H_QK>_s<seed>, lorsa_b<slot>_dqk<D_QK>_s<seed>,
lorsa_b<slot>_qk_from_attention*_s<seed>) and their evaluations (LORSA_EVALUATIONS: evaluation_s<seed>, binding_s<seed>,
qk_dim_s<seed>, qk_init_s<seed>). The seed sets the base LM's initialisation and data order (runtime.seed) and,
through its config, the fits'.

With a pretrained base nothing is trained but the fits, the caches are made once at the paper's window length, the
blocks spread over the model's depth, the Lorsa shape follows the paper's rule for the model's heads, and the seed
varies the fits alone."""

load("@hf_model//:settings.bzl", "HF_MODEL", "HF_MODEL_HEAD_DIM", "HF_MODEL_N_HEADS", "HF_MODEL_N_LAYERS", "HF_MODEL_TYPE")
load("//base/scale:scale.bzl", "SCALES", "by_scale")
load("//pipelines/study:study.bzl", "arm", "cache", "evaluation", "fit", "literal")

# A user's pretrained model is the base (HF_MODEL); else each seed trains its own LM.
PRETRAINED = bool(HF_MODEL)
PRETRAINED_MODEL = "//pipelines/pretrained:model"

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

def _cache(slot):
    return "attn_cache_b%d" % slot

# The base LM of each seed, or the user's pretrained model at every seed.
LORSA_ARMS = {
    "lm": arm(pretrained = PRETRAINED_MODEL) if PRETRAINED else arm(config = {"name": "lorsa_base_{run}"}, data = ":shards"),
}

# attn_cache_b<slot>_s<seed>: every slot's (attention input, attention output) pairs of the seed's LM.
LORSA_CACHES = {
    _cache(slot): cache(
        layer = by_scale({scale: _block(slot, scale) for scale in SCALES}),
        rows = CACHE_ROWS,
        arm = "lm",
        data = ":shards",
        site = "attn",
        sequence_length = SEQUENCE_LENGTH,
    )
    for slot in BLOCK_SLOTS
}

def _lorsa(slot, k_of_scale, qk_heads = None, qk_dim = None, qk_init = None, wildcard = True):
    """A Lorsa fit on `slot`'s cache (arXiv:2504.20938 Sec. 3.1): H OV heads, H_QK QK heads (qk_heads at every
    scale, None: the shape's), or D_QK = qk_dim with G = D_QK (H_QK = H / D_QK, at least 1 where a scale never
    builds the fit), K per scale; qk_init: a model.replacement.qk_init (None: random)."""
    replacement = {
        "site": literal("ATTN"),
        "d_ffn": {scale: LORSA_SHAPE[scale].ov_heads for scale in SCALES},
        "qk_heads": {
            scale: max(1, LORSA_SHAPE[scale].ov_heads // qk_dim) if qk_dim else (qk_heads or LORSA_SHAPE[scale].qk_heads)
            for scale in SCALES
        },
    }
    if qk_dim:
        replacement["qk_dim"] = qk_dim
    if qk_init:
        replacement["qk_init"] = literal(qk_init)
    return fit(
        "lorsa",
        top_k = k_of_scale,
        cache = _cache(slot),
        layer = {scale: _block(slot, scale) for scale in SCALES},
        replacement = replacement,
        wildcard = wildcard,
    )

def _sae(slot, k_of_scale):
    """The parameter-matched TopK SAE on the attention output (2 d F = 2 d H + 2 d H_QK D_QK, F = H + H_QK D_QK)."""
    return fit(
        "topk_sae",
        top_k = k_of_scale,
        on_output = True,
        cache = _cache(slot),
        layer = {scale: _block(slot, scale) for scale in SCALES},
        replacement = {
            "site": literal("ATTN"),
            "d_ffn": {scale: LORSA_SHAPE[scale].ov_heads + LORSA_SHAPE[scale].qk_heads * LORSA_SHAPE[scale].qk_dim for scale in SCALES},
        },
    )

_PER_LAYER_K = {scale: LORSA_SHAPE[scale].k for scale in SCALES}

def _grid_k(i):
    return {scale: LORSA_SHAPE[scale].other_ks[i] for scale in SCALES}

def _head_width(scale):
    """The base's head width d_h at `scale` (D_QK of the shape)."""
    return LORSA_SHAPE[scale].qk_dim

def _binding_name(qk_heads):
    return "lorsa_b%d_qk%d" % (GRID_SLOT, qk_heads)

def _qk_dim_name(qk_dim):
    return "lorsa_b%d_dqk%d" % (GRID_SLOT, qk_dim)

def _qk_init_name(qk_init):
    return "lorsa_b%d_%s" % (GRID_SLOT, qk_init.lower())

_PER_LAYER_FIT = "lorsa_b%d_k" % GRID_SLOT

def _qk_dim_fit(scale, qk_dim):
    """The fit at D_QK = qk_dim of `scale`'s sweep: at D_QK = d_h the one with H_QK = H / d_h already fitted (the
    per-layer K fit, or the binding ablation's), else its own."""
    shape = LORSA_SHAPE[scale]
    if qk_dim != _head_width(scale):
        return _qk_dim_name(qk_dim)
    if shape.ov_heads // qk_dim == shape.qk_heads:
        return _PER_LAYER_FIT
    return _binding_name(shape.ov_heads // qk_dim)

def _sweep(values_by_scale):
    """Every value any scale sweeps, sorted."""
    return sorted({v: None for scale in SCALES for v in values_by_scale[scale]}.keys())

# The attention fits evaluate_lorsa reads, in order: Lorsa and SAE at the per-layer K on every slot
# (<method>_b<slot>_k), then at the scale's other Ks on GRID_SLOT (<method>_b<GRID_SLOT>_grid<i>).
ATTENTION_FITS = [
    name
    for method in ["lorsa", "sae"]
    for name in ["%s_b%d_k" % (method, slot) for slot in BLOCK_SLOTS] +
                ["%s_b%d_grid%d" % (method, GRID_SLOT, i) for i in range(len(LORSA_SHAPE["cpu"].other_ks))]
]

def _lorsa_fits():
    fits = {}
    for slot in BLOCK_SLOTS:
        fits["lorsa_b%d_k" % slot] = _lorsa(slot, _PER_LAYER_K)
        fits["sae_b%d_k" % slot] = _sae(slot, _PER_LAYER_K)
    for i in range(len(LORSA_SHAPE["cpu"].other_ks)):
        fits["lorsa_b%d_grid%d" % (GRID_SLOT, i)] = _lorsa(GRID_SLOT, _grid_k(i))
        fits["sae_b%d_grid%d" % (GRID_SLOT, i)] = _sae(GRID_SLOT, _grid_k(i))

    # The binding ablation at every H_QK of any scale's sweep (kept out of wildcard builds unless smoke sweeps it, so
    # no scale builds an H_QK it does not divide H by); the shape's own H_QK is the per-layer K fit.
    for qk_heads in _sweep(QK_HEAD_SWEEP):
        fits[_binding_name(qk_heads)] = _lorsa(GRID_SLOT, _PER_LAYER_K, qk_heads = qk_heads, wildcard = qk_heads in QK_HEAD_SWEEP["smoke"])

    # The QK-dimension ablation at every D_QK of any scale's sweep.
    for qk_dim in _sweep(QK_DIM_SWEEP):
        fits[_qk_dim_name(qk_dim)] = _lorsa(
            GRID_SLOT,
            _PER_LAYER_K,
            qk_dim = qk_dim,
            wildcard = qk_dim in QK_DIM_SWEEP["smoke"] and qk_dim != _head_width("smoke"),
        )

    # App. B.3's QK initialisations beside the per-layer K fit's random start.
    for qk_init in QK_INITS:
        fits[_qk_init_name(qk_init)] = _lorsa(GRID_SLOT, _PER_LAYER_K, qk_init = qk_init)
    return fits

LORSA_FITS = _lorsa_fits()

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

def _evaluate_lorsa(tables, fits, caches, args, message, file_args = {}):
    return evaluation(
        tool = "//analysis/attention:evaluate_lorsa",
        tables = tables,
        models = {"lm": "--base="},
        fits = fits,
        caches = caches,
        tokens = ":shards",
        token_args = {"--tokens=": "test"},
        tokenizer = LORSA_TOKENIZER,
        file_args = file_args,
        args = ["--threads=2", "--sequence_length=%d" % SEQUENCE_LENGTH] + args,
        message = message,
    )

def _ablation(fits, what):
    """evaluate_lorsa --fits_only on an ablation's fits on GRID_SLOT's cache: <ablation>_s<seed>/fits.csv."""
    return _evaluate_lorsa(["fits.csv"], fits, [_cache(GRID_SLOT)], ["--fits_only"], "Evaluating the %s of seed %%d" % what)

# Per seed: every attention fit with the caches of every slot (evaluation_s<seed>: FVU, CE, attribution, heads,
# probes, QK spectra, operand heads); the binding (Fig. 9), QK-dimension (Fig. 8) and QK-initialisation (Table 3)
# ablations' fits.csv.
LORSA_EVALUATIONS = {
    "evaluation": _evaluate_lorsa(
        EVALUATION_FILES,
        ATTENTION_FITS,
        [_cache(slot) for slot in BLOCK_SLOTS],
        [],
        "Evaluating the Lorsa and SAE fits of seed %d",
        file_args = {":span_words.txt": "--probe_words="},
    ),
    "binding": _ablation(
        {scale: [_PER_LAYER_FIT] + [_binding_name(h) for h in QK_HEAD_SWEEP[scale]] for scale in SCALES},
        "QK-head binding ablation",
    ),
    "qk_dim": _ablation({scale: [_qk_dim_fit(scale, d) for d in QK_DIM_SWEEP[scale]] for scale in SCALES}, "QK-dimension ablation"),
    "qk_init": _ablation([_PER_LAYER_FIT] + [_qk_init_name(i) for i in QK_INITS], "QK initialisations"),
    # Every slot's Lorsa at the per-layer K spliced in at once (App. H, Fig. 16): the model's CE and in-context
    # copying, and the heads whose ablation most weakens the fully sparsified model's best induction head.
    "full_sparsification": evaluation(
        tool = "//analysis/attention:full_sparsification",
        tables = [
            "sparsified.csv",
            "circuit.csv",
            "circuit_summary.csv",
        ],
        models = {"lm": "--base="},
        fits = ["lorsa_b%d_k" % slot for slot in BLOCK_SLOTS],
        tokens = ":shards",
        token_args = {"--tokens=": "test"},
        tokenizer = LORSA_TOKENIZER,
        file_args = {":span_words.txt": "--probe_words="},
        args = ["--threads=2", "--sequence_length=%d" % SEQUENCE_LENGTH],
        message = "Sparsifying every fitted block of seed %d with its Lorsa",
    ),
    # Theme-anchor heads (Sec. 6.3, Fig. 12), the held-out corpus's sources as topics: per per-layer-K Lorsa head
    # its source, floors and the best candidate chosen on one half of each source's documents, its selectivity
    # read on the other, against the same choice with sources shuffled and against its attention cut to the last
    # 8 keys. Smoke reads the train split: its test split holds one document of most sources (a structure check,
    # not evidence).
    "theme_anchors": evaluation(
        tool = "//analysis/attention:theme_anchors",
        tables = [
            "theme_anchors.csv",
            "theme_anchor_summary.csv",
            "theme_anchor_examples.txt",
        ],
        models = {"lm": "--base="},
        fits = ["lorsa_b%d_k" % slot for slot in BLOCK_SLOTS],
        directory_args = {":corpus": "--corpus_dir="},
        tokenizer = LORSA_TOKENIZER,
        args = ["--threads=2", "--sequence_length=%d" % SEQUENCE_LENGTH] + by_scale({
            "smoke": [
                "--split=train",
                "--tokens_per_domain=2048",
            ],
            "cpu": [
                "--split=test",
                "--tokens_per_domain=8192",
            ],
            "paper": [
                "--split=test",
                "--tokens_per_domain=65536",
            ],
        }),
        message = "Reading the Lorsa heads of seed %d for theme anchors",
    ),
}

def pretrained_lorsa_manifests():
    """The import manifest of a pretrained base (HF_MODEL), named in the report's manifest."""
    return [PRETRAINED_MODEL + ".manifest.textproto"] if PRETRAINED else []
