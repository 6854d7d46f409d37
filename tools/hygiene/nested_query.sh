# Sourced by the whole-tree tests (build_hygiene_test, package_order_test): a nested Bazel on a copy of the
# source tree, and `query ARGS...`, which fails the test with Bazel's log if the query fails.
# Usage: source nested_query.sh; nested_query_setup <workspace dir> <bazel binary> <temp-dir prefix>
# The caller defines fail(). Leaves the shell in the copy, with HOME a temporary directory removed on exit.
nested_query_setup() {
  local workspace=$1 bazel_bin=$2 prefix=$3
  # The nested output base must lie outside the workspace (TEST_TMPDIR is reachable through bazel-<name>).
  export HOME="$(mktemp -d "/tmp/$prefix.XXXXXX")"
  nested=("$bazel_bin" --nohome_rc --output_base="$HOME/output_base" --max_idle_secs=10)
  trap 'cd /; "${nested[@]}" shutdown 2>/dev/null; rm -rf "$HOME"' EXIT
  # Query a copy of the tree without the outer build's bazel-* links, which the nested Bazel would follow.
  mkdir "$HOME/src"
  tar -C "$workspace" --exclude='./bazel-*' --exclude=./.git -cf - . | tar -C "$HOME/src" -xf -
  cd "$HOME/src"
}

query() {
  "${nested[@]}" query --noshow_progress "$@" 2>"$HOME/query.log" || { cat "$HOME/query.log" >&2; fail "bazel query $* failed"; }
}
