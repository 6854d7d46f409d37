"""@saelens_sae: a user's SAELens SAE directory (--repo_env=SAELENS_SAE=/path/to/sae_dir: cfg.json and
sae_weights.safetensors, as SAELens's SAE.save_model writes them), the same pattern as HF_MODEL. Set, its two
files are linked in and the MxD frontier measures the SAE beside its own fits, on the base named by
SAELENS_BASE (default: the experiment's first base; with HF_MODEL, the user's model the SAE was trained on);
unset, nothing refers to it.

    ./tools/bazel run --repo_env=HF_MODEL=/models/gpt2 --repo_env=SAELENS_SAE=/saes/gpt2_mlp_out_6 \\
        //experiments/mxd_frontier

settings.bzl: SAELENS_SAE (the path, "" when unset), SAELENS_BASE ("" when unset)."""

load(":user_files.bzl", "write_user_files_repository")

_FILES = ["cfg.json", "sae_weights.safetensors"]

def _saelens_sae_impl(rctx):
    root = rctx.os.environ.get("SAELENS_SAE", "")
    files = []
    if root:
        directory = rctx.path(root)
        for name in _FILES:
            source = directory.get_child(name)
            if not source.exists:
                fail("SAELENS_SAE=%s: no %s (a SAELens SAE directory holds %s)" % (root, name, " and ".join(_FILES)))
            rctx.symlink(source, "sae/" + name)
            files.append("sae/" + name)
    write_user_files_repository(rctx, "The user's SAELens SAE's files (SAELENS_SAE)", files, {
        "SAELENS_SAE": root,
        "SAELENS_BASE": rctx.os.environ.get("SAELENS_BASE", ""),
    })

saelens_sae = repository_rule(
    implementation = _saelens_sae_impl,
    environ = ["SAELENS_SAE", "SAELENS_BASE"],
    local = True,
)
