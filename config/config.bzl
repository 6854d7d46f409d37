"""experiment_config: one validated, merged config file per build, chosen by the scale switch."""

load("//base/scale:scale.bzl", "by_scale")

def experiment_config(name, base, scales, overlays = [], visibility = None, tags = None):
    """Writes <name>.textproto: `base` refined by scales[<active scale>], validated at build time.

    Args:
      name: target name; the output is <name>.textproto.
      base: the textproto shared by all scales.
      scales: {"smoke": file, "cpu": file, "paper": file}, each refining `base`; None when no scale refines
        it (a pretrained model's config).
      overlays: files applied after the scale's, e.g. one model variant of an experiment.
      visibility: as usual.
      tags: as usual (e.g. manual for a config only some scale builds).
    """
    native.genrule(
        name = name,
        # The checker is the first of srcs (built in the target configuration, so its objects are the tests').
        srcs = ["//models/tools:check_config", base] +
               (by_scale({scale: [overlay] for scale, overlay in scales.items()}) if scales else []) + overlays,
        outs = [name + ".textproto"],
        cmd = "set -- $(SRCS); checker=$$1; shift; $$checker --out=$@ \"$$@\" >/dev/null",
        visibility = visibility,
        tags = tags,
    )
