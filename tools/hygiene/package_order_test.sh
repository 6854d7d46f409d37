#!/usr/bin/env bash
# Package order: every edge of the build graph (each rule's inputs in `bazel query //...:*`: default and
# test-only dependencies and every select() branch included) points from a package to its own layer or a layer
# below it, as tools/hygiene/package_layers.bzl orders them, and every package is in some layer. Visibility (//:users_of_<layer>) already rejects most upward
# edges at analysis time; this test also catches a BUILD file that widens its visibility. Runs a nested Bazel on
# the real source tree (tagged external: never cached).
# Usage: package_order_test.sh <WORKSPACE file> <package_layers.txt> [bazel]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

workspace="$(dirname "$(readlink -f "$1")")"
table="$(readlink -f "$2")"
bazel_bin="${3:-/usr/bin/bazel-4}"
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$here/nested_query.sh"
nested_query_setup "$workspace" "$bazel_bin" package_order
# Every rule's inputs (explicit, default and every select() branch) from the rules themselves, so no external
# repository is fetched; edges into other repositories (@...) are outside the map.
query '//...:*' --output=xml >"$HOME/graph.xml"
awk '/^ *<rule / { match($0, /name="[^"]*"/); rule = substr($0, RSTART + 6, RLENGTH - 7) }
  /^ *<rule-input / { match($0, /name="[^"]*"/); print rule, substr($0, RSTART + 6, RLENGTH - 7) }' \
  "$HOME/graph.xml" | awk '$1 ~ /^\/\// && $2 ~ /^\/\// {
    split($1, a, ":"); split($2, b, ":"); if (a[1] != b[1]) print a[1], b[1] }' | sort -u >"$HOME/edges.txt" || true
(($(wc -l <"$HOME/edges.txt") > 100)) || fail "only $(wc -l <"$HOME/edges.txt") package edges: the query is broken"
# Every package, with or without edges, must be in a layer: listed as edges from itself.
query '//...' --output=package | sed 's|^|//|' | awk '{ print $1, $1 }' >>"$HOME/edges.txt"

awk -v table="$table" '
  BEGIN {
    while ((getline line < table) > 0) {
      split(line, f, " "); n++; rank[n] = f[1]; layer[n] = f[2]; pattern[n] = f[3]
    }
  }
  # The rank of a package: an exact entry, or an entry "//p/..." covering it; -1 when none.
  function rank_of(p,   i, base) {
    if (p == "//") { found = "root"; return 0 }
    for (i = 1; i <= n; i++) {
      if (pattern[i] == p) { found = layer[i]; return rank[i] }
      if (pattern[i] ~ /\/\.\.\.$/) {
        base = substr(pattern[i], 1, length(pattern[i]) - 4)
        if (p == base || index(p, base "/") == 1) { found = layer[i]; return rank[i] }
      }
    }
    return -1
  }
  {
    from = rank_of($1); from_layer = found; to = rank_of($2); to_layer = found
    if (from < 0) { unknown[$1] = 1; next }
    if (to < 0) { unknown[$2] = 1; next }
    if ($1 == $2) next
    if (to > from) { printf "upward edge: %s (%s) -> %s (%s)\n", $1, from_layer, $2, to_layer; bad++ }
    edges++
  }
  END {
    for (p in unknown) { printf "package %s is in no layer of tools/hygiene/package_layers.bzl\n", p; bad++ }
    printf "%d package edges checked against %d layer entries\n", edges, n
    exit bad > 0
  }' "$HOME/edges.txt" || fail "the package order is broken (above)"
echo PASS
