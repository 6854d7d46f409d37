#!/bin/bash
# The factual-recall section (sgatlin arXiv:2606.07414 Sec. 4.3, Fig. 7; Sec. 4.1): the fact LMs' summaries
# as a tidy CSV (summary_table), then the claims engine on claims.textproto and factual_recall's tidy CSVs
# (tables of mean +- 95% CI, figures, controls, verdicts; verdicts.csv and the merged CSVs land in
# <out_dir>), then the NIE heat maps of the merged patching table (plot_heatmap.sh).
# Usage: report.sh <out_dir> <judge_claims> <plot_heatmap.sh> <plot_lines.sh> <summary_table>
#                  <claims.textproto> <results...>
set -euo pipefail
out_dir=$1
shift
tables=() runs=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */plot_heatmap.sh) heatmap=$f ;;
    */plot_lines.sh) plot=$f ;;
    */summary_table) summary_table=$f ;;
    */claims.textproto) claims=$f ;;
    *.summary.textproto | */sgatlin_config.textproto | */dense_config.textproto) runs+=("$f") ;;
    */recall.csv | */patching.csv | */block_contrasts.csv | */neighbours.csv)
      tables+=("--table=$(basename "$f")=$f") ;;
  esac
done
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$summary_table" --out="$tmp/models.csv" --fields=parameters,steps,validation_loss,wall_seconds \
  --config_fields=seed=runtime.seed "${runs[@]}"
cp "$claims" "$out_dir/claims.textproto"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" --table=models.csv="$tmp/models.csv" "${tables[@]}"
echo
echo "## NIE heat maps (one seed's cells)"
for model in sgatlin dense; do
  if "$heatmap" --csv="$out_dir/patching.csv" --x=token --y=blocks --value=mean_nie --where=model=$model \
    --out="$out_dir/${model}_nie.svg" --title="$model: NIE of patching a counterfactual fact" \
    --xlabel="patched position" --ylabel="patched blocks" 2>"$tmp/heatmap.log"; then
    echo "![$model NIE]($out_dir/${model}_nie.svg)"
  else
    echo "($model: no patching rows, no heat map: $(tail -n 1 "$tmp/heatmap.log"))"
  fi
done
