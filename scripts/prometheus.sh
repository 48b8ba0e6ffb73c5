#!/usr/bin/env bash
# Debian's Prometheus server for the metrics' end-to-end test (tests/e2e/test_prometheus.py): it
# scrapes a running Toolsmith and the test asks it, by PromQL, for the calls it made.
#
#   scripts/prometheus.sh install   install Debian's package when it is missing and this is root
#                                   (apt-get install -y prometheus); says why not otherwise
#   scripts/prometheus.sh binary    print the server's path (PROMETHEUS_BIN, else `prometheus` on
#                                   PATH); fails when there is none
#
# The test starts its own server on a free port with a configuration and a data dir of its own,
# and stops it; nothing of the Debian package's service (/etc/prometheus, its systemd unit) is used.
set -euo pipefail

say() { echo "prometheus: $*" >&2; }

binary() {
    local found=${PROMETHEUS_BIN:-}
    if [ -z "$found" ]; then found=$(command -v prometheus || true); fi
    if [ -z "$found" ] || [ ! -x "$found" ]; then
        say "no Prometheus server (apt-get install -y prometheus, or set PROMETHEUS_BIN)"
        return 1
    fi
    echo "$found"
}

case "${1:-}" in
    install)
        if binary >/dev/null 2>&1; then exit 0; fi
        if [ "$(id -u)" != 0 ]; then say "missing, and not root: apt-get install -y prometheus"; exit 1; fi
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) >/dev/null 2>&1 || true
        binary >/dev/null
        ;;
    binary)
        binary
        ;;
    *)
        echo "usage: $0 install|binary" >&2
        exit 2
        ;;
esac
