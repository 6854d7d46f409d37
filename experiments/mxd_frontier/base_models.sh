#!/bin/bash
# Sourced by the MxD reports (mxd_frontier, sparse_probing, steering): the bases of mxd.bzl base_models() that
# have results.

# bases_not_run SUFFIX FILE...: "base=<name>,..." for each of our bases with no */<name><SUFFIX>* file, for
# judge_claims --arms_not_run (their claims read NOT TESTABLE).
bases_not_run() {
  local suffix=$1
  shift
  for base in gelu swiglu; do
    [[ " $* " == *"/${base}${suffix}"* ]] || echo "base=$base"
  done | paste -sd,
}

