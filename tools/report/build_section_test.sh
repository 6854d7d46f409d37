#!/usr/bin/env bash
# build_section.sh on a stand-in report: section.md opens with the experiment's pretrained_line when a pretrained
# model's import manifest is among the results (and not otherwise), the manifest records that model, and a
# pretrained model without a line is an error rather than an unnamed base.
set -euo pipefail
build_section=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/bin/datasets/pretrained" "$tmp/bin/experiments"
printf '#!/bin/bash\necho "| table |"\n' >"$tmp/report.sh"
chmod +x "$tmp/report.sh"
echo "BUILD_SCM_REVISION abc" >"$tmp/identity.txt"
printf '# import manifest\nmodel_type: "gpt_neox"\nfile { path: "config.json" sha256: "00" }\n' \
  >"$tmp/bin/datasets/pretrained/model.manifest.textproto"
echo "arm,x" >"$tmp/bin/experiments/result.csv"
line='Base model: the pretrained %s of HF_MODEL, in place of ours'

"$build_section" "$tmp/with" exp cpu "$tmp/identity.txt" "$tmp/report.sh" "$line" 0 \
  "$tmp/bin/experiments/result.csv" "$tmp/bin/datasets/pretrained/model.manifest.textproto"
expected="Base model: the pretrained gpt_neox of HF_MODEL, in place of ours (manifest.textproto: the SHA-256 of each of its files)."
[[ "$(sed -n 1p "$tmp/with/section.md")" == "$expected" ]] || fail "first line: $(sed -n 1p "$tmp/with/section.md")"
[[ -z "$(sed -n 2p "$tmp/with/section.md")" ]] || fail "no blank line after the pretrained line"
[[ "$(sed -n 3p "$tmp/with/section.md")" == "| table |" ]] || fail "the report does not follow the line"
grep -q '^pretrained_model {$' "$tmp/with/manifest.textproto" || fail "manifest lacks pretrained_model"
grep -q '^  model_type: "gpt_neox"$' "$tmp/with/manifest.textproto" || fail "manifest lacks the model's type"

"$build_section" "$tmp/without" exp cpu "$tmp/identity.txt" "$tmp/report.sh" "$line" 0 \
  "$tmp/bin/experiments/result.csv"
[[ "$(cat "$tmp/without/section.md")" == "| table |" ]] || fail "a line without a pretrained model"
! grep -q pretrained_model "$tmp/without/manifest.textproto" || fail "pretrained_model without a model"

if "$build_section" "$tmp/unnamed" exp cpu "$tmp/identity.txt" "$tmp/report.sh" "" 0 \
  "$tmp/bin/datasets/pretrained/model.manifest.textproto" 2>"$tmp/err"; then
  fail "a pretrained model without a pretrained_line was accepted"
fi
grep -q "no pretrained_line" "$tmp/err" || fail "error does not say why: $(cat "$tmp/err")"
echo PASS
