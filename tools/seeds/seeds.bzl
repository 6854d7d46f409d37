"""The seed set of every experiment, per scale, defined once (issue 20: seeds are a build dimension).

A trained or sampled node that a claim compares is built once per seed: `<name>_s<seed>`. Seeds change
initialisation and data order (runtime.seed of the config) or the sampler's draws (a tool's --seed), and the
tidy CSVs carry a `seed` column so the claims engine (analysis/claims) computes intervals over them.

    load("//tools/seeds:seeds.bzl", "SEEDS", "seeded_config", "seeded_name")
    for s in SEEDS["cpu"]:
        seeded_config(name = seeded_name("dense", s), seed = s, base = "base.textproto", scales = ...)
        lm_checkpoint(name = seeded_name("dense", s), config = ":%s_config" % seeded_name("dense", s), ...)

Which list is active follows --//tools/scale; macros that need the names at loading time (every scale's
targets exist, only the active scale's are built) take all_seeds() and select with `by_scale` where a target
gathers them (`seeds_by_scale`).
"""

load("//tools/config:config.bzl", "experiment_config")
load("//tools/scale:scale.bzl", "by_scale")

# smoke: 2 (tests); cpu: 3 where a node is cheap (fits, probes, samples), COSTLY_SEEDS for whole language
# models, and an experiment whose effects need more derives its own (e.g. dict(SEEDS, cpu = [1, 2, 3, 4]));
# paper: 3 (the papers report single runs or 3 seeds).
SEEDS = {
    "smoke": [1, 2],
    "cpu": [1, 2, 3],
    "paper": [1, 2, 3],
}

# Whole language-model trainings at cpu scale cost minutes each: 2 seeds there (the issue's minimum).
COSTLY_SEEDS = {
    "smoke": [1, 2],
    "cpu": [1, 2],
    "paper": [1, 2, 3],
}

def all_seeds(seeds = SEEDS):
    """Every seed any scale uses, in order: the targets a macro declares (unbuilt ones cost nothing)."""
    out = []
    for scale in ["smoke", "cpu", "paper"]:
        for s in seeds[scale]:
            if s not in out:
                out.append(s)
    return out

def seeded_name(name, seed):
    """The target of `name` built with `seed`."""
    return "%s_s%d" % (name, seed)

def seeds_by_scale(name_fn, seeds = SEEDS):
    """select() of the list of labels name_fn(seed) for the active scale's seeds."""
    return by_scale({scale: [name_fn(s) for s in seeds[scale]] for scale in seeds})

def seed_tags(seed, seeds = SEEDS):
    """Tags of a target built at `seed`: manual unless smoke uses the seed, so `bazel test //...` (smoke) never
    trains a seed only cpu or paper needs; a scale's reports pull in its seeds (seeds_by_scale)."""
    return [] if seed in seeds["smoke"] else ["manual"]

def _seed_overlay(name, seed, tags = None):
    """<name>.textproto: a config overlay `runtime { seed: <seed> }` for experiment_config(overlays=...)."""
    native.genrule(
        name = name,
        outs = [name + ".textproto"],
        cmd = "echo 'runtime { seed: %d }' > $@" % seed,
        tags = tags,
    )

def seeded_config(name, seed, base, scales, overlays = [], tags = None):
    """<name>_config: experiment_config of `base`, `scales` and `overlays`, then <name>_seed (_seed_overlay) last,
    so the seed overrides any runtime.seed before it; `name` is a seeded_name."""
    _seed_overlay(name = name + "_seed", seed = seed, tags = tags)
    experiment_config(
        name = name + "_config",
        base = base,
        scales = scales,
        overlays = overlays + [":%s_seed" % name],
        tags = tags,
    )
