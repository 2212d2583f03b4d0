# The front door: `make run` and `make test`.
# The interpreter the venvs are made from: scripts/pick-python.sh says which and why.
PY ?= $(shell ./scripts/pick-python.sh)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup agent tools lock lock-check run test test-fast test-distributed lint bench clean

# Slurm's command names (sbatch, srun, squeue, ...) as links to fsched, which dispatches on the
# name it was run by: put this directory on PATH and scripts written for Slurm run unchanged.
SLURM_BIN := $(VENV)/slurm-bin
SLURM_COMMANDS := sbatch srun salloc squeue scancel scontrol sinfo sacct sstat seff sacctmgr sshare sprio sdiag sreport
# The tools that drive Slurm by its commands (submitit, parsl), in a venv of their own so that
# their pins never touch .venv's; tests/e2e/test_workflow_tools_e2e.py runs them.
TOOLS_VENV := .venv-tools
TOOLS_STAMP := $(TOOLS_VENV)/.installed

# requirements.lock is requirements.txt pinned with hashes (`make lock`): every machine gets
# the versions the tests passed with. The installed fsched is a copy of scripts/fsched that
# scripts/fsched_fast_start.py then starts with -S: made again when either changes.
$(STAMP): requirements.lock pyproject.toml scripts/fsched scripts/fsched_fast_start.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
	$(BIN)/python -I scripts/fsched_fast_start.py
	touch $(STAMP)

$(SLURM_BIN)/.made: $(STAMP) Makefile
	./scripts/slurm-links.sh $(SLURM_BIN) $(SLURM_COMMANDS)
	touch $@

$(TOOLS_STAMP): requirements-tools.lock
	test -x $(TOOLS_VENV)/bin/python || $(PY) -m venv $(TOOLS_VENV)
	$(TOOLS_VENV)/bin/pip install -q --disable-pip-version-check --require-hashes -r requirements-tools.lock
	touch $@

tools: $(TOOLS_STAMP)

setup: $(STAMP) $(SLURM_BIN)/.made
	./scripts/system-packages.sh

# A compute node's install: the agent's packages only (no Django, Playwright or Chromium).
agent:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements-agent.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
	$(BIN)/python -I scripts/fsched_fast_start.py
	./scripts/slurm-links.sh $(SLURM_BIN) $(SLURM_COMMANDS)

# Maintenance, with network to PyPI (not part of `make test`): regenerate the locks after an
# edit of requirements.txt, requirements-agent.txt or requirements-tools.txt, or tell whether they are out of date.
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

test: lint tools
	$(BIN)/pytest -m "not distributed"

test-fast: setup
	$(BIN)/pytest -m "not distributed and not e2e and not browser"

test-distributed: setup
	$(BIN)/pytest -m distributed

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(TOOLS_VENV) var
