# Sourced by the remote-cache tests (cache_auth_test, hung_cache_test): a scratch workspace, $work, with this
# project's remote-cache configs from BAZELRC (remote_cache and remote_cache_writer) and two one-line
# genrules, b reading a; HOME is a directory of the test's own, and `bazel` runs Bazel 4 with its output
# root in TEST_TMPDIR. Leaves the shell in $work.
# Usage: source scratch_workspace.sh; scratch_workspace <bazelrc> <server idle seconds>
scratch_workspace() {
  export HOME="$TEST_TMPDIR/home"
  mkdir -p "$HOME"
  work="$TEST_TMPDIR/ws"
  bazel=(/usr/bin/bazel-4 --nohome_rc --output_user_root="$TEST_TMPDIR/root" --max_idle_secs="$2")
  mkdir -p "$work"
  cd "$work"
  touch WORKSPACE
  grep -E '^build:remote_cache(_writer)? ' "$1" >.bazelrc
  cat >BUILD <<'BUILD'
genrule(name = "a", outs = ["a.txt"], cmd = "echo a > $@")
genrule(name = "b", srcs = [":a"], outs = ["b.txt"], cmd = "cat $< > $@; echo b >> $@")
BUILD
}
