"""experiment_report: an experiment's section, judged by the claims engine from declared tables, printed by
`bazel run`, checked at smoke by the engine and gathered into //reports.

    experiment_report(
        name = "steering",
        tables = {"steering.csv": ["gelu_steering_s1.csv", ...]},   # table name -> files concatenated into it
        seeds = SEEDS,                                              # scale -> seeds: the checks' "$seeds"
        listings = [listing("examples.txt", ["gelu_steering_s1.txt", ...], "Example generations", head = 12)],
    )

defines
  <name>_section     (build)  judge_claims on the tables (claims.textproto): <name>_section/section.md (tables,
                              figures, verdicts, listings), the merged CSVs, figures, claims.textproto and
                              manifest.textproto (input digests, build identity, scale, wall time)
  <name>             (run)    prints section.md and copies the folder to <name>_report/ where bazel was run
  <name>_smoke_test  (test)   `judge_claims --verify` on the section built at the test's scale: the claims file's
                              checks (every declared arm x seed x level, finite values), titles, figures, files
                              and one verdict per claim
`arms_not_run`: arms the active scale does not train (their claims read NOT TESTABLE); `pretrained`: import
manifests of a user's pretrained model among the inputs (HF_MODEL, CHESS_MODEL), named by `pretrained_line`
(%s its model_type) at the head of section.md.
"""

load("//base/scale:scale.bzl", "by_scale")

def listing(file, files, title, head):
    """Text outputs concatenated into <section>/<file>, the first `head` lines of the first shown under `title`."""
    return struct(file = file, files = files, title = title, head = head)

def _paths(target):
    return ",".join([f.path for f in target.files.to_list()])

def _report_section_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    args = ctx.actions.args()
    args.add_all([out.path, ctx.attr.report_name, ctx.attr.scale, ctx.file._build_identity.path])
    args.add(ctx.attr.pretrained_line)
    args.add_all([ctx.executable._judge_claims.path, ctx.file.claims.path])
    args.add(str(len(ctx.files.pretrained)))
    args.add_all(ctx.files.pretrained)
    args.add(str(len(ctx.attr.listings)))
    for target, spec in ctx.attr.listings.items():
        file, head, title = spec.split("|", 2)
        args.add_all([file, head, title, _paths(target)])
    args.add("--")
    args.add_all(["--plot=" + ctx.file._plot_lines.path, "--plot_heatmap=" + ctx.file._plot_heatmap.path])
    for target, table in ctx.attr.tables.items():
        args.add("--table=%s=%s" % (table, _paths(target)))
    if ctx.attr.arms_not_run:
        args.add("--arms_not_run=" + ",".join(ctx.attr.arms_not_run))
    ctx.actions.run(
        executable = ctx.executable._build_section,
        arguments = [args],
        inputs = depset(
            [ctx.file.claims, ctx.file._build_identity, ctx.file._plot_lines, ctx.file._plot_heatmap] +
            ctx.files.pretrained,
            transitive = [t.files for t in ctx.attr.tables] + [t.files for t in ctx.attr.listings],
        ),
        tools = [ctx.executable._judge_claims],
        outputs = [out],
        mnemonic = "ExperimentReport",
        progress_message = "Writing the report of %s" % ctx.label.package,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

report_section = rule(
    implementation = _report_section_impl,
    attrs = {
        "report_name": attr.string(mandatory = True),
        "scale": attr.string(mandatory = True),
        "claims": attr.label(mandatory = True, allow_single_file = True),
        "tables": attr.label_keyed_string_dict(allow_files = True, doc = "Files of a table -> the table's name."),
        "listings": attr.label_keyed_string_dict(allow_files = True, doc = "Files -> 'file|head|title'."),
        "arms_not_run": attr.string_list(),
        "pretrained": attr.label_list(allow_files = True),
        "pretrained_line": attr.string(doc = "The section's first line when a pretrained model's import manifest is among the inputs; %s is its model_type."),
        "_build_section": attr.label(default = "//pipelines/report:build_section", executable = True, cfg = "target"),
        "_judge_claims": attr.label(default = "//analysis/claims:judge_claims", executable = True, cfg = "target"),
        "_plot_lines": attr.label(default = "//analysis/plot:plot_lines.sh", allow_single_file = True),
        "_plot_heatmap": attr.label(default = "//analysis/plot:plot_heatmap.sh", allow_single_file = True),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)

def _file_name(name):
    return name.replace(".", "_").replace("/", "_")

def experiment_report(
        name,
        tables,
        seeds,
        claims = "claims.textproto",
        listings = [],
        arms_not_run = [],
        pretrained = [],
        pretrained_line = "",
        min_n = 2):
    """The section, its `bazel run` printer and its smoke check.

    Args:
      name: the experiment (the section's heading and <name>_report/).
      tables: table name -> files concatenated into it (a list or a select()).
      seeds: scale -> the seeds it trains (a //base/seeds dict); the checks read them as "$seeds".
      claims: the claims file (tables, figures, claims, checks).
      listings: listing()s of text outputs shown in the section.
      arms_not_run: arms the active scale does not train (a list or a select()).
      pretrained: import manifests of a user's pretrained model.
      pretrained_line: the section's first line with a pretrained model (%s its model_type).
      min_n: the smallest n behind any verdict, checked by the smoke test (0: none).
    """
    for table, files in tables.items():
        native.filegroup(name = "%s_table_%s" % (name, _file_name(table)), srcs = files)
    for spec in listings:
        native.filegroup(name = "%s_listing_%s" % (name, _file_name(spec.file)), srcs = spec.files)
    report_section(
        name = name + "_section",
        report_name = name,
        claims = claims,
        scale = by_scale({"smoke": "smoke", "cpu": "cpu", "paper": "paper"}),
        tables = {":%s_table_%s" % (name, _file_name(t)): t for t in tables},
        listings = {
            ":%s_listing_%s" % (name, _file_name(s.file)): "%s|%d|%s" % (s.file, s.head, s.title)
            for s in listings
        },
        arms_not_run = arms_not_run,
        pretrained = pretrained,
        pretrained_line = pretrained_line,
    )
    native.sh_binary(
        name = name,
        srcs = ["//pipelines/report:print_section.sh"],
        args = ["$(location :%s_section)" % name, name],
        data = [":%s_section" % name],
    )
    native.sh_test(
        name = name + "_smoke_test",
        size = "medium",
        srcs = ["//pipelines/report:check_section_test.sh"],
        args = [
            "$(location :%s_section)" % name,
            "$(location //analysis/claims:judge_claims)",
            "$(location %s)" % claims,
            "--min_n=%d" % min_n,
        ] + by_scale({scale: ["--seeds=" + ",".join([str(s) for s in seeds[scale]])] for scale in seeds}),
        data = [
            ":%s_section" % name,
            "//analysis/claims:judge_claims",
            claims,
        ],
    )
