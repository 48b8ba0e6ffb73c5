#!/usr/bin/env bash
# A development PostgreSQL server on 127.0.0.1, from Debian's packages (no Docker needed).
#
#   scripts/postgres.sh start     start a server in the background, or reuse the one answering on
#                                 the port; make sure role and database `toolsmith` exist; wait
#                                 until it answers; print its settings as the last line (below)
#   scripts/postgres.sh stop      stop the server this script started
#   scripts/postgres.sh url       print its libpq URL, for `psql "$(scripts/postgres.sh url)"`
#   scripts/postgres.sh install   install PostgreSQL with apt-get when it is missing (as root)
#
# The line `start` prints is eventsourcing's own settings, words that a shell can export:
#   POSTGRES_HOST=127.0.0.1 POSTGRES_PORT=5433 POSTGRES_USER=toolsmith POSTGRES_PASSWORD=toolsmith POSTGRES_DBNAME=toolsmith
# Everything else goes to stderr, so `export $(scripts/postgres.sh start)` works.
#
# TOOLSMITH_PG_PORT (5433, beside a system server's 5432) chooses the port. Data and log are in
# .engines/postgres. The server process runs as the `postgres` user when this runs as root
# (initdb and postgres refuse root). The superuser is reached only through the Unix socket in
# .engines/postgres/run; over TCP the server asks for a password.
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINE_DIR=$PWD/.engines/postgres
DATA_DIR=$ENGINE_DIR/data
SOCKET_DIR=$ENGINE_DIR/run
LOG=$ENGINE_DIR/postgres.log
HOST=127.0.0.1
PORT=${TOOLSMITH_PG_PORT:-5433}
NAME=toolsmith  # the role, its password and the database

say() { echo "postgres: $*" >&2; }

bindir() {
    local dir
    dir=$(pg_config --bindir 2>/dev/null || true)
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    done
    return 1
}

install() {
    bindir >/dev/null && return
    if [ "${CI:-}" != true ]; then
        say "PostgreSQL is not installed. On Debian or Ubuntu: sudo apt-get install -y postgresql"
        exit 1
    fi
    say "installing PostgreSQL from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
}

# Runs a command as the user that owns the server: `postgres` when this runs as root.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The server's user must reach .engines/postgres: give every parent folder the search bit it lacks.
make_reachable() {
    local dir=$ENGINE_DIR
    while [ "$dir" != / ]; do
        dir=$(dirname "$dir")
        as_owner test -x "$dir" || { say "letting the server's user through $dir (chmod o+x)"; chmod o+x "$dir"; }
    done
}

init_cluster() {
    [ -f "$DATA_DIR/PG_VERSION" ] && return
    say "creating a cluster in $DATA_DIR"
    rm -rf "$DATA_DIR"
    mkdir -p "$DATA_DIR"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$DATA_DIR"; fi
    as_owner "$BIN/initdb" -D "$DATA_DIR" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-instructions >/dev/null
    # Tests open many short-lived stores; a lost last commit after a machine crash is fine here.
    cat >>"$DATA_DIR/postgresql.conf" <<EOF
listen_addresses = '$HOST'
max_connections = 300
synchronous_commit = off
EOF
}

superuser_sql() { as_owner "$BIN/psql" -h "$SOCKET_DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtAc "$1"; }

ensure_database() {
    if [ -z "$(superuser_sql "SELECT 1 FROM pg_roles WHERE rolname = '$NAME'")" ]; then
        superuser_sql "CREATE ROLE $NAME LOGIN PASSWORD '$NAME'"
    fi
    if [ -z "$(superuser_sql "SELECT 1 FROM pg_database WHERE datname = '$NAME'")" ]; then
        superuser_sql "CREATE DATABASE $NAME OWNER $NAME"
    fi
}

ours_running() { [ -f "$DATA_DIR/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DATA_DIR" status >/dev/null 2>&1; }

# The port our running server listens on (the fourth line of its pid file).
ours_port() { sed -n 4p "$DATA_DIR/postmaster.pid"; }

answers_as_toolsmith() {
    PGPASSWORD=$NAME PGCONNECT_TIMEOUT=3 "$BIN/psql" -h "$HOST" -p "$PORT" -U "$NAME" -d "$NAME" -qtAc "SELECT 1" >/dev/null 2>&1
}

settings_line() {
    echo "POSTGRES_HOST=$HOST POSTGRES_PORT=$PORT POSTGRES_USER=$NAME POSTGRES_PASSWORD=$NAME POSTGRES_DBNAME=$NAME"
}

start() {
    install
    BIN=$(bindir)
    mkdir -p "$ENGINE_DIR"
    # Two callers at once (make and a test) must not both initialise or start the cluster.
    exec 9>"$ENGINE_DIR/.lock"
    flock 9
    if ours_running; then
        [ "$(ours_port)" = "$PORT" ] || { say "the server in $DATA_DIR listens on port $(ours_port), not $PORT; stop it first"; exit 1; }
        say "reusing the server in ${ENGINE_DIR#"$PWD"/} on $HOST:$PORT"
    elif "$BIN/pg_isready" -q -h "$HOST" -p "$PORT"; then
        answers_as_toolsmith || { say "another server answers on $HOST:$PORT, not as $NAME/$NAME; set TOOLSMITH_PG_PORT"; exit 1; }
        say "reusing the server that answers on $HOST:$PORT"
        settings_line
        return
    else
        make_reachable
        init_cluster
        mkdir -p "$SOCKET_DIR"
        touch "$LOG"
        if [ "$(id -u)" = 0 ]; then chown postgres: "$SOCKET_DIR" "$LOG"; fi
        say "starting a server on $HOST:$PORT (data and log in ${ENGINE_DIR#"$PWD"/})"
        # 9>&-: the server must not inherit the lock, or the next start would wait for it forever.
        as_owner "$BIN/pg_ctl" -D "$DATA_DIR" -l "$LOG" -o "-p $PORT -k '$SOCKET_DIR'" -w -t 60 start >&2 9>&- \
            || { say "the server did not start; its log:"; tail -n 20 "$LOG" >&2; exit 1; }
    fi
    ensure_database
    answers_as_toolsmith || { say "the server does not answer as $NAME on $HOST:$PORT"; exit 1; }
    settings_line
}

stop() {
    BIN=$(bindir) || { say "PostgreSQL is not installed"; return; }
    if ours_running; then
        as_owner "$BIN/pg_ctl" -D "$DATA_DIR" -m fast -w stop >&2
    else
        say "no server of ours is running"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) echo "postgresql://$NAME:$NAME@$HOST:$PORT/$NAME" ;;
    install) install ;;
    *) echo "usage: $0 start|stop|url|install" >&2; exit 2 ;;
esac
