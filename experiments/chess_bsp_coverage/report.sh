#!/bin/bash
# The MoE-X (arXiv:2503.07639) chess section: the runs' validation losses as a tidy CSV
# (//tools/train:summary_table; seeds share a config name, so runs are named by their targets), then the claims engine (//analysis/claims:judge_claims) judges
# claims.textproto on them and on evaluate_bsp's CSVs (coverage and board tracking), printing the section
# (tables with 95% intervals, figures, controls, verdicts) and writing verdicts.csv.
# Usage: report.sh <out_dir> <tools...> <summaries, configs and .bsp.csv files...> (experiment_report.bzl)
set -euo pipefail
out_dir=$1
shift
runs=() bsp=() board=() arms_not_run=""
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */summary_table) summary_table=$f ;;
    */plot_lines.sh) plot=$f ;;
    */claims.textproto) claims=$f ;;
    */paper_table1.csv) paper=$f ;;
    *.summary.textproto | *_config.textproto) runs+=("$f") ;;
    *.bsp.csv) bsp+=("$f") ;;
    *.board.csv) board+=("$f") ;;
    */arms_not_run.txt) arms_not_run=$(cat "$f") ;;
  esac
done
mkdir -p "$out_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$summary_table" --out="$scratch/runs.csv" --name_from_path --fields=validation_loss,steps,tokens \
  --config_fields=seed=runtime.seed,ffn=model.ffn "${runs[@]}"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" \
  --table=chess_bsp_coverage.csv="$(IFS=,; echo "${bsp[*]}")" --table=runs.csv="$scratch/runs.csv" \
  --table=board_tracking.csv="$(IFS=,; echo "${board[*]}")" \
  --table=paper_table1.csv="$paper" --arms_not_run="$arms_not_run"
cp "$claims" "$out_dir/claims.textproto"
