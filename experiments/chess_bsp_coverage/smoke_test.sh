#!/bin/bash
# The report runs on the smoke-scale results: 13 models in the table, every metric a number in [0, 1], and
# MoE-X's router score anti-correlated with its experts' true l0 (the Gaussian proxy of seed-moex.md 1.4).
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
rows=$(grep -c '^| [a-z]' "$out/table.md")
[[ "$rows" -eq 14 ]] || { echo "expected 13 models + header, got $rows rows"; exit 1; }
awk -F, 'NR > 1 { for (i = 5; i <= 8; ++i) if ($i < 0 || $i > 1) { print "out of range: " $0; exit 1 } }' \
  "$out/chess_bsp_coverage.csv"
awk -F, '$1 == "moe_x" && $15 != "nan" && $15 >= 0 { print "MoE-X router not anti-correlated: " $0; bad = 1 }
  END { exit bad }' "$out/chess_bsp_coverage.csv"
test -s "$out/reconstruction_by_layer.svg"
echo "1 passed, 0 failed"
