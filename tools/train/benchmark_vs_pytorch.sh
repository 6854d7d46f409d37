#!/bin/bash
# Training throughput, LibTorch (this project) beside PyTorch eager on the same model and sizes, the two
# programs alternated round after round so that a busy machine slows both alike; prints every round, then
# per FFN and size the medians of tokens/s and MFU (active FLOPs for the sparse FFNs), the ratio of the
# medians, and each sparse FFN's MFU as a share of the dense GELU MLP's (ours):
#   ./tools/bazel run //tools/train:benchmark_vs_pytorch [-- --rounds=5 --steps=10 --ffns=gelu_mlp,sgatlin]
# Needs Debian's python3-torch (1.13, the same library version; in tools/deps.txt).
set -euo pipefail
libtorch_binary="$1"; python_script="$2"; shift 2
rounds=3
steps=10
ffns="gelu_mlp,switch,moe_x,gpt_oss_moe,sgatlin,peer,mohd_swiglu"
for arg in "$@"; do
  case "$arg" in
    --rounds=*) rounds="${arg#--rounds=}" ;;
    --ffns=*) ffns="${arg#--ffns=}" ;;
    --steps=*) steps="${arg#--steps=}" ;;
    *) echo "benchmark_vs_pytorch: unknown argument $arg (--rounds=N, --steps=N, --ffns=a,b)" >&2; exit 2 ;;
  esac
done
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ && "$steps" =~ ^[1-9][0-9]*$ ]]; then
  echo "benchmark_vs_pytorch: --rounds and --steps must be positive integers, got '$rounds', '$steps'" >&2; exit 2
fi
# Each FFN's shape, the same flags to both programs: the tiny isoflop ladder's channels and key width for
# the product-key layers (analysis/scaling/scaling_ladder.h, d = 128), top-2 of 8 (16 for GPT-OSS)
# experts of width 4d, MoHD's 3 of 4 sub-dimensions.
shape_of() {
  case "$1" in
    gelu_mlp) echo "" ;;
    switch|moe_x) echo "--n_experts=8 --top_k=2" ;;
    gpt_oss_moe) echo "--n_experts=16 --top_k=2" ;;
    sgatlin) echo "--d_ffn=1600 --n_experts=8 --top_k=8 --d_key=32" ;;
    peer) echo "--d_ffn=6400 --n_experts=8 --top_k=8 --d_key=32" ;;
    mohd_swiglu) echo "--n_experts=4 --top_k=3" ;;
    *) echo "benchmark_vs_pytorch: no eager reference for ffn '$1'" >&2; return 1 ;;
  esac
}
IFS=, read -r -a ffn_list <<< "$ffns"
for ffn in "${ffn_list[@]}"; do shape_of "$ffn" > /dev/null; done
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "benchmark_vs_pytorch: python3 cannot import torch; install Debian's python3-torch (./tools/bazel installs tools/deps.txt)" >&2
  exit 1
fi
lines="$(mktemp)"; trap 'rm -f "$lines"' EXIT
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds"
  for ffn in "${ffn_list[@]}"; do
    read -r -a shape <<< "--steps=$steps --ffn=$ffn $(shape_of "$ffn")"
    "$libtorch_binary" --threads=2 "${shape[@]}" | tee -a "$lines"
    OMP_NUM_THREADS=2 /usr/bin/python3 "$python_script" "${shape[@]}" | tee -a "$lines"
  done
done
echo
echo "medians of $rounds rounds (2 threads; MFU in active FLOPs; dense share: MFU over the GELU MLP's, ours)"
printf "%-12s %-12s %14s %14s %7s %9s %9s %11s\n" ffn model "libtorch tok/s" "eager tok/s" ratio "MFU ours" "MFU eager" "dense share"
# Lines read "<program> d=<d> L=<l> T=.. V=.. B=..[ <ffn>]: <n> tokens/s, <g> GFLOP/s, MFU <m>% of <p> GFLOP/s".
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  / tokens\/s/ {
    program = $1; size = $2 " " $3; ffn = "gelu_mlp"
    if ($7 ~ /:$/) ffn = substr($7, 1, length($7) - 1)
    for (i = 1; i <= NF; i++) {
      if ($(i + 1) == "tokens/s,") r = $i
      if ($i == "MFU") m = substr($(i + 1), 1, length($(i + 1)) - 1)
    }
    key = ffn SUBSEP size
    rate[program, key] = rate[program, key] " " r
    mfu[program, key] = mfu[program, key] " " m
    keys[key] = 1
  }
  END {
    for (key in keys) {
      split(key, part, SUBSEP)
      ours = median(rate["libtorch", key]); eager = median(rate["pytorch-eager", key])
      mine = median(mfu["libtorch", key]); dense = mfu["libtorch", "gelu_mlp" SUBSEP part[2]]
      share = dense == "" ? "-" : sprintf("%.0f%%", 100 * mine / median(dense))
      printf "%-12s %-12s %14.0f %14.0f %6.2fx %8.1f%% %8.1f%% %11s\n", part[1], part[2], ours, eager,
             (eager > 0 ? ours / eager : 0), mine, median(mfu["pytorch-eager", key]), share
    }
  }' "$lines" | sort -k1,1 -k2,2V
