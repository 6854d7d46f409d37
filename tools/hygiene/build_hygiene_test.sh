#!/usr/bin/env bash
# Build hygiene: `bazel query //...` loads every package of the source tree (every directory with a BUILD
# file, none failing to load), and every C++/proto/shell source file is part of some target, so no code
# sits outside the build graph. Runs a nested Bazel on the real source tree (tagged external: never cached).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

workspace="$(dirname "$(readlink -f "$1")")"
bazel_bin="${2:-/usr/bin/bazel-4}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$workspace"

# Packages on disk: directories holding a BUILD file, outside Bazel's output links and the
# local stand-in repositories (.bazelignore).
source "$here/source_tree.sh"
expected="$(source_tree_find -name BUILD.bazel -o -name BUILD |
  sed -e 's|/\?BUILD\(\.bazel\)\?$||' -e 's|^|//|' | sort -u)"

source "$here/nested_query.sh"
nested_query_setup "$workspace" "$bazel_bin" build_hygiene
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
done < <(source_tree_find -type f \( -name '*.cc' -o -name '*.h' -o -name '*.proto' -o -name '*_test.sh' \) | sort)
((${#orphans[@]} == 0)) || fail "source files outside every target: ${orphans[*]}"
echo "every .cc/.h/.proto/_test.sh file belongs to a target"
echo PASS
