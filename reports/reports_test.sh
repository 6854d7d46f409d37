#!/usr/bin/env bash
# Checks the combined report built at the test's scale (smoke in `bazel test`): one section per experiment with
# its manifest, verdicts.csv and figures, and a summary row per experiment whose counts are the claims' verdicts
# in that experiment's verdicts.csv (kind "claim", summary rows only), with the controls and the design statements
# (kind "design") counted apart.
set -euo pipefail
dir=$1
report="$dir/report.md"
fail() { echo "reports_test: $*"; exit 1; }
[[ -s "$report" ]] || fail "no report.md"
experiments=(chess_bsp_coverage chess_width_sparsity moe_x_language_model mxd_frontier sparse_probing steering sparse_layer_atlas slimpajama_isoflop factual_recall_patching
  lorsa_attention mohd_hidden_dims)

# "holds does_not_hold unresolved not_testable controls_held controls_total" from a verdicts.csv, reading the
# columns by the header's names (quoted fields may hold commas and doubled quotes).
expected_counts() {
  awk '
  function split_csv(line, f,   n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
      c = substr(line, i, 1)
      if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur c; i++ } else q = 0 } else cur = cur c }
      else if (c == "\"") q = 1
      else if (c == ",") { f[++n] = cur; cur = "" }
      else cur = cur c
    }
    f[++n] = cur
    return q ? -1 : n
  }
  NR == 1 { width = split_csv($0, h); for (i = 1; i <= width; i++) col[h[i]] = i; next }
  {
    if (split_csv($0, f) != width) { print "bad row " NR; exit 1 }
    if (f[col["level"]] != "") next
    v = f[col["verdict"]]
    if (f[col["kind"]] == "claim") claims[v]++
    else if (f[col["kind"]] == "control") { total++; if (v == "HOLDS") held++ }
    else if (f[col["kind"]] == "design") design++
  }
  END { printf "%d %d %d %d %d %d %d %d\n", claims["HOLDS"], claims["DOES NOT HOLD"], claims["UNRESOLVED"],
        claims["NOT TESTABLE"], held, total, claims["HOLDS"] + claims["DOES NOT HOLD"] + claims["UNRESOLVED"],
        design }' "$1"
}

for n in "${experiments[@]}"; do
  grep -q "^## $n: " "$report" || fail "no section for $n"
  grep -q "^<a id=\"$n\"></a>$" "$report" || fail "no anchor for $n"
  grep -q "^- \[$n\](#$n): ." "$report" || fail "$n: not in the list of what each section regenerates"
  [[ -s "$dir/$n/manifest.textproto" ]] || fail "no manifest for $n"
  grep -q '^input { path: ".*" sha256: "[0-9a-f]\{64\}" }$' "$dir/$n/manifest.textproto" || fail "$n: no input digests"
  grep -q '^build_identity: "libtorch: ' "$dir/$n/manifest.textproto" || fail "$n: no build identity"
  csv="$dir/$n/verdicts.csv"
  [[ -s "$csv" ]] || fail "no verdicts.csv for $n"
  header="experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,n,paper_effect,reason,confidence"
  [[ "$(head -1 "$csv")" == "$header" ]] ||
    fail "$n: verdicts.csv header is $(head -1 "$csv")"
  want=$(expected_counts "$csv") || fail "$n: verdicts.csv: $want"
  # The summary row: | [n](#n) | holds | does not hold | unresolved | not testable | held / total | judged |
  # chance | by construction |
  row=$(grep -F "| [$n](#$n) |" "$report" | head -1)
  [[ -n "$row" ]] || fail "no summary row for $n"
  got=$(awk -F'|' '{ gsub(/\//, " ", $7); print $3, $4, $5, $6, $7, $8, $10 }' <<<"$row" | xargs)
  [[ "$got" == "$want" ]] ||
    fail "$n: summary row says '$got', verdicts.csv has '$want' (claims that hold, do not hold, are unresolved, are not testable; controls that hold, controls; empirical claims judged; design statements)"
  for f in "$dir/$n"/*.svg; do
    [[ -e "$f" ]] || continue
    grep -qF "]($n/$(basename "$f"))" "$report" || fail "figure $f not shown"
  done
done
grep -q "^Code revision " "$report" || fail "no code revision line"
n_sections=$(grep -c '^## [a-z_]*: ' "$report")
[[ "$n_sections" -eq ${#experiments[@]} ]] || fail "expected ${#experiments[@]} sections, got $n_sections"
[[ -s "$dir/report.html" ]] || fail "no report.html"
echo "reports_test: ${#experiments[@]} sections, figures shown, summary rows equal to the verdicts.csv claim rows"
