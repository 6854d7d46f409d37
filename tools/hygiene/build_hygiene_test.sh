#!/usr/bin/env bash
# Build hygiene: `bazel query //...` loads every package of the source tree (every directory with a BUILD
# file, none failing to load), and every C++/proto/shell source file is part of some target, so no code
# sits outside the build graph. Runs a nested Bazel on the real source tree (tagged external: never cached).
set -euo pipefail

workspace="$(dirname "$(readlink -f "$1")")"
bazel_bin="${2:-/usr/bin/bazel-4}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$workspace"

# Packages on disk: directories holding a BUILD file, outside Bazel's output links and the
# local stand-in repositories (.bazelignore).
mapfile -t ignored < <(grep -v '^\s*#' .bazelignore 2>/dev/null | sed '/^\s*$/d')
prune=(-path ./.git -o -path './bazel-*')
for dir in "${ignored[@]}"; do prune+=(-o -path "./$dir"); done
expected="$(find . \( "${prune[@]}" \) -prune -o \( -name BUILD.bazel -o -name BUILD \) -print |
  sed -e 's|^\./||' -e 's|/\?BUILD\(\.bazel\)\?$||' -e 's|^|//|' | sort -u)"

# The nested output base must lie outside the workspace (TEST_TMPDIR is reachable through bazel-<name>).
export HOME="$(mktemp -d /tmp/build_hygiene.XXXXXX)"
nested=("$bazel_bin" --nohome_rc --output_base="$HOME/output_base" --max_idle_secs=10)
trap 'cd /; "${nested[@]}" shutdown 2>/dev/null; rm -rf "$HOME"' EXIT
# Query a copy of the tree without the outer build's bazel-* links, which the nested Bazel would follow.
mkdir "$HOME/src"
tar -C "$workspace" --exclude='./bazel-*' --exclude=./.git -cf - . | tar -C "$HOME/src" -xf -
cd "$HOME/src"
query() {
  "${nested[@]}" query --noshow_progress "$@" 2>"$HOME/query.log" || { cat "$HOME/query.log" >&2; fail "bazel query $* failed"; }
}
listed="$(query '//...:*' --output=package | sed 's|^|//|' | sort -u)"
if [[ "$expected" != "$listed" ]]; then
  diff <(echo "$expected") <(echo "$listed") >&2 || true
  fail "packages on disk (<) differ from bazel query //... (>)"
fi
echo "packages: $(echo "$listed" | wc -l), all listed by bazel query //..."

# Every source file must belong to a target.
referenced="$(query 'kind("source file", //...:*)' --output=label | sed -e 's|^//||' -e 's|^:||' -e 's|:|/|' | sort -u)"
orphans=()
while read -r file; do
  grep -qxF "$file" <<<"$referenced" || orphans+=("$file")
done < <(find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.proto' -o -name '*_test.sh' \) -print |
  sed 's|^\./||' | sort)
((${#orphans[@]} == 0)) || fail "source files outside every target: ${orphans[*]}"
echo "every .cc/.h/.proto/_test.sh file belongs to a target"
echo PASS
