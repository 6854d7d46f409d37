"""The experiment scale as a build setting: --//base/scale=smoke|cpu|paper."""

SCALES = ["smoke", "cpu", "paper"]

def _scale_impl(ctx):
    if ctx.build_setting_value not in SCALES:
        fail("--//base/scale=%s: expected one of %s" % (ctx.build_setting_value, ", ".join(SCALES)))
    return []

scale_setting = rule(
    implementation = _scale_impl,
    build_setting = config.string(flag = True),
)

def by_scale(values):
    """select() over the scales: by_scale({"smoke": a, "cpu": b, "paper": c}), every scale named."""
    if sorted(values.keys()) != sorted(SCALES):
        fail("by_scale needs exactly the scales %s, got %s" % (SCALES, values.keys()))
    return select({"//base/scale:" + scale: value for scale, value in values.items()})
