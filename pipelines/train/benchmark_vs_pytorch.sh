#!/bin/bash
# Training throughput, LibTorch (this project) beside PyTorch eager on the same model and sizes, the two
# programs alternated round after round so that a busy machine slows both alike; prints every round, then
# the medians and the ratio of the medians. Two benches, one per target:
#   ./tools/bazel run //pipelines/train:benchmark_vs_pytorch [-- --rounds=5 --steps=10 --ffns=gelu_mlp,sgatlin]
#     the LM step (training_throughput against pytorch_eager_throughput.py), per FFN and size tokens/s and
#     MFU (active FLOPs for the sparse FFNs), and each sparse FFN's MFU as a share of the dense GELU MLP's;
#     fails when the two programs' first losses differ by more than 0.05 nats (not the same initial model);
#   ./tools/bazel run //pipelines/train:benchmark_fits_vs_pytorch [-- --rounds=5 --steps=20 --fits=transcoder,lorsa]
#     a replacement-layer fit's step (fit_throughput against pytorch_eager_fits.py), per fit rows/s; fails
#     when the two programs' layers differ in parameter count.
# Needs Debian's python3-torch (1.13, the same library version; in tools/deps.txt).
set -euo pipefail
bench="$1"; libtorch_binary="$2"; python_script="$3"; shift 3
[[ "$bench" == lm || "$bench" == fit ]] || { echo "benchmark_vs_pytorch.sh: the first argument is lm or fit, got '$bench'" >&2; exit 2; }
rounds=3
if [[ "$bench" == lm ]]; then
  steps=10
  items="gelu_mlp,switch,moe_x,gpt_oss_moe,sgatlin,peer,mohd_swiglu"
  list_flag=--ffns; item_flag=--ffn
else
  steps=20
  items="transcoder,skip_transcoder,topk_sae,mxd_gelu,lorsa"
  list_flag=--fits; item_flag=--fit
fi
name="benchmark_$( [[ "$bench" == lm ]] && echo vs_pytorch || echo fits_vs_pytorch )"
for arg in "$@"; do
  case "$arg" in
    --rounds=*) rounds="${arg#--rounds=}" ;;
    "$list_flag"=*) items="${arg#"$list_flag"=}" ;;
    --steps=*) steps="${arg#--steps=}" ;;
    # TORCH_ENV from the BUILD file: both programs run in every LibTorch action's environment.
    --env=*) export "${arg#--env=}" ;;
    *) echo "$name: unknown argument $arg (--rounds=N, --steps=N, $list_flag=a,b)" >&2; exit 2 ;;
  esac
done
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ && "$steps" =~ ^[1-9][0-9]*$ ]]; then
  echo "$name: --rounds and --steps must be positive integers, got '$rounds', '$steps'" >&2; exit 2
fi
# Each item's shape, the same flags to both programs.
# LM: the tiny isoflop ladder's channels and key width for the product-key layers
# (analysis/scaling/scaling_ladder.h, d = 128), top-2 of 8 (16 for GPT-OSS) experts of width 4d, MoHD's 3 of
# 4 sub-dimensions.
# Fits at cpu scale: the MxD frontier's GELU base (d = 128, FFN width 512; Transcoder and SAE width 32 d,
# MxD's N = 3,584 experts of the same parameter count, K = 8, 1,024-row batches:
# experiments/mxd_frontier/fit_cpu.textproto) and the Lorsa experiment's (d = 64, 8 QK heads of width 8, 256
# OV heads, K = 16, 16 windows of 64 tokens: lorsa.bzl LORSA_SHAPE).
shape_of() {
  case "$bench:$1" in
    lm:gelu_mlp) echo "" ;;
    lm:switch|lm:moe_x) echo "--n_experts=8 --top_k=2" ;;
    lm:gpt_oss_moe) echo "--n_experts=16 --top_k=2" ;;
    lm:sgatlin) echo "--d_ffn=1600 --n_experts=8 --top_k=8 --d_key=32" ;;
    lm:peer) echo "--d_ffn=6400 --n_experts=8 --top_k=8 --d_key=32" ;;
    lm:mohd_swiglu) echo "--n_experts=4 --top_k=3" ;;
    fit:transcoder|fit:skip_transcoder|fit:topk_sae) echo "--d_model=128 --width=4096 --top_k=8 --rows=1024" ;;
    fit:mxd_gelu) echo "--d_model=128 --hidden=512 --width=3584 --top_k=8 --rows=1024" ;;
    fit:lorsa) echo "--d_model=64 --qk_heads=8 --qk_dim=8 --width=256 --top_k=16 --window=64 --rows=1024" ;;
    *) echo "$name: no eager reference for '$1'" >&2; return 1 ;;
  esac
}
IFS=, read -r -a item_list <<< "$items"
for item in "${item_list[@]}"; do shape_of "$item" > /dev/null; done
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "$name: python3 cannot import torch; install Debian's python3-torch (./tools/bazel installs tools/deps.txt)" >&2
  exit 1
fi
lines="$(mktemp)"; trap 'rm -f "$lines"' EXIT
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds"
  for item in "${item_list[@]}"; do
    read -r -a shape <<< "--steps=$steps $item_flag=$item $(shape_of "$item")"
    "$libtorch_binary" --threads=2 "${shape[@]}" | tee -a "$lines"
    OMP_NUM_THREADS=2 /usr/bin/python3 "$python_script" "${shape[@]}" | tee -a "$lines"
  done
done
echo
median='
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }'
if [[ "$bench" == fit ]]; then
  echo "medians of $rounds rounds (2 threads)"
  printf "%-16s %12s %15s %14s %7s\n" fit parameters "libtorch rows/s" "eager rows/s" ratio
  # Lines read "<program> fit=<fit> d=.. width=.. K=.. rows=.. params=<n>: <r> rows/s".
  awk "$median"'
    / rows\/s$/ {
      program = $1; fit = substr($2, 5); params = substr($7, 8, length($7) - 8)
      rate[program, fit] = rate[program, fit] " " $8
      if ((fit, program) in count && count[fit, program] != params) mismatch = mismatch " " fit
      count[fit, program] = params; fits[fit] = 1
    }
    END {
      for (fit in fits) {
        if (count[fit, "libtorch"] != count[fit, "pytorch-eager"]) mismatch = mismatch " " fit
        ours = median(rate["libtorch", fit]); eager = median(rate["pytorch-eager", fit])
        printf "%-16s %12s %15.0f %14.0f %6.2fx\n", fit, count[fit, "libtorch"], ours, eager, (eager > 0 ? ours / eager : 0)
      }
      if (mismatch != "") { print "benchmark_fits_vs_pytorch: parameter counts differ for" mismatch > "/dev/stderr"; exit 1 }
    }' "$lines" | sort -k1,1
  exit 0
fi
echo "medians of $rounds rounds (2 threads; MFU in active FLOPs; dense share: MFU over the GELU MLP's, ours)"
printf "%-12s %-12s %14s %14s %7s %9s %9s %11s\n" ffn model "libtorch tok/s" "eager tok/s" ratio "MFU ours" "MFU eager" "dense share"
# Lines read "<program> d=<d> L=<l> T=.. V=.. B=..[ <ffn>]: <n> tokens/s, <g> GFLOP/s, MFU <m>% of <p> GFLOP/s,
# initial loss <l>".
awk "$median"'
  / tokens\/s/ {
    program = $1; size = $2 " " $3; ffn = "gelu_mlp"; l = ""
    if ($7 ~ /:$/) ffn = substr($7, 1, length($7) - 1)
    for (i = 1; i <= NF; i++) {
      if ($(i + 1) == "tokens/s,") r = $i
      if ($i == "MFU") m = substr($(i + 1), 1, length($(i + 1)) - 1)
      if ($i == "initial" && $(i + 1) == "loss") l = $(i + 2)
    }
    key = ffn SUBSEP size
    rate[program, key] = rate[program, key] " " r
    mfu[program, key] = mfu[program, key] " " m
    loss[program, key] = loss[program, key] " " l
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
    # The same model at the same initial scales starts near ln 8192 = 9.01 in both programs (random targets);
    # PyTorch default scales (N(0, 1) embeddings) start far above it and time another model.
    for (key in keys) {
      split(key, part, SUBSEP)
      ours = median(loss["libtorch", key]); eager = median(loss["pytorch-eager", key])
      if (ours - eager > 0.05 || eager - ours > 0.05) {
        printf "benchmark_vs_pytorch: %s %s starts at loss %.4f here and %.4f in eager: not the same initial model\n",
               part[1], part[2], ours, eager > "/dev/stderr"
        differ = 1
      }
    }
    if (differ) exit 1
  }' "$lines" | sort -k1,1 -k2,2V
