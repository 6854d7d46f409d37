#!/bin/bash
# The frontier section at smoke scale, its structure only (verdicts are the engine's, not checked here):
# both seeds evaluated every base x method x K with finite metrics, l0 never above K and MxD expert rank in
# (0, 1]; the figures drawn; verdicts.csv gives every control and claim of claims.textproto one verdict of
# the engine's vocabulary, over n = 2 seeds.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
section=$1
fail() { echo "mxd_frontier smoke test: $*"; exit 1; }
cat "$section/section.md"
csv="$section/mxd_frontier.csv"
# Rows per seed: 2 bases x 3 methods x 5 K.
per_seed=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next } { print $c["seed"] }' "$csv" |
  sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
[[ "$per_seed" == "1:30 2:30 " ]] || fail "expected 30 rows for each of seeds 1 and 2, got $per_seed"
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["l0"] > $c["k"] + 1e-9) { print "l0 above K: " $0; bad = 1 }
    if ($c["nmse"] !~ /^[0-9.e+-]+$/ || $c["ce"] !~ /^[0-9.]+$/) { print "non-finite: " $0; bad = 1 }
    if ($c["method"] ~ /^mxd/ && ($c["mean_expert_rank"] <= 0 || $c["mean_expert_rank"] > 1)) { print "rank: " $0; bad = 1 } }
  END { exit bad }' "$csv" || fail "bad rows"
for b in gelu swiglu; do
  for f in "${b}_ce_vs_k.svg" "${b}_nmse_vs_k.svg"; do [[ -s "$section/$f" ]] || fail "no figure $f"; done
done

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary, n = 2 seeds or more behind every interval (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" --min_n=2 "$section/verdicts.csv" || fail "verdicts.csv"
echo "1 passed, 0 failed"
