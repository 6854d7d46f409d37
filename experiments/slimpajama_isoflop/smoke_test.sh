#!/bin/bash
# The isoflop section builds at smoke scale and has its structure: 5 FFN types x 2 budgets x 4 sizes plus 4
# ablations, each at both smoke seeds (the real seed in the `seed` column, the same arms under each), every run
# stopped by its FLOP budget within one step of it, finite losses, parameters growing along each curve's sizes,
# one frontier row per (FFN type, budget, seed), every claim of claims.textproto in verdicts.csv, the engine's
# summary counting them all, every table and figure in the section. Verdict values are not checked: at smoke
# scale they mean nothing.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
section=$1
cat "$section/section.md"
fail() { echo "FAIL: $*"; exit 1; }
# Column index by name, so a reordered CSV cannot make a check read the wrong column.
col() { head -n1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1 | grep . || fail "$1 has no column $2"; }
csv="$section/isoflop.csv"
rows=$(($(wc -l < "$csv") - 1))
[[ "$rows" -eq 88 ]] || fail "expected (40 grid runs + 4 ablations) x 2 seeds = 88 rows, got $rows"
awk -F, -v arm="$(col "$csv" arm)" -v seed="$(col "$csv" seed)" -v budget="$(col "$csv" budget)" \
  -v flops="$(col "$csv" flops)" -v steps="$(col "$csv" steps)" -v loss="$(col "$csv" validation_loss)" \
  -v params="$(col "$csv" parameters)" -v ffn="$(col "$csv" ffn)" 'NR > 1 {
    if ($seed != 1 && $seed != 2) { print "seed not a smoke seed: " $0; bad = 1 }
    arms[$arm] = 1; runs[$arm, $seed] = 1
    per_step = $flops / $steps
    if ($flops > $budget || $flops + per_step <= $budget) { print "not within one step of the budget: " $0; bad = 1 }
    if ($loss !~ /^[0-9.]+$/) { print "non-finite loss: " $0; bad = 1 }
    size = $arm; sub(/.*_size/, "", size); key = $ffn SUBSEP $budget SUBSEP $seed
    p[key, size + 0] = $params; keys[key] = 1 }
  END { for (a in arms) if (!((a, 1) in runs) || !((a, 2) in runs)) { print "arm not at both seeds: " a; bad = 1 }
        for (k in keys) for (s = 1; (k, s) in p && (k, s - 1) in p; ++s)
          if (p[k, s] <= p[k, s - 1]) { print "size not growing: " k " " s; bad = 1 }
        exit bad }' "$csv" || fail "isoflop.csv"
frontier=$(($(wc -l < "$section/frontier.csv") - 1))
[[ "$frontier" -eq 28 ]] || fail "expected (10 (FFN type, budget) curves + 4 ablations) x 2 seeds in frontier.csv, got $frontier"
# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" "$section/verdicts.csv" || fail "verdicts.csv"
# Every table and figure of the claims file is in the section.
grep -oE '^  title: "[^"]+"' "$section/claims.textproto" | cut -d'"' -f2 | while IFS= read -r title; do
  grep -qF "$title" "$section/section.md" || fail "section.md lacks '$title'"
done
for f in $(grep -oE '^  file: "[^"]+"' "$section/claims.textproto" | cut -d'"' -f2); do
  test -s "$section/$f" || fail "no $f"
done
echo "1 passed, 0 failed"
