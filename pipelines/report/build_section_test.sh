#!/usr/bin/env bash
# build_section.sh with a stand-in claims engine: the engine gets the claims file, the out dir and the declared
# flags; section.md opens with the experiment's pretrained_line when a pretrained model's import manifest is
# given (and not otherwise), the manifest records that model and every input's digest, a listing concatenates
# its files and shows the first one's head, and a pretrained model without a line is an error rather than an
# unnamed base.
set -euo pipefail
build_section=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/bin/pipelines/pretrained" "$tmp/bin/experiments"
# The stand-in engine prints a table line and its arguments.
printf '#!/bin/bash\necho "| table |"\necho "args: $*"\n' >"$tmp/judge"
chmod +x "$tmp/judge"
echo "experiment: \"exp\"" >"$tmp/claims.textproto"
echo "BUILD_SCM_REVISION abc" >"$tmp/identity.txt"
printf '# import manifest\nmodel_type: "gpt_neox"\nfile { path: "config.json" sha256: "00" }\n' \
  >"$tmp/bin/pipelines/pretrained/model.manifest.textproto"
echo "arm,x" >"$tmp/bin/experiments/result.csv"
printf 'line 1\nline 2\nline 3\n' >"$tmp/bin/experiments/a.txt"
echo "other" >"$tmp/bin/experiments/b.txt"
line='Base model: the pretrained %s of HF_MODEL, in place of ours'
engine=("$tmp/judge" "$tmp/claims.textproto")

"$build_section" "$tmp/with" exp cpu "$tmp/identity.txt" "$line" "${engine[@]}" \
  1 "$tmp/bin/pipelines/pretrained/model.manifest.textproto" \
  1 examples.txt 2 "Examples" "$tmp/bin/experiments/a.txt,$tmp/bin/experiments/b.txt" \
  -- --table=results.csv="$tmp/bin/experiments/result.csv"
section="$tmp/with/section.md"
expected="Base model: the pretrained gpt_neox of HF_MODEL, in place of ours (manifest.textproto: the SHA-256 of each of its files)."
[[ "$(sed -n 1p "$section")" == "$expected" ]] || fail "first line: $(sed -n 1p "$section")"
[[ -z "$(sed -n 2p "$section")" ]] || fail "no blank line after the pretrained line"
[[ "$(sed -n 3p "$section")" == "| table |" ]] || fail "the engine's section does not follow the line"
[[ "$(sed -n 4p "$section")" == "args: --claims=$tmp/claims.textproto --out_dir=exp_report --table=results.csv=$tmp/bin/experiments/result.csv" ]] ||
  fail "engine arguments: $(sed -n 4p "$section")"
grep -q '^## Examples$' "$section" || fail "no listing title"
grep -qx 'line 2' "$section" || fail "the listing's head is not shown"
! grep -qx 'line 3' "$section" || fail "more than the listing's head is shown"
[[ "$(cat "$tmp/with/examples.txt")" == "$(printf '# %s\nline 1\nline 2\nline 3\n# %s\nother' "$tmp/bin/experiments/a.txt" "$tmp/bin/experiments/b.txt")" ]] ||
  fail "examples.txt: $(cat "$tmp/with/examples.txt")"
cmp -s "$tmp/claims.textproto" "$tmp/with/claims.textproto" || fail "claims file not copied"
grep -q '^pretrained_model {$' "$tmp/with/manifest.textproto" || fail "manifest lacks pretrained_model"
grep -q '^  model_type: "gpt_neox"$' "$tmp/with/manifest.textproto" || fail "manifest lacks the model's type"
for input in claims.textproto judge result.csv a.txt b.txt model.manifest.textproto; do
  grep -q "^input { path: \".*$input\" sha256: \"[0-9a-f]\{64\}\" }$" "$tmp/with/manifest.textproto" ||
    fail "manifest lacks the digest of $input"
done

"$build_section" "$tmp/without" exp cpu "$tmp/identity.txt" "$line" "${engine[@]}" 0 0 \
  -- --table=results.csv="$tmp/bin/experiments/result.csv"
[[ "$(sed -n 1p "$tmp/without/section.md")" == "| table |" ]] || fail "a line without a pretrained model"
! grep -q pretrained_model "$tmp/without/manifest.textproto" || fail "pretrained_model without a model"

if "$build_section" "$tmp/unnamed" exp cpu "$tmp/identity.txt" "" "${engine[@]}" \
  1 "$tmp/bin/pipelines/pretrained/model.manifest.textproto" 0 -- 2>"$tmp/err"; then
  fail "a pretrained model without a pretrained_line was accepted"
fi
grep -q "no pretrained_line" "$tmp/err" || fail "error does not say why: $(cat "$tmp/err")"
echo PASS
