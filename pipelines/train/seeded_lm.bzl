"""seeded_lm: one language model of a study at one seed, the skeleton of every trained arm (the study rule,
//pipelines/study, declares them).

    seeded_lm(
        name = "dense", seed = 1, seeds = SEED_PLAN["mohd_hidden_dims"],
        base = "base.textproto", scales = {"smoke": "smoke.textproto", ...},
        overlays = ["dense.textproto"],                  # the arm's config overlays, in order
        overlay_cmd = "echo 'name: \\"dense_s1\\"' > $@",  # optional: a generated overlay (a string or select())
        data = "//datasets/text:shards_small",           # the rest goes to lm_checkpoint
    )

defines <name>_s<seed>_overlay (when overlay_cmd is given), <name>_s<seed>_config (base/seeds seeded_config:
base, scale, overlays, then runtime.seed) and <name>_s<seed> (lm_checkpoint), all tagged by the one tag rule
(seed_tags: `in_wildcard` False keeps an arm only a larger scale's report needs out of wildcard builds).
`init_from` names another arm: the run upcycles from that arm at the same seed.
"""

load("//base/seeds:seeds.bzl", "seed_tags", "seeded_config", "seeded_name")
load(":lm_checkpoint.bzl", "lm_checkpoint")

def seeded_lm(
        name,
        seed,
        seeds,
        base,
        scales,
        overlays = [],
        overlay_cmd = None,
        overlay_tools = [],
        in_wildcard = True,
        init_from = None,
        **kwargs):
    """The run's targets; returns its name, <name>_s<seed>."""
    run = seeded_name(name, seed)
    tags = seed_tags(seed, seeds, in_wildcard = in_wildcard)
    generated = []
    if overlay_cmd != None:
        native.genrule(
            name = run + "_overlay",
            outs = [run + "_overlay.textproto"],
            cmd = overlay_cmd,
            srcs = overlay_tools,  # Not tools: built in the target configuration, as the tests' objects are.
            tags = tags,
        )
        generated = [":%s_overlay" % run]
    seeded_config(
        name = run,
        seed = seed,
        base = base,
        scales = scales,
        overlays = overlays + generated,
        tags = tags,
    )
    lm_checkpoint(
        name = run,
        config = ":%s_config" % run,
        init_from = seeded_name(init_from, seed) if init_from else None,
        tags = tags,
        **kwargs
    )
    return run
