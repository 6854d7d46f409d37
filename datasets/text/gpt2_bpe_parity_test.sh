#!/usr/bin/env bash
# GPT-2 BPE parity: the pinned package's JavaScript encoder (run by node) writes each case's bytes and ids,
# and gpt2_bpe_parity encodes the same bytes in C++ and compares.
# Usage: gpt2_bpe_parity_test.sh <gpt2_bpe_parity> <gpt2_bpe_reference.js> <Encoder.js> <encoder.json>
#        <case files and corpus splits (.jsonl; other corpus outputs are skipped)>...
set -euo pipefail
parity="$1"
reference_js="$2"
package_dir="$(dirname "$3")"
encoder_json="$4"
shift 4
command -v node >/dev/null || { echo "FAIL: node is not installed (tools/deps.txt: nodejs)" >&2; exit 1; }
inputs=()
for input in "$@"; do
  [[ "$input" == *.jsonl || "$input" == *.txt ]] && inputs+=("$input")
done
reference="${TEST_TMPDIR:-/tmp}/gpt2_bpe_reference.tsv"
start=$SECONDS
node "$reference_js" "$package_dir" "$reference" "${inputs[@]}"
echo "reference encoder (node $(node --version)): $((SECONDS - start)) s"
"$parity" "$encoder_json" "$reference"
