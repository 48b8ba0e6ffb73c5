# Toolsmith: `make run` serves the API with embedded defaults; `make test` runs every test.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= .data
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test bench clean

$(BIN)/toolsmith: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

install: $(BIN)/toolsmith

run: install
	$(BIN)/toolsmith serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

# The engines the tests need are started here unless the environment names them already.
test: install
	@$(WITH_POSTGRES); $(WITH_OPENSEARCH); \
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

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
