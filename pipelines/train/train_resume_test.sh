#!/bin/bash
# Kills a real training run after its first checkpoints, resumes it, and checks that the final
# checkpoint and CSV log are byte-identical to those of an uninterrupted run.
set -euo pipefail
train="$1"; config="$2"; shards="$TEST_SRCDIR/sparse_layers/$3"
train_data="$shards/train/train.tokens.textproto"
validation_data="$shards/validation/validation.tokens.textproto"
work="$TEST_TMPDIR/resume"
mkdir -p "$work"
# A longer run than the fixture's, so that the kill lands in the middle.
printf 'budget { max_steps: 400 }\nruntime { checkpoint_every_steps: 20 }\neval { every_steps: 100 }\n' >"$work/longer.textproto"
common=(--config="$config,$work/longer.textproto" --train_data="$train_data" --validation_data="$validation_data" --threads=2)

"$train" "${common[@]}" --out="$work/straight.pt" 2>"$work/straight.log"

"$train" "${common[@]}" --out="$work/killed.pt" 2>"$work/killed.log" &
pid=$!
# Wait for a checkpoint written after a few steps, then kill -9 mid-run.
for _ in $(seq 1 600); do
  [[ -f "$work/killed.pt" ]] && break
  sleep 0.05
done
sleep 0.2
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if [[ -f "$work/killed.pt.summary.textproto" ]]; then
  echo "FAIL: the run finished before it could be killed; lengthen it" >&2
  exit 1
fi
[[ -f "$work/killed.pt" ]] || { echo "FAIL: no checkpoint before the kill" >&2; exit 1; }

"$train" "${common[@]}" --out="$work/killed.pt" --resume 2>"$work/resumed.log"
resumed_at="$(sed -n 's/.*resuming .* at step \([0-9]*\).*/\1/p' "$work/resumed.log")"
echo "killed run resumed at step ${resumed_at:-?} of 400"
[[ -n "$resumed_at" && "$resumed_at" -gt 0 && "$resumed_at" -lt 400 ]] || {
  echo "FAIL: expected to resume mid-run" >&2; cat "$work/resumed.log" >&2; exit 1; }

cmp "$work/straight.pt" "$work/killed.pt" || { echo "FAIL: checkpoints differ" >&2; exit 1; }
cmp "$work/straight.pt.csv" "$work/killed.pt.csv" || { echo "FAIL: CSV logs differ" >&2; exit 1; }
# The summary of the resumed run reports what the uninterrupted one does; only this process's timing differs.
timing='^(wall_seconds|tokens_per_second):'
diff <(grep -Ev "$timing" "$work/straight.pt.summary.textproto") \
     <(grep -Ev "$timing" "$work/killed.pt.summary.textproto") ||
  { echo "FAIL: the resumed run's summary differs (final_train_loss must average the same steps)" >&2; exit 1; }

# --resume of a finished run keeps its summary (and outputs) instead of rewriting them with ~0 s of wall time.
cp "$work/straight.pt.summary.textproto" "$work/finished.summary"
"$train" "${common[@]}" --out="$work/straight.pt" --resume 2>"$work/again.log"
cmp "$work/finished.summary" "$work/straight.pt.summary.textproto" ||
  { echo "FAIL: resuming a finished run rewrote its summary" >&2; exit 1; }
echo "PASS: resumed checkpoint and log are byte-identical to the uninterrupted run, summaries agree"
