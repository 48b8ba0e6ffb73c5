# Toolsmith: `make run` serves the API with embedded defaults; `make test` runs every test.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= .data
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test bench clean opensearch opensearch-stop

$(BIN)/toolsmith: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

install: $(BIN)/toolsmith

run: install
	$(BIN)/toolsmith serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

# The tests reach OpenSearch through OPENSEARCH_URL; unset, a node is started here (outside CI a node
# that cannot start only skips the tests that need it; in CI those tests fail).
test: install
	@url="$${OPENSEARCH_URL:-$$(scripts/opensearch.sh start | tail -n 1)}"; \
	OPENSEARCH_URL="$$url" $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

# A development OpenSearch node on 127.0.0.1:9200 (jars from Maven Central; data in .engines/).
opensearch:
	@scripts/opensearch.sh start

opensearch-stop:
	@scripts/opensearch.sh stop

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
