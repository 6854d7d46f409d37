#!/usr/bin/env bash
# The remote cache end to end, with nested Bazel builds of a copy of this tree (the MoHD experiment's smoke
# results: 10 variants x 2 smoke seeds = 20 trainings, configs, data, the activation-flow study per seed):
#   1. nginx cache up, fresh output base A: everything runs locally and is uploaded by a writer (credential). These outputs come from
#      a clean build, so they must equal the outer build's byte for byte (checkpoints, CSVs, configs).
#   2. fresh output base B, same cache, read-only: no training action runs; every one is a remote cache hit.
#   3. cache server stopped, output base B, actions changed (--action_env): the build succeeds, running
#      them locally; a cache that is down costs time, never the build.
# Usage: remote_cache_integration_test.sh NGINX_CACHE_SH WORKSPACE_FILE OUTER_RESULTS...
set -euo pipefail
nginx_cache=$(readlink -f "$1")
workspace="$(dirname "$(readlink -f "$2")")"
shift 2
outer_results=()
for f in "$@"; do outer_results+=("$(readlink -f "$f")"); done  # absolute: the test changes directory
target=//experiments/mohd_hidden_dims:results
fail() { echo "FAIL: $*" >&2; exit 1; }

export HOME="$(mktemp -d /tmp/remote_cache_test.XXXXXX)"
cache_dir="$HOME/cache"
bases=()
cleanup() {
  cd /
  for base in "${bases[@]}"; do /usr/bin/bazel-4 --nohome_rc --output_base="$base" shutdown 2>/dev/null || true; done
  "$nginx_cache" stop --dir "$cache_dir" >/dev/null 2>&1 || true
  chmod -R u+w "$HOME" 2>/dev/null; rm -rf "$HOME"
}
trap cleanup EXIT
mkdir "$HOME/src"
tar -C "$workspace" --exclude='./bazel-*' --exclude=./.git -cf - . | tar -C "$HOME/src" -xf -
cd "$HOME/src"

url=$("$nginx_cache" start --dir "$cache_dir" --listen 127.0.0.1:free 2>/dev/null)
password=$("$nginx_cache" add-writer ci --dir "$cache_dir" 2>/dev/null)
writer_url="http://ci:$password@${url#http://}"
echo "cache: $url (writer ci)"
# The cold build writes as the trusted writer; every later build reads only.
cache_flags=(--config=remote_cache_writer --remote_cache="$writer_url")

# nested BASE LOG ARGS...: a build of the target at smoke scale with the remote cache and no disk cache.
nested() {
  local name=$1 base="$HOME/$1" log="$HOME/$2"
  shift 2
  bases+=("$base")
  local start=$SECONDS
  if ! /usr/bin/bazel-4 --nohome_rc --output_base="$base" --max_idle_secs=60 build --noshow_progress \
    --//base/scale=smoke --disk_cache= --symlink_prefix=/ "${cache_flags[@]}" \
    --execution_log_json_file="$log.json" "$@" "$target" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "nested build ($name) failed"
  fi
  echo "$(grep -E '^INFO: [0-9]+ processes' "$log" || echo 'INFO: no process line') ($((SECONDS - start)) s)"
}

# spawns LOG: one line per executed spawn, "<mnemonic> <remote-hit|local>", from Bazel's JSON execution log.
spawns() {
  awk '/^{/ { m = ""; hit = 0 }
       /^  "mnemonic": / { m = $2; gsub(/[",]/, "", m) }
       /^  "remoteCacheHit": true/ { hit = 1 }
       /^}/ { print m, (hit ? "remote-hit" : "local") }' "$HOME/$1.json"
}

echo "build 1: cold, cache empty"
nested base_a build1.log
trained=$(spawns build1.log | grep -c '^TrainLM local' || true)
((trained == 20)) || fail "build 1 trained $trained models locally, expected 20"

# Two clean builds (the outer one and build 1) give the same bytes; summaries carry wall time and differ.
compared=0
for outer in "${outer_results[@]}"; do
  [[ -f "$outer" && "$outer" != *.summary.textproto ]] || continue
  relative=${outer#*experiments/mohd_hidden_dims/}
  mine=$(find "$HOME/base_a/execroot" -path "*/bin/experiments/mohd_hidden_dims/$relative" -type f | head -1)
  [[ -n "$mine" ]] || fail "build 1 has no $relative"
  cmp -s "$outer" "$mine" || fail "$relative differs between two clean builds"
  compared=$((compared + 1))
done
((compared >= 19)) || fail "compared only $compared files"
echo "two clean builds: $compared checkpoints, CSVs and configs bit-identical"

echo "build 2: fresh output base, cache warm, read-only"
cache_flags=(--config=remote_cache --remote_cache="$url")
nested base_b build2.log
spawns build2.log >"$HOME/build2.spawns"
hits=$(grep -c '^TrainLM remote-hit' "$HOME/build2.spawns" || true)
local_runs=$(grep -c ' local$' "$HOME/build2.spawns" || true)
((hits == 20)) || fail "build 2: $hits of 20 trainings were remote cache hits"
if ((local_runs > 0)); then
  grep ' local$' "$HOME/build2.spawns" | sort | uniq -c >&2
  fail "build 2 ran $local_runs actions locally"
fi
echo "build 2: all $(wc -l <"$HOME/build2.spawns") actions (20 trainings) were remote cache hits, none ran"

"$nginx_cache" stop --dir "$cache_dir"
echo "build 3: cache server down"
nested base_b build3.log --action_env=REMOTE_CACHE_PROBE=$RANDOM
reran=$(spawns build3.log | grep -c ' local$' || true)
((reran > 0)) || fail "build 3 ran nothing, so it never met the down cache"
grep -qiE 'remote cache|connection refused|failed' "$HOME/build3.log" || echo "(no warning about the cache in build 3's log)"
echo "build 3: succeeded with the cache down, $reran actions run locally"
echo PASS
