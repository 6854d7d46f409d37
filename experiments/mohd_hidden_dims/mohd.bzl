"""mohd_run: one model of the MoHD study (seed-mohd.md 7.6) as build targets: <name>_overlay (its MoHD
settings at the active scale's width), <name>_config (base + scale + overlay) and <name> (lm_checkpoint on
//datasets/text:shards_small). mohd_runs: every variant; returns the names."""

load("//tools/config:config.bzl", "experiment_config")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/train:lm_checkpoint.bzl", "lm_checkpoint")

# The dense model's width d per scale (base + <scale>.textproto); MoHD expansion xk sets D = k d.
DENSE_WIDTH = {"smoke": 32, "cpu": 128, "paper": 1024}

# Variants (seed-mohd.md Table 3 with 75% read as N = 8, K = 6, S = 3; Table 4 ablations on x2; E9 (i)):
# expansion k (D = k d), sub-dims N, active K, shared S, extra layer_options.
VARIANTS = {
    "dense": None,
    "mohd_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = ""),
    "mohd_75": struct(expand = 1, n = 8, k = 6, shared = 3, extra = ""),
    "mohd_x2": struct(expand = 2, n = 8, k = 4, shared = 3, extra = ""),
    "mohd_x2_no_scaling": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_scaling: \"none\""),
    "mohd_x2_no_fusion": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_fusion: false"),
    "mohd_x2_no_shared": struct(expand = 2, n = 8, k = 4, shared = 0, extra = ""),
    "mohd_x2_random_routing": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_random_routing: true"),
}

def _overlay(name, variant, width):
    text = "name: \"%s\"" % name
    if variant:
        # MoHD attention and SwiGLU FFN read and write K of N sub-dims of D; q and d_ff stay the dense model's.
        text += (" model { d_model: %d attention_inner: %d attention: \"mohd\" ffn: \"mohd_swiglu\"" +
                 " n_experts: %d top_k: %d layer_options { mohd_shared: %d %s } }") % (
            variant.expand * width,
            width,
            variant.n,
            variant.k,
            variant.shared,
            variant.extra,
        )
    return text

def mohd_run(name, variant):
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        cmd = by_scale({
            scale: "echo '%s' > $@" % _overlay(name, variant, DENSE_WIDTH[scale])
            for scale in SCALES
        }),
    )
    experiment_config(
        name = name + "_config",
        base = "base.textproto",
        scales = {scale: scale + ".textproto" for scale in SCALES},
        overlays = [":%s_overlay" % name],
    )
    lm_checkpoint(
        name = name,
        config = ":%s_config" % name,
        data = "//datasets/text:shards_small",
    )

def mohd_runs():
    for name, variant in VARIANTS.items():
        mohd_run(name, variant)
    return VARIANTS.keys()
