#!/bin/bash
# The frontier report runs on smoke-scale fits: both base models, every method at every K, finite metrics,
# l0 never above K, CE recovered finite, MxD expert rank in (0, 1], and the figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
csv="$out/mxd_frontier.csv"
rows=$(($(wc -l < "$csv") - 1))
[[ "$rows" -eq 30 ]] || { echo "expected 2 bases x 3 methods x 5 K = 30 rows, got $rows"; exit 1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["l0"] > $c["k"] + 1e-9) { print "l0 above K: " $0; bad = 1 }
    if ($c["nmse"] !~ /^[0-9.e+-]+$/ || $c["ce"] !~ /^[0-9.]+$/) { print "non-finite: " $0; bad = 1 }
    if ($c["method"] ~ /^mxd/ && ($c["mean_expert_rank"] <= 0 || $c["mean_expert_rank"] > 1)) { print "rank: " $0; bad = 1 } }
  END { exit bad }' "$csv"
for b in gelu swiglu; do test -s "$out/${b}_ce_vs_k.svg"; test -s "$out/${b}_nmse_vs_k.svg"; done
grep -q "Claim 1/2" "$out.txt"
echo "1 passed, 0 failed"
