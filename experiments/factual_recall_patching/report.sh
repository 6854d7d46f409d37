#!/bin/bash
# The factual-recall section (sgatlin arXiv:2606.07414 Sec. 4.3, Fig. 7; Sec. 4.1): the fact LMs' summaries
# as a tidy CSV (summary_table), then the claims engine on claims.textproto and factual_recall's tidy CSVs
# (tables of mean +- 95% CI, figures, controls, verdicts; verdicts.csv and the CSVs merged over seeds land in
# <out_dir>), then the NIE heat maps of the merged patching table (plot_heatmap.sh).
# Usage: report.sh <out_dir> <judge_claims> <plot_heatmap.sh> <plot_lines.sh> <summary_table>
#                  <claims.textproto> <results...>
set -euo pipefail
out_dir=$1
shift
runs=() recall=() patching=() contrasts=() neighbours=()
for f in "$@"; do
  case "$f" in
    */judge_claims) judge=$f ;;
    */plot_heatmap.sh) heatmap=$f ;;
    */plot_lines.sh) plot=$f ;;
    */summary_table) summary_table=$f ;;
    */claims.textproto) claims=$f ;;
    *.summary.textproto | *_config.textproto) runs+=("$f") ;;
    */recall.csv) recall+=("$f") ;;
    */patching.csv) patching+=("$f") ;;
    */block_contrasts.csv) contrasts+=("$f") ;;
    */neighbours.csv) neighbours+=("$f") ;;
  esac
done
join() { local IFS=,; echo "$*"; }
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$summary_table" --out="$tmp/models.csv" --fields=parameters,steps,validation_loss,wall_seconds \
  --config_fields=seed=runtime.seed "${runs[@]}"
cp "$claims" "$out_dir/claims.textproto"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" --table=models.csv="$tmp/models.csv" \
  --table=recall.csv="$(join "${recall[@]}")" --table=patching.csv="$(join "${patching[@]}")" \
  --table=block_contrasts.csv="$(join "${contrasts[@]}")" --table=neighbours.csv="$(join "${neighbours[@]}")"
echo
# The heat maps draw one row per cell: the first seed's (the tables above give the means over seeds).
seed=$(awk -F, 'NR == 2 { print $1; exit }' "$out_dir/patching.csv")
echo "## NIE heat maps (seed $seed's cells; seed means in the tables above)"
for model in sgatlin dense; do
  if "$heatmap" --csv="$out_dir/patching.csv" --x=token --y=blocks --value=mean_nie --where=model=$model \
    --where=seed="$seed" --out="$out_dir/${model}_nie.svg" \
    --title="$model: NIE of patching a counterfactual fact (seed $seed)" \
    --xlabel="patched position" --ylabel="patched blocks" 2>"$tmp/heatmap.log"; then
    echo "![$model NIE]($out_dir/${model}_nie.svg)"
  else
    echo "($model: no patching rows, no heat map: $(tail -n 1 "$tmp/heatmap.log"))"
  fi
done
