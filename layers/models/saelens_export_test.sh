#!/usr/bin/env bash
# export_fit --format=saelens against a Python reference of SAELens's TopK forward (saelens_reference.py, from
# the exported directory alone) on rows whose codes and reconstructions the fit itself computed; a fit SAELens
# has no architecture for, and a bad format, fail with one line and leave no directory.
# Usage: saelens_export_test.sh EXPORT_FIT SAELENS_FIXTURE SAELENS_REFERENCE_PY
set -euo pipefail
export_fit=$1 fixture=$2 reference=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
dir="$TEST_TMPDIR/fixture"
mkdir -p "$dir"
"$fixture" --out_dir="$dir"

"$export_fit" --format=saelens --checkpoint="$dir/sae.pt" --out="$dir/sae_saelens"
echo "cfg.json: $(cat "$dir/sae_saelens/cfg.json")"
ls "$dir/sae_saelens"
python3 "$reference" "$dir/sae_saelens" "$dir/rows.safetensors"

# expect_error ARGS...: exit 1, one "export_fit: error:" line, nothing at the output.
expect_error() {
  local rc=0
  "$export_fit" "$@" --out="$dir/bad" >"$dir/out.txt" 2>"$dir/err.txt" || rc=$?
  ((rc == 1)) || fail "export_fit $* exited $rc"
  [[ "$(wc -l <"$dir/err.txt")" -eq 1 ]] && grep -q '^export_fit: error: ' "$dir/err.txt" ||
    fail "export_fit $*: $(cat "$dir/err.txt")"
  [[ ! -e "$dir/bad" ]] || fail "export_fit $* left $dir/bad"
  echo "refused: $(cat "$dir/err.txt")"
}
expect_error --format=saelens --checkpoint="$dir/transcoder.pt"
expect_error --format=onnx --checkpoint="$dir/sae.pt"
echo PASS
