#!/usr/bin/env bash
# A Bazel HTTP remote cache served by Debian's nginx (plain GET, WebDAV PUT) for one user or a small team:
# anyone who can reach it reads, and only a writer with a credential (HTTP basic auth) fills it, so that no
# one can plant an action result that every colleague's build would take as its own.
#
#   tools/remote_cache/nginx_cache.sh add-writer NAME [--dir DIR]   # prints NAME's password, once
#   tools/remote_cache/nginx_cache.sh start [--dir DIR] [--listen ADDR:PORT] [--tls_cert PEM --tls_key PEM]
#                                                 # prints the read URL (PORT "free": a free port, for tests)
#   tools/remote_cache/nginx_cache.sh stop|status [--dir DIR]
#
# Bazel stores /cache/ac/<sha256> (action results) and /cache/cas/<sha256> (file contents) under DIR/data.
# Defaults: DIR ~/.cache/sparse_layers/nginx-cache, ADDR:PORT 127.0.0.1:9092 (loopback: this machine only).
# Any other address must use TLS (--tls_cert, --tls_key), or passwords would cross the network in clear.
# Writers: DIR/writers.htpasswd (apr1 hashes, mode 600); with none, the cache is read-only for everyone.
# nginx never prunes it; delete DIR/data to reclaim space.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|status [--dir DIR] [--listen ADDR:PORT] [--tls_cert PEM --tls_key PEM]" >&2
  echo "       $0 add-writer NAME [--dir DIR]" >&2
  exit 2
}
(($# >= 1)) || usage
command=$1
shift
writer=""
if [[ "$command" == add-writer ]]; then
  (($# >= 1)) || usage
  writer=$1
  shift
  [[ "$writer" =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "$0: writer name '$writer': use letters, digits, _ . -" >&2; exit 2; }
fi
dir="${HOME:-/tmp}/.cache/sparse_layers/nginx-cache"
listen="127.0.0.1:9092"
tls_cert="" tls_key=""
while (($# > 0)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --listen) listen=$2; shift 2 ;;
    --listen=*) listen=${1#*=}; shift ;;
    --tls_cert) tls_cert=$2; shift 2 ;;
    --tls_cert=*) tls_cert=${1#*=}; shift ;;
    --tls_key) tls_key=$2; shift 2 ;;
    --tls_key=*) tls_key=${1#*=}; shift ;;
    *) usage ;;
  esac
done
writers="$dir/writers.htpasswd"
nginx=/usr/sbin/nginx
pid_file="$dir/nginx.pid"

running_pid() {
  [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null && cat "$pid_file"
}

case "$command" in
  start)
    [[ -x "$nginx" ]] || { echo "$0: $nginx is missing; ./tools/bazel installs nginx (tools/deps.txt)" >&2; exit 1; }
    if pid=$(running_pid); then
      echo "$0: already running (pid $pid); url: $(cat "$dir/url")" >&2
      cat "$dir/url"
      exit 0
    fi
    if [[ "$listen" == *:free ]]; then
      host=${listen%:free}
      for candidate in $(shuf -i 20000-60000 -n 50); do
        if ! (exec 3<>"/dev/tcp/$host/$candidate") 2>/dev/null; then listen="$host:$candidate"; break; fi
      done
      [[ "$listen" != *:free ]] || { echo "$0: no free port on $host" >&2; exit 1; }
    fi
    host=${listen%:*}
    if [[ -z "$tls_cert" && "$host" != 127.* && "$host" != localhost && "$host" != "[::1]" ]]; then
      echo "$0: $listen is beyond loopback: give --tls_cert and --tls_key (writers' passwords must not cross the network in clear)" >&2
      exit 2
    fi
    [[ -z "$tls_cert" && -z "$tls_key" ]] || [[ -r "$tls_cert" && -r "$tls_key" ]] ||
      { echo "$0: --tls_cert and --tls_key must both name readable PEM files" >&2; exit 2; }
    mkdir -p "$dir/data" "$dir/tmp"
    dir=$(cd "$dir" && pwd)
    writers="$dir/writers.htpasswd"
    # No writer yet: an empty list, so every write is refused (a read-only cache), never an open one.
    [[ -f "$writers" ]] || install -m 600 /dev/null "$writers"
    scheme=http listen_line="listen $listen;"
    if [[ -n "$tls_cert" ]]; then
      scheme=https
      listen_line="listen $listen ssl; ssl_certificate $(readlink -f "$tls_cert"); ssl_certificate_key $(readlink -f "$tls_key");"
    fi
    # As root, nginx's workers would drop to 'nobody' and could not write the cache; keep the caller's user.
    user_line=""
    [[ "$(id -u)" == 0 ]] && user_line="user $(id -un) $(id -gn);"
    cat >"$dir/nginx.conf" <<CONF
# Written by tools/remote_cache/nginx_cache.sh; rewritten on every start.
$user_line
worker_processes 2;
pid $pid_file;
error_log $dir/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  sendfile on;
  server {
    $listen_line
    # Checkpoints and activation caches are large; Bazel sends each blob in one PUT.
    client_max_body_size 0;
    client_body_buffer_size 1m;
    location /cache/ {
      root $dir/data;
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
      # Reads for whoever reaches the address; every other method (PUT) needs a writer's credential.
      limit_except GET HEAD {
        auth_basic "sparse_layers cache writers";
        auth_basic_user_file $writers;
      }
    }
  }
}
CONF
    "$nginx" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    for _ in $(seq 50); do running_pid >/dev/null && break; sleep 0.1; done
    running_pid >/dev/null || { echo "$0: nginx did not start; see $dir/error.log" >&2; exit 1; }
    echo "$scheme://$listen/cache" | tee "$dir/url"
    [[ -s "$writers" ]] || echo "$0: no writers yet, so the cache is read-only: $0 add-writer NAME --dir $dir" >&2
    ;;
  add-writer)
    command -v openssl >/dev/null || { echo "$0: openssl is missing (tools/deps.txt)" >&2; exit 1; }
    mkdir -p "$dir"
    [[ -f "$writers" ]] || install -m 600 /dev/null "$writers"
    if grep -q "^$writer:" "$writers"; then
      echo "$0: writer $writer exists in $writers; delete its line to replace it" >&2
      exit 1
    fi
    password=$(openssl rand -hex 16)
    # -stdin: the password never appears in another process's command line (ps).
    echo "$writer:$(openssl passwd -apr1 -stdin <<<"$password")" >>"$writers"
    # nginx rereads the file on every request: no restart needed.
    echo "$password"
    echo "$0: writer $writer added to $writers (hashed); its password is printed once, above. Writers build with" >&2
    echo "  --config=remote_cache_writer --remote_cache=<scheme>://$writer:<password>@<host:port>/cache" >&2
    ;;
  stop)
    if pid=$(running_pid); then
      kill -QUIT "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pid_file"
    ;;
  status)
    if pid=$(running_pid); then
      echo "running (pid $pid): $(cat "$dir/url"), $(du -sh "$dir/data" | cut -f1) cached in $dir/data"
    else
      echo "not running ($dir)"
      exit 3
    fi
    ;;
  *) usage ;;
esac
