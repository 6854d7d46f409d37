#!/bin/bash
# Training throughput, LibTorch (this project) beside PyTorch eager on the same model and sizes:
#   ./tools/bazel run //tools/train:benchmark_vs_pytorch
# Needs Debian's python3-torch (1.13, the same library version): sudo apt-get install python3-torch
set -euo pipefail
libtorch_binary="$1"; python_script="$2"
"$libtorch_binary" --threads=2
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  OMP_NUM_THREADS=2 /usr/bin/python3 "$python_script"
else
  echo "pytorch-eager: skipped; install Debian's python3-torch to compare (sudo apt-get install python3-torch)"
fi
