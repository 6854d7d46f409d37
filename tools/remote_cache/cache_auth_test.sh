#!/usr/bin/env bash
# The shared cache only trusted writers fill: nginx_cache.sh refuses every PUT without a writer's credential
# (none listed: read-only), serves reads to anyone, and refuses a non-loopback address without TLS. Then
# Bazel, in a scratch workspace of two genrules with this project's .bazelrc cache configs: a reader
# (--config=remote_cache) uploads nothing yet fills its disk cache; the writer (--config=remote_cache_writer,
# credential in the URL) fills the cache; a fresh reader gets both actions as remote hits; a CAS blob altered
# in the cache's storage is detected by Bazel (digest mismatch) and the action reruns, giving the right bytes.
# What Bazel cannot check is an action-cache entry (it names output digests, not its own): only the write
# credential keeps a forged one out. Also over TLS: a self-signed certificate, which Bazel 4's HTTP cache
# client trusts only through the JVM's trust store (it ignores --tls_certificate: "certificate unknown").
# Usage: cache_auth_test.sh NGINX_CACHE_SH BAZELRC
set -euo pipefail
nginx_cache=$(readlink -f "$1")
bazelrc=$(readlink -f "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/scratch_workspace.sh"
scratch_workspace "$bazelrc" 5
cache_dir="$TEST_TMPDIR/cache"
tls_dir="$TEST_TMPDIR/tls_cache"
bases=()
startup=()
cleanup() {
  for base in "${bases[@]}"; do (cd "$work" && "${bazel[@]}" --output_base="$base" shutdown >/dev/null 2>&1) || true; done
  "$nginx_cache" stop --dir "$cache_dir" >/dev/null 2>&1 || true
  "$nginx_cache" stop --dir "$tls_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# status CURL_ARGS...: the HTTP status of one request.
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
echo hello >"$TEST_TMPDIR/blob"
blob_sha=$(sha256sum "$TEST_TMPDIR/blob" | cut -d' ' -f1)

url=$("$nginx_cache" start --dir "$cache_dir" --listen 127.0.0.1:free 2>/dev/null)
host=${url#http://}
host=${host%/cache}
[[ "$(status -T "$TEST_TMPDIR/blob" "$url/cas/$blob_sha")" == 401 ]] || fail "no writers: an anonymous PUT was not refused"
password=$("$nginx_cache" add-writer ci --dir "$cache_dir" 2>/dev/null)
[[ "$(status -T "$TEST_TMPDIR/blob" "$url/cas/$blob_sha")" == 401 ]] || fail "an anonymous PUT was not refused"
[[ "$(status -T "$TEST_TMPDIR/blob" "http://ci:wrong@$host/cache/cas/$blob_sha")" == 401 ]] ||
  fail "a PUT with a wrong password was not refused"
[[ "$(status -X DELETE "$url/cas/$blob_sha")" == 401 ]] || fail "an anonymous DELETE was not refused"
[[ "$(status -T "$TEST_TMPDIR/blob" "http://ci:$password@$host/cache/cas/$blob_sha")" == 201 ]] ||
  fail "the writer's PUT was refused"
[[ "$(curl -s "$url/cas/$blob_sha")" == hello ]] || fail "an anonymous GET did not read the blob"
echo "HTTP: anonymous and wrong-password PUT 401, DELETE 401; writer PUT 201; anonymous GET 200"
rc=0
"$nginx_cache" start --dir "$TEST_TMPDIR/lan" --listen 0.0.0.0:free 2>"$TEST_TMPDIR/lan.err" || rc=$?
((rc == 2)) && grep -q 'beyond loopback' "$TEST_TMPDIR/lan.err" ||
  fail "a non-loopback address without TLS was not refused (exit $rc: $(cat "$TEST_TMPDIR/lan.err"))"

# Every output base a build below uses, listed here so that cleanup shuts each server down (build runs in
# subshells, whose additions to `bases` would be lost).
for name in reader_cold reader_with_credential writer reader_warm reader_tampered tls_writer tls_reader; do
  bases+=("$TEST_TMPDIR/$name")
done
# build NAME ARGS...: a build of //:b in a fresh output base; prints its process line.
build() {
  local base="$TEST_TMPDIR/$1"
  shift
  "${bazel[@]}" "${startup[@]}" --output_base="$base" build --noshow_progress "$@" //:b >"$base.log" 2>&1 ||
    { cat "$base.log" >&2; fail "build $(basename "$base") failed"; }
  grep -q '^a$' "$base/execroot/__main__/bazel-out/k8-fastbuild/bin/b.txt" &&
    grep -q '^b$' "$base/execroot/__main__/bazel-out/k8-fastbuild/bin/b.txt" ||
    fail "build $(basename "$base") made a wrong b.txt"
  grep -E '^INFO: [0-9]+ processes' "$base.log"
}
action_results() { find "$cache_dir/data" -path '*/ac/*' -type f | wc -l; }

build reader_cold --config=remote_cache --remote_cache="$url" --disk_cache="$TEST_TMPDIR/disk"
(($(action_results) == 0)) || fail "a reader's build uploaded action results"
(($(find "$TEST_TMPDIR/disk" -type f | wc -l) > 0)) || fail "a reader's build left its disk cache empty"
echo "reader, cold: nothing uploaded, disk cache filled"
# The reader config itself uploads nothing, even holding a writer's credential (the server would accept it).
build reader_with_credential --config=remote_cache --remote_cache="http://ci:$password@$host/cache" >/dev/null
(($(action_results) == 0)) || fail "--config=remote_cache uploaded with a credential in its URL"
echo "reader config with a writer's credential: nothing uploaded"

build writer --config=remote_cache_writer --remote_cache="http://ci:$password@$host/cache"
(($(action_results) == 2)) || fail "the writer uploaded $(action_results) action results, expected 2"
build reader_warm --config=remote_cache --remote_cache="$url" | grep -q '2 remote cache hit' ||
  fail "a fresh reader did not get both actions from the cache"
echo "writer: 2 action results uploaded; fresh reader: 2 remote cache hits"

# Alter b.txt's blob in the cache's storage: Bazel must notice and rebuild b, not use it.
b_sha=$(printf 'a\nb\n' | sha256sum | cut -d' ' -f1)
[[ -f "$cache_dir/data/cache/cas/$b_sha" ]] || fail "no CAS blob of b.txt"
printf 'a\nX\n' >"$cache_dir/data/cache/cas/$b_sha"
line=$(build reader_tampered --config=remote_cache --remote_cache="$url")
grep -q 'does not match received digest' "$TEST_TMPDIR/reader_tampered.log" ||
  { cat "$TEST_TMPDIR/reader_tampered.log" >&2; fail "an altered CAS blob went unnoticed"; }
[[ "$line" == *"1 remote cache hit"* ]] || fail "expected a to hit and b to rerun: $line"
echo "altered CAS blob: digest mismatch reported, b rebuilt locally ($line)"

# TLS: a self-signed certificate for 127.0.0.1, in a JVM trust store the Bazel server starts with.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$TEST_TMPDIR/key.pem" -out "$TEST_TMPDIR/cert.pem" >/dev/null 2>&1
tls_url=$("$nginx_cache" start --dir "$tls_dir" --listen 127.0.0.1:free \
  --tls_cert "$TEST_TMPDIR/cert.pem" --tls_key "$TEST_TMPDIR/key.pem" 2>/dev/null)
[[ "$tls_url" == https://* ]] || fail "TLS start printed $tls_url"
tls_password=$("$nginx_cache" add-writer ci --dir "$tls_dir" 2>/dev/null)
keytool -importcert -noprompt -alias cache -file "$TEST_TMPDIR/cert.pem" -keystore "$TEST_TMPDIR/trust.jks" \
  -storepass changeit >/dev/null 2>&1 || fail "keytool could not make a trust store"
startup=(--host_jvm_args=-Djavax.net.ssl.trustStore="$TEST_TMPDIR/trust.jks"
  --host_jvm_args=-Djavax.net.ssl.trustStorePassword=changeit)
tls_host=${tls_url#https://}
tls_host=${tls_host%/cache}
[[ "$(status --cacert "$TEST_TMPDIR/cert.pem" -T "$TEST_TMPDIR/blob" "$tls_url/cas/$blob_sha")" == 401 ]] ||
  fail "TLS: an anonymous PUT was not refused"
build tls_writer --config=remote_cache_writer --remote_cache="https://ci:$tls_password@$tls_host/cache" >/dev/null
(($(find "$tls_dir/data" -path '*/ac/*' -type f | wc -l) == 2)) || fail "TLS: the writer did not upload 2 action results"
build tls_reader --config=remote_cache --remote_cache="$tls_url" |
  grep -q '2 remote cache hit' || fail "TLS: a fresh reader did not get both actions from the cache"
echo "TLS: anonymous PUT 401; writer fills, fresh reader 2 remote cache hits"
echo PASS
