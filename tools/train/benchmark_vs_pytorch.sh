#!/bin/bash
# Training throughput, LibTorch (this project) beside PyTorch eager on the same model and sizes, the two
# programs alternated round after round so that a busy machine slows both alike; prints every round, then
# per size the medians of tokens/s and MFU and the ratio of the medians:
#   ./tools/bazel run //tools/train:benchmark_vs_pytorch [-- --rounds=5]
# Needs Debian's python3-torch (1.13, the same library version; in tools/deps.txt).
set -euo pipefail
libtorch_binary="$1"; python_script="$2"; shift 2
rounds=3
for arg in "$@"; do
  case "$arg" in
    --rounds=*) rounds="${arg#--rounds=}" ;;
    *) echo "benchmark_vs_pytorch: unknown argument $arg (only --rounds=N)" >&2; exit 2 ;;
  esac
done
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "benchmark_vs_pytorch: --rounds must be a positive integer, got '$rounds'" >&2; exit 2
fi
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "benchmark_vs_pytorch: python3 cannot import torch; install Debian's python3-torch (./tools/bazel installs tools/deps.txt)" >&2
  exit 1
fi
lines="$(mktemp)"; trap 'rm -f "$lines"' EXIT
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds"
  "$libtorch_binary" --threads=2 | tee -a "$lines"
  OMP_NUM_THREADS=2 /usr/bin/python3 "$python_script" | tee -a "$lines"
done
echo
echo "medians of $rounds rounds (2 threads)"
printf "%-12s %14s %14s %7s %9s %9s\n" model "libtorch tok/s" "eager tok/s" ratio "MFU ours" "MFU eager"
# Lines read "<program> d=<d> L=<l> ...: <n> tokens/s, <g> GFLOP/s, MFU <m>% of <p> GFLOP/s".
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  / tokens\/s/ {
    key = $2 " " $3; program = $1
    rate[program, key] = rate[program, key] " " $7
    mfu[program, key] = mfu[program, key] " " substr($(NF - 3), 1, length($(NF - 3)) - 1)
    sizes[key] = 1
  }
  END {
    for (key in sizes) {
      ours = median(rate["libtorch", key]); eager = median(rate["pytorch-eager", key])
      printf "%-12s %14.0f %14.0f %6.2fx %8.1f%% %8.1f%%\n", key, ours, eager, ours / eager,
             median(mfu["libtorch", key]), median(mfu["pytorch-eager", key])
    }
  }' "$lines" | sort -t= -k2,2n
