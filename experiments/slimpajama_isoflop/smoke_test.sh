#!/bin/bash
# The isoflop report runs on smoke-scale runs: 3 FFN types x 3 budgets x 3 sizes plus 4 ablations, every
# run stopped by its FLOP budget within one step of it, finite losses, parameters growing with the ladder,
# every claim line printed and both figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cp "$1/section.md" "$out.txt"
cat "$out.txt"
csv="$out/isoflop.csv"
rows=$(($(wc -l < "$csv") - 1))
[[ "$rows" -eq 31 ]] || { echo "expected 27 grid runs + 4 ablations = 31 rows, got $rows"; exit 1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { per_step = $c["flops"] / $c["steps"]
    if ($c["flops"] > $c["budget"] || $c["flops"] + per_step <= $c["budget"]) { print "not within one step of the budget: " $0; bad = 1 }
    if ($c["validation_loss"] !~ /^[0-9.]+$/) { print "non-finite loss: " $0; bad = 1 }
    key = $c["ffn"] "," $c["budget"]; size = substr($c["name"], length($c["name"])) + 0
    params[key, size] = $c["parameters"] }
  END { for (k in params) { split(k, p, SUBSEP); if (p[2] > 0 && ((p[1], p[2] - 1) in params) && params[k] <= params[p[1], p[2] - 1]) { print "size not growing: " k; bad = 1 } }
        exit bad }' "$csv"
for claim in "Claim 1" "Claim 2a" "Claim 2b" "Claim 3" "Claim 4" "Claim 5"; do grep -q "$claim" "$out.txt"; done
test -s "$out/isoflop_curves.svg"; test -s "$out/isoflop_frontier.svg"
echo "1 passed, 0 failed"
