#!/bin/bash
# The MoHD section's structure on the smoke-scale models, not its verdicts: every variant trained once per seed
# (2 seeds) with a finite perplexity and its config's seed; the design's widths equal the merged configs' and
# its activated parameters are matched (50% and 75% of dense, x2 and its ablations equal to dense); flow rows
# for every seed, model, block and site with shares in [0, 1]; sharing counts within the width; tables with
# n = 2; a verdict for every claim and control in verdicts.csv and in the section; the figures drawn.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
out="$TEST_TMPDIR/report"
cp -r "$1" "$out"
section="$out/section.md"
cat "$section"
fail() { echo "smoke_test: $*"; exit 1; }
variants=(dense dense_wide_embedding dense_matched_parameters mohd_50 mohd_75 mohd_x2 mohd_x2_no_scaling mohd_x2_no_fusion mohd_x2_no_shared mohd_x2_random_routing)
ids=(E9_learned_routing E9_embedding_width E9_matched_parameters C1 D_matched_parameters C2_50 C2_75 C3 C3_dense_like C3_worst_vs_shared C3_worst_vs_fusion C4 C5
  order_shared_vs_fusion M1 M2_attention_median M2_ffn_median M3 M4 M5)

# runs.csv (summary_table): arm,name,validation_perplexity,...,seed,d_model,...
header=$(head -1 "$out/runs.csv")
[[ "$header" == arm,name,validation_perplexity,validation_loss,parameters,steps,tokens,seed,d_model,sub_dims,active,shared ]] ||
  fail "runs.csv header: $header"
rows=$(($(wc -l <"$out/runs.csv") - 1))
((rows == 2 * ${#variants[@]})) || fail "expected ${#variants[@]} variants x 2 seeds = $((2 * ${#variants[@]})) runs, got $rows"
for v in "${variants[@]}"; do
  for s in 1 2; do
    grep -q "^$v,${v}_s$s,[0-9.]*,[0-9.]*,[0-9]*,[0-9]*,[0-9]*,$s," "$out/runs.csv" ||
      fail "no run of $v at seed $s with a finite perplexity and runtime.seed $s"
  done
done

# design.csv: variant,d_model,d_ffn,sub_dims,active,shared,active_width,activated_parameters
awk -F, 'NR == FNR { if (FNR > 1) width[$1] = $9; next }
  FNR > 1 { act[$1] = $8; if (width[$1] != $2) { print "design d_model of " $1 " is " $2 ", config " width[$1]; bad = 1 } }
  END {
    if (act["mohd_50"] * 2 != act["dense"] || act["mohd_75"] * 4 != act["dense"] * 3) { print "compressed activations wrong"; bad = 1 }
    for (v in act) if (v ~ /^mohd_x2/ && act[v] != act["dense"]) { print v " is not matched to dense"; bad = 1 }
    if (act["dense_matched_parameters"] <= act["dense"]) { print "dense_matched_parameters has no wider FFN"; bad = 1 }
    exit bad }' "$out/runs.csv" "$out/design.csv" || fail "design.csv disagrees"

# flow.csv: seed,model,block,site,width,...,share_top10..share_top50_without_top3 ($10-$14), sparsity ($15-$16).
flow_rows=$(($(wc -l <"$out/flow.csv") - 1))
((flow_rows == 64)) || fail "expected 2 seeds x 2 models x 2 blocks x 8 sites = 64 flow rows, got $flow_rows"
awk -F, 'NR > 1 { seeds[$1] = 1; for (i = 10; i <= 16; ++i) if ($i < 0 || $i > 1) { print "share out of [0, 1]: " $0; bad = 1 } }
  END { if (length(seeds) != 2) { print "flow.csv seeds: " length(seeds); bad = 1 } exit bad }' "$out/flow.csv" ||
  fail "flow.csv out of range"
# sharing.csv: seed,model,block,site,width,q,window,consecutive,shuffled,independent,...
awk -F, 'NR > 1 { seeds[$1] = 1; if ($8 > $5 || $9 > $5 || $8 < 0) { print "bad sharing row: " $0; bad = 1 } }
  END { if (length(seeds) != 2) { print "sharing.csv seeds: " length(seeds); bad = 1 } exit bad }' "$out/sharing.csv" ||
  fail "sharing.csv out of range"

# Tables over seeds say n = 2: the runs table's row of every variant, the M1 table's rows of every block.
for v in "${variants[@]}"; do
  grep -qE "^\| $v \| .* \| 2 \|$" "$section" || fail "the runs table has no row '$v' with n = 2"
done
for b in 0 1; do
  grep -qE "^\| dense \| $b \| .* \| 2 \|$" "$section" || fail "no flow table row of block $b with n = 2"
done

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary, n = 2 seeds or more behind every interval (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" --min_n=2 "$out/verdicts.csv" || fail "verdicts.csv"
# The parameter-matched dense control is matched at every scale (a design statement: a wrong width is a bug).
grep -q '^mohd_hidden_dims,design,D_matched_parameters,.*,HOLDS,' "$out/verdicts.csv" ||
  fail "dense_matched_parameters does not have x2's parameter count: $(grep D_matched_parameters "$out/verdicts.csv")"
for id in "${ids[@]}"; do
  grep -qE "^- $id \(.*\*\*[A-Z ]+\*\*" "$section" || fail "no verdict line for $id in the section"
done

for figure in sparsity flow sharing_consecutive sharing_shuffled; do
  [[ -s "$out/$figure.svg" ]] || fail "no $figure.svg"
done
echo "1 passed, 0 failed"
