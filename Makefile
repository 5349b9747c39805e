# Everything installs from the project's own files: a virtualenv with the pinned
# Python dependencies, and the pinned CDK CLI from npm (package-lock.json).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PY_STAMP   := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: install test lint typecheck synth bench clean

install: $(PY_STAMP) $(NODE_STAMP)

$(PY_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The whole suite. Pytest's exit code 5 ("no tests collected") is a failure here.
test: install typecheck
	$(BIN)/python -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; exit $$rc

typecheck: install
	$(BIN)/python -m mypy

synth: install
	cdk synth --quiet

# retrysafe vs Powertools side by side; writes benchmarks/results.json, RESULTS.md, comparison.png.
bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.bench

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache
