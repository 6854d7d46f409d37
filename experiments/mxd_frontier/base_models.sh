#!/bin/bash
# Sourced by the MxD reports (mxd_frontier, sparse_probing, steering): the bases of mxd.bzl base_models() that
# have results, and the report's first line when a user's pretrained model (HF_MODEL) is the base.

# bases_not_run SUFFIX FILE...: "base=<name>,..." for each of our bases with no */<name><SUFFIX>* file, for
# judge_claims --arms_not_run (their claims read NOT TESTABLE).
bases_not_run() {
  local suffix=$1
  shift
  for base in gelu swiglu; do
    [[ " $* " == *"/${base}${suffix}"* ]] || echo "base=$base"
  done | paste -sd,
}

# pretrained_base_line FILE...: one line naming the pretrained model among FILE (its import manifest), or none.
pretrained_base_line() {
  local f
  for f in "$@"; do
    [[ "$f" == */datasets/pretrained/*.manifest.textproto ]] || continue
    echo "Base model: the pretrained $(sed -n 's/^model_type: //p' "$f") of HF_MODEL, in place of our" \
      "$(sed -n 's/^model_type: "\(gpt2\|gpt_neox\)"/GELU/p; s/^model_type: "llama"/SwiGLU/p' "$f") base" \
      "(manifest.textproto: the SHA-256 of each of its files)."
    echo
  done
}
