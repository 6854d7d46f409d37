"""combined_report: every experiment's report section (pipelines/report/experiment_report.bzl) in one Markdown
report, report/report.md, with each experiment's section folder (CSVs, figures, verdicts.csv, manifest) beside
it in report/<name>/, and the same report as one self-contained HTML page, report/report.html (Debian's pandoc,
figures embedded, verdicts coloured). The summary table is the claims engine's (`judge_claims --summarize`).
The code revision comes from the workspace status (pipelines/report/workspace_status.sh), so only this cheap
action reruns after a commit."""

load("//base/scale:scale.bzl", "by_scale")

_SECTION_SUFFIX = "_section"

def _combined_report_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    sections = []
    for target, title in ctx.attr.sections.items():
        # experiment_report(name = N) defines N_section: the experiment's name is the target's.
        label = target.label.name
        if not label.endswith(_SECTION_SUFFIX):
            fail("%s: sections must be experiment_report <name>_section targets" % target.label)
        folders = target.files.to_list()
        if len(folders) != 1:
            fail("%s: expected one section folder, got %d files" % (target.label, len(folders)))
        sections += [label[:-len(_SECTION_SUFFIX)], folders[0].path, title]
    ctx.actions.run(
        executable = ctx.executable._combine,
        arguments = [
            out.path,
            ctx.info_file.path,
            ctx.file._build_identity.path,
            ctx.attr.scale,
            ctx.executable.judge_claims.path,
            ctx.file._lua_filter.path,
            ctx.file._css.path,
            ctx.file._report_body.path,
        ] + sections,
        inputs = [
            ctx.info_file,
            ctx.file._build_identity,
            ctx.file._lua_filter,
            ctx.file._css,
            ctx.file._report_body,
        ] + ctx.files.sections,
        tools = [ctx.attr.judge_claims[DefaultInfo].files_to_run],
        outputs = [out],
        mnemonic = "CombinedReport",
        progress_message = "Writing the combined report (Markdown and HTML)",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

_combined_report = rule(
    implementation = _combined_report_impl,
    attrs = {
        "sections": attr.label_keyed_string_dict(
            mandatory = True,
            doc = "experiment_report <name>_section targets -> the paper figure / table they regenerate.",
        ),
        "scale": attr.string(mandatory = True),
        "judge_claims": attr.label(
            default = "//analysis/claims:judge_claims",
            executable = True,
            cfg = "target",
            doc = "The claims engine; its --summarize mode writes the summary table.",
        ),
        "_combine": attr.label(default = "//reports:combine_report", executable = True, cfg = "target"),
        "_lua_filter": attr.label(default = "//reports:verdicts.lua", allow_single_file = True),
        "_css": attr.label(default = "//reports:report.css", allow_single_file = True),
        "_report_body": attr.label(default = "//reports:report_body.sh", allow_single_file = True),
        "_build_identity": attr.label(default = "@build_identity//:identity.txt", allow_single_file = True),
    },
)

def combined_report(name, sections, **kwargs):
    """The combined report of `sections` at the build's scale (--//base/scale)."""
    _combined_report(
        name = name,
        sections = sections,
        scale = by_scale({"smoke": "smoke", "cpu": "cpu", "paper": "paper"}),
        **kwargs
    )

def _experiment_name(section):
    """mxd_frontier of "//experiments/mxd_frontier:mxd_frontier_section"."""
    name = section.split(":")[-1]
    if not name.endswith(_SECTION_SUFFIX):
        fail("%s: sections must be experiment_report <name>_section targets" % section)
    return name[:-len(_SECTION_SUFFIX)]

def published_reports(name, sections):
    """The combined report `name` of every section, one combined report per experiment (<experiment>_report), and
    the results page's publishers: publish_results (every experiment) and publish_<experiment> (one), each a `bazel
    run` target that builds its report at the build's scale and replaces those experiments' folders of
    docs/results (publish_results.sh). One experiment at a time fits a session whose Bazel cache may not last."""
    combined_report(name = name, sections = sections)
    experiments = [_experiment_name(section) for section in sections]
    publishers = {"publish_results": name}
    for section, title in sections.items():
        experiment = _experiment_name(section)

        # Manual: `bazel build //...` builds the combined report; these only when a publisher runs.
        combined_report(name = experiment + "_report", sections = {section: title}, tags = ["manual"])
        publishers["publish_" + experiment] = experiment + "_report"
    for publisher, report in publishers.items():
        native.sh_binary(
            name = publisher,
            srcs = ["publish_results.sh"],
            args = [
                "$(location :%s)" % report,
                "$(location results_readme_block.sh)",
                "$(location report_body.sh)",
                "$(location //analysis/claims:judge_claims)",
            ] + experiments,
            data = [
                ":" + report,
                "results_readme_block.sh",
                "report_body.sh",
                "//analysis/claims:judge_claims",
            ],
            tags = [] if report == name else ["manual"],
        )
