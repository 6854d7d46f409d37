#!/usr/bin/env bash
# evaluate_bsp's argument contract as a user meets it: each wrong combination of a fit (the SAE baseline of
# MoE-X Figs. 3 and 5) with the other flags fails before any model is read, with one line and a non-zero exit.
set -euo pipefail
evaluate=$1
dir="$TEST_TMPDIR/cli"
mkdir -p "$dir"
fail() { echo "evaluate_bsp_cli_test: $*"; exit 1; }
# Placeholder files: every case below must be refused before any of them is parsed.
for f in model.pt fit_a.pt fit_b.pt config.textproto train.jsonl test.jsonl; do echo x >"$dir/$f"; done
common=(--bsp_train="$dir/train.jsonl" --bsp_test="$dir/test.jsonl" --out="$dir/out.csv")

expect_error() {  # expect_error <message part> <args...>
  local want=$1
  shift
  if "$evaluate" "${common[@]}" "$@" >"$dir/stdout" 2>"$dir/stderr"; then
    fail "accepted: $*"
  fi
  [[ $(wc -l <"$dir/stderr") -eq 1 ]] || { cat "$dir/stderr"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/stderr" || { cat "$dir/stderr"; fail "expected '$want' for: $*"; }
  [[ ! -e "$dir/out.csv" ]] || fail "wrote an output for: $*"
}

expect_error "at most one fit" --checkpoint="$dir/model.pt" "$dir/fit_a.pt" "$dir/fit_b.pt"
expect_error "at most one fit" --config="$dir/config.textproto" "$dir/fit_a.pt"
expect_error "reads the model itself" --checkpoint="$dir/model.pt" \
  --board_tracking_out="$dir/tracking.csv" "$dir/fit_a.pt"
expect_error "missing.pt" --checkpoint="$dir/model.pt" "$dir/missing.pt"
expect_error "one of --checkpoint" --checkpoint="$dir/model.pt" --config="$dir/config.textproto"
expect_error "training_percent" --config="$dir/config.textproto" --training_percent=50
echo "evaluate_bsp_cli_test: 6 refusals, one line each"
