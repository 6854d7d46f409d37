#!/bin/bash
# The Lorsa section (arXiv:2504.20938 Secs. 4.1, 4.2, 6.1, 8, App. E): the base LMs' summaries as a tidy CSV
# (summary_table, one row per seed), then the claims engine on claims.textproto and every seed's tidy CSVs
# from evaluate_lorsa, merged per table (tables of mean +- 95% CI over seeds, figures, controls, verdicts;
# verdicts.csv and the merged CSVs land in <out_dir>), then the top activations of the best-scoring Lorsa
# heads as evaluate_lorsa listed them for each seed. With a pretrained base (HF_MODEL) no LM was trained: its
# base LM table is empty (build_section.sh names the model).
# Usage: report.sh <out_dir> <judge_claims> <plot_lines.sh> <summary_table> <claims.textproto> <results...>
set -euo pipefail
out_dir=$1
shift
runs=() listings=()
declare -A csvs=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */plot_lines.sh) plot=$f ;;
    */summary_table) summary_table=$f ;;
    */claims.textproto) claims=$f ;;
    */lm_s*.summary.textproto | */lm_s*_config.textproto) runs+=("$f") ;;
    */datasets/pretrained/*.manifest.textproto) pretrained=$f ;;
    */evaluation_s*/*.csv) csvs[$(basename "$f")]+="${csvs[$(basename "$f")]:+,}$f" ;;
    */evaluation_s*/top_activations.txt) listings+=("$f") ;;
  esac
done
tables=()
for t in "${!csvs[@]}"; do tables+=("--table=$t=${csvs[$t]}"); done
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "${pretrained:-}" ]]; then
  echo "arm,parameters,steps,validation_loss,seed" >"$tmp/lm.csv"
else
  "$summary_table" --out="$tmp/lm.csv" --fields=parameters,steps,validation_loss \
    --config_fields=seed=runtime.seed "${runs[@]}"
fi
cp "$claims" "$out_dir/claims.textproto"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" --table=lm.csv="$tmp/lm.csv" "${tables[@]}"
for listing in "${listings[@]}"; do
  seed=$(basename "$(dirname "$listing")")
  echo "# ${seed#evaluation_}"
  cat "$listing"
done >"$out_dir/top_activations.txt"
echo
echo "## Top activations of the best-scoring Lorsa heads (held-out windows; [[current token]]; first seed)"
echo
echo '```'
head -n 60 "${listings[0]}"
echo '```'
