#!/bin/bash
# The steering report runs on smoke-scale features: every method steered, scores finite, examples written.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
csv="$out/steering.csv"
kinds=$(awk -F, 'NR > 1 {print $1 "/" $3}' "$csv" | sort -u | wc -l)
[[ "$kinds" -eq 8 ]] || { echo "expected 2 bases x 4 methods, got $kinds"; exit 1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["concept_steered"] < 0 || $c["concept_steered"] > 1 || $c["nll_steered"] <= 0 || $c["alpha"] <= 0) { print "bad: " $0; bad = 1 } }
  END { exit bad }' "$csv"
grep -q "unit 0" "$out/examples.txt"
echo "1 passed, 0 failed"
