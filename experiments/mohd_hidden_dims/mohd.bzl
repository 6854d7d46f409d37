"""mohd_run: one model of the MoHD study (MoHD, arXiv:2412.05644, Tables 2 and 4) at one seed as build targets:
<name>_overlay (its name and MoHD settings at the active scale's width), <name>_seed (runtime.seed: the
initialisation and data order), <name>_config (base + scale + overlays) and <name> (lm_checkpoint on
//datasets/text:shards_small), <name> = <variant>_s<seed>. mohd_runs: every variant at every seed.
design_table: design.csv, the variants' shapes and activated parameters at the active scale."""

load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_labels", "seeded_name")
load("//tools/train:seeded_lm.bzl", "seeded_lm")
load("//tools/train:tool_run.bzl", "tool_run")

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
# controls not in the paper): expansion k (D = k d), sub-dims N, active K, shared S, extra layer_options, and
# `only` ("ffn" or "attention") to route one of the two; or, for the dense control with x2's embedding and LM
# head width (2d, projected to and from the blocks' d), embedding_expand; or, for the dense control with x2's
# total parameter count from a wider FFN, matched_parameters.
VARIANTS = {
    "dense": None,
    "dense_wide_embedding": struct(embedding_expand = 2),
    "dense_matched_parameters": struct(matched_parameters = True),
    "mohd_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = ""),
    "mohd_75": struct(expand = 1, n = 8, k = 6, shared = 3, extra = ""),
    "mohd_x2": struct(expand = 2, n = 8, k = 4, shared = 3, extra = ""),
    "mohd_x2_no_scaling": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_scaling: NONE"),
    "mohd_x2_no_fusion": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_fusion: false"),
    "mohd_x2_no_shared": struct(expand = 2, n = 8, k = 4, shared = 0, extra = ""),
    "mohd_x2_random_routing": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_random_routing: true"),
    # Table 4's last ablation: the x2 model without its balance loss (beta = 0, Eq. 13).
    "mohd_x2_no_balance": struct(expand = 2, n = 8, k = 4, shared = 3, extra = "mohd_balance_weight: 0"),
    # Fig. 12(a)'s shared allocation of the x2 model's K = 4 active sub-dims (Sec. 5.5): 1/4 and 2/4 shared, and 4/4
    # (static: every active sub-dim shared, nothing routed); 0/4 is mohd_x2_no_shared and 3/4 mohd_x2.
    "mohd_x2_shared_1": struct(expand = 2, n = 8, k = 4, shared = 1, extra = ""),
    "mohd_x2_shared_2": struct(expand = 2, n = 8, k = 4, shared = 2, extra = ""),
    "mohd_x2_static": struct(expand = 2, n = 8, k = 4, shared = 4, extra = ""),
    # Table 5's decoupled sparsity at 50%: MoHD in the FFN only (the attention dense) or the attention only.
    "mohd_ffn_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = "", only = "ffn"),
    "mohd_attention_50": struct(expand = 1, n = 8, k = 4, shared = 3, extra = "", only = "attention"),
}

def _is_mohd(variant):
    return variant != None and hasattr(variant, "expand")

def _overlay(name, variant, shape):
    width = shape.width
    text = "name: \"%s\"" % name
    if variant and hasattr(variant, "embedding_expand"):
        text += " model { embedding_width: %d }" % (variant.embedding_expand * width)
    elif variant and hasattr(variant, "matched_parameters"):
        text += " model { d_ffn: %d }" % shape.d_ffn_matching_x2
    elif variant:
        # MoHD attention and SwiGLU FFN read and write K of N sub-dims of D; q and d_ff stay the dense model's.
        # A Table 5 variant routes one of the two and leaves the other dense.
        only = getattr(variant, "only", "")
        layers = ("" if only == "ffn" else " attention: \"mohd\"") + ("" if only == "attention" else " ffn: \"mohd_swiglu\"")
        text += (" model { d_model: %d attention_inner: %d%s" +
                 " n_experts: %d top_k: %d layer_options { mohd_shared: %d %s } }") % (
            variant.expand * width,
            width,
            layers,
            variant.n,
            variant.k,
            variant.shared,
            variant.extra,
        )
    return text

def mohd_run(variant_name, variant, seed):
    name = seeded_name(variant_name, seed)
    seeded_lm(
        name = variant_name,
        seed = seed,
        seeds = SEED_PLAN["mohd_hidden_dims"],
        base = "base.textproto",
        scales = {scale: scale + ".textproto" for scale in SCALES},
        overlay_cmd = by_scale({
            scale: "echo '%s' > $@" % _overlay(name, variant, DENSE_SHAPE[scale])
            for scale in SCALES
        }),
        data = "//datasets/text:shards_small",
    )

def mohd_runs():
    """Every variant at every seed any scale uses; returns the variant names."""
    for seed in all_seeds(SEED_PLAN["mohd_hidden_dims"]):
        for name, variant in VARIANTS.items():
            mohd_run(name, variant, seed)
    return VARIANTS.keys()

def design_table(name):
    """<name>.csv: each variant's D, N, K, S, active width and activated parameters, computed by
    //analysis/scaling:mohd_design from its seed-1 merged config (every scale trains seed 1)."""
    configs = [":%s_config" % seeded_name(v, 1) for v in VARIANTS]
    native.genrule(
        name = name,
        srcs = configs,
        outs = [name + ".csv"],
        cmd = "$(location //analysis/scaling:mohd_design) --out=$@ " + " ".join([
            "%s=$(location %s)" % (v, c)
            for v, c in zip(VARIANTS.keys(), configs)
        ]),
        tools = ["//analysis/scaling:mohd_design"],
    )

# The activation-flow study's sample sizes per scale (windows of the validation split, and shuffled windows
# for the sharing baseline).
ACTIVATION_FLOW_FLAGS = {
    "smoke": ["--windows=24", "--shuffled_windows=200"],
    "cpu": ["--windows=256", "--shuffled_windows=2000"],
    "paper": ["--windows=512", "--shuffled_windows=4000"],
}

def activation_flow_run(seed):
    """activation_flow_s<seed>: the MoHD observation study (arXiv:2412.05644 Sec. 3, Figs. 3-5) on the dense
    and x2 models of `seed`: the tool's activation_flow_s<seed>/{flow,sharing}.csv, and flow_s<seed>.csv,
    sharing_s<seed>.csv with a leading seed column for the claims engine."""
    name = seeded_name("activation_flow", seed)
    dense = ":" + seeded_name("dense", seed)
    x2 = ":" + seeded_name("mohd_x2", seed)
    tool_run(
        name = name,
        tool = "//analysis/activation_flow",
        outs = [name + "/flow.csv", name + "/sharing.csv"],
        out_flags = ["", ""],
        out_dir_flag = "--out_dir=",
        named_checkpoints = {dense: "dense", x2: "mohd_x2"},
        tokens = "//datasets/text:shards_small",
        token_args = {"--tokens=": "validation"},
        args = ["--threads=2"] + by_scale(ACTIVATION_FLOW_FLAGS),
        message = "Measuring the activation flow of the MoHD study's dense and x2 models, seed %d" % seed,
        tags = seed_tags(seed, SEED_PLAN["mohd_hidden_dims"]),
    )
    native.genrule(
        name = name + "_with_seed",
        srcs = [name + "/flow.csv", name + "/sharing.csv"],
        outs = [seeded_name("flow", seed) + ".csv", seeded_name("sharing", seed) + ".csv"],
        cmd = "for t in flow sharing; do sed '1s/^/seed,/; 2,$$s/^/%d,/' $(RULEDIR)/%s/$$t.csv > $(RULEDIR)/$${t}_s%d.csv; done" % (
            seed,
            name,
            seed,
        ),
        tags = seed_tags(seed, SEED_PLAN["mohd_hidden_dims"]),
    )

# Sub-dimension routing by domain (MoHD Sec. 5.4, Fig. 11): tokens per corpus source (half in each of its two
# halves; the paper averages 4,096 tokens per bar) and the split read. Smoke reads the train split: its test split
# keeps one or two documents per source, too few for two halves.
ROUTER_DOMAIN_FLAGS = {
    "smoke": ["--split=train", "--tokens_per_domain=512"],
    "cpu": ["--split=test", "--tokens_per_domain=8192"],
    "paper": ["--split=test", "--tokens_per_domain=8192"],
}

def router_domains_run(seed):
    """router_domains_s<seed>: the x2 model's and its random-routing control's routers on the held-out documents
    of each corpus source (analysis/routing:router_domains): router_domains_s<seed>/router_domains.csv and
    router_specialisation.csv, each row with the models' training seed."""
    name = seeded_name("router_domains", seed)
    tool_run(
        name = name,
        tool = "//analysis/routing:router_domains",
        outs = [name + "/router_domains.csv", name + "/router_specialisation.csv"],
        out_flags = ["", ""],
        out_dir_flag = "--out_dir=",
        named_checkpoints = {
            ":" + seeded_name("mohd_x2", seed): "mohd_x2",
            ":" + seeded_name("mohd_x2_random_routing", seed): "mohd_x2_random_routing",
        },
        directory_args = {"//datasets/text:mixed": "--corpus_dir="},
        tokenizer = "//datasets/text:bpe_small",
        args = ["--threads=2"] + by_scale(ROUTER_DOMAIN_FLAGS),
        message = "Reading the MoHD x2 routers by domain, seed %d" % seed,
        tags = seed_tags(seed, SEED_PLAN["mohd_hidden_dims"]),
    )

def router_domain_tables(table):
    """select() of router_domains_s<seed>/<table>.csv (router_domains or router_specialisation) at the active
    scale's seeds."""
    return seeded_labels(["router_domains"], SEED_PLAN["mohd_hidden_dims"], "/%s.csv" % table)

def mohd_run_files(variants):
    """select() of the active scale's trained runs, then their merged configs (the runs table's inputs)."""
    plan = SEED_PLAN["mohd_hidden_dims"]
    return seeded_labels(variants, plan) + seeded_labels(variants, plan, "_config")

def mohd_checkpoints(variants):
    """select() of the active scale's trained runs (their logs make the training curves)."""
    return seeded_labels(variants, SEED_PLAN["mohd_hidden_dims"])

def activation_flow_tables(table):
    """select() of <table>_s<seed>.csv (flow or sharing, with its seed column) at the active scale's seeds."""
    return seeded_labels([table], SEED_PLAN["mohd_hidden_dims"], ".csv")
