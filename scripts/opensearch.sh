#!/usr/bin/env bash
# A development OpenSearch node on 127.0.0.1, from Maven Central packages (no Docker needed).
#
#   scripts/opensearch.sh start   start a node in the background, or reuse one answering on the
#                                 port; wait until it answers; print its URL as the last line
#   scripts/opensearch.sh stop    stop the node this script started
#   scripts/opensearch.sh url     print the URL
#
# OPENSEARCH_PORT (9200), OPENSEARCH_NODE_DIR (.engines/opensearch/node: data, logs, pid) and
# OPENSEARCH_HEAP (1g) choose another node, for example a test's own. The jars are fetched
# once with Maven into .engines/opensearch/lib; the node needs Java 17 or newer.
#
# The node also runs the k-NN plugin of its own version (org.opensearch.plugin:opensearch-knn, a
# zip on Maven Central), fetched once into .engines/opensearch/plugins/opensearch-knn: its jars go
# on the node's class path and Launcher.java names its plugin class, as the runner loads its own
# modules (the runner's modules are class-path plugins, so a plugins/ bundle could not extend
# lang-painless as the k-NN plugin's descriptor asks). File Search uses its Lucene engine (pure
# Java); the zip carries no native faiss or nmslib library, and none is loaded for Lucene.
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINE_DIR=.engines/opensearch
LIB_DIR=$ENGINE_DIR/lib
KNN_VERSION=2.19.1.0  # the node's own version (scripts/opensearch/pom.xml)
KNN_DIR=$ENGINE_DIR/plugins/opensearch-knn
KNN_PLUGIN=org.opensearch.knn.plugin.KNNPlugin
PORT=${OPENSEARCH_PORT:-9200}
NODE_DIR=${OPENSEARCH_NODE_DIR:-$ENGINE_DIR/node}
HEAP=${OPENSEARCH_HEAP:-1g}
URL=http://127.0.0.1:$PORT
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java

say() { echo "opensearch: $*" >&2; }

answers() { curl -fsS --max-time 2 "$URL" 2>/dev/null | grep -q '"distribution" : "opensearch"'; }

fetch_jars() {
    [ -f "$LIB_DIR/.complete" ] && return
    command -v mvn >/dev/null || { say "Maven (mvn) is needed to fetch the node's jars"; exit 1; }
    say "fetching OpenSearch 2.19 jars from Maven Central into $LIB_DIR"
    rm -rf "$LIB_DIR"
    mvn -q -B -Dstyle.color=never -f scripts/opensearch/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/$LIB_DIR" >&2
    touch "$LIB_DIR/.complete"
}

fetch_knn() {
    [ -f "$KNN_DIR/.complete" ] && return
    command -v mvn >/dev/null || { say "Maven (mvn) is needed to fetch the k-NN plugin"; exit 1; }
    command -v unzip >/dev/null || { say "unzip is needed to unpack the k-NN plugin"; exit 1; }
    say "fetching the k-NN plugin $KNN_VERSION from Maven Central into $KNN_DIR"
    rm -rf "$KNN_DIR" "$KNN_DIR.zip"
    mkdir -p "$(dirname "$KNN_DIR")"
    mvn -q -B -Dstyle.color=never -f scripts/opensearch/pom.xml dependency:copy \
        -Dartifact="org.opensearch.plugin:opensearch-knn:$KNN_VERSION:zip" -Dmdep.stripVersion=true \
        -DoutputDirectory="$PWD/$(dirname "$KNN_DIR")" >&2
    unzip -q "$KNN_DIR.zip" -d "$KNN_DIR"  # stripVersion: the zip is plugins/opensearch-knn.zip
    rm -f "$KNN_DIR.zip"
    touch "$KNN_DIR/.complete"
}

start() {
    # Two callers at once (make and a test, or the workers of one test run) must not both start a node.
    mkdir -p "$NODE_DIR"
    exec 9>"$NODE_DIR/.start.lock"
    flock 9
    if answers; then
        say "reusing the node that answers on $URL"
        # A node started before the k-NN plugin was part of this script: File Search on it is lexical only.
        curl -fsS --max-time 2 "$URL/_cat/plugins?h=component" 2>/dev/null | grep -Eqx 'opensearch-knn|org.opensearch.knn.plugin.KNNPlugin' \
            || say "that node has no k-NN plugin (vectors need it): restart it with $0 stop && $0 start"
        echo "$URL"
        return
    fi
    command -v "$JAVA" >/dev/null || { say "Java 17 or newer is needed (set JAVA_HOME)"; exit 1; }
    fetch_jars
    fetch_knn
    local home log pid
    home=$(cd "$NODE_DIR" && pwd)
    log=$home/launcher.log
    say "starting a node on $URL (data and logs in $NODE_DIR)"
    # setsid: the node outlives this script and the make that ran it; its pid is kept for stop.
    # 9>&-: the node must not inherit the lock, or the next start would wait for it forever.
    setsid "$JAVA" "-Xms$HEAP" "-Xmx$HEAP" -Djava.awt.headless=true \
        -cp "$PWD/$LIB_DIR/*:$PWD/$KNN_DIR/*" scripts/opensearch/Launcher.java "$home" "$PORT" "$KNN_PLUGIN" \
        >"$log" 2>&1 < /dev/null 9>&- &
    pid=$!
    echo "$pid" > "$home/pid"
    for _ in $(seq 180); do
        if answers; then
            echo "$URL"
            return
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            say "the node exited while starting; the end of $log:"
            tail -30 "$log" >&2
            exit 1
        fi
        sleep 1
    done
    say "no answer on $URL after 180 s; the end of $log:"
    tail -30 "$log" >&2
    exit 1
}

stop() {
    local pidfile=$NODE_DIR/pid
    if [ ! -f "$pidfile" ]; then
        say "no node started from $NODE_DIR"
        return
    fi
    local pid
    pid=$(cat "$pidfile")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
        say "stopped the node on $URL"
    fi
    rm -f "$pidfile"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) echo "$URL" ;;
    *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
