"""The package map, bottom to top: a package may depend on its own layer and the layers below it, never above.
Each layer (floor) is its own top-level folder(s), and no folder holds two floors.

Each package's BUILD sets `package(default_visibility = ["//:users_of_<its layer>"])`, so Bazel rejects an
upward dependency at analysis time; //tools/hygiene:package_order_test checks every edge of the build graph
against this table and fails on an upward edge or on a package that is in no layer. A new package goes in the
lowest layer whose packages it needs (a new FFN or attention: layers; a metric binary: analysis; a figure:
experiments)."""

PACKAGE_LAYERS = [
    # Utilities without LibTorch (files, digests, main(), CPU slots), the build settings and the BUILD files of
    # system libraries.
    ("base", ["//third_party", "//base/..."]),
    # The one experiment config schema, its loader and validator.
    ("config", ["//config"]),
    # LibTorch runtime and kernels, hook points, test helpers.
    ("ops", ["//ops/..."]),
    # Attention, FFN, MoHD and replacement layers.
    ("layers", ["//layers/..."]),
    # The hookable GPT and its loading (models), its checkpoint formats (models/checkpoints) and the command-line tools
    # that read and write them (models/tools).
    ("models", ["//models/..."]),
    # Pinned corpora, tokenizer, token shards, chess games, probing sets.
    ("data", ["//datasets/..."]),
    # Training and fitting, pretrained-model import, activation caching, evaluation loops, the study and report rules.
    ("pipelines", ["//pipelines/..."]),
    # Metric binaries and the claims engine.
    ("analysis", ["//analysis/..."]),
    # One package per paper experiment: one study, its configs and claims.
    ("experiments", ["//experiments/..."]),
    # The combined report.
    ("reports", ["//reports"]),
    # Whole-tree checks (build hygiene, remote cache, bad input) beside the entry point (tools/bazel, tools/deps.txt).
    ("checks", ["//tools/..."]),
]

def layer_visibility_groups():
    """package_group users_of_<layer>: the packages of that layer and of every layer above it."""
    for i, (name, _) in enumerate(PACKAGE_LAYERS):
        native.package_group(
            name = "users_of_" + name,
            packages = [p for _, packages in PACKAGE_LAYERS[i:] for p in packages],
        )

def package_layers_text():
    """The table as lines `<rank> <layer> <package>` (a trailing /... covers subpackages), for the test."""
    return "\n".join([
        "%d %s %s" % (rank, name, p)
        for rank, (name, packages) in enumerate(PACKAGE_LAYERS)
        for p in packages
    ]) + "\n"
