#!/bin/bash
# The Lorsa section on the smoke-scale LMs and fits, checked for its structure, not its verdicts: per seed
# (2: lorsa.bzl LORSA_SEEDS at smoke) 14 fits (Lorsa and SAE on 4 blocks at one K, and at 3 more K on one
# block) with finite FVU and CE and parameter-matched SAEs, MHSA scores in [0, 1] for every head and probe
# sequence, positive copy losses, attribution shares summing to 1 per fit, every claim and control of
# claims.textproto in verdicts.csv with a verdict of the engine's vocabulary, every table and figure in
# the section.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
cat "$out/section.md"
fail() { echo "smoke_test: $*"; exit 1; }
# Rows of CSV $1 (header excluded) and the 1-based index of its column $2.
rows() { echo $(($(wc -l <"$1") - 1)); }
col() { head -1 "$1" | tr , '\n' | grep -nx "$2" | cut -d: -f1; }

fits="$out/fits.csv"
seeds=$(awk -F, -v s="$(col "$fits" seed)" 'NR > 1 { print $s }' "$fits" | sort -u | tr '\n' ' ')
[[ "$seeds" == "1 2 " ]] || fail "expected seeds 1 2 in fits.csv, got '$seeds'"
[[ "$(rows "$fits")" -eq 28 ]] || fail "expected 2 x 14 fits, got $(rows "$fits")"
awk -F, -v m="$(col "$fits" method)" -v b="$(col "$fits" block)" -v k="$(col "$fits" k)" \
  -v p="$(col "$fits" parameters)" -v f="$(col "$fits" fvu)" -v ce="$(col "$fits" ce_spliced)" '
  NR > 1 { if ($f !~ /^[0-9.]+$/ || $ce !~ /^[0-9.]+$/) { print "bad fit row: " $0; bad = 1 }
    params[$m, $b, $k] = $p }
  END { for (key in params) { split(key, a, SUBSEP); if (a[1] != "lorsa") continue
      sae = params["sae", a[2], a[3]]; r = sae / params[key]
      if (r < 0.95 || r > 1.05) { print "SAE not parameter-matched: block " a[2] ", K " a[3]; bad = 1 } }
    exit bad }' "$fits" || fail "fits.csv"
[[ "$(awk -F, -v c="$(col "$fits" on_k_grid)" 'NR > 1 && $c == 1' "$fits" | wc -l)" -eq 16 ]] ||
  fail "expected 2 seeds x 2 methods x 4 K on the K sweep's block"
[[ "$(awk -F, -v c="$(col "$fits" at_layer_k)" 'NR > 1 && $c == 1' "$fits" | wc -l)" -eq 16 ]] ||
  fail "expected 2 seeds x 2 methods x 4 blocks at the per-layer K"

probe_heads="$out/probe_heads.csv"
[[ "$(rows "$probe_heads")" -eq 1024 ]] || fail "expected 2 seeds x 4 blocks x 2 heads x 64 sequences of MHSA scores"
awk -F, -v i="$(col "$probe_heads" induction)" -v p="$(col "$probe_heads" previous_token)" \
  -v s="$(col "$probe_heads" strongest_induction_head)" '
  NR > 1 { if ($i < 0 || $i > 1 || $p < 0 || $p > 1) bad = 1; strongest += $s }
  END { exit bad || strongest != 128 }' "$probe_heads" ||
  fail "probe_heads.csv: scores out of [0, 1] or not one strongest head per seed"
probe="$out/probe.csv"
[[ "$(rows "$probe")" -eq 128 ]] || fail "expected 2 seeds x 64 probe sequences"
awk -F, -v a="$(col "$probe" first_copy_loss)" -v b="$(col "$probe" second_copy_loss)" \
  'NR > 1 && !($a > 0 && $b > 0) { bad = 1 } END { exit bad }' "$probe" || fail "probe.csv: non-positive copy loss"
shares="$out/attribution_shares.csv"
awk -F, -v n="$(col "$shares" name)" -v s="$(col "$shares" share)" '
  NR > 1 { sum[$n] += $s; bins[$n]++ }
  END { for (f in sum) if (bins[f] != 4 || sum[f] < 0.999 || sum[f] > 1.001) { print f; bad = 1 }; exit bad }' "$shares" ||
  fail "attribution_shares.csv: a fit's shares do not cover 4 bins summing to 1"
[[ "$(rows "$out/induction_heads.csv")" -eq 16 ]] ||
  fail "expected 2 seeds x MHSA and Lorsa rows for 4 blocks in induction_heads.csv"

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" "$out/verdicts.csv" || fail "verdicts.csv"
[[ "$(grep -c ',claim,' "$out/verdicts.csv")" -ge 9 ]] || fail "verdicts.csv: expected the 9 claims"
# Every table of claims.textproto rendered, both figures drawn, the listing printed.
[[ "$(grep -c '^|---|' "$out/section.md")" -eq "$(grep -c '^tables {' "$out/claims.textproto")" ]] ||
  fail "not every table rendered"
test -s "$out/fvu_vs_k.svg" || fail "no fvu_vs_k.svg"
test -s "$out/fvu_by_block.svg" || fail "no fvu_by_block.svg"
grep -q "Top activations" "$out/section.md" || fail "no top activations"
echo "1 passed, 0 failed"
