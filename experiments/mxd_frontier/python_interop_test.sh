#!/bin/bash
# The MxD experiment's activation cache and fits exported as safetensors (export_activations, export_fit)
# and read back by python_interop_check.py in Debian's python3-torch, which knows nothing of this project.
# $1 export_activations, $2 export_fit, $3 the check, then the cache's split dirs (train, validation,
# test), a Transcoder fit, an MxD fit and the frontier CSV of that seed.
set -euo pipefail
exporter=$1 fit_exporter=$2 check=$3
shift 3
splits=("${@:1:$#-3}")
set -- "${@: -3}"
test_split=""
for dir in "${splits[@]}"; do [[ "$(basename "$dir")" == test ]] && test_split=$dir; done
[[ -n "$test_split" ]] || { echo "python_interop_test: no test split among ${splits[*]}"; exit 1; }
out="${TEST_TMPDIR:-$(mktemp -d)}"
"$exporter" --activations="$(echo "$test_split"/*.activations.textproto)" --out_dir="$out/cache"
"$fit_exporter" --checkpoint="$1" --out="$out/$(basename "$1" .pt).safetensors"
"$fit_exporter" --checkpoint="$2" --out="$out/$(basename "$2" .pt).safetensors"
/usr/bin/python3 "$check" "$out/cache" "$test_split" "$out/$(basename "$1" .pt).safetensors" \
  "$out/$(basename "$2" .pt).safetensors" "$3"
