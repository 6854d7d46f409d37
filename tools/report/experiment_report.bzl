"""experiment_report: an experiment's report as a cached build action, printed by `bazel run`, checked by its
smoke test and gathered into //reports.

    experiment_report(name = "steering", tools = [...], results = ":results")

defines
  <name>_section  (build)  report.sh run on the results: <name>_section/section.md (the tables and claims it
                           prints), its CSVs and figures, and manifest.textproto (input digests, build
                           identity, scale, wall time)
  <name>          (run)    prints section.md and copies the folder to <name>_report/ where bazel was run
  <name>_smoke_test        smoke_test.sh on the section built at the test's scale (smoke in `bazel test`)
report.sh is called as `report.sh <out_dir> <tools...> <results...>`; smoke_test.sh gets the section folder, the
claims engine and the claims file. `pretrained_line` opens section.md when a user's pretrained model (HF_MODEL,
CHESS_MODEL: its import manifest) is among the results, its %s the model's type.
"""

load("//tools/scale:scale.bzl", "by_scale")

def _report_section_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    tool_paths = [f.path for t in ctx.attr.tools for f in t.files.to_list()]
    ctx.actions.run(
        executable = ctx.executable._build_section,
        arguments = [
            out.path,
            ctx.attr.report_name,
            ctx.attr.scale,
            ctx.file._build_identity.path,
            ctx.file.script.path,
            ctx.attr.pretrained_line,
            str(len(tool_paths)),
        ] + tool_paths + [f.path for f in ctx.files.results],
        inputs = [ctx.file.script, ctx.file._build_identity] + ctx.files.tools + ctx.files.results,
        outputs = [out],
        mnemonic = "ExperimentReport",
        progress_message = "Writing the report of %s" % ctx.label.package,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

report_section = rule(
    implementation = _report_section_impl,
    attrs = {
        "script": attr.label(mandatory = True, allow_single_file = True),
        "report_name": attr.string(mandatory = True),
        "scale": attr.string(mandatory = True),
        "pretrained_line": attr.string(doc = "The section's first line when a pretrained model's import manifest is among the results; %s is its model_type."),
        "tools": attr.label_list(allow_files = True, doc = "Files passed before the results (plot scripts, paper tables)."),
        "results": attr.label_list(allow_files = True),
        "_build_section": attr.label(default = "//tools/report:build_section", executable = True, cfg = "exec"),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)

def experiment_report(
        name,
        results,
        tools = [],
        script = "report.sh",
        smoke_test = "smoke_test.sh",
        claims = "claims.textproto",
        pretrained_line = ""):
    report_section(
        name = name + "_section",
        script = script,
        report_name = name,
        pretrained_line = pretrained_line,
        scale = by_scale({"smoke": "smoke", "cpu": "cpu", "paper": "paper"}),
        tools = tools,
        results = [results],
    )
    native.sh_binary(
        name = name,
        srcs = ["//tools/report:print_section.sh"],
        args = ["$(location :%s_section)" % name, name],
        data = [":%s_section" % name],
    )

    # The smoke test gets the section, the claims engine and the claims file, so that it checks the section's
    # verdicts with `judge_claims --verify` rather than its own reading of verdicts.csv.
    native.sh_test(
        name = name + "_smoke_test",
        size = "medium",
        srcs = [smoke_test],
        args = [
            "$(location :%s_section)" % name,
            "$(location //analysis/claims:judge_claims)",
            "$(location %s)" % claims,
        ],
        data = [
            ":%s_section" % name,
            "//analysis/claims:judge_claims",
            claims,
        ],
    )
