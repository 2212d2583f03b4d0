# The front door: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast test-distributed lint bench clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
	touch $(STAMP)

setup: $(STAMP)
	./scripts/system-packages.sh

run: setup
	$(BIN)/python -m config.demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	FSCHED_STATE_DIR=$$(mktemp -d) $(BIN)/python manage.py makemigrations --check --dry-run -v 0

test: lint
	$(BIN)/pytest -m "not distributed"

test-fast: setup
	$(BIN)/pytest -m "not distributed and not e2e and not browser"

test-distributed: setup
	$(BIN)/pytest -m distributed

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var
