#!/bin/bash
# The factual-recall report runs on the smoke-scale fact LMs: 50 facts per model in recall.csv, finite
# neighbour agreements for every block and category, patching rows (when a smoke model recalls two facts)
# with NIE finite and flip rates in [0, 1], every claim section printed and the figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
for m in sgatlin dense; do
  n=$(awk -F, -v m="$m" 'NR > 1 && $1 == m' "$out/recall.csv" | wc -l)
  [[ "$n" -eq 50 ]] || { echo "$m: expected 50 facts in recall.csv, got $n"; exit 1; }
done
rows=$(($(wc -l < "$out/neighbours.csv") - 1))
[[ "$rows" -eq 4 ]] || { echo "expected 2 blocks x 2 categories = 4 neighbour rows, got $rows"; exit 1; }
awk -F, 'NR > 1 { if ($5 < 0 || $5 > 1 || $6 < 0 || $6 > 1) { print "agreement out of [0, 1]: " $0; bad = 1 } }
  END { exit bad }' "$out/neighbours.csv"
awk -F, 'NR > 1 { if ($7 !~ /^-?[0-9.]+(e[-+][0-9]+)?$/ || $8 < 0 || $8 > 1) { print "bad patching row: " $0; bad = 1 } }
  END { exit bad }' "$out/patching.csv"
grep -q "Figure 7 claims" "$out.txt"
grep -q "cluster by word class" "$out.txt"
test -s "$out/neighbours.svg"
echo "1 passed, 0 failed"
