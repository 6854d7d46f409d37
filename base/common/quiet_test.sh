#!/usr/bin/env bash
# quiet.sh: a tool that succeeds leaves nothing on stderr (its progress goes to the log, or nowhere); one that
# fails makes the action fail and shows the last 5 lines of its stderr, its error line last.
set -euo pipefail
quiet="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

tool="$scratch/tool.sh"
cat > "$tool" <<'TOOL'
#!/usr/bin/env bash
for i in 1 2 3 4 5 6 7; do echo "progress $i" >&2; done
echo "report"
[[ "$1" == ok ]] || { echo "tool: error: bad input" >&2; exit 3; }
TOOL
chmod +x "$tool"

out="$("$quiet" - "$tool" ok 2> "$scratch/err")" || fail "a succeeding tool failed"
[[ "$out" == report ]] || fail "stdout not passed through: '$out'"
[[ ! -s "$scratch/err" ]] || fail "progress leaked to stderr: $(cat "$scratch/err")"

"$quiet" "$scratch/log" "$tool" ok > /dev/null 2> "$scratch/err" || fail "a succeeding tool failed (log)"
[[ "$(wc -l < "$scratch/log")" == 7 ]] || fail "the log does not hold the 7 progress lines"

out="$("$quiet" --discard_stdout - "$tool" ok)" || fail "a succeeding tool failed (--discard_stdout)"
[[ -z "$out" ]] || fail "--discard_stdout kept '$out'"

if "$quiet" - "$tool" bad > /dev/null 2> "$scratch/err"; then fail "a failing tool succeeded"; fi
[[ "$(wc -l < "$scratch/err")" == 5 ]] || fail "expected the last 5 lines, got: $(cat "$scratch/err")"
[[ "$(tail -n 1 "$scratch/err")" == "tool: error: bad input" ]] || fail "the error line is not last"
echo PASS
