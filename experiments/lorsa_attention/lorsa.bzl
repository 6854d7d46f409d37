"""The Lorsa experiment's build graph pieces: per-block attention caches of the base LM, and Lorsa / TopK
SAE fits (<method>_b<slot>_k<K>: overlay, config, replacement_checkpoint) on them."""

load("//datasets/activations:activation_cache.bzl", "activation_cache")
load("//tools/config:config.bzl", "experiment_config")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/train:lm_checkpoint.bzl", "replacement_checkpoint")

# Cached blocks: four slots, every block of the smoke and cpu LMs, every third of the paper one.
BLOCK_SLOTS = [0, 1, 2, 3]

def block_of(slot):
    return by_scale({"smoke": slot, "cpu": slot, "paper": 3 * slot})

# Lorsa shape per scale (seed-lorsa.md 1.2): QK heads H_QK (twice the MHSA heads; D_QK = the MHSA head
# dim), OV heads H. The SAE is parameter-matched: 2 d F = 2 d H + 2 d H_QK D_QK, F = H + H_QK D_QK (2).
LORSA_SHAPE = {
    "smoke": struct(qk_heads = 4, qk_dim = 16, ov_heads = 64, k = 4, other_ks = [2, 8, 16]),
    "cpu": struct(qk_heads = 8, qk_dim = 32, ov_heads = 512, k = 16, other_ks = [4, 8, 32]),
    "paper": struct(qk_heads = 96, qk_dim = 64, ov_heads = 12288, k = 64, other_ks = [16, 32, 128]),
}

# Every slot gets the per-layer K (Fig. 3); this slot also the other Ks of the grid (Fig. 2).
GRID_SLOT = 1

# Held-out rows per split, in whole windows of the LM's context.
CACHE_ROWS = by_scale({
    "smoke": {"train": "8192", "validation": "1024", "test": "2048"},
    "cpu": {"train": "131072", "validation": "16384", "test": "32768"},
    "paper": {"train": "8388608", "validation": "131072", "test": "262144"},
})

FIT_SCALES = {scale: "//experiments/lorsa_attention:fit_%s.textproto" % scale for scale in SCALES}

def attention_caches(checkpoint):
    """attn_cache_b<slot> for every slot; returns their names."""
    names = []
    for slot in BLOCK_SLOTS:
        names.append("attn_cache_b%d" % slot)
        activation_cache(
            name = names[-1],
            checkpoint = checkpoint,
            data = ":shards",
            layer = block_of(slot),
            rows = CACHE_ROWS,
            site = "attn",
        )
    return names

def _overlay_text(name, method, slot, k, scale):
    shape = LORSA_SHAPE[scale]
    block = slot if scale != "paper" else 3 * slot
    if method == "lorsa":
        layer = 'ffn: \\"lorsa\\" site: \\"attn\\" layer: %d d_ffn: %d qk_heads: %d top_k: %d' % (
            block,
            shape.ov_heads,
            shape.qk_heads,
            k,
        )
    else:
        layer = 'ffn: \\"topk_sae\\" on_output: true site: \\"attn\\" layer: %d d_ffn: %d top_k: %d' % (
            block,
            shape.ov_heads + shape.qk_heads * shape.qk_dim,
            k,
        )
    return 'name: \\"%s\\" model { replacement { %s } }' % (name, layer)

def attention_fit(name, method, slot, k_of_scale, base, base_config):
    """One Lorsa ("lorsa") or SAE ("sae") fit on slot's cache; k_of_scale: {scale: K}."""
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        cmd = by_scale({
            scale: 'echo "%s" > $@' % _overlay_text(name, method, slot, k_of_scale[scale], scale)
            for scale in SCALES
        }),
    )
    experiment_config(
        name = name + "_config",
        base = base_config,
        scales = FIT_SCALES,
        overlays = ["//experiments/lorsa_attention:fit.textproto", ":%s_overlay" % name],
    )
    replacement_checkpoint(
        name = name,
        config = ":%s_config" % name,
        base = base,
        activations = ":attn_cache_b%d" % slot,
    )

def attention_fits(base, base_config):
    """Lorsa and SAE at the per-layer K on every slot (<method>_b<slot>_k), and at the scale's other Ks on
    GRID_SLOT (<method>_b<GRID_SLOT>_grid<i>). Returns the fit names."""
    names = []
    for method in ["lorsa", "sae"]:
        for slot in BLOCK_SLOTS:
            names.append("%s_b%d_k" % (method, slot))
            attention_fit(names[-1], method, slot, {s: LORSA_SHAPE[s].k for s in SCALES}, base, base_config)
        for i in range(len(LORSA_SHAPE["cpu"].other_ks)):
            names.append("%s_b%d_grid%d" % (method, GRID_SLOT, i))
            attention_fit(names[-1], method, GRID_SLOT, {s: LORSA_SHAPE[s].other_ks[i] for s in SCALES}, base, base_config)
    return names
