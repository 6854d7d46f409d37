"""What the repository rules of a user's files (hf_model, chess_model, saelens_sae: --repo_env=<VARIABLE>=path)
write: @<name>//:files, a filegroup of the files linked in (empty when the variable is unset), and
@<name>//:settings.bzl, the constants the BUILD files read."""

def write_user_files_repository(rctx, description, files, settings):
    """BUILD.bazel with the filegroup `files` of `files` (paths inside the repository), and settings.bzl with one
    constant per entry of the dict `settings`; `description` names the files in the BUILD comment."""
    rctx.file("BUILD.bazel", """package(default_visibility = ["//visibility:public"])

# %s, or nothing.
filegroup(
    name = "files",
    srcs = %r,
)
""" % (description, sorted(files)))
    rctx.file("settings.bzl", "".join(["%s = %r\n" % (k, v) for k, v in sorted(settings.items())]))
