# The front door: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup agent lock lock-check run test test-fast test-distributed lint bench clean

# requirements.lock is requirements.txt pinned with hashes (`make lock`): every machine gets
# the versions the tests passed with.
$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
	touch $(STAMP)

setup: $(STAMP)
	./scripts/system-packages.sh

# A compute node's install: the agent's packages only (no Django, Playwright or Chromium).
agent:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements-agent.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . --config-settings editable_mode=compat

# Maintenance, with network to PyPI (not part of `make test`): regenerate the locks after an
# edit of requirements.txt or requirements-agent.txt, or tell whether they are out of date.
lock:
	./scripts/lock.sh lock

lock-check:
	./scripts/lock.sh check

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
