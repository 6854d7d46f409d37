#!/usr/bin/env bash
# A Bazel HTTP remote cache served by Debian's nginx (WebDAV PUT, plain GET) for one user or a small team.
#
#   tools/remote_cache/nginx_cache.sh start [--dir DIR] [--listen ADDR:PORT]   # prints the --remote_cache URL
#                                                 (PORT "free": a free port between 20000 and 60000, for tests)
#   tools/remote_cache/nginx_cache.sh stop|status [--dir DIR]
#
# Bazel stores /cache/ac/<sha256> (action results) and /cache/cas/<sha256> (file contents) under DIR/data.
# Defaults: DIR ~/.cache/sparse_layers/nginx-cache, ADDR:PORT 127.0.0.1:9092 (loopback: this machine only;
# name a LAN address to share with a team, behind a firewall: the cache has no authentication).
# nginx never prunes it; delete DIR/data to reclaim space.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|status [--dir DIR] [--listen ADDR:PORT]" >&2
  exit 2
}
(($# >= 1)) || usage
command=$1
shift
dir="${HOME:-/tmp}/.cache/sparse_layers/nginx-cache"
listen="127.0.0.1:9092"
while (($# > 0)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --listen) listen=$2; shift 2 ;;
    --listen=*) listen=${1#*=}; shift ;;
    *) usage ;;
  esac
done
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
    mkdir -p "$dir/data" "$dir/tmp"
    dir=$(cd "$dir" && pwd)
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
    listen $listen;
    # Checkpoints and activation caches are large; Bazel sends each blob in one PUT.
    client_max_body_size 0;
    client_body_buffer_size 1m;
    location /cache/ {
      root $dir/data;
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
  }
}
CONF
    "$nginx" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    for _ in $(seq 50); do running_pid >/dev/null && break; sleep 0.1; done
    running_pid >/dev/null || { echo "$0: nginx did not start; see $dir/error.log" >&2; exit 1; }
    echo "http://$listen/cache" | tee "$dir/url"
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
