"""The sgatlin (arXiv:2606.07414) isoflop study's arms (Sec. 3.1, Table 1) as data for the study rule
(//pipelines/study): ISOFLOP_ARMS, one arm per FFN type x budget x ladder size some scale sweeps,
<type>_budget<i>_size<j>, its overlay written by //analysis/scaling:ladder_overlay (the ladder model and FLOP
budget)."""

load("//base/scale:scale.bzl", "SCALES")
load("//pipelines/study:study.bzl", "arm")

# Per experiment scale: which ladder, the FLOP budgets (training FLOPs counted as the paper's code does), and
# for each budget the ladder scales swept (the paper slides its window of scales up with the budget, App. B.2).
GRID = {
    # smoke: the cpu grid's shape; 4e8 gives the largest rung (PEER at scale 3: 1.2e8 per step) three steps.
    "smoke": struct(ladder = "tiny", budgets = ["4e8", "8e8"], sizes = [[0, 1, 2, 3]] * 2),
    # cpu: the tiny ladder's four lowest half-step rungs (d = 32 to 96, 1-2 layers). A pilot (GeLU MLP, one
    # seed) put the optimum at the smallest rung at 2e11 and at the second (d = 64, one layer) at 6e11, so
    # both budgets sit at or above 6e11; single-threaded runs, two at a time (these widths gain nothing from
    # a second thread), fit the 90-minute cold build.
    "cpu": struct(ladder = "tiny", budgets = ["6e11", "1.2e12"], sizes = [[0, 1, 2, 3]] * 2),
    "paper": struct(ladder = "paper", budgets = ["1e17", "6e17", "6e18"], sizes = [[2, 3, 4], [4, 5, 6], [6, 7, 8]]),
}

# The isoflop FFN types of Fig. 3 (Sec. 3.1): the dense GELU MLP, the GPT-OSS clamped GLU (the paper's
# "SwiGLU"), the 16-expert top-2 MoE, PEER and sgatlin.
ISOFLOP_TYPES = ["mlp", "swiglu", "moe", "peer", "sgatlin"]

# Table 1 (Sec. 3.2): sgatlin with a nonlinearity or PEER's router, at one budget and size of every scale.
ABLATIONS = ["sgatlin_relu", "sgatlin_gelu", "sgatlin_swish", "sgatlin_peer_router"]
ABLATION_POINT = (1, 1)  # (budget index, size index)

def _in_grid(scale, budget_index, size_index):
    grid = GRID[scale]
    return budget_index < len(grid.budgets) and size_index < len(grid.sizes[budget_index])

def _points():
    """Every (budget index, size index) some scale sweeps."""
    points = []
    for scale in SCALES:
        for b in range(len(GRID[scale].budgets)):
            for s in range(len(GRID[scale].sizes[b])):
                if (b, s) not in points:
                    points.append((b, s))
    return points

def _overlay_cmd(ffn_type, budget_index, size_index):
    """{scale: a genrule command writing the point's ladder overlay}; a scale whose grid lacks the point fails with a
    message."""
    name = "{run}"
    return {
        scale: ("$(location //analysis/scaling:ladder_overlay) --ladder=%s --type=%s --scale=%d --max_flops=%s --name=%s > $@" % (
            GRID[scale].ladder,
            ffn_type,
            GRID[scale].sizes[budget_index][size_index],
            GRID[scale].budgets[budget_index],
            name,
        ) if _in_grid(scale, budget_index, size_index) else "echo '%s is not in the %s grid' >&2; exit 1" % (
            name,
            scale,
        ))
        for scale in SCALES
    }

def _arms():
    """(arm, ffn type, budget index, size index) of every point some scale sweeps, ablations last."""
    arms = []
    for ffn_type in ISOFLOP_TYPES:
        for b, s in _points():
            arms.append(("%s_budget%d_size%d" % (ffn_type, b, s), ffn_type, b, s))
    for ffn_type in ABLATIONS:
        b, s = ABLATION_POINT
        arms.append(("%s_budget%d_size%d" % (ffn_type, b, s), ffn_type, b, s))
    return arms

# Every point as an arm. Wildcards (`bazel test //...` at smoke, `bazel build //...` at cpu) build only points both
# scales sweep; the report pulls in the rest of its scale's grid.
ISOFLOP_ARMS = {
    name: arm(
        overlay_cmd = _overlay_cmd(ffn_type, b, s),
        overlay_tools = ["//analysis/scaling:ladder_overlay"],
        wildcard = _in_grid("smoke", b, s) and _in_grid("cpu", b, s),
        scales = [scale for scale in SCALES if _in_grid(scale, b, s)],
        # The claims name FFN types and budgets (columns), not points: a point outside a scale's grid is not "not run".
        judged = False,
        threads = 1,  # base.textproto's runtime.threads.
    )
    for name, ffn_type, b, s in _arms()
}
