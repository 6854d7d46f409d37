"""isoflop_run: one point of the sgatlin (arXiv:2606.07414) isoflop study (Sec. 3.1) as build targets:
<name>_overlay (ladder_overlay: the ladder model and FLOP budget), <name>_config (base + scale + overlay) and
<name> (lm_checkpoint on this experiment's token shards). isoflop_grid: every FFN type x budget x size, named
<type>_budget<i>_size<j> (no `_s<N>` suffix: that one is left to seeds, tools/seeds/seeds.bzl)."""

load("//tools/config:config.bzl", "experiment_config")
load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/train:lm_checkpoint.bzl", "lm_checkpoint")

# Per experiment scale: which ladder, the three FLOP budgets (training FLOPs counted as the paper's code
# does), and for each budget the three ladder scales swept (the paper slides its window of scales up with
# the budget, App. B.2).
GRID = {
    "smoke": struct(ladder = "tiny", budgets = ["5e8", "1e9", "2e9"], sizes = [[1, 2, 3]] * 3),
    # cpu: the 31 runs train for about 15 min of CPU time together (measured with the fused sgatlin kernel;
    # before it, sgatlin at 0.4-3.5k tokens/s pushed these budgets past 45 min cold). No run sees 1M tokens.
    "cpu": struct(ladder = "tiny", budgets = ["1e11", "3e11", "6e11"], sizes = [[1, 2, 3]] * 3),
    "paper": struct(ladder = "paper", budgets = ["1e17", "6e17", "6e18"], sizes = [[2, 3, 4], [4, 5, 6], [6, 7, 8]]),
}

# The isoflop FFN types (Sec. 3.1; the GPT-OSS clamped GLU is the paper's "SwiGLU").
ISOFLOP_TYPES = ["swiglu", "moe", "sgatlin"]

# Table 1 (Sec. 3.2): sgatlin with a nonlinearity or PEER's router, at one budget and size.
ABLATIONS = ["sgatlin_relu", "sgatlin_gelu", "sgatlin_swish", "sgatlin_peer_router"]
ABLATION_POINT = (1, 1)  # (budget index, size index)

def isoflop_run(name, ffn_type, budget_index, size_index):
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        exec_tools = [":ladder_overlay"],
        cmd = by_scale({
            scale: "$(location :ladder_overlay) --ladder=%s --type=%s --scale=%d --max_flops=%s --name=%s > $@" % (
                GRID[scale].ladder,
                ffn_type,
                GRID[scale].sizes[budget_index][size_index],
                GRID[scale].budgets[budget_index],
                name,
            )
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

def isoflop_grid():
    """All runs; returns their names: <type>_budget<budget index>_size<size index>."""
    names = []
    for ffn_type in ISOFLOP_TYPES:
        for b in range(3):
            for s in range(3):
                names.append("%s_budget%d_size%d" % (ffn_type, b, s))
                isoflop_run(names[-1], ffn_type, b, s)
    for ffn_type in ABLATIONS:
        names.append("%s_budget%d_size%d" % ((ffn_type,) + ABLATION_POINT))
        isoflop_run(names[-1], ffn_type, ABLATION_POINT[0], ABLATION_POINT[1])
    return names
