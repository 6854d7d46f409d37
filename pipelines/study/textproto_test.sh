#!/bin/bash
# The study rule's textproto() writes the text format an arm's generated overlay needs.
set -euo pipefail
expected='name: "dense_s3" model { d_model: 64 ffn: "mohd_swiglu" layer_options { mohd_shared: 3 mohd_scaling: NONE mohd_fusion: false } } optimizer { learning_rate: 0.5 } note: "say \"hi\" to dense_s3" repeated { x: 1 } repeated { x: 2 }'
actual=$(cat "$1")
if [[ "$actual" != "$expected" ]]; then
  echo "textproto_test: got" >&2
  echo "  $actual" >&2
  echo "expected" >&2
  echo "  $expected" >&2
  exit 1
fi
echo "textproto_test: ok"
