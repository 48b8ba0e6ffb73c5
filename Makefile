# Toolsmith: `make run` serves the API with embedded defaults; `make test` runs every test.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= .data
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-quick test-browser bench docs clean

$(BIN)/toolsmith: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

# The console's browser assets (console/static/dist): htmx, the CodeMirror island and Swagger UI,
# from the committed lockfile (npm ci), bundled with esbuild.
CONSOLE_DIST := console/static/dist/sizes.json
$(CONSOLE_DIST): console/package.json console/package-lock.json console/build.mjs $(wildcard console/assets/*.js console/static/console.css console/styles/*.css toolkinds/*/assets/*.js toolkinds/*/styles/*.css)
	@command -v npm >/dev/null || { echo "Node.js 20 and npm are needed to build the console"; exit 1; }
	cd console && npm ci --no-audit --no-fund --loglevel=error && node build.mjs
	@touch $@

install: $(BIN)/toolsmith $(CONSOLE_DIST)

run: install
	$(BIN)/toolsmith serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

# The tests run on pytest-xdist workers (tests/conftest.py says what that asks of a test): each
# worker starts with a run of whole files, so a module's fixtures (a probe's server) mostly start
# once, and takes tests from another's queue when its own is done ("worksteal"), so one long file
# does not keep the others waiting. The engines are shared, started once. Measured on two cores:
# the whole suite waits on servers, engines and timers, and three workers beat two (8m51s against
# over ten minutes; four were no faster); the inner loop computes, and two beat three (2m17s
# against 3m00s).
TEST_WORKERS ?= 3
QUICK_WORKERS ?= 2
BROWSER_WORKERS ?= 2
XDIST = --dist worksteal

# The engines the tests need are started here unless the environment names them already.
# The browser tests, in their own pytest invocation against Debian's chromium, run beside the rest
# (each waits on servers, engines and timers a good part of its time: after one another they left
# a core idle), their output kept in BROWSER_LOG and printed when the rest are done; the run fails
# if either fails. BROWSER_BESIDE=no runs them after the rest, as before.
BROWSER_BESIDE ?= yes
BROWSER_LOG := tests/browser/artifacts/pytest.log
BROWSER_RUN = $(WITH_CHROMIUM); TOOLSMITH_BROWSER_TESTS=1 $(BIN)/python -m pytest -n $(BROWSER_WORKERS) $(XDIST) tests/browser $(PYTEST_ARGS)
test: install
	@$(WITH_KEYCLOAK); $(WITH_POSTGRES); $(WITH_OPENSEARCH); $(WITH_CONFORMANCE); $(WITH_PROMETHEUS); \
	if [ "$(BROWSER_BESIDE)" = yes ]; then mkdir -p $(dir $(BROWSER_LOG)); ( $(BROWSER_RUN) ) >$(BROWSER_LOG) 2>&1 & browser=$$!; fi; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(XDIST) $(PYTEST_ARGS); suite=$$?; \
	if [ "$(BROWSER_BESIDE)" = yes ]; then wait $$browser; browsed=$$?; echo "== the browser tests (beside the rest; $(BROWSER_LOG))"; cat $(BROWSER_LOG); \
	else ( $(BROWSER_RUN) ); browsed=$$?; fi; \
	[ $$suite = 0 ] && [ $$browsed = 0 ]
	@$(MAKE) --no-print-directory docs

# The documentation (docs/, mkdocs.yml) into site/; --strict fails on a broken link or anchor
# (not with --quiet, which hides the warnings that --strict counts).
docs: $(BIN)/toolsmith
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The inner loop (about two minutes): unit, contract, console and API tests on the embedded engines,
# no PostgreSQL, OpenSearch or browser; stops at the first failure. `make test` runs everything.
QUICK_TESTS = tests/unit tests/contract tests/kinds tests/api tests/console
test-quick: install
	$(BIN)/python -m pytest -n $(QUICK_WORKERS) $(XDIST) -x -q -k "not opensearch and not postgres" $(QUICK_TESTS) $(PYTEST_ARGS)

test-browser: install
	@$(WITH_CHROMIUM); TOOLSMITH_BROWSER_TESTS=1 $(BIN)/python -m pytest -n $(BROWSER_WORKERS) $(XDIST) tests/browser $(PYTEST_ARGS)

# The benchmarks that measure a scale-out (rate limits across replicas, the runner's heartbeat) use
# the same engines as the tests, started here unless the environment names them.
bench: install $(VENV)/.bench bench-peers
	@$(WITH_WRK); $(WITH_POSTGRES); $(WITH_OPENSEARCH); $(BIN)/python -m bench $(BENCH_ARGS)

# The benchmarks' extras (py-spy), and bench.request_path's FastMCP peer in a virtualenv of its own
# (.venv-peers: FastMCP's dependencies stay out of the product's .venv).
$(VENV)/.bench: pyproject.toml | $(BIN)/toolsmith
	$(BIN)/pip install --quiet -e '.[test,bench]'
	@touch $@

.PHONY: bench-peers
bench-peers: $(VENV)-peers/.installed
$(VENV)-peers/.installed: bench/peers/requirements.txt
	$(PYTHON) -m venv $(VENV)-peers
	$(VENV)-peers/bin/pip install --quiet -r bench/peers/requirements.txt
	@touch $@

clean:
	rm -rf $(VENV) $(VENV)-peers .pytest_cache build site *.egg-info console/node_modules console/static/dist

# -- PostgreSQL: the event store of several API processes (scripts/postgres.sh, data in .engines/) --
.PHONY: postgres postgres-stop

postgres:
	@scripts/postgres.sh start

postgres-stop:
	@scripts/postgres.sh stop

# Exports eventsourcing's POSTGRES_* for the tests, starting the server, unless POSTGRES_HOST is set.
# Outside CI a server that cannot start leaves them unset: the PostgreSQL tests skip, saying why.
WITH_POSTGRES = if [ -z "$$POSTGRES_HOST" ]; then \
	  if postgres_env=$$(scripts/postgres.sh start); then export $$postgres_env; \
	  elif [ "$$CI" = true ]; then echo "make: PostgreSQL did not start" >&2; exit 1; \
	  else echo "make: PostgreSQL did not start; its tests will skip" >&2; fi; \
	fi

# -- OpenSearch: the read models (scripts/opensearch.sh: a node from Maven Central, data in .engines/) --
.PHONY: opensearch opensearch-stop

opensearch:
	@scripts/opensearch.sh start

opensearch-stop:
	@scripts/opensearch.sh stop

# Exports OPENSEARCH_URL for the tests, starting the node, unless it is set or a Docker engine answers
# (the tests then use testcontainers). Outside CI a node that cannot start leaves it unset: the
# OpenSearch tests skip, saying why; in CI the run fails.
WITH_OPENSEARCH = if [ -z "$$OPENSEARCH_URL" ] && ! docker info >/dev/null 2>&1; then \
	  if opensearch_url=$$(scripts/opensearch.sh start | tail -n 1) && [ -n "$$opensearch_url" ]; then export OPENSEARCH_URL=$$opensearch_url; \
	  elif [ "$$CI" = true ]; then echo "make: OpenSearch did not start" >&2; exit 1; \
	  else echo "make: OpenSearch did not start; its tests will skip" >&2; fi; \
	fi

# -- The MCP conformance suite: npm's @modelcontextprotocol/conformance on a Node.js 22 from npm
# (scripts/conformance.sh, pinned in tests/conformance/, installed in .engines/conformance/) --
# Exports TOOLSMITH_CONFORMANCE, the suite's runner, for tests/e2e/test_mcp_conformance.py, unless it
# is set. Outside CI a suite that cannot be installed leaves it unset: the test skips, saying why;
# in CI the run fails.
WITH_CONFORMANCE = if [ -z "$$TOOLSMITH_CONFORMANCE" ]; then \
	  if conformance=$$(scripts/conformance.sh install) && [ -n "$$conformance" ]; then export TOOLSMITH_CONFORMANCE=$$conformance; \
	  elif [ "$$CI" = true ]; then echo "make: the MCP conformance suite could not be installed (scripts/conformance.sh install)" >&2; exit 1; \
	  else echo "make: the MCP conformance suite could not be installed; its test will skip (scripts/conformance.sh install)" >&2; fi; \
	fi

# -- Keycloak: the console's single sign-on provider and an external authorization server in the tests
# (scripts/keycloak.sh: keycloak-quarkus-dist from Maven Central in dev mode, in .engines/keycloak) --
.PHONY: keycloak keycloak-stop

keycloak:
	@scripts/keycloak.sh start

keycloak-stop:
	@scripts/keycloak.sh stop

# Exports KEYCLOAK_URL for the tests, launching the server, unless it is set. It is launched first
# and not awaited here: its start (20 to 40 s) overlaps the other engines' and pytest's collection;
# testing/keycloak.py waits for it (`scripts/keycloak.sh wait`). Outside CI a server that cannot be
# launched leaves it unset: the Keycloak tests skip, saying why; in CI the run fails (here, or in
# the tests when it does not become ready).
WITH_KEYCLOAK = if [ -z "$$KEYCLOAK_URL" ]; then \
	  if keycloak_url=$$(scripts/keycloak.sh launch | tail -n 1) && [ -n "$$keycloak_url" ]; then export KEYCLOAK_URL=$$keycloak_url; \
	  elif [ "$$CI" = true ]; then echo "make: Keycloak could not be launched (scripts/keycloak.sh launch)" >&2; exit 1; \
	  else echo "make: Keycloak could not be launched; its tests will skip (scripts/keycloak.sh launch)" >&2; fi; \
	fi

# -- Prometheus: Debian's package, the server that scrapes Toolsmith in tests/e2e/test_prometheus.py --
# Installed when missing and this is root (scripts/prometheus.sh install); in CI a missing one fails
# the run; elsewhere its test skips, saying why.
WITH_PROMETHEUS = if ! scripts/prometheus.sh binary >/dev/null 2>&1; then \
	  scripts/prometheus.sh install >/dev/null 2>&1 || true; \
	  if ! scripts/prometheus.sh binary >/dev/null 2>&1; then \
	    if [ "$$CI" = true ]; then echo "make: Prometheus is missing (apt-get install -y prometheus)" >&2; exit 1; \
	    else echo "make: Prometheus is missing; its test will skip (apt-get install -y prometheus)" >&2; fi; \
	  fi; \
	fi

# -- Chromium: Debian's package for the console's browser tests (Playwright cannot download one here) --
# Installed when missing and this is root; in CI a browser that cannot be had fails the run.
WITH_CHROMIUM = if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || true; fi; \
	  if ! command -v chromium >/dev/null 2>&1; then \
	    if [ "$$CI" = true ]; then echo "make: chromium is missing (apt-get install -y chromium)" >&2; exit 1; \
	    else echo "make: chromium is missing; the browser tests will skip (apt-get install -y chromium)" >&2; fi; \
	  fi; \
	fi

# -- wrk: Debian's package, the HTTP load generator of bench/mcp_call.py (MCP against REST) --
# Installed when missing and this is root; in CI a wrk that cannot be had fails the run.
WITH_WRK = if ! command -v wrk >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null 2>&1 || true; fi; \
	  if ! command -v wrk >/dev/null 2>&1; then \
	    if [ "$$CI" = true ]; then echo "make: wrk is missing (apt-get install -y wrk)" >&2; exit 1; \
	    else echo "make: wrk is missing; bench.mcp_call will say so (apt-get install -y wrk)" >&2; fi; \
	  fi; \
	fi
