#!/usr/bin/env bash
# The project's Redis, the cluster's external session store: installed from Debian's
# packages if missing (bookworm: redis-server 7.0.15), one instance per data folder,
# on loopback only, nothing persisted (session state lives as long as the cluster).
#   redis.sh start [DIR]   → prints the URL (`tierlab live up --model` runs it when the
#                            model's app tier has `session_state`)
#   redis.sh stop  [DIR]
#   redis.sh url   [DIR]
set -euo pipefail
cmd=${1:?usage: redis.sh start|stop|url [DIR]}
dir=$(realpath -m "${2:-.tierlab/redis}")
port=${TIERLAB_REDIS_PORT:-63790}
url="redis://127.0.0.1:${port}/0"

if ! command -v redis-server >/dev/null && [[ "$cmd" == start ]]; then
  echo "installing Redis (Debian package redis-server)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq redis-server >/dev/null) >&2
fi

case "$cmd" in
  start)
    mkdir -p "$dir"
    if ! redis-cli -p "$port" ping >/dev/null 2>&1; then
      redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --pidfile "$dir/redis.pid" \
        --dir "$dir" --logfile "$dir/redis.log" --save '' --appendonly no >&2
      for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      redis-cli -p "$port" ping >/dev/null || { tail -20 "$dir/redis.log" >&2; exit 1; }
    fi
    echo "$url"
    ;;
  stop)
    if [[ -f "$dir/redis.pid" ]]; then
      pid=$(cat "$dir/redis.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/redis.pid"
    fi
    ;;
  url) echo "$url" ;;
  *) echo "unknown command $cmd (start|stop|url)" >&2; exit 2 ;;
esac
