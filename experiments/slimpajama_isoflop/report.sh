#!/bin/bash
# The sgatlin (arXiv:2606.07414) isoflop section: the runs' summaries and configs as a tidy CSV
# (//tools/train:summary_table), its derived tables (:isoflop_frontier: compute sparsity per run, best size
# per FFN type, budget and seed, and the unigram control's validation loss on the runs' token shards), then the
# claims engine (//analysis/claims:judge_claims) judges
# claims.textproto on them, printing the section (tables with 95% intervals, figures, verdicts) and writing
# verdicts.csv.
# Usage: report.sh <out_dir> <tools...> <run summaries and configs...> (experiment_report.bzl)
set -euo pipefail
out_dir=$1
shift
runs=()
for f in "$@"; do
  case "$f" in
    */isoflop_frontier) frontier=$f ;;
    */judge_claims) judge=$f ;;
    */summary_table) summary_table=$f ;;
    */plot_lines.sh) plot=$f ;;
    */claims.textproto) claims=$f ;;
    */paper_table1.csv) paper=$f ;;
    */shards_small/train) train_tokens=$f/train.tokens.textproto ;;
    */shards_small/validation) validation_tokens=$f/validation.tokens.textproto ;;
    *.summary.textproto | *_config.textproto) runs+=("$f") ;;
  esac
done
mkdir -p "$out_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fields=parameters,forward_flops_per_token,steps,tokens,flops,validation_loss,validation_perplexity
"$summary_table" --out="$scratch/runs.csv" --fields="$fields,tokens_per_second,wall_seconds,stopped_by" \
  --config_fields=seed=runtime.seed,ffn=model.ffn,budget=budget.max_flops "${runs[@]}"
"$frontier" --runs="$scratch/runs.csv" --runs_out="$scratch/isoflop.csv" --frontier_out="$scratch/frontier.csv" \
  --train_tokens="$train_tokens" --validation_tokens="$validation_tokens"
"$judge" --claims="$claims" --out_dir="$out_dir" --plot="$plot" --table=isoflop.csv="$scratch/isoflop.csv" \
  --table=frontier.csv="$scratch/frontier.csv" --table=paper_table1.csv="$paper"
cp "$claims" "$out_dir/claims.textproto"
