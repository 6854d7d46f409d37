#!/bin/bash
# The factual-recall section on the smoke-scale fact LMs, checked for its structure, not its verdicts: both
# smoke seeds in every CSV, 50 facts per model and seed in recall.csv, patching rows for both models (of all
# facts when a smoke model recalls too few to pair) with finite NIE and flip rates in [0, 1], each single
# block's contrasts, neighbour rows for every seed, representation and block with agreements in [0, 1],
# every claim and control of claims.textproto in verdicts.csv with a verdict of the engine's vocabulary,
# every table, figure and heat map in the section.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cat "$out/section.md"
fail() { echo "smoke_test: $*"; exit 1; }
# Rows of CSV $1 (header excluded) and the 1-based index of its column $2.
rows() { echo $(($(wc -l <"$1") - 1)); }
col() { head -1 "$1" | tr , '\n' | grep -nx "$2" | cut -d: -f1; }

# The smoke seeds of FACT_LM_SEEDS (fact_lms.bzl), each in every CSV.
for t in recall patching block_contrasts neighbours; do
  seeds=$(awk -F, -v c="$(col "$out/$t.csv" seed)" 'NR > 1 { print $c }' "$out/$t.csv" | sort -u | tr '\n' ' ')
  [[ "$seeds" == "1 2 " ]] || fail "$t.csv: expected seeds 1 and 2, got '$seeds'"
done
recall="$out/recall.csv"
for m in sgatlin dense; do
  n=$(awk -F, -v c="$(col "$recall" model)" -v m="$m" 'NR > 1 && $c == m' "$recall" | wc -l)
  [[ "$n" -eq 100 ]] || fail "$m: expected 50 facts x 2 seeds in recall.csv, got $n"
done
patching="$out/patching.csv"
for m in sgatlin dense; do
  awk -F, -v c="$(col "$patching" model)" -v m="$m" 'NR > 1 && $c == m { found = 1 } END { exit !found }' "$patching" ||
    fail "$m: no patching rows"
done
awk -F, -v nie="$(col "$patching" mean_nie)" -v flip="$(col "$patching" rank_flip_rate)" -v p="$(col "$patching" pairs)" '
  NR > 1 { if ($nie !~ /^-?[0-9.]+(e[-+][0-9]+)?$/ || $flip < 0 || $flip > 1 || $p < 1) { print "bad patching row: " $0; bad = 1 } }
  END { exit bad }' "$patching" || fail "patching.csv"
# The disruption null's pairs are a subset of the cell's, and some cell has them.
awk -F, -v p="$(col "$patching" pairs)" -v t="$(col "$patching" third_fact_pairs)" '
  NR > 1 { if ($t < 0 || $t > $p) { print "bad third_fact_pairs: " $0; bad = 1 } if ($t > 0) some = 1 }
  END { if (!some) print "no cell has a third fact"; exit bad || !some }' "$patching" || fail "patching.csv null"
# 2 smoke blocks x (<bos>, 3 prefix tokens, <subject_first>, <subject>, <final>) x 2 models at most.
contrasts="$out/block_contrasts.csv"
[[ "$(rows "$contrasts")" -ge 8 ]] || fail "block_contrasts.csv: expected a row per model, block and position"
neighbours="$out/neighbours.csv"
# 2 seeds x 3 representations x 2 blocks, each with its input tokens' rows.
groups=$(awk -F, -v s="$(col "$neighbours" seed)" -v r="$(col "$neighbours" representation)" \
  -v b="$(col "$neighbours" block)" 'NR > 1 { print $s, $r, $b }' "$neighbours" | sort -u | wc -l)
[[ "$groups" -eq 12 ]] || fail "expected 2 seeds x 3 representations x 2 blocks in neighbours.csv, got $groups"
for c in word_class_agreement shuffled_word_class_agreement word_class_agreement_any same_token_share; do
  awk -F, -v a="$(col "$neighbours" "$c")" -v c="$c" '
    NR > 1 { if ($a < 0 || $a > 1) { print c " out of [0, 1]: " $0; bad = 1 } }
    END { exit bad }' "$neighbours" || fail "neighbours.csv"
done

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" "$out/verdicts.csv" || fail "verdicts.csv"
# Every table of claims.textproto rendered, the figures and heat maps drawn.
[[ "$(grep -c '^|---|' "$out/section.md")" -eq "$(grep -c '^tables {' "$out/claims.textproto")" ]] ||
  fail "not every table rendered"
for f in sgatlin_nie_by_block neighbours sgatlin_nie dense_nie; do
  test -s "$out/$f.svg" || fail "no $f.svg"
done
echo "1 passed, 0 failed"
