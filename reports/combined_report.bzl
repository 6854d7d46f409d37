"""combined_report: every experiment's report section (tools/report/experiment_report.bzl) in one Markdown
report, report/report.md, with each experiment's CSVs, figures and manifest beside it in report/<name>/.
The code revision comes from the workspace status (tools/report/workspace_status.sh), so only this cheap
action reruns after a commit."""

def _combined_report_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    sections = []
    for target, title in ctx.attr.sections.items():
        for f in target.files.to_list():
            sections += [f.path, title]
    ctx.actions.run(
        executable = ctx.executable._combine,
        arguments = [out.path, ctx.info_file.path, ctx.file._build_identity.path] + sections,
        inputs = [ctx.info_file, ctx.file._build_identity] + ctx.files.sections,
        outputs = [out],
        mnemonic = "CombinedReport",
        progress_message = "Writing the combined report",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

combined_report = rule(
    implementation = _combined_report_impl,
    attrs = {
        "sections": attr.label_keyed_string_dict(
            mandatory = True,
            doc = "experiment_report <name>_section targets -> the paper figure / table they regenerate.",
        ),
        "_combine": attr.label(default = "//reports:combine_report", executable = True, cfg = "exec"),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)
