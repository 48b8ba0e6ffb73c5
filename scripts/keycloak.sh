#!/usr/bin/env bash
# A development Keycloak on 127.0.0.1, from Maven Central's keycloak-quarkus-dist (no Docker needed):
# the console's single sign-on provider in the tests, and an external authorization server.
#
#   scripts/keycloak.sh start    launch a server (or reuse ours that answers), wait until its realm
#                                answers, print its URL as the last line
#   scripts/keycloak.sh launch   the same without waiting: print the URL it will answer on at once
#                                (make test launches it first, so that its start overlaps the other
#                                engines'; the tests' fixture waits for it: testing/keycloak.py)
#   scripts/keycloak.sh wait     wait until the launched server answers; print its URL
#   scripts/keycloak.sh stop     stop the server this script started
#   scripts/keycloak.sh url      print the URL of the launched server
#
# The server runs in dev mode (`start-dev`: HTTP, an in-memory H2 database, so every launch starts
# from the realm below and nothing else) with the realm `toolsmith` imported at start from
# tests/fixtures/keycloak/toolsmith-realm.json, and an admin `admin`/`admin` on the master realm
# (dev mode only, 127.0.0.1 only). KEYCLOAK_PORT (8180, else a free port) and
# KEYCLOAK_MANAGEMENT_PORT (the health checks; the next free one) choose the ports; KEYCLOAK_HEAP
# (384m) the JVM's heap. The distribution is fetched once with Maven (its SHA-1 checked against
# Maven Central's: `mvn -C`) into .engines/keycloak; it needs Java 21 or newer: JAVA_HOME when it is
# one, else the newest JDK under /usr/lib/jvm.
#
# Measured here (2 cores shared, Temurin 25): the first start, which also builds the server's
# configuration, about 40 s; later ones about 20 s; 440 MB resident with the 384m heap.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=26.7.3
ENGINE_DIR=$PWD/.engines/keycloak
HOME_DIR=$ENGINE_DIR/keycloak-$VERSION
NODE_DIR=$ENGINE_DIR/node
REALM_FILE=$PWD/tests/fixtures/keycloak/toolsmith-realm.json
REALM=toolsmith
HEAP=${KEYCLOAK_HEAP:-384m}
ADMIN_USER=admin
ADMIN_PASSWORD=admin
WAIT_SECONDS=${KEYCLOAK_WAIT_SECONDS:-240}

say() { echo "keycloak: $*" >&2; }

# The URL the launched server was given (kept in its node dir), or nothing.
launched_url() { cat "$NODE_DIR/url" 2>/dev/null || true; }

answers() { curl -fsS --max-time 2 "$1/realms/$REALM/.well-known/openid-configuration" 2>/dev/null | grep -q '"issuer"'; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
    local port=$1
    while ! port_free "$port"; do port=$((port + 1)); done
    echo "$port"
}

java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'; }

# The newest Java 21 or later: JAVA_HOME's when it is one, else the newest JDK under /usr/lib/jvm.
find_java() {
    local java major best="" best_major=0
    for java in ${JAVA_HOME:+$JAVA_HOME/bin/java} /usr/lib/jvm/*/bin/java; do
        [ -x "$java" ] || continue
        major=$(java_major "$java")
        major=${major%%.*}
        [ -n "$major" ] || continue
        if [ -n "${JAVA_HOME:-}" ] && [ "$java" = "$JAVA_HOME/bin/java" ] && [ "$major" -ge 21 ]; then
            echo "$JAVA_HOME"; return
        fi
        if [ "$major" -gt "$best_major" ]; then best=$java; best_major=$major; fi
    done
    if [ "$best_major" -lt 21 ]; then
        say "Keycloak $VERSION needs Java 21 or newer; the newest here is ${best_major:-none} (apt-get install -y openjdk-21-jdk-headless, or set JAVA_HOME)"
        exit 1
    fi
    dirname "$(dirname "$best")"
}

fetch() {
    [ -f "$HOME_DIR/.complete" ] && return
    command -v mvn >/dev/null || { say "Maven (mvn) is needed to fetch Keycloak"; exit 1; }
    say "fetching org.keycloak:keycloak-quarkus-dist:$VERSION from Maven Central into ${ENGINE_DIR#"$PWD"/} (about 170 MB, once)"
    mkdir -p "$ENGINE_DIR"
    rm -rf "$HOME_DIR" "$ENGINE_DIR/keycloak-quarkus-dist-$VERSION.tar.gz"
    # -C: a checksum that does not match Maven Central's fails the download.
    mvn -q -B -C -Dstyle.color=never dependency:copy \
        -Dartifact="org.keycloak:keycloak-quarkus-dist:$VERSION:tar.gz" -DoutputDirectory="$ENGINE_DIR" >&2
    tar -xzf "$ENGINE_DIR/keycloak-quarkus-dist-$VERSION.tar.gz" -C "$ENGINE_DIR"
    rm -f "$ENGINE_DIR/keycloak-quarkus-dist-$VERSION.tar.gz"
    touch "$HOME_DIR/.complete"
}

realm_digest() { sha256sum "$REALM_FILE" | cut -d' ' -f1; }

# Ours, running, answering, and started with today's realm file.
ours_current() {
    local url pid
    url=$(launched_url)
    pid=$(cat "$NODE_DIR/pid" 2>/dev/null || true)
    [ -n "$url" ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    [ "$(cat "$NODE_DIR/realm.sha256" 2>/dev/null)" = "$(realm_digest)" ] || return 1
}

launch() {
    mkdir -p "$NODE_DIR"
    # Two callers at once (make and a test, or the workers of one test run) must not both launch one.
    exec 9>"$NODE_DIR/.start.lock"
    flock 9
    if ours_current; then
        say "reusing the server launched on $(launched_url)"
        launched_url
        return
    fi
    if [ -f "$NODE_DIR/pid" ]; then
        say "the realm file changed or the server is gone: starting again"
        stop_server
    fi
    local java_home port management url pid
    java_home=$(find_java)
    fetch
    port=$(free_port "${KEYCLOAK_PORT:-8180}")
    if [ -n "${KEYCLOAK_PORT:-}" ] && [ "$port" != "$KEYCLOAK_PORT" ]; then
        say "port $KEYCLOAK_PORT is taken"; exit 1
    fi
    management=$(free_port "${KEYCLOAK_MANAGEMENT_PORT:-$((port + 1000))}")
    url=http://127.0.0.1:$port
    mkdir -p "$HOME_DIR/data/import"
    rm -f "$HOME_DIR"/data/import/*.json
    cp "$REALM_FILE" "$HOME_DIR/data/import/$REALM-realm.json"
    say "starting Keycloak $VERSION on $url with $java_home (heap $HEAP; log in ${NODE_DIR#"$PWD"/}/keycloak.log)"
    # setsid: the server outlives this script and the make that ran it; its pid is kept for stop.
    # 9>&-: the server must not inherit the lock, or the next launch would wait for it forever.
    JAVA_HOME=$java_home JAVA_OPTS_KC_HEAP="-Xms64m -Xmx$HEAP" \
    KC_BOOTSTRAP_ADMIN_USERNAME=$ADMIN_USER KC_BOOTSTRAP_ADMIN_PASSWORD=$ADMIN_PASSWORD \
        setsid "$HOME_DIR/bin/kc.sh" start-dev --http-host=127.0.0.1 --http-port="$port" \
        --http-management-port="$management" --health-enabled=true --db=dev-mem --import-realm \
        >"$NODE_DIR/keycloak.log" 2>&1 < /dev/null 9>&- &
    pid=$!
    echo "$pid" > "$NODE_DIR/pid"
    echo "$management" > "$NODE_DIR/management_port"
    realm_digest > "$NODE_DIR/realm.sha256"
    date +%s > "$NODE_DIR/started"
    echo "$url" > "$NODE_DIR/url"
    echo "$url"
}

wait_ready() {
    local url pid started management
    url=$(launched_url)
    pid=$(cat "$NODE_DIR/pid" 2>/dev/null || true)
    [ -n "$url" ] && [ -n "$pid" ] || { say "no server launched (scripts/keycloak.sh launch)"; exit 1; }
    started=$(cat "$NODE_DIR/started")
    management=$(cat "$NODE_DIR/management_port")
    local said=0
    while true; do
        if curl -fsS --max-time 2 "http://127.0.0.1:$management/health/ready" >/dev/null 2>&1 && answers "$url"; then
            say "ready on $url after $(( $(date +%s) - started )) s ($(( $(ps -o rss= -p "$(pgrep -P "$pid" java || echo "$pid")" 2>/dev/null || echo 0) / 1024 )) MB resident)"
            echo "$url"
            return
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            say "the server exited while starting; the end of ${NODE_DIR#"$PWD"/}/keycloak.log:"
            tail -30 "$NODE_DIR/keycloak.log" >&2
            exit 1
        fi
        local waited=$(( $(date +%s) - started ))
        if [ "$waited" -ge "$WAIT_SECONDS" ]; then
            say "no answer on $url after $waited s; the end of ${NODE_DIR#"$PWD"/}/keycloak.log:"
            tail -30 "$NODE_DIR/keycloak.log" >&2
            exit 1
        fi
        if [ $((waited / 10)) -gt "$said" ]; then
            said=$((waited / 10))
            say "waiting for $url ($waited s): $(tail -n 1 "$NODE_DIR/keycloak.log" | cut -c1-160)"
        fi
        sleep 1
    done
}

stop_server() {
    local pid
    pid=$(cat "$NODE_DIR/pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # kc.sh runs java as its child: stop the whole session setsid made.
        kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 -- "-$pid" 2>/dev/null || true
        say "stopped the server on $(launched_url)"
    else
        say "no server of ours is running"
    fi
    rm -f "$NODE_DIR/pid" "$NODE_DIR/url" "$NODE_DIR/realm.sha256"
}

case "${1:-}" in
    launch) launch ;;
    wait) wait_ready ;;
    start) launch >/dev/null; wait_ready ;;
    stop) stop_server ;;
    url) launched_url ;;
    *) echo "usage: $0 start|launch|wait|stop|url" >&2; exit 2 ;;
esac
