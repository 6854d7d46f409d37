"""The MoHD study's arms (MoHD, arXiv:2412.05644, Tables 2, 4 and 5, Fig. 12(a)) as data for the study rule
(//pipelines/study): MOHD_ARMS, each variant's config fields per scale (its name, MoHD shape at the scale's width)."""

load("//base/scale:scale.bzl", "SCALES")
load("//pipelines/study:study.bzl", "arm", "literal")

# The dense model's width d per scale, as base.textproto + <scale>.textproto set it: MoHD expansion xk sets
# D = k d with the attention's inner width kept at d. d_ffn_matching_x2: the FFN width that gives a dense model
# x2's total parameter count (x2 adds V d of embedding and head and, per block, the blocks' weights at width 2d
# and its routers, all put into the dense FFN's 3 d d_ff; design claim D_matched_parameters checks the counts
# within 0.1%). The design table reads the merged configs (//analysis/scaling:mohd_design).
DENSE_SHAPE = {
    "smoke": struct(width = 32, d_ffn_matching_x2 = 386),
    "cpu": struct(width = 128, d_ffn_matching_x2 = 1165),
    "paper": struct(width = 1024, d_ffn_matching_x2 = 6726),
}

# Variants (Table 2's 50% / 75% compression read as N = 8 with K = 4 / 6, S = 3; x2 expansion and Table 4's
# ablations of it; Table 5's 50% in the FFN or the attention alone; random routing and two dense models,
# controls not in the paper): expansion k (D = k d), sub-dims N, active K, shared S, extra layer_options fields, and
# `only` ("ffn" or "attention") to route one of the two; or, for the dense control with x2's embedding and LM
# head width (2d, projected to and from the blocks' d), embedding_expand; or, for the dense control with x2's
# total parameter count from a wider FFN, matched_parameters.
VARIANTS = {
    "dense": None,
    "dense_wide_embedding": struct(embedding_expand = 2),
    "dense_matched_parameters": struct(matched_parameters = True),
    "mohd_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = {}),
    "mohd_75": struct(expand = 1, n = 8, k = 6, shared = 3, extra = {}),
    "mohd_x2": struct(expand = 2, n = 8, k = 4, shared = 3, extra = {}),
    "mohd_x2_no_scaling": struct(expand = 2, n = 8, k = 4, shared = 3, extra = {"mohd_scaling": literal("NONE")}),
    "mohd_x2_no_fusion": struct(expand = 2, n = 8, k = 4, shared = 3, extra = {"mohd_fusion": False}),
    "mohd_x2_no_shared": struct(expand = 2, n = 8, k = 4, shared = 0, extra = {}),
    "mohd_x2_random_routing": struct(expand = 2, n = 8, k = 4, shared = 3, extra = {"mohd_random_routing": True}),
    # Table 4's last ablation: the x2 model without its balance loss (beta = 0, Eq. 13).
    "mohd_x2_no_balance": struct(expand = 2, n = 8, k = 4, shared = 3, extra = {"mohd_balance_weight": 0}),
    # Fig. 12(a)'s shared allocation of the x2 model's K = 4 active sub-dims (Sec. 5.5): 1/4 and 2/4 shared, and 4/4
    # (static: every active sub-dim shared, nothing routed); 0/4 is mohd_x2_no_shared and 3/4 mohd_x2.
    "mohd_x2_shared_1": struct(expand = 2, n = 8, k = 4, shared = 1, extra = {}),
    "mohd_x2_shared_2": struct(expand = 2, n = 8, k = 4, shared = 2, extra = {}),
    "mohd_x2_static": struct(expand = 2, n = 8, k = 4, shared = 4, extra = {}),
    # Table 5's decoupled sparsity at 50%: MoHD in the FFN only (the attention dense) or the attention only.
    "mohd_ffn_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = {}, only = "ffn"),
    "mohd_attention_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = {}, only = "attention"),
}

def _config(variant, shape):
    """The variant's overlay fields at one scale's dense shape."""
    fields = {"name": "{run}"}
    if variant and hasattr(variant, "embedding_expand"):
        fields["model"] = {"embedding_width": variant.embedding_expand * shape.width}
    elif variant and hasattr(variant, "matched_parameters"):
        fields["model"] = {"d_ffn": shape.d_ffn_matching_x2}
    elif variant:
        # MoHD attention and SwiGLU FFN read and write K of N sub-dims of D; q and d_ff stay the dense model's.
        # A Table 5 variant routes one of the two and leaves the other dense.
        only = getattr(variant, "only", "")
        model = {"d_model": variant.expand * shape.width, "attention_inner": shape.width}
        if only != "ffn":
            model["attention"] = "mohd"
        if only != "attention":
            model["ffn"] = "mohd_swiglu"
        model.update({"n_experts": variant.n, "top_k": variant.k})
        model["layer_options"] = dict({"mohd_shared": variant.shared}, **variant.extra)
        fields["model"] = model
    return fields

# Every variant as an arm of the study, trained on the pinned mixture's small BPE shards.
MOHD_ARMS = {
    name: arm(config = {scale: _config(variant, DENSE_SHAPE[scale]) for scale in SCALES})
    for name, variant in VARIANTS.items()
}

# The activation-flow study's sample sizes per scale (windows of the validation split, and shuffled windows
# for the sharing baseline).
ACTIVATION_FLOW_FLAGS = {
    "smoke": ["--windows=24", "--shuffled_windows=200"],
    "cpu": ["--windows=256", "--shuffled_windows=2000"],
    "paper": ["--windows=512", "--shuffled_windows=4000"],
}

# Sub-dimension routing by domain (MoHD Sec. 5.4, Fig. 11): tokens per corpus source (half in each of its two
# halves; the paper averages 4,096 tokens per bar) and the split read. Smoke reads the train split: its test split
# keeps one or two documents per source, too few for two halves.
ROUTER_DOMAIN_FLAGS = {
    "smoke": ["--split=train", "--tokens_per_domain=512"],
    "cpu": ["--split=test", "--tokens_per_domain=8192"],
    "paper": ["--split=test", "--tokens_per_domain=8192"],
}
