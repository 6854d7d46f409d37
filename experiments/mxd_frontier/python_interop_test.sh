#!/bin/bash
# The MxD experiment's activation cache and fits exported as safetensors (export_activations, export_fit)
# and read back by python_interop_check.py in Debian's python3-torch, which knows nothing of this project.
# $1 export_activations, $2 export_fit, $3 the check, then the files of the cache (its split dirs), of one
# Transcoder fit, of one MxD fit and the frontier CSV of their seed, told apart by name.
set -euo pipefail
exporter=$1 fit_exporter=$2 check=$3
shift 3
test_split="" transcoder="" mxd="" frontier=""
for path in "$@"; do
  case "$path" in
    */test) test_split=$path ;;
    *_tc_*.pt) transcoder=$path ;;
    *_mxd_*.pt) mxd=$path ;;
    *frontier*.csv) frontier=$path ;;
  esac
done
for found in test_split transcoder mxd frontier; do
  [[ -n "${!found}" ]] || { echo "python_interop_test: no $found among $*"; exit 1; }
done
out="${TEST_TMPDIR:-$(mktemp -d)}"
"$exporter" --activations="$(echo "$test_split"/*.activations.textproto)" --out_dir="$out/cache"
"$fit_exporter" --checkpoint="$transcoder" --out="$out/$(basename "$transcoder" .pt).safetensors"
"$fit_exporter" --checkpoint="$mxd" --out="$out/$(basename "$mxd" .pt).safetensors"
/usr/bin/python3 "$check" "$out/cache" "$test_split" "$out/$(basename "$transcoder" .pt).safetensors" \
  "$out/$(basename "$mxd" .pt).safetensors" "$frontier"
