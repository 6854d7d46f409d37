#!/bin/bash
# The probing report runs on smoke-scale features: every task x method present, F1 in [0, 1].
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
csv="$out/sparse_probing.csv"
methods=$(awk -F, 'NR > 1 {print $5}' "$csv" | sort -u | wc -l)
[[ "$methods" -eq 7 ]] || { echo "expected 7 layer kinds (MxD-GELU and MxD-SwiGLU apart), got $methods"; exit 1; }
tasks=$(awk -F, 'NR > 1 {print $2}' "$csv" | sort -u | wc -l)
[[ "$tasks" -ge 4 ]] || { echo "expected the probing tasks, got $tasks"; exit 1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["best_f1"] < 0 || $c["best_f1"] > 1 || $c["selected_f1"] < 0 || $c["selected_f1"] > 1) { print "bad F1: " $0; bad = 1 } }
  END { exit bad }' "$csv"
grep -q 'claim "MxD competitive"' "$out.txt"
echo "1 passed, 0 failed"
