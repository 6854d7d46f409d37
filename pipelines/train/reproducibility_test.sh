#!/usr/bin/env bash
# Bit-identity of a training action and an analysis action: reruns each twice, as the build graph ran it,
# and compares the checkpoint, its CSV log and the analysis CSVs byte for byte with each other and with the
# build graph's outputs. The summaries (manifests) differ only in wall time and throughput, and say so.
# Usage: reproducibility_test.sh TRAIN ACTIVATION_FLOW CONFIG FLOW_FLAGS IDENTITY FILES...
# FILES: seed 1's dense and mohd_x2 checkpoints' outputs (dense_s1, mohd_x2_s1), the graph's flow.csv and
# sharing.csv of that seed, and the token shard directories (picked by name).
set -euo pipefail
train=$1 flow=$2 config=$3 flow_flags=$4 identity=$5
shift 5
for f in "$@"; do
  case "$f" in
    */dense_s1.pt) dense_pt=$f ;;
    */dense_s1.csv) dense_csv=$f ;;
    */mohd_x2_s1.pt) x2_pt=$f ;;
    */flow.csv) flow_csv=$f ;;
    */sharing.csv) sharing_csv=$f ;;
    */train) train_dir=$f ;;
    */validation) validation_dir=$f ;;
  esac
done
tmp="$TEST_TMPDIR"
fail() { echo "reproducibility_test: $*"; exit 1; }

for run in 1 2; do
  "$train" --config="$config" --train_data="$train_dir/train.tokens.textproto" \
    --validation_data="$validation_dir/validation.tokens.textproto" --out="$tmp/dense$run.pt" \
    --log_csv="$tmp/dense$run.csv" --summary="$tmp/dense$run.summary.textproto" --threads=2 \
    --build_identity="$identity" 2>/dev/null
  mkdir -p "$tmp/flow$run"
  # shellcheck disable=SC2046  # the flags file holds several flags
  "$flow" --models=dense="$dense_pt",mohd_x2="$x2_pt" --tokens="$validation_dir/validation.tokens.textproto" \
    --out_dir="$tmp/flow$run" --threads=2 $(cat "$flow_flags") 2>/dev/null
done
for pair in "dense1.pt $dense_pt" "dense2.pt $dense_pt" "dense1.csv $dense_csv" "dense2.csv $dense_csv" \
  "flow1/flow.csv $flow_csv" "flow2/flow.csv $flow_csv" "flow1/sharing.csv $sharing_csv" "flow2/sharing.csv $sharing_csv"; do
  set -- $pair
  cmp "$tmp/$1" "$2" || fail "$1 differs from the build graph's $2"
done
# The manifests record what may differ: thread count, wall time; and what must not: digests, identity.
for key in checkpoint_sha256 config_sha256 train_data_sha256 trainer_sha256 threads; do
  a=$(grep "^$key:" "$tmp/dense1.summary.textproto") b=$(grep "^$key:" "$tmp/dense2.summary.textproto")
  [[ -n "$a" && "$a" == "$b" ]] || fail "summaries disagree on $key: '$a' vs '$b'"
done
grep -q '^build_identity: "blas: ' "$tmp/dense1.summary.textproto" || fail "no build identity in the summary"
echo "reproducibility_test: dense checkpoint ($(stat -c %s "$dense_pt") bytes), its CSV log and the activation-flow CSVs are bit-identical across 2 reruns and the build graph"
