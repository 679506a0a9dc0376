# The two commands a newcomer needs (README "Try it"); nothing else has to be typed first.
#   make demo   .venv with pqueue installed, then `pqueue demo` on the in-memory backend
#   make test   .venv with the dev extras, local services, then every step in TEST_STEPS;
#               as root with apt-get it also installs Debian's prometheus (its service is
#               stopped and disabled again) and chromium (about 350 MB): .ci/apt-install
#   make test-fast  lint, typecheck and pytest only: installs no system package
# The venv is (re)built only when pyproject.toml changed since its stamp, so a second run
# goes straight to the work. CI runs `make demo` and `make test` with VENV=.ci-venv (.ci/run, ADR 0071).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# The pytest step runs in parallel with pytest-xdist (ADR 0133). The suite mostly waits
# (servers, worker processes, sleeps), so more workers than cores pays: 6 measured best on
# 2 cores. PYTEST_WORKERS=0 runs it in one process; PYTEST_DIST picks xdist's scheduler.
PYTEST_WORKERS ?= 6
PYTEST_DIST ?= worksteal
XDIST = -n $(PYTEST_WORKERS) --dist $(PYTEST_DIST)
# Every pytest worker reads compiled, assert-rewritten modules from one cache instead of
# compiling ~500 of them again, even where PYTHONDONTWRITEBYTECODE is set; the cache lives
# in the venv, not beside the sources.
PYTEST = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache $(BIN)/python -m pytest
export PQUEUE_TEST_REDIS_URL ?= redis://127.0.0.1:6379/3
export PQUEUE_TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/test

# `make test` runs these in order. A new step is one name here plus its target below.
# deploy-check comes before pytest: it installs Prometheus (promtool) for the end-to-end
# metrics test when it can; node, Node.js and npm for the RSMQ interop tests (tests/rsmq).
# spark is last: it adds PySpark to the venv on its first run.
TEST_STEPS := lint typecheck deploy-check node pytest django django6 soaks browser spark

# `make test-fast`: the steps that need nothing but the venv (and Redis/Postgres when they
# are installed): no system package, no browser, no Spark.
FAST_STEPS := lint typecheck pytest

.PHONY: demo test test-fast services fmt $(TEST_STEPS) chaos races clean

demo: $(VENV)/.stamp-demo
	$(BIN)/pqueue demo

test: $(TEST_STEPS)

test-fast: $(FAST_STEPS)

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

# Rewrite what lint checks: format, then the fixes ruff knows to be safe.
fmt: $(VENV)/.stamp-dev
	$(BIN)/ruff format src tests bench examples
	$(BIN)/ruff check --fix src tests bench examples

typecheck: $(VENV)/.stamp-dev
	$(BIN)/mypy src
	$(BIN)/mypy examples
	cd examples/django_app && $(abspath $(BIN))/mypy --config-file ../../pyproject.toml --no-namespace-packages .

# The README's test command.
pytest: $(VENV)/.stamp-dev services
	$(PYTEST) -q $(XDIST) $(PYTEST_ARGS)

services:
	@bash .ci/services

# Node.js and npm for the RSMQ interop tests, which npm-install the reference `rsmq` client
# into ~/.cache (Debian's nodejs and npm, as root with apt-get, when missing).
node:
	@bash .ci/node

# deploy/ checked offline: promtool on the Prometheus config, alert rules and dashboard.
deploy-check:
	@bash .ci/deploy-check.sh

# pqueue chaos (docs/reliability.md) on memory, SQLite, Redis, a private Redis Cluster and a
# private Postgres, each for a bounded time with a fresh seed that it prints (.ci/chaos);
# PQUEUE_CHAOS_DURATION=10m makes it a soak.
chaos: $(VENV)/.stamp-dev services
	@BIN=$(BIN) bash .ci/chaos

# `make test` runs the two long real-time steps side by side: the periodic race mostly waits
# for its minute ticks while chaos keeps the cores busy. Each step's output stays together.
soaks: $(VENV)/.stamp-dev services
	@$(MAKE) --no-print-directory -j2 --output-sync=target chaos races

# Tests marked `races` (deselected from the pytest step): minutes of real worker processes
# racing on every backend at once (periodic ticks, limits), proving the cross-process rules.
races: $(VENV)/.stamp-dev services
	$(BIN)/python -m pytest -q -m races tests $(PYTEST_ARGS)

# Tests marked `browser` (deselected from the pytest step): the dashboard driven in Debian's
# headless Chromium through Playwright (docs/web.md).
browser: $(VENV)/.stamp-dev services
	@bash .ci/chromium
	$(BIN)/python -m pytest -q -m browser tests/web $(PYTEST_ARGS)

# Tests marked `spark` (deselected from the pytest step): the data source, export, report,
# and the docs pages that use them, on one local[2] SparkSession (docs/spark.md).
spark: $(VENV)/.stamp-spark services
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest -q -m spark tests/spark tests/docs $(PYTEST_ARGS)

# examples/django_app (pqueue.django, docs/django.md) with pytest-django on memory, Redis and
# Postgres, manage.py pqueue_worker included: `django` on the django-tasks backport in the
# project's venv (Django 5.2, Python 3.11); `django6` on Django 6's own django.tasks in a
# Python 3.12 venv of its own (pip's cache keeps its rebuild short). DJANGO6_PYTHON is that
# interpreter: pyenv's 3.12, else python3.12 on PATH.
DJANGO_TESTS = cd examples/django_app && PYTHONDONTWRITEBYTECODE=1 $(1) -m pytest -q -p no:cacheprovider --ds djproject.settings $(PYTEST_ARGS)
DJANGO6_VENV ?= .venv-django6
DJANGO6_PYTHON ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.12*/bin/python) $(shell command -v python3.12 2>/dev/null))

django: $(VENV)/.stamp-dev services
	$(call DJANGO_TESTS,$(abspath $(BIN))/python)

django6: $(DJANGO6_VENV)/.stamp services
	$(call DJANGO_TESTS,$(abspath $(DJANGO6_VENV))/bin/python)

$(DJANGO6_VENV)/.stamp: pyproject.toml
	@test -n "$(DJANGO6_PYTHON)" || { echo "make django6 needs Python 3.12+: set DJANGO6_PYTHON=/path/to/python3.12"; exit 1; }
	$(DJANGO6_PYTHON) -m venv $(DJANGO6_VENV)
	$(DJANGO6_VENV)/bin/python -m pip install -q -e ".[redis,postgres]" "django>=6.0" "pytest>=8" "pytest-django>=4.9"
	@touch $@

# -- the venv -------------------------------------------------------------------------
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# `pqueue demo` runs on memory:// and needs no extra; the cli extra (rich) is there so the
# admin commands the README shows next (`pqueue stats`, `jobs`, `dlq`) draw their tables.
$(VENV)/.stamp-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[cli]"
	@touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $@ $(VENV)/.stamp-demo

# PySpark is a 456 MB source package the first time; pip keeps the wheel it builds in its cache.
$(VENV)/.stamp-spark: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev,spark]"
	@touch $@ $(VENV)/.stamp-dev $(VENV)/.stamp-demo

clean:
	rm -rf $(VENV) $(DJANGO6_VENV) .pytest_cache .mypy_cache .ruff_cache
