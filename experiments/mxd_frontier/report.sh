#!/bin/bash
# The MxD frontier section (MxD arXiv:2505.21364 Figs. 3 and 10, Table 3): the claims engine reads every
# seed's frontier CSV as one tidy table and claims.textproto, and prints the tables (mean +- 95% CI over
# seeds), the figures (plot_lines.sh, error bars) and each claim's verdict; verdicts.csv and the merged
# mxd_frontier.csv land in <out_dir>.
# Usage: report.sh <out_dir> <judge_claims> <plot_lines.sh> <claims.textproto> <*_frontier_s<seed>.csv ...>
#                  <*_ffn_ablation.csv ...>
set -euo pipefail
out_dir=$1
shift
csvs=()
ablations=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */plot_lines.sh) plot=$f ;;
    */claims.textproto) claims=$f ;;
    */base_models.sh) source "$f" ;;
    *_frontier_s*.csv) csvs+=("$f") ;;
    *_ffn_ablation.csv) ablations+=("$f") ;;
  esac
done
mkdir -p "$out_dir"
cp "$claims" "$out_dir/claims.textproto"
# A base with no results (a user's pretrained model, HF_MODEL, stands in for one of ours): its claims read NOT
# TESTABLE.
not_run=$(bases_not_run _frontier_s "${csvs[@]}")
"$judge" --claims="$claims" --out_dir="$out_dir" --arms_not_run="$not_run" --plot="$plot" \
  --table=mxd_frontier.csv="$(IFS=,; echo "${csvs[*]}")" \
  --table=ffn_ablation.csv="$(IFS=,; echo "${ablations[*]}")"
