#!/bin/bash
# The Lorsa section (arXiv:2504.20938 Secs. 4.1, 4.2, 6.1, 8, App. E): the base LM's summary as a tidy CSV
# (summary_table), then the claims engine on claims.textproto and evaluate_lorsa's tidy CSVs (tables of mean
# +- 95% CI, figures, controls, verdicts; verdicts.csv and the merged CSVs land in <out_dir>), then the top
# activations of the best-scoring Lorsa heads as evaluate_lorsa listed them.
# Usage: report.sh <out_dir> <judge_claims> <plot_lines.sh> <summary_table> <claims.textproto> <results...>
set -euo pipefail
out_dir=$1
shift
tables=() runs=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */plot_lines.sh) plot=$f ;;
    */summary_table) summary_table=$f ;;
    */claims.textproto) claims=$f ;;
    */lm.summary.textproto | */lm_config.textproto) runs+=("$f") ;;
    */evaluation/*.csv) tables+=("--table=$(basename "$f")=$f") ;;
    */evaluation/top_activations.txt) listing=$f ;;
  esac
done
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$summary_table" --out="$tmp/lm.csv" --fields=parameters,steps,validation_loss --config_fields=seed=runtime.seed \
  "${runs[@]}"
cp "$claims" "$out_dir/claims.textproto"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" --table=lm.csv="$tmp/lm.csv" "${tables[@]}"
cp "$listing" "$out_dir/top_activations.txt"
echo
echo "## Top activations of the best-scoring Lorsa heads (held-out windows; [[current token]])"
echo
echo '```'
head -n 60 "$listing"
echo '```'
