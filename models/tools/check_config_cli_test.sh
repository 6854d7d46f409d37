#!/usr/bin/env bash
# check_config prints "ok" for a valid config; for a malformed one, exactly one stderr line starting with
# file:line:column, and exit status 1.
set -u
check_config="$1"
data="config/testdata"
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$("$check_config" "$data/base.textproto" "$data/smoke.textproto" 2>&1)" ||
  fail "valid config rejected: $out"
[[ "$out" == "ok: tiny_gpt" ]] || fail "unexpected output for a valid config: $out"

err="$("$check_config" "$data/bad_type.textproto" 2>&1 >/dev/null)"
status=$?
[[ $status -eq 1 ]] || fail "exit status $status, expected 1"
[[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ]] || fail "expected one error line, got: $err"
expected="check_config: error: $data/bad_type.textproto:3:12: field 'd_model': "
[[ "$err" == "$expected"* ]] || fail "error line '$err' does not start with '$expected'"
# Inputs generated here: each must give exit 1, one line naming the problem, and no --out file.
tmp="${TEST_TMPDIR:-$(mktemp -d)}/cli"
mkdir -p "$tmp"
: >"$tmp/empty.textproto"
printf 'model { ffn: "switch" n_experts: 4 top_k: 0 }\n' >"$tmp/switch_k0.textproto"
printf 'model { d_model: 36 positions: ROTARY }\n' >"$tmp/odd_rotary.textproto"
printf 'optimizer { learning_rate: nan }\n' >"$tmp/lr_nan.textproto"
expect_error() {  # expected-message-suffix config files...
  local want="$1"; shift
  rm -f "$tmp/merged.textproto"
  local err
  err="$("$check_config" "$@" --out="$tmp/merged.textproto" 2>&1 >/dev/null)"
  local status=$?
  [[ $status -eq 1 ]] || fail "$*: exit status $status, expected 1"
  [[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ]] || fail "$*: expected one error line, got: $err"
  [[ "$err" == "check_config: error: "*"$want" ]] || fail "$*: '$err' does not end with '$want'"
  [[ ! -e "$tmp/merged.textproto" ]] || fail "$*: left $tmp/merged.textproto"
}
# A fit's config names a replacement layer, which check_config links beside the LM families.
printf 'model { replacement { ffn: "jump_relu_sae" on_output: true d_ffn: 64 top_k: 0 sparsity_penalty: 1 } }\n' \
  >"$tmp/jump_relu_fit.textproto"
out="$("$check_config" "$data/base.textproto" "$data/smoke.textproto" "$tmp/jump_relu_fit.textproto" 2>&1)" ||
  fail "a fit's config rejected: $out"
expect_error "empty config (it sets no field)" "$tmp/empty.textproto"
expect_error "is a directory, not a file" "$tmp"
expect_error "field 'model.top_k': switch needs top_k in [1, n_experts 4], got 0" \
  "$data/base.textproto" "$tmp/switch_k0.textproto"
expect_error "field 'model.positions': rotary needs an even head dim; d_model 36 / n_heads 4 = 9" \
  "$data/base.textproto" "$tmp/odd_rotary.textproto"
expect_error "field 'optimizer.learning_rate': must be a finite number in (0, 1]" \
  "$data/base.textproto" "$tmp/lr_nan.textproto"
echo "PASS"
