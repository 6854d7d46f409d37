# Sourced by the whole-tree tests (build_hygiene_test, format_test): `source_tree_find EXPR...` runs find(1)
# over the source tree in the current directory, skipping .git, Bazel's output links and the local stand-in
# repositories of .bazelignore, and prints the paths that match EXPR without their leading "./".
source_tree_find() {
  local ignored dir prune=(-path ./.git -o -path './bazel-*')
  mapfile -t ignored < <(grep -v '^\s*#' .bazelignore 2>/dev/null | sed '/^\s*$/d')
  for dir in "${ignored[@]}"; do prune+=(-o -path "./$dir"); done
  find . \( "${prune[@]}" \) -prune -o \( "$@" \) -print | sed 's|^\./||'
}
