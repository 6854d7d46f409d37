"""replacement_fit: one replacement layer of the MxD experiments as build targets: <name>_overlay (its
model.replacement), <name>_config (base model config + fit settings + overlay) and <name>
(replacement_checkpoint: the fit, cached like any training run)."""

load("//tools/config:config.bzl", "experiment_config")
load("//tools/train:lm_checkpoint.bzl", "replacement_checkpoint")

FIT_SCALES = {
    "smoke": "//experiments/mxd_frontier:fit_smoke.textproto",
    "cpu": "//experiments/mxd_frontier:fit_cpu.textproto",
    "paper": "//experiments/mxd_frontier:fit_paper.textproto",
}

# The grid of Fig. 3 at our scale: active units K per token.
K_GRID = [2, 4, 8, 16, 32]

def replacement_fit(name, base, base_config, activations, ffn, top_k, on_output = False):
    """`ffn` (a registry name) with K = top_k fitted to `activations` of the lm_checkpoint `base`."""
    native.genrule(
        name = name + "_overlay",
        outs = [name + "_overlay.textproto"],
        cmd = "printf 'name: \"%s\"\\nmodel { replacement { ffn: \"%s\" top_k: %d on_output: %s } }\\n' > $@" %
              (name, ffn, top_k, "true" if on_output else "false"),
    )
    experiment_config(
        name = name + "_config",
        base = base_config,
        scales = FIT_SCALES,
        overlays = ["//experiments/mxd_frontier:fit.textproto", ":%s_overlay" % name],
    )
    replacement_checkpoint(
        name = name,
        config = ":%s_config" % name,
        base = base,
        activations = activations,
    )

def replacement_grid(prefix, base, base_config, activations, methods, ks = K_GRID):
    """replacement_fit for every method x K: <prefix>_<method>_k<K>. Returns the target names."""
    names = []
    for method, ffn in methods.items():
        for k in ks:
            name = "%s_%s_k%d" % (prefix, method, k)
            replacement_fit(name, base, base_config, activations, ffn, k)
            names.append(name)
    return names

def frontier_evaluation(name, base_name, base, activations, fits):
    """<name>.csv: CE (base, zero-ablated, each fit), CE recovered, NMSE, l0, dead units and MxD expert
    rank of every fit, on the held-out test split (analysis/replacement:evaluate_replacements)."""
    native.genrule(
        name = name,
        srcs = [base, activations, "//datasets/text:shards"] + [":" + f for f in fits],
        outs = [name + ".csv"],
        exec_tools = ["//analysis/replacement:evaluate_replacements"],
        cmd = ("for f in $(locations %s); do case $$f in *.pt) base=$$f;; esac; done; " % base +
               "for d in $(locations %s); do case $$d in */test) cache=$$d;; esac; done; " % activations +
               "for d in $(locations //datasets/text:shards); do case $$d in */test) tokens=$$d;; esac; done; " +
               "fits=; for f in %s; do case $$f in *.pt) fits=\"$$fits $$f\";; esac; done; " %
               " ".join(["$(locations :%s)" % f for f in fits]) +
               "$(location //analysis/replacement:evaluate_replacements) --base=$$base --base_name=%s " % base_name +
               "--tokens=$$tokens/test.tokens.textproto --activations=$$cache/test.activations.textproto " +
               "--cpu_slot_dir=/tmp/sparse_layers_cpu_slots --out=$@ $$fits 2>/dev/null"),
        message = "Evaluating the %s replacement frontier" % base_name,
    )

# The K of the probing and steering layers: the paper's K = 32 at d = 768 is K/d = 0.04; K = 8 is the grid
# point nearest that ratio at d = 128 (seed-mxd.md 7.3).
FEATURE_K = 8

def sae_fit(name, base, base_config, activations):
    """A TopK SAE on the FFN output (the probing and steering baseline, seed-mxd.md 2.3), K = FEATURE_K."""
    replacement_fit(name, base, base_config, activations, "topk_sae", FEATURE_K, on_output = True)

def feature_layers(base_name):
    """The fits the probing and steering experiments compare: TC, STC and MxD of the frontier at FEATURE_K
    and the SAE of `base_name`."""
    return [
        "//experiments/mxd_frontier:%s_%s_k%d" % (base_name, method, FEATURE_K)
        for method in ["tc", "stc", "mxd"]
    ] + ["//experiments/mxd_frontier:%s_sae_k%d" % (base_name, FEATURE_K)]

def _pick(label, suffix, var):
    return "for f in $(locations %s); do case $$f in *%s) %s=$$f;; esac; done; " % (label, suffix, var)

def feature_analysis(name, tool, base_name, base, extra_srcs, extra_args, examples = False):
    """<name>.csv from `tool` (sparse_probe or steer) over the base model and its feature_layers, and
    <name>.txt: the tool's --examples when `examples`, else its log."""
    fits = feature_layers(base_name)
    native.genrule(
        name = name,
        srcs = [base, "//datasets/text:bpe"] + fits + extra_srcs,
        outs = [name + ".csv", name + ".txt"],
        exec_tools = [tool],
        cmd = (_pick(base, ".pt", "base") + _pick("//datasets/text:bpe", ".model", "tokenizer") +
               "fits=; for f in %s; do case $$f in *.pt) fits=\"$$fits $$f\";; esac; done; " %
               " ".join(["$(locations %s)" % f for f in fits]) +
               "$(location %s) --base=$$base --base_name=%s --tokenizer=$$tokenizer " % (tool, base_name) +
               extra_args + " --cpu_slot_dir=/tmp/sparse_layers_cpu_slots --out=$(location %s.csv) $$fits " % name +
               ("--examples=$(location %s.txt) 2>/dev/null" % name if examples else "2> $(location %s.txt)" % name)),
        message = "Running %s on the %s features" % (tool, base_name),
    )
