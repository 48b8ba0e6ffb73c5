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

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
