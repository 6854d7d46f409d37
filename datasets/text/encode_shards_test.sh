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

# A tokenizer.json whose post-processor puts a begin-of-text piece before each text (Llama 3's TemplateProcessing):
# GPT-2's vocabulary plus <|begin_of_text|> 50257; every document gains exactly that one piece.
mkdir -p "$work/llama"
/usr/bin/python3 - "$gpt2_dir" "$work/llama/tokenizer.json" <<'PY'
import json, sys
vocab = json.load(open(sys.argv[1] + "/encoder.json", encoding="utf-8"))
merges = [line for line in open(sys.argv[1] + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:] if line]
bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
json.dump({"version": "1.0",
           "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "special": True},
                            {"id": 50257, "content": "<|begin_of_text|>", "special": True}],
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "post_processor": {"type": "Sequence", "processors": [
               {"type": "ByteLevel", "trim_offsets": False},
               {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [], "special_tokens": {}}]},
           "model": {"type": "BPE", "vocab": vocab, "merges": merges}},
          open(sys.argv[2], "w", encoding="utf-8"))
PY
"$encode" --split=train --tokenizer="$work/llama" --input="$work/good.jsonl" --out_dir="$work/llama_shards" \
  2>/dev/null || fail "the tokenizer.json with a begin-of-text piece was refused"
field() { sed -n "s/^$1: //p" "$2"; }
gpt2_tokens=$(field tokens "$work/gpt2/train.tokens.textproto")
llama_tokens=$(field tokens "$work/llama_shards/train.tokens.textproto")
documents=$(field documents "$work/llama_shards/train.tokens.textproto")
[[ "$llama_tokens" -eq $((gpt2_tokens + documents)) && "$documents" -eq 40 ]] ||
  fail "expected $gpt2_tokens + $documents tokens with a begin-of-text piece per document, got $llama_tokens"
echo "a begin-of-text piece before each of $documents documents ($gpt2_tokens -> $llama_tokens tokens)"
echo PASS
