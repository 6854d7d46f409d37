#!/bin/bash
# The chess section builds at smoke scale and has its structure: every model's rows (11 trained, 8 random
# controls) at every block with one headline block, a seed column, coverage and reconstruction in [0, 1],
# the column Fig. 9's claim judges (router_l0_pearson_pairs) a correlation for every mixture at the headline
# block, every control and claim of claims.textproto in verdicts.csv, the engine's summary counting them all,
# both figures drawn, and every model's board-tracking row (legal-move rates in [0, 1], a positive floor).
# Verdict values are not checked: at smoke scale they mean nothing.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
section=$1
cat "$section/section.md"
fail() { echo "FAIL: $*"; exit 1; }
csv="$section/chess_bsp_coverage.csv"
# Column index by name, so a reordered CSV cannot make a check read the wrong column.
col() { head -n1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1 | grep . || fail "$1 has no column $2"; }
model=$(col "$csv" model) block=$(col "$csv" headline_block) seed=$(col "$csv" seed) bsp=$(col "$csv" bsp_set)
pairs=$(col "$csv" router_l0_pearson_pairs) ffn=$(col "$csv" ffn)
models=$(awk -F, -v m="$model" 'NR > 1 { print $m }' "$csv" | sort -u | wc -l)
[[ "$models" -eq 19 ]] || fail "expected 11 trained models + 8 random controls, got $models"
awk -F, -v m="$model" -v b="$block" -v s="$seed" -v set="$bsp" 'NR > 1 {
    if ($s !~ /^[0-9]+$/) { print "seed not an integer: " $0; bad = 1 }
    if ($b == 1) headline[$m "/" $set]++ }
  END { for (k in headline) if (headline[k] != 1) { print k ": " headline[k] " headline blocks"; bad = 1 }
        exit bad }' "$csv" || fail "seed or headline_block"
for metric in coverage_code coverage_paper reconstruction_code reconstruction_paper; do
  c=$(col "$csv" "$metric")
  awk -F, -v c="$c" 'NR > 1 && !($c >= 0 && $c <= 1) { print "out of [0, 1]: " $0; bad = 1 } END { exit bad }' \
    "$csv" || fail "$metric"
done
mixtures=$(awk -F, -v f="$ffn" -v b="$block" -v p="$pairs" 'NR > 1 && $b == 1 && ($f == "switch" || \
  $f == "moe_x" || $f == "moe_gelu_sparsity_router" || $f == "moe_relu_topk_router") {
    if (!($p >= -1 && $p <= 1)) { print "router r not a correlation: " $0 > "/dev/stderr"; exit 1 }
    n++ } END { print n + 0 }' "$csv") || fail "router_l0_pearson_pairs"
# 4 mixtures and their random controls, on 2 BSP sets.
[[ "$mixtures" -eq 16 ]] || fail "expected 16 mixture rows with router_l0_pearson_pairs, got $mixtures"
# Board tracking: every model's row for all games, rates in [0, 1], a positive uniform-legal-move floor.
board="$section/board_tracking.csv"
bmodel=$(col "$board" model) policy=$(col "$board" policy) greedy=$(col "$board" legal_move_rate_greedy)
sampled=$(col "$board" legal_move_rate_sampled) floor=$(col "$board" uniform_legal_floor_nats_per_character)
bseed=$(col "$board" seed)
awk -F, -v m="$bmodel" -v p="$policy" -v g="$greedy" -v s="$sampled" -v f="$floor" -v sd="$bseed" 'NR > 1 {
    if (!($g >= 0 && $g <= 1 && $s >= 0 && $s <= 1 && $f > 0) || $sd !~ /^[0-9]+$/) { print "bad: " $0; bad = 1 }
    if ($p == "all") all[$m]++ }
  END { n = 0; for (k in all) n++; if (n != 19) { print n " models with an all-games row"; bad = 1 }
        exit bad }' "$board" || fail "board_tracking.csv"
# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" "$section/verdicts.csv" || fail "verdicts.csv"
# Every table and figure of the claims file is in the section.
grep -oE '^  title: "[^"]+"' "$section/claims.textproto" | cut -d'"' -f2 | while IFS= read -r title; do
  grep -qF "$title" "$section/section.md" || fail "section.md lacks '$title'"
done
for f in reconstruction_by_layer.svg coverage_by_layer.svg; do test -s "$section/$f" || fail "no $f"; done
echo "1 passed, 0 failed"
