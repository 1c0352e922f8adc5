# One virtualenv for everything: the folder Pulumi.yaml names (runtime.options.virtualenv).
PYTHON ?= python3
VENV := venv
BIN := $(VENV)/bin
STACK ?= dev
FORMAT ?= text
BASE ?= main
STAMP := $(VENV)/.installed
# Workflow linters live in their own venv so their dependencies never move the stack's pins.
TOOLS := .venv-tools
TOOLS_STAMP := $(TOOLS)/.installed

.PHONY: plan plan-diff test lint typecheck unit workflows bench clean policy-venv checkov-venv

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

# The CrossGuard pack's own virtualenv (PulumiPolicy.yaml names it): pulumi-policy pins protobuf apart from ours.
POLICY_STAMP := policy/venv/.installed
$(POLICY_STAMP): policy/requirements.txt
	test -x policy/venv/bin/python || $(PYTHON) -m venv policy/venv
	policy/venv/bin/python -m pip install --quiet -r policy/requirements.txt
	touch $(POLICY_STAMP)

# checkov's own virtualenv: checkov pins packaging and others apart from the project's pins.
CHECKOV_STAMP := .venv-checkov/.installed
$(CHECKOV_STAMP):
	test -x .venv-checkov/bin/python || $(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet checkov==3.3.30
	touch $(CHECKOV_STAMP)

## checkov-venv: create checkov's virtualenv (the test suite scans rendered objects with it)
checkov-venv: $(CHECKOV_STAMP)

## policy-venv: create the policy pack's virtualenv (for `pulumi preview --policy-pack policy`)
policy-venv: $(POLICY_STAMP)

## plan: evaluate the stack offline and print verdicts, quota, cost and what would be created (STACK=dev|prod FORMAT=text|markdown)
plan: $(STAMP)
	$(BIN)/python -m tools.plan --stack $(STACK) --format $(FORMAT)

## plan-diff: what the working tree changes against git ref BASE (default main): creates, updates, replaces, deletes
plan-diff: $(STAMP)
	$(BIN)/python -m tools.plan_diff --stack $(STACK) --base $(BASE) --format $(FORMAT)

## bench: offline evaluation time and memory vs bare SDK registrations, and the deploy critical path
bench: $(STAMP)
	$(BIN)/python -m tools.bench

## test: lint, type check and every test
test: lint typecheck workflows unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

unit: $(STAMP) $(POLICY_STAMP) $(CHECKOV_STAMP)
	$(BIN)/pytest

$(TOOLS_STAMP): requirements-tools.txt
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet -r requirements-tools.txt
	touch $(TOOLS_STAMP)

## workflows: validate .github/workflows against GitHub's schema and audit them with zizmor (offline)
workflows: $(TOOLS_STAMP)
	$(TOOLS)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(TOOLS)/bin/zizmor --offline --persona pedantic .github/workflows/

clean:
	rm -rf $(VENV) $(TOOLS) policy/venv .venv-checkov out .pytest_cache .ruff_cache
