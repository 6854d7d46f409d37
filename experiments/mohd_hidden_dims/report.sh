#!/bin/bash
# The MoHD section (arXiv:2412.05644 Tables 2 and 4, Sec. 3): one tidy row per run from the trainer summaries
# and merged configs (//tools/train:summary_table), then tables, figures and verdicts over seeds from
# claims.textproto (//analysis/claims:judge_claims). Only calls tools: no numbers or verdicts are made here.
# Usage: report.sh <out_dir> <summary_table> <judge_claims> <plot_lines.sh> <claims.textproto>
#                  <paper_tables.csv> <design.csv, summaries, configs, flow_s*.csv, sharing_s*.csv...>
set -euo pipefail
out_dir=$1
shift
mkdir -p "$out_dir"
runs=() flow=() sharing=()
for f in "$@"; do
  case "$f" in
    */summary_table) summary_table=$f ;;
    */judge_claims) judge_claims=$f ;;
    */plot_lines.sh) plot=$f ;;
    */claims.textproto) claims=$f ;;
    */paper_tables.csv) paper=$f ;;
    */design.csv) design=$f ;;
    *.summary.textproto | *_config.textproto) runs+=("$f") ;;
    */flow_s*.csv) flow+=("$f") ;;
    */sharing_s*.csv) sharing+=("$f") ;;
  esac
done
join() { local IFS=,; echo "$*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The engine writes each merged table to out_dir itself (runs.csv among them).
"$summary_table" --out="$tmp/runs.csv" \
  --fields=name,validation_perplexity,validation_loss,parameters,steps,tokens \
  --config_fields=seed=runtime.seed,d_model=model.d_model,sub_dims=model.n_experts,active=model.top_k,shared=model.layer_options.mohd_shared \
  "${runs[@]}"
"$judge_claims" --claims="$claims" --out_dir="$out_dir" --plot="$plot" \
  --table=runs.csv="$tmp/runs.csv" --table=design.csv="$design" --table=paper_tables.csv="$paper" \
  --table=flow.csv="$(join "${flow[@]}")" --table=sharing.csv="$(join "${sharing[@]}")"
echo
echo "CSV: $out_dir/{runs,design,paper_tables,flow,sharing,verdicts}.csv"
