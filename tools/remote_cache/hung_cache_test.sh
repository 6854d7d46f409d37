#!/usr/bin/env bash
# A remote cache that hangs (nginx SIGSTOPped: the kernel still accepts connections, nothing answers) must
# cost a bounded time, not one --remote_timeout per lookup and upload of every action. Builds two one-line
# genrules in a scratch workspace with this project's `build:remote_cache_writer` settings from .bazelrc (lookups and
# uploads, the heavier path) against the stopped cache, and checks the build succeeds, locally, within BOUND seconds.
# Usage: hung_cache_test.sh NGINX_CACHE_SH BAZELRC BOUND
set -euo pipefail
nginx_cache=$(readlink -f "$1")
bazelrc=$(readlink -f "$2")
bound=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/scratch_workspace.sh"
scratch_workspace "$bazelrc" 10
echo "settings under test:"; sed 's/^/  /' .bazelrc
cache_dir="$TEST_TMPDIR/cache"
stopped=()
cleanup() {
  ((${#stopped[@]} > 0)) && kill -CONT "${stopped[@]}" 2>/dev/null
  (cd "$work" 2>/dev/null && "${bazel[@]}" shutdown >/dev/null 2>&1) || true
  "$nginx_cache" stop --dir "$cache_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The Bazel server starts before the clock does: only the build's own time is bounded.
"${bazel[@]}" info release >/dev/null 2>&1

url=$("$nginx_cache" start --dir "$cache_dir" --listen 127.0.0.1:free)
master=$(cat "$cache_dir/nginx.pid")
stopped=("$master" $(pgrep -P "$master"))
kill -STOP "${stopped[@]}"
echo "cache $url hung (SIGSTOP to nginx ${stopped[*]})"

start=$SECONDS
if ! "${bazel[@]}" build --noshow_progress --config=remote_cache_writer --remote_cache="$url" //:b >build.log 2>&1; then
  cat build.log >&2
  fail "the build failed with the cache hung"
fi
elapsed=$((SECONDS - start))
grep -q '^b$' bazel-bin/b.txt || fail "b.txt was not built"
grep -qiE 'remote cache|timed out|timeout' build.log || {
  cat build.log >&2; fail "the build never met the hung cache (no warning in its log)"; }
echo "2 actions built with the cache hung in ${elapsed} s (bound ${bound} s)"
((elapsed <= bound)) || { cat build.log >&2; fail "${elapsed} s exceeds the bound of ${bound} s"; }
echo PASS
