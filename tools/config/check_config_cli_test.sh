#!/usr/bin/env bash
# check_config prints "ok" for a valid config; for a malformed one, exactly one stderr line starting with
# file:line:column, and exit status 1.
set -u
check_config="$1"
data="tools/config/testdata"
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
echo "PASS"
