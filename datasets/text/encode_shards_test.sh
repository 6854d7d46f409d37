#!/bin/bash
# encode_shards writes its shard directory all-or-nothing: a malformed document after several shards were
# flushed leaves no shard and no manifest (an empty new directory, or the previous complete set untouched).
set -euo pipefail
# Usage: encode_shards_test.sh ENCODE_SHARDS FILES... (the tokenizer's and the corpus's).
encode="$1"; shift
for f in "$@"; do
  case "$f" in
    *.model) tokenizer="$PWD/$f" ;;
    */train.jsonl) corpus="$f" ;;
    */encoder.json) gpt2_dir="$PWD/$(dirname "$f")" ;;
  esac
done
work="$TEST_TMPDIR/encode"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
listing() { (cd "$1" && ls -A | tr '\n' ' '); }
head -n 40 "$corpus" >"$work/good.jsonl"
sed '31s/.*/{"text": 31}/' "$work/good.jsonl" >"$work/bad.jsonl"  # document 31 is not text
flags=(--split=train --tokenizer="$tokenizer" --shard_tokens=2000)

# expect_failure OUT_DIR: encoding bad.jsonl fails with one error line.
expect_failure() {
  if "$encode" "${flags[@]}" --input="$work/bad.jsonl" --out_dir="$1" 2>"$work/err.log"; then
    fail "a malformed document exited 0"
  fi
  [[ "$(wc -l <"$work/err.log")" == 1 ]] && grep -q '^encode_shards: error: ' "$work/err.log" ||
    { cat "$work/err.log" >&2; fail "expected one error line"; }
}

mkdir "$work/fresh"  # As Bazel creates a declared output directory.
expect_failure "$work/fresh"
[[ -z "$(listing "$work/fresh")" ]] || fail "left behind: $(listing "$work/fresh")"
[[ "$(listing "$work")" == "bad.jsonl err.log fresh good.jsonl " ]] || fail "litter: $(listing "$work")"
echo "malformed document 31: exit 1, one line, nothing left"

"$encode" "${flags[@]}" --input="$work/good.jsonl" --out_dir="$work/previous" 2>/dev/null
before="$(cd "$work/previous" && sha256sum *)"
(($(ls "$work/previous" | wc -l) > 3)) || fail "expected several shards: $(listing "$work/previous")"
expect_failure "$work/previous"
[[ "$(cd "$work/previous" && sha256sum *)" == "$before" ]] || fail "the previous shard set changed"
echo "the previous complete set ($(ls "$work/previous" | wc -l) files) is untouched"

# A byte-level BPE tokenizer may be a directory (GPT-2's encoder.json + vocab.bpe here, or tokenizer.json); the
# manifest's digest is then its vocabulary file's.
"$encode" --split=train --tokenizer="$gpt2_dir" --input="$work/good.jsonl" --out_dir="$work/gpt2" 2>/dev/null ||
  fail "a tokenizer directory was refused"
grep -q "tokenizer_sha256: \"$(sha256sum <"$gpt2_dir/encoder.json" | cut -d' ' -f1)\"" \
  "$work/gpt2/train.tokens.textproto" || fail "the digest is not encoder.json's"
echo "a tokenizer directory encodes, with encoder.json's digest"
echo PASS
