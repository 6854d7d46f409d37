#!/usr/bin/env bash
# The merged config of the active scale carries that scale's values and keeps the base's.
set -u
merged="$1"
scale="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
declare -A steps=([smoke]=20 [cpu]=300 [paper]=100000)
grep -q "max_steps: ${steps[$scale]}\$" "$merged" || fail "$scale: expected max_steps ${steps[$scale]} in $(cat "$merged")"
grep -q 'name: "tiny_gpt"' "$merged" || fail "base fields lost: $(cat "$merged")"
echo "PASS ($scale)"
