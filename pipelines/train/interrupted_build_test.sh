#!/usr/bin/env bash
# An interrupted build resumes its training (issue: a killed action restarts from scratch). A scratch workspace
# runs the real trainer as a sandboxed build action with lm_checkpoint.bzl's resume flags (a store of the
# test's own, made writable as tools/bazel makes the user's); the test interrupts the build (Ctrl-C) at step 300 of 400,
# rebuilds, and checks that the rebuild resumed mid-run (past a snapshot taken at step 200; the trainer's own
# "resuming ... at step N" line, not a clock: a timed bound failed under CI's parallel load, 29 s for a 17 s
# bound), left the store empty, and produced the bytes of an uninterrupted run. The rebuild's time is printed.
# Usage: interrupted_build_test.sh TRAIN CONFIG SHARDS_DIR
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
train=$(readlink -f "$1")
config=$(readlink -f "$2")
shards=$(readlink -f "$TEST_SRCDIR/sparse_layers/$3")
steps=400

export HOME="$TEST_TMPDIR/home"
mkdir -p "$HOME"
work="$TEST_TMPDIR/ws"
store="$TEST_TMPDIR/resume_store"
mkdir -p "$work" "$store"
printf 'budget { max_steps: %d }\nruntime { checkpoint_every_steps: 0 }\neval { every_steps: 100 }\n' \
  "$steps" >"$TEST_TMPDIR/longer.textproto"
inputs=(--config="$config,$TEST_TMPDIR/longer.textproto"
  --train_data="$shards/train/train.tokens.textproto"
  --validation_data="$shards/validation/validation.tokens.textproto" --threads=2)

# The reference: the same training, uninterrupted and outside Bazel.
start=$SECONDS
"$train" "${inputs[@]}" --out="$TEST_TMPDIR/straight.pt" --snapshots="0.5:$TEST_TMPDIR/straight.half.pt" \
  2>"$TEST_TMPDIR/straight.log" ||
  { cat "$TEST_TMPDIR/straight.log" >&2; fail "the uninterrupted run failed"; }
full=$((SECONDS - start))
echo "uninterrupted: $steps steps in ${full} s"

cd "$work"
touch WORKSPACE
printf 'build --nosandbox_debug\nbuild --sandbox_writable_path=%s\n' "$store" >.bazelrc
# The training action runs the OpenBLAS kernels of the uninterrupted run (tools/bazel's OPENBLAS_CORETYPE, which
# the project's actions get through @build_identity//:settings.bzl): the checkpoints are compared byte for byte.
[[ -n "${OPENBLAS_CORETYPE:-}" ]] && echo "build --action_env=OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE" >>.bazelrc
# Resume checkpoints every 0.1 s: a fast idle machine trains steps 200-300 in about a second, so at 1 s the last
# checkpoint before the interrupt could fall before the step-200 snapshot (resumed at 197, 146 passed, 1 failed).
cat >BUILD <<EOF
genrule(
    name = "lm",
    outs = ["lm.pt", "lm.csv", "lm.summary.textproto", "lm.half.pt"],
    cmd = " ".join([
        "$train",
        "${inputs[*]}",
        "--out=\$(location lm.pt)",
        "--log_csv=\$(location lm.csv)",
        "--summary=\$(location lm.summary.textproto)",
        "--snapshots=0.5:\$(location lm.half.pt)",
        "--resume_dir=$store",
        "--checkpoint_every_seconds=0.1",
    ]),
)
EOF
bazel=(/usr/bin/bazel-4 --nohome_rc --output_user_root="$TEST_TMPDIR/root" --max_idle_secs=20)
trap '(cd "$work" && "${bazel[@]}" shutdown >/dev/null 2>&1) || true' EXIT
"${bazel[@]}" info release >/dev/null 2>&1  # The server starts before any clock.

"${bazel[@]}" build --noshow_progress //:lm >interrupted.log 2>&1 &
client=$!
# Interrupt three quarters in: the action's stderr (Bazel keeps it under bazel-out/_tmp/actions while it runs)
# shows the validation line of step 300.
interrupt_at=$((steps * 3 / 4))
for _ in $(seq 1 3000); do
  grep -qs "step $interrupt_at/$steps" "$TEST_TMPDIR"/root/*/execroot/__main__/bazel-out/_tmp/actions/stderr-* &&
    break
  kill -0 "$client" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$(ls "$store"/*.pt 2>/dev/null)" ]] ||
  { cat interrupted.log >&2; fail "no checkpoint in the resume store (sandbox not writable?)"; }
kill -INT "$client"  # Ctrl-C: Bazel cancels the build and kills the training.
wait "$client" && fail "the interrupted build succeeded; it finished before the interrupt"
[[ ! -e bazel-bin/lm.pt ]] || fail "the interrupted build left an output"

start=$(date +%s%N)
"${bazel[@]}" build --noshow_progress //:lm >rebuild.log 2>&1 || { cat rebuild.log >&2; fail "the rebuild failed"; }
rebuild_ms=$((($(date +%s%N) - start) / 1000000))
grep '^train:' rebuild.log  # The resumed training's own lines: its step rate and where it began.
resumed_at=$(sed -n 's/.*resuming .* at step \([0-9]*\).*/\1/p' rebuild.log)
[[ -n "$resumed_at" && "$resumed_at" -gt $((steps / 2)) && "$resumed_at" -lt "$steps" ]] ||
  { cat rebuild.log >&2; fail "the rebuild did not resume mid-run"; }
# Information only (the same 400 steps took 21 s and 54 s on one loaded 2-core machine): the time is no test.
echo "the rebuild resumed at step $resumed_at of $steps and took ${rebuild_ms} ms (from scratch: ${full} s)"

cmp "$TEST_TMPDIR/straight.pt" bazel-bin/lm.pt || fail "checkpoints differ"
cmp "$TEST_TMPDIR/straight.pt.csv" bazel-bin/lm.csv || fail "CSV logs differ"
# The snapshot at step 200 was taken before the interrupt and kept in the store.
cmp "$TEST_TMPDIR/straight.half.pt" bazel-bin/lm.half.pt || fail "the step-200 snapshots differ"
timing='^(wall_seconds|tokens_per_second):'
diff <(grep -Ev "$timing" "$TEST_TMPDIR/straight.pt.summary.textproto") \
  <(grep -Ev "$timing" bazel-bin/lm.summary.textproto) || fail "summaries differ beyond timing"
[[ -z "$(ls -A "$store")" ]] || { ls -la "$store" >&2; fail "the finished action left its resume entry"; }
echo "PASS: checkpoint ($(stat -c %s bazel-bin/lm.pt) bytes), its step-200 snapshot and log byte-identical to" \
  "the uninterrupted run"
