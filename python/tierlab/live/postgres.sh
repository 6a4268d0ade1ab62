#!/usr/bin/env bash
# The project's PostgreSQL: installed from Debian's packages if missing, a cluster in
# a data folder under the working directory, listening on loopback only, with
# pg_stat_statements loaded (per-statement time and calls from the database itself: the
# live testbed reads them after a run as a cross-check of the client's timing).
#   postgres.sh start [DIR]   → prints the connection URL (`tierlab live up --db postgres` runs it)
#   postgres.sh stop  [DIR]
#   postgres.sh restart [DIR] (the reliability test: a database restart mid-run)
set -euo pipefail
cmd=${1:?usage: postgres.sh start|stop|restart|url [DIR]}
dir=$(realpath -m "${2:-.tierlab/postgres}")
port=${TIERLAB_PG_PORT:-54329}
url="postgresql://postgres@127.0.0.1:${port}/tierlab"

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [[ -z "$bin" && "$cmd" != stop ]]; then
  echo "installing PostgreSQL (Debian package postgresql)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) >&2
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi

# PostgreSQL refuses to run as root: the cluster then belongs to the postgres user.
as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [[ $(id -u) == 0 ]]; then
      chown postgres "$dir"
      runuser -u postgres -- test -x "$dir" || {
        echo "the postgres user cannot reach $dir (a parent folder is private); use a folder under the project" >&2; exit 1; }
    fi
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
      as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/data -c max_connections=300 -c fsync=off -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=off" start >&2
    else
      # One data folder, one server: if it already runs (another testbed's, or one an
      # interrupted run left), use it on its own port (line 4 of postmaster.pid).
      running=$(sed -n 4p "$dir/data/postmaster.pid")
      if [[ "$running" != "$port" ]]; then
        echo "PostgreSQL of $dir already runs on port $running: using it there, not on $port" >&2
        port=$running
        url="postgresql://postgres@127.0.0.1:${port}/tierlab"
      fi
    fi
    as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='tierlab'" postgres | grep -q 1 \
      || as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres tierlab
    as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" tierlab >&2
    echo "$url"
    ;;
  stop)
    if [[ -n "$bin" && -f "$dir/data/PG_VERSION" ]]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w restart >&2
    ;;
  url) echo "$url" ;;
  *) echo "unknown command $cmd (start|stop|restart|url)" >&2; exit 2 ;;
esac
