# Two commands: `make demo` and `make test`. Both install everything into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install ui demo test test-setup browser postgres peers lint bench bench-peers bench-venv mlflow2-venv clean

$(STAMP): requirements.lock requirements-torch.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	# torch and what needs it, fully pinned, without resolution (why: the file's header)
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-torch.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

install: $(STAMP) ui

# the web UI, built into the package's static files (npm ci + vite; skipped when up to date)
ui:
	@scripts/setup-ui.sh

demo: install
	$(BIN)/python examples/demo.py

# Everything the suite needs is made before it starts, side by side (-j: the peers' environments,
# the UI and the browser while the project installs and lint runs), never inside a test; then the
# suite on both cores (tests/README.md: how to run it, what keeps it fast).
# The project's own bytecode is written first: the suite starts ~1,750 Python processes that
# import flightlog, and where PYTHONDONTWRITEBYTECODE is set (as in many container images) each
# would compile every flightlog module it imports again (0.2 s of CPU, 40 % of a short `flightlog run`).
test:
	@$(MAKE) --no-print-directory -j4 test-setup
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-setup: lint browser postgres peers

# Debian's chromium for tests/ui (after the UI build: both steps are in setup-ui.sh)
browser: ui
	@scripts/setup-ui.sh --browser

postgres:
	@scripts/setup-postgres.sh

# the peers' environments the MLflow tests run (tests/conftest.py: mlflow_python, mlflow2_python)
peers: bench-venv mlflow2-venv

lint: install
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts
	$(BIN)/mypy
	# the layer rule of docs/architecture.md ([tool.importlinter] in pyproject.toml)
	PYTHONPATH=src $(BIN)/lint-imports --no-cache

bench: install
	$(BIN)/python bench/log_throughput.py
	$(BIN)/python bench/many_runs.py
	$(BIN)/python bench/capture_throughput.py
	$(BIN)/python bench/runner_overhead.py
	$(BIN)/python bench/ui_perf.py
	$(BIN)/python bench/pipeline_overhead.py

# Peers live in their own environment, never in the project's dependencies. The MLflow
# import test (tests/integrations/test_mlflow_import.py) makes its stores with it too.
BENCH_VENV_STAMP := .bench-venv/.mlflow-3.17.2

bench-venv: $(BENCH_VENV_STAMP)

$(BENCH_VENV_STAMP):
	@test -x .bench-venv/bin/python || $(PYTHON) -m venv .bench-venv
	.bench-venv/bin/python -m pip install -q --disable-pip-version-check mlflow==3.17.2
	@touch $(BENCH_VENV_STAMP)

# One MLflow 2.x client (the last 2.x release, skinny: the client without the server) for
# tests/mlflow_server/test_mlflow2.py: flightlog's MLflow routes must serve 2.x clients too.
MLFLOW2_VENV_STAMP := .mlflow2-venv/.mlflow-skinny-2.22.5

mlflow2-venv: $(MLFLOW2_VENV_STAMP)

$(MLFLOW2_VENV_STAMP):
	@test -x .mlflow2-venv/bin/python || $(PYTHON) -m venv .mlflow2-venv
	.mlflow2-venv/bin/python -m pip install -q --disable-pip-version-check mlflow-skinny==2.22.5
	@touch $(MLFLOW2_VENV_STAMP)

bench-peers: install bench-venv
	$(BIN)/python bench/log_throughput.py --peers
	$(BIN)/python bench/many_runs.py --peers
	@# Prefect after the MLflow figures (its dependencies may move theirs); optional: skipped when it does not install
	-.bench-venv/bin/python -m pip install -q --disable-pip-version-check prefect==3.9.1
	$(BIN)/python bench/pipeline_overhead.py --peers

clean:
	rm -rf $(VENV) .flightlog build *.egg-info
