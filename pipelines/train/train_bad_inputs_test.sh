#!/bin/bash
# Bad and mismatched inputs, generated here: each run must exit 1 with exactly one stderr line
# "train: error: ..." naming the problem, and leave nothing at --out.
set -uo pipefail
train="$1"; config="$2"; shards="$TEST_SRCDIR/sparse_layers/$3"
work="$TEST_TMPDIR/bad"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
data=(--train_data="$shards/train/train.tokens.textproto"
      --validation_data="$shards/validation/validation.tokens.textproto" --threads=2)

expect_error() {  # name expected-substring train-args...
  local name="$1" want="$2"; shift 2
  local out="$work/$name.pt"
  "$train" "$@" --out="$out" 2>"$work/$name.err" >/dev/null
  local status=$?
  [[ $status -eq 1 ]] || fail "$name: exit status $status, expected 1: $(cat "$work/$name.err")"
  [[ "$(wc -l <"$work/$name.err")" -eq 1 ]] || fail "$name: expected one stderr line, got: $(cat "$work/$name.err")"
  grep -q "^train: error: .*$want" "$work/$name.err" || fail "$name: '$(cat "$work/$name.err")' lacks '$want'"
  compgen -G "$out*" >/dev/null && fail "$name: left $(ls "$out"*)"
  echo "ok: $name: $(cat "$work/$name.err")"
}

# Configs that used to pass check_config and then abort inside train.
printf 'model { ffn: "switch" n_experts: 4 top_k: 0 }\n' >"$work/switch_k0.textproto"
expect_error switch_k0 "field 'model.top_k': switch needs top_k in \[1, n_experts 4\], got 0" \
  --config="$config,$work/switch_k0.textproto" "${data[@]}"
printf 'optimizer { learning_rate: nan }\n' >"$work/lr_nan.textproto"
expect_error lr_nan "field 'optimizer.learning_rate'" --config="$config,$work/lr_nan.textproto" "${data[@]}"
: >"$work/empty.textproto"
expect_error empty_config "empty config" --config="$work/empty.textproto" "${data[@]}"

# A token shard whose payload changed after its manifest recorded the digest.
cp -rL "$shards/train" "$work/train"
chmod -R u+w "$work/train"
shard="$(ls "$work/train"/*.bin | head -1)"
printf '\x01' | dd of="$shard" bs=1 seek=100 conv=notrunc status=none
expect_error edited_shard "token shard .*: SHA-256 .* differs from .* recorded in" --config="$config" \
  --train_data="$work/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --threads=2

# A parent of another width: no tensor would be copied.
printf 'budget { max_steps: 2 }\n' >"$work/short.textproto"
"$train" --config="$config,$work/short.textproto" "${data[@]}" --out="$work/parent.pt" 2>"$work/parent.log" ||
  fail "parent training failed: $(cat "$work/parent.log")"
printf 'model { d_model: 48 }\n' >"$work/wider.textproto"
expect_error init_from_width "--init_from $work/parent.pt: token_embedding.weight has shape \[8192, 32\] there and \[8192, 48\] in this model" \
  --config="$config,$work/wider.textproto" "${data[@]}" --init_from="$work/parent.pt"

# Checkpoints changed after they were written: a weight byte, and a truncation.
python3 - "$work/parent.pt" "$work/edited.pt" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x01  # Inside the tensor data, which is most of the file.
open(sys.argv[2], "wb").write(bytes(data))
PY
expect_error init_from_edited "checkpoint $work/edited.pt: " \
  --config="$config" "${data[@]}" --init_from="$work/edited.pt"
head -c 5000 "$work/parent.pt" >"$work/truncated.pt"
expect_error init_from_truncated "cannot read checkpoint $work/truncated.pt: " \
  --config="$config" "${data[@]}" --init_from="$work/truncated.pt"
echo "PASS"
