#!/bin/bash
# train's outputs are all-or-nothing and owned by one run: an unwritable --summary fails before training and
# leaves nothing; a second training on a busy --out fails at once with one line; temporaries of killed runs
# are removed; a finished run leaves exactly its checkpoint, CSV log and summary.
set -euo pipefail
train="$1"; config="$2"; shards="$TEST_SRCDIR/sparse_layers/$3"
work="$TEST_TMPDIR/outputs"
mkdir -p "$work"
data=(--train_data="$shards/train/train.tokens.textproto"
      --validation_data="$shards/validation/validation.tokens.textproto" --threads=1)
common=(--config="$config" "${data[@]}")
fail() { echo "FAIL: $*" >&2; exit 1; }
listing() { (cd "$1" && ls -A | tr '\n' ' '); }
# expect_one_error LOG PATTERN: the run printed exactly one line, "train: error: ..." matching PATTERN.
expect_one_error() {
  [[ "$(wc -l <"$1")" == 1 ]] || { cat "$1" >&2; fail "expected one stderr line"; }
  grep -qE "^train: error: .*$2" "$1" || { cat "$1" >&2; fail "expected an error matching '$2'"; }
}

# 1. The summary's directory does not exist: refused before training, nothing written.
mkdir "$work/bad"
if "$train" "${common[@]}" --out="$work/bad/m.pt" --summary="$work/bad/missing/s.textproto" 2>"$work/bad.log"; then
  fail "an unwritable --summary exited 0"
fi
expect_one_error "$work/bad.log" "missing/s.textproto"
[[ -z "$(listing "$work/bad")" ]] || fail "left behind: $(listing "$work/bad")"
echo "unwritable --summary: exit 1, one line, nothing left"

# 2. A second training on a busy --out fails at once; the first is not disturbed.
mkdir "$work/busy"
printf 'budget { max_steps: 1000000 }\n' >"$work/long.textproto"
"$train" --config="$config,$work/long.textproto" "${data[@]}" --out="$work/busy/m.pt" 2>"$work/first.log" &
first=$!
for _ in $(seq 1 600); do [[ -f "$work/busy/m.pt.lock" ]] && break; sleep 0.05; done
start=$SECONDS
if "$train" "${common[@]}" --out="$work/busy/m.pt" 2>"$work/second.log"; then
  kill -9 "$first"; fail "a second training on a busy --out exited 0"
fi
expect_one_error "$work/second.log" "m.pt is being written by another run \(pid $first holds .*m.pt.lock\)"
kill -0 "$first" 2>/dev/null || { cat "$work/first.log" >&2; fail "the first training did not survive"; }
kill -9 "$first"; wait "$first" 2>/dev/null || true
echo "busy --out: the second run failed in $((SECONDS - start)) s with one line"

# 3. A run killed mid-write left <out>.tmp.<pid> temporaries (the one above just died, and a dead pid's);
#    the next run on the same --out removes them and leaves exactly its three outputs.
sh -c 'exit 0' & dead=$!; wait "$dead"
touch "$work/busy/m.pt.tmp.$dead" "$work/busy/m.pt.csv.tmp.$dead.staged"
"$train" "${common[@]}" --out="$work/busy/m.pt" 2>"$work/third.log" || { cat "$work/third.log" >&2; fail "third run"; }
[[ "$(listing "$work/busy")" == "m.pt m.pt.csv m.pt.summary.textproto " ]] ||
  fail "after a clean run: $(listing "$work/busy")"
echo "stale temporaries removed; a finished run leaves exactly: $(listing "$work/busy")"
echo PASS
