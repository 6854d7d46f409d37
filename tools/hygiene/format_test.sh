#!/usr/bin/env bash
# Formatting: every C++ file of the source tree as clang-format (Debian, .clang-format: Google style) writes
# it, and every BUILD, .bzl and WORKSPACE file as buildifier (npm @bazel/buildifier, pinned in WORKSPACE)
# writes it, with list sorting off (buildifier_tables.json: deps order is link order, and a reordered link
# changes the trainer's bytes and so every cached model). Reads the real tree (tagged external: never cached).
# Fix: clang-format -i <file>; <buildifier> --add_tables=tools/hygiene/buildifier_tables.json <file>.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(dirname "$(readlink -f "$1")")"
buildifier="$(readlink -f "$2")"
tables="$(readlink -f "$3")"
clang_format="${4:-clang-format}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v "$clang_format" >/dev/null || fail "$clang_format is not installed (tools/deps.txt: clang-format)"
cd "$workspace"

source "$here/source_tree.sh"
files() { source_tree_find -type f \( "$@" \) | sort; }

mapfile -t cc < <(files -name '*.cc' -o -name '*.h')
unformatted=()
for f in "${cc[@]}"; do
  "$clang_format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
echo "C++: ${#cc[@]} files, ${#unformatted[@]} not clang-formatted"

mapfile -t build < <(files -name BUILD.bazel -o -name BUILD -o -name '*.bzl' -o -name WORKSPACE)
# --mode=check exits 0 (all formatted) or 4 (some need reformatting); anything else is a failure to check.
rc=0
"$buildifier" --add_tables="$tables" --lint=off --mode=check "${build[@]}" >"$TEST_TMPDIR/buildifier.txt" 2>&1 || rc=$?
((rc == 0 || rc == 4)) || fail "buildifier exited $rc: $(head -3 "$TEST_TMPDIR/buildifier.txt")"
mapfile -t unbuildified < <(sed -n 's/ # reformat$//p' "$TEST_TMPDIR/buildifier.txt")
echo "BUILD and .bzl: ${#build[@]} files, ${#unbuildified[@]} not buildifier-formatted"

((${#unformatted[@]} == 0)) || fail "not clang-formatted (clang-format -i): ${unformatted[*]}"
((${#unbuildified[@]} == 0)) ||
  fail "not buildifier-formatted (buildifier --add_tables=tools/hygiene/buildifier_tables.json): ${unbuildified[*]}"
echo PASS
