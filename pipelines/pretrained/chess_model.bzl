"""@chess_model: a user's nanoGPT chess model (--repo_env=CHESS_MODEL=/path/to/ckpt.pt, with nanoGPT's meta.pkl
beside it: Karvonen's ChessGPT format), the same pattern as HF_MODEL. Set, its two files are linked in and
chess_bsp_coverage measures it as one more arm, `chessgpt`; unset, nothing refers to it.

    ./tools/bazel run --repo_env=CHESS_MODEL=/models/chess/ckpt.pt //experiments/chess_bsp_coverage

settings.bzl: CHESS_MODEL (the path, "" when unset)."""

load(":user_files.bzl", "write_user_files_repository")

def _chess_model_impl(rctx):
    root = rctx.os.environ.get("CHESS_MODEL", "")
    files = []
    if root:
        checkpoint = rctx.path(root)
        if not checkpoint.exists or not checkpoint.basename.endswith(".pt"):
            fail("CHESS_MODEL=%s: not a nanoGPT checkpoint file (ckpt.pt, with meta.pkl beside it)" % root)
        meta = checkpoint.dirname.get_child("meta.pkl")
        if not meta.exists:
            fail("CHESS_MODEL=%s: no meta.pkl beside it (nanoGPT's character vocabulary)" % root)
        for source, name in [(checkpoint, "ckpt.pt"), (meta, "meta.pkl")]:
            rctx.symlink(source, "model/" + name)
            files.append("model/" + name)
    write_user_files_repository(rctx, "The user's chess model's files (CHESS_MODEL)", files, {"CHESS_MODEL": root})

chess_model = repository_rule(
    implementation = _chess_model_impl,
    environ = ["CHESS_MODEL"],
    local = True,
)
