#!/bin/bash
# The MoHD report runs on the smoke-scale models: 8 runs with finite perplexities, activated parameters as
# the variants set them (50% and 75% of dense, x2 and its ablations equal to dense), flow rows for every
# block and site of both models with shares in [0, 1], sharing rows whose consecutive counts do not exceed
# the width, every claim line printed and the figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
rows=$(($(wc -l < "$out/runs.csv") - 1))
[[ "$rows" -eq 8 ]] || { echo "expected 8 runs, got $rows"; exit 1; }
awk -F, 'NR > 1 { if ($12 !~ /^[0-9.]+$/) { print "non-finite perplexity: " $0; bad = 1 }; act[$1] = $7 }
  END {
    if (act["mohd_50"] * 2 != act["dense"] || act["mohd_75"] * 4 != act["dense"] * 3) { print "compressed activations wrong"; bad = 1 }
    for (v in act) if (v ~ /^mohd_x2/ && act[v] != act["dense"]) { print v " is not matched to dense"; bad = 1 }
    exit bad }' "$out/runs.csv"
flow_rows=$(($(wc -l < "$out/flow.csv") - 1))
[[ "$flow_rows" -eq 32 ]] || { echo "expected 2 models x 2 blocks x 8 sites = 32 flow rows, got $flow_rows"; exit 1; }
awk -F, 'NR > 1 { for (i = 9; i <= 15; ++i) if ($i < 0 || $i > 1) { print "share out of [0, 1]: " $0; bad = 1 } }
  END { exit bad }' "$out/flow.csv"
awk -F, 'NR > 1 { if ($7 > $4 || $8 > $4 || $7 < 0) { print "bad sharing row: " $0; bad = 1 } } END { exit bad }' "$out/sharing.csv"
for claim in C1 "C2 compression: 50%" "C2 compression: 75%" "C3 activation" C4 C5 E9 "M1 long tail" M2 M3 M4 M5; do
  grep -q "$claim" "$out.txt" || { echo "missing: $claim"; exit 1; }
done
test -s "$out/perplexity.svg"; test -s "$out/sparsity.svg"; test -s "$out/sharing.svg"
echo "1 passed, 0 failed"
