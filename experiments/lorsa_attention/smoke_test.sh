#!/bin/bash
# The Lorsa report runs on the smoke-scale LM and fits: 14 fits (Lorsa and SAE on 4 blocks at one K, and at
# 3 more K on one block) with FVU finite and non-negative, parameter-matched SAEs, CE spliced finite, MHSA
# scores for every head of the 4 blocks within [0, 1], positive copy losses on the probe, every claim line printed and both figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
rows=$(($(wc -l < "$out/fits.csv") - 1))
[[ "$rows" -eq 14 ]] || { echo "expected 14 fits, got $rows"; exit 1; }
awk -F, 'NR > 1 { if ($8 !~ /^[0-9.]+$/ || $13 !~ /^[0-9.]+$/) { print "bad fit row: " $0; bad = 1 }
    p[$2, $3, $4] = $7 }
  END { for (key in p) { split(key, a, SUBSEP); if (a[1] == "lorsa" && ((("sae", a[2], a[3]) in p) == 0)) { print "no SAE for " key; bad = 1 }
          if (a[1] == "lorsa") { r = p["sae", a[2], a[3]] / p[key]; if (r < 0.95 || r > 1.05) { print "SAE not parameter-matched: " key; bad = 1 } } }
        exit bad }' "$out/fits.csv"
mhsa=$(awk -F, 'NR > 1 && $2 == "mhsa" { if ($5 < 0 || $5 > 1 || $6 < 0 || $6 > 1) bad = 1; n++ } END { print bad ? -1 : n }' "$out/heads.csv")
[[ "$mhsa" -eq 8 ]] || { echo "expected 4 blocks x 2 heads of scores in [0, 1], got $mhsa"; exit 1; }
awk -F, 'NR == 2 && $1 ~ /^[0-9.]+$/ && $1 > 0 && $2 ~ /^[0-9.]+$/ && $2 > 0 { ok = 1 } END { exit !ok }' "$out/probe.csv" ||
  { echo "probe.csv: expected two positive copy losses"; exit 1; }
grep -q "In-context copying" "$out.txt" || { echo "missing: copy losses"; exit 1; }
for claim in "Claim 1" "Claim 2" "Claim 3" "Claim 7" "Claim 8"; do
  grep -q "$claim" "$out.txt" || { echo "missing: $claim"; exit 1; }
done
test -s "$out/fvu_vs_k.svg"; test -s "$out/fvu_by_block.svg"
echo "1 passed, 0 failed"
