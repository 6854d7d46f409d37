#!/usr/bin/env bash
# Checks the combined report built at the test's scale (smoke in `bazel test`).
set -euo pipefail
dir=$1
report="$dir/report.md"
fail() { echo "reports_test: $*"; exit 1; }
[[ -s "$report" ]] || fail "no report.md"
experiments=(chess_bsp_coverage mxd_frontier sparse_probing steering slimpajama_isoflop factual_recall_patching
  lorsa_attention mohd_hidden_dims)
for n in "${experiments[@]}"; do
  grep -q "^## $n: " "$report" || fail "no section for $n"
  [[ -s "$dir/$n/manifest.textproto" ]] || fail "no manifest for $n"
  grep -q '^input { path: ".*" sha256: "[0-9a-f]\{64\}" }$' "$dir/$n/manifest.textproto" || fail "$n: no input digests"
  grep -q '^build_identity: "libtorch: ' "$dir/$n/manifest.textproto" || fail "$n: no build identity"
  # The summary row counts exactly the section's verdict lines.
  want=$(grep -cE 'HOLDS' "$dir/$n/section.md" || true)
  got=$(awk -F'|' -v n="[$n](#$n)" 'index($2, n) { gsub(/ /, "", $4); print $4 }' "$report" | head -1)
  [[ "$got" == "$want" ]] || fail "$n: summary says $got claims hold, section has $want"
  for f in "$dir/$n"/*.svg; do
    [[ -e "$f" ]] || continue
    grep -qF "($n/$(basename "$f"))" "$report" || fail "figure $f not linked"
  done
done
grep -q "^Code revision " "$report" || fail "no code revision line"
n_sections=$(grep -c '^## [a-z_]*: ' "$report")
[[ "$n_sections" -eq ${#experiments[@]} ]] || fail "expected ${#experiments[@]} sections, got $n_sections"
echo "reports_test: ${#experiments[@]} sections, figures linked, summary counts match"
