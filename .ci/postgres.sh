#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on a loopback port, for the shared-state
# tests and benchmark. Debian's `postgresql` package, run as the `postgres`
# user (PostgreSQL refuses to run as root).
#
#   .ci/postgres.sh setup   install if needed, create the cluster, start it, create the role and database
#   .ci/postgres.sh start   start the cluster
#   .ci/postgres.sh stop    stop it (fast: clients are disconnected)
#   .ci/postgres.sh url     print the URL the tests use
#
# DOPPEL_PG_DIR (default /tmp/doppel-pg) and DOPPEL_PG_PORT (default 55432) place it.
set -euo pipefail
dir="${DOPPEL_PG_DIR:-/tmp/doppel-pg}"
port="${DOPPEL_PG_PORT:-55432}"

bin() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$found" ] || { echo "postgres.sh: PostgreSQL is not installed" >&2; exit 1; }
    echo "$found"
}

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
setup)
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    b=$(bin)
    if [ -f "$dir/PG_VERSION" ]; then
        "$0" stop >/dev/null 2>&1 || true
    else
        mkdir -p "$dir"
        [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
        as_postgres "$b/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
        cat >> "$dir/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
    fi
    "$0" start
    as_postgres "$b/psql" -h 127.0.0.1 -p "$port" -U postgres -qtc "SELECT 1 FROM pg_roles WHERE rolname = 'doppel'" | grep -q 1 ||
        as_postgres "$b/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE ROLE doppel LOGIN"
    # The migration test makes a database of its own in an older schema.
    as_postgres "$b/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "ALTER ROLE doppel CREATEDB"
    as_postgres "$b/psql" -h 127.0.0.1 -p "$port" -U postgres -qtc "SELECT 1 FROM pg_database WHERE datname = 'doppel'" | grep -q 1 ||
        as_postgres "$b/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE doppel OWNER doppel"
    ;;
start)
    as_postgres "$(bin)/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 30 start >/dev/null
    ;;
stop)
    as_postgres "$(bin)/pg_ctl" -D "$dir" -m fast -w -t 30 stop >/dev/null
    ;;
url)
    echo "postgres://doppel@127.0.0.1:$port/doppel"
    ;;
*)
    echo "usage: $0 setup|start|stop|url" >&2
    exit 2
    ;;
esac
