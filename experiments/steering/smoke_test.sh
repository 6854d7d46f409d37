#!/bin/bash
# The steering section at smoke scale, its structure only (verdicts are the engine's, not checked here):
# both seeds steered the same units of every base x layer (2 x 5: the base neurons and 4 methods), scores finite, examples written;
# verdicts.csv gives every control and claim of claims.textproto one verdict of the engine's vocabulary,
# over n = 2 seeds.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
section=$1
fail() { echo "steering smoke test: $*"; exit 1; }
cat "$section/section.md"
csv="$section/steering.csv"
kinds=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next } { print $c["base"] "/" $c["layer_kind"] }' "$csv" |
  sort -u | wc -l)
[[ "$kinds" -eq 10 ]] || fail "expected 2 bases x 5 layers (base neurons + 4 methods), got $kinds"
per_seed=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next } { print $c["seed"] }' "$csv" |
  sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
read -r first second rest <<<"$per_seed"
[[ -z "${rest:-}" && "${first%%:*}" == 1 && "${second%%:*}" == 2 && "${first#*:}" == "${second#*:}" ]] ||
  fail "expected seeds 1 and 2 with the same number of rows, got $per_seed"
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["concept_steered"] < 0 || $c["concept_steered"] > 1 || $c["nll_steered"] <= 0 || $c["alpha"] <= 0 || $c["alpha_scale"] <= 0) { print "bad: " $0; bad = 1 } }
  END { exit bad }' "$csv" || fail "bad rows"
grep -q "unit 0" "$section/examples.txt" || fail "no example generations"

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary, n = 2 seeds or more behind every interval (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" --min_n=2 "$section/verdicts.csv" || fail "verdicts.csv"
echo "1 passed, 0 failed"
