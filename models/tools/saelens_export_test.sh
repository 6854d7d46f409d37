#!/usr/bin/env bash
# SAELens format out and in. export_fit --format=saelens against a Python reference of SAELens's TopK, standard
# and JumpReLU forwards (saelens_reference.py, from the directory alone) on rows whose codes and reconstructions
# the fit itself computed, for our TopK, ReLU, JumpReLU and BatchTopK SAEs; import_saelens of the TopK and ReLU
# directories onto the base model and out again gives the same tensor bytes (JumpReLU and BatchTopK: the same
# forward, the threshold passing through log);
# the same SAE written as SAELens's trainer leaves many (no b_dec on the input, rescaled decoder rows) imports
# to the same forward; fits and directories we cannot run fail with one line and leave nothing.
# Usage: saelens_export_test.sh EXPORT_FIT IMPORT_SAELENS SAELENS_FIXTURE SAELENS_REFERENCE_PY
set -euo pipefail
export_fit=$1 import_saelens=$2 fixture=$3 reference=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
dir="$TEST_TMPDIR/fixture"
mkdir -p "$dir"
"$fixture" --out_dir="$dir"

echo "== out"
"$export_fit" --format=saelens --checkpoint="$dir/sae.pt" --out="$dir/out"
echo "cfg.json: $(cat "$dir/out/cfg.json")"
python3 "$reference" check "$dir/out" "$dir/rows_sae.safetensors"

echo "== out, in, out"
"$import_saelens" --sae_dir="$dir/out" --base="$dir/base.pt" --out="$dir/back.pt"
"$export_fit" --format=saelens --checkpoint="$dir/back.pt" --out="$dir/back"
cmp "$dir/out/sae_weights.safetensors" "$dir/back/sae_weights.safetensors" ||
  fail "out and back in changed the SAE's tensors"
echo "sae_weights.safetensors byte-identical after the round trip"
# The imported layer records its expansion d_sae / d_in, as our own fits do (their tables show it).
grep -aq "expansion: $(python3 -c "import json; c = json.load(open('$dir/out/cfg.json')); print(c['d_sae'] // c['d_in'])")" \
  "$dir/back.pt" || fail "the imported SAE's config has no expansion d_sae / d_in"

echo "== ReLU, JumpReLU and BatchTopK SAEs out, in, out"
for name in relu jump batch; do
  "$export_fit" --format=saelens --checkpoint="$dir/$name.pt" --out="$dir/out_$name" 2>"$dir/export_$name.txt"
  cat "$dir/export_$name.txt" >&2
  echo "$name cfg.json: $(cat "$dir/out_$name/cfg.json")"
  python3 "$reference" check "$dir/out_$name" "$dir/rows_$name.safetensors"
  "$import_saelens" --sae_dir="$dir/out_$name" --base="$dir/base.pt" --out="$dir/back_$name.pt"
  "$export_fit" --format=saelens --checkpoint="$dir/back_$name.pt" --out="$dir/back_$name"
  python3 "$reference" check "$dir/back_$name" "$dir/rows_$name.safetensors"
done
cmp "$dir/out_relu/sae_weights.safetensors" "$dir/back_relu/sae_weights.safetensors" ||
  fail "the ReLU SAE's tensors changed out and back in"
grep -q '"architecture": "standard"' "$dir/out_relu/cfg.json" || fail "relu_sae is not SAELens's standard SAE"
grep -q "as a SAELens standard SAE" "$dir/export_relu.txt" || fail "export_fit misnames the architecture: $(cat "$dir/export_relu.txt")"
grep -q '"architecture": "jumprelu"' "$dir/out_batch/cfg.json" || fail "batch_topk_sae does not infer as jumprelu"
grep -q '"sparse_layers_layer_type": "jump_relu_sae"' "$dir/back_batch/cfg.json" ||
  fail "a SAELens jumprelu does not import as jump_relu_sae"

echo "== SAELens's folds in"
python3 "$reference" fold "$dir/out" "$dir/folded"
python3 "$reference" check "$dir/folded" "$dir/rows_sae.safetensors"
"$import_saelens" --sae_dir="$dir/folded" --base="$dir/base.pt" --out="$dir/folded.pt"
"$export_fit" --format=saelens --checkpoint="$dir/folded.pt" --out="$dir/unfolded"
python3 "$reference" check "$dir/unfolded" "$dir/rows_sae.safetensors"

# expect_error PROGRAM ARGS...: exit 1, one "<program>: error:" line, nothing at $dir/bad.
expect_error() {
  local program=$1 rc=0
  shift
  "$program" "$@" >"$dir/out.txt" 2>"$dir/err.txt" || rc=$?
  ((rc == 1)) || fail "$(basename "$program") $* exited $rc"
  [[ "$(wc -l <"$dir/err.txt")" -eq 1 ]] && grep -q "^$(basename "$program"): error: " "$dir/err.txt" ||
    fail "$(basename "$program") $*: $(cat "$dir/err.txt")"
  [[ ! -e "$dir/bad" && ! -e "$dir/bad.pt" ]] || fail "$(basename "$program") $* left an output"
  echo "refused: $(sed "s|$dir/||g" "$dir/err.txt")"
}
echo "== refused"
expect_error "$export_fit" --format=saelens --checkpoint="$dir/transcoder.pt" --out="$dir/bad"
expect_error "$export_fit" --format=onnx --checkpoint="$dir/sae.pt" --out="$dir/bad"
# bad_dir NAME PYTHON_EDIT: a copy of the exported directory with cfg.json edited, refused by import_saelens.
bad_dir() {
  rm -rf "$dir/$1"
  cp -r "$dir/out" "$dir/$1"
  python3 -c "import json, sys
p = sys.argv[1] + '/cfg.json'; cfg = json.load(open(p)); $2; json.dump(cfg, open(p, 'w'))" "$dir/$1"
  expect_error "$import_saelens" --sae_dir="$dir/$1" --base="$dir/base.pt" --out="$dir/bad.pt"
}
bad_dir no_d_sae 'del cfg["d_sae"]'
bad_dir wrong_width 'cfg["d_in"] = 15'
bad_dir gated 'cfg["architecture"] = "gated"'
bad_dir jumprelu_without_threshold 'cfg["architecture"] = "jumprelu"; del cfg["k"]'
bad_dir layer_norm 'cfg["normalize_activations"] = "layer_norm"'
bad_dir block_5 'cfg["metadata"]["hook_name"] = "blocks.5.hook_mlp_out"'
bad_dir resid 'cfg["metadata"]["hook_name"] = "blocks.1.hook_resid_post"'
bad_dir k_too_big 'cfg["k"] = 500'
echo PASS
