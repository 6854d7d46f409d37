#!/bin/bash
# The steering section (MxD arXiv:2505.21364 Fig. 5): the claims engine reads every seed's steering CSV as
# one tidy table and claims.textproto, and prints the scores (mean +- 95% CI over seeds) and each claim's
# verdict; verdicts.csv, the merged steering.csv and every seed's example generations (examples.txt) land
# in <out_dir>, the first examples printed.
# Usage: report.sh <out_dir> <judge_claims> <claims.textproto> <*_steering_s<seed>.csv and .txt ...>
set -euo pipefail
out_dir=$1
shift
csvs=() examples=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */claims.textproto) claims=$f ;;
    */base_models.sh) source "$f" ;;
    *_steering_s*.csv) csvs+=("$f") ;;
    *_steering_s*.txt) examples+=("$f") ;;
  esac
done
mkdir -p "$out_dir"
cp "$claims" "$out_dir/claims.textproto"
# A base with no results (a user's pretrained model, HF_MODEL, stands in for one of ours): its claims read NOT
# TESTABLE.
not_run=$(bases_not_run _steering_s "${csvs[@]}")
cat "${examples[@]}" > "$out_dir/examples.txt"
"$judge" --claims="$claims" --out_dir="$out_dir" --arms_not_run="$not_run" \
  --table=steering.csv="$(IFS=,; echo "${csvs[*]}")"
echo
echo "Example generations (first units of each layer, every seed): $out_dir/examples.txt"
echo
echo '```'
head -n 12 "${examples[0]}"
echo '```'
