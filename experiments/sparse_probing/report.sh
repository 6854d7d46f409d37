#!/bin/bash
# The sparse-probing section (MxD arXiv:2505.21364 Figs. 4 and 13): the claims engine reads every seed's
# probe CSV as one tidy table and claims.textproto, and prints per-task best F1 (mean +- 95% CI over seeds)
# and each claim's verdict; verdicts.csv and the merged sparse_probing.csv land in <out_dir>.
# Usage: report.sh <out_dir> <judge_claims> <claims.textproto> <*_probe_s<seed>.csv and .txt ...>
set -euo pipefail
out_dir=$1
shift
csvs=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */claims.textproto) claims=$f ;;
    */base_models.sh) source "$f" ;;
    *_probe_s*.csv) csvs+=("$f") ;;
  esac
done
mkdir -p "$out_dir"
cp "$claims" "$out_dir/claims.textproto"
# A base with no results (a user's pretrained model, HF_MODEL, stands in for one of ours): its claims read NOT
# TESTABLE.
not_run=$(bases_not_run _probe_s "${csvs[@]}")
"$judge" --claims="$claims" --out_dir="$out_dir" --arms_not_run="$not_run" \
  --table=sparse_probing.csv="$(IFS=,; echo "${csvs[*]}")"
