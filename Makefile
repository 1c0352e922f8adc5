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

# Virtualenvs are built by uv (seconds instead of minutes) from the same pinned requirement files;
# `INSTALLER=pip` or a machine where uv cannot be had falls back to `python -m venv` + pip.
# uv comes from PATH, else a private copy in .venv-uv installed once with pip.
INSTALLER ?= uv
# PyPI uv 0.13.8 (2026-11)
UV_VERSION := 0.13.8
UV_HOME := .venv-uv
UV = $(or $(shell command -v uv 2>/dev/null),$(UV_HOME)/bin/uv)
# uv must use the interpreter make was given and never download one of its own.
export UV_PYTHON_DOWNLOADS := never
# uv installs without compiling the SDKs' 10,000 modules (pip's 1-2 minutes); Python writes the bytecode
# of the few hundred the program imports on first use. PYTHONDONTWRITEBYTECODE would make every run
# parse them again (make plan: ~4.5 s becomes ~9 s), so make's commands run without it.
unexport PYTHONDONTWRITEBYTECODE

# $(call venv,DIR,PIP-INSTALL-ARGS): create DIR if missing and install the pinned requirements into it.
# --seed puts pip in a uv-built venv too, so `pulumi install` (Pulumi.yaml's pip toolchain) keeps working.
define venv
	@set -e; if [ "$(INSTALLER)" = uv ] && [ -x "$(UV)" ]; then \
		test -x $(1)/bin/python || "$(UV)" venv --quiet --seed --python "$(PYTHON)" $(1); \
		echo "uv pip install $(2) -> $(1)" >&2; \
		"$(UV)" pip install --quiet --python $(1)/bin/python $(2); \
	else \
		test -x $(1)/bin/python || $(PYTHON) -m venv $(1); \
		echo "pip install $(2) -> $(1)" >&2; \
		$(1)/bin/python -m pip install --quiet --upgrade pip; \
		$(1)/bin/python -m pip install --quiet $(2); \
	fi
	@touch $(1)/.installed
endef

## help: list these targets (the default)
help:
	@sed -n 's/^## \([a-z-]*\): /\1\t/p' $(MAKEFILE_LIST) | awk -F'\t' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: help plan plan-diff test lint typecheck unit workflows bench clean policy-venv checkov-venv venvs uv-bootstrap docs

# Tried once (the marker stays on failure too): a machine without uv goes on with pip, never retrying.
UV_MARK := $(UV_HOME)/.tried
$(UV_MARK):
	@if [ "$(INSTALLER)" = uv ] && ! command -v uv >/dev/null 2>&1; then \
		$(PYTHON) -m pip install --quiet --target $(UV_HOME) uv==$(UV_VERSION) 2>/dev/null || \
		{ rm -rf $(UV_HOME) && $(PYTHON) -m venv $(UV_HOME) && \
			$(UV_HOME)/bin/python -m pip install --quiet uv==$(UV_VERSION); } || \
		echo "uv could not be installed; building virtualenvs with pip" >&2; \
	fi
	@mkdir -p $(UV_HOME) && touch $(UV_MARK)

## uv-bootstrap: install uv into .venv-uv unless it is on PATH
uv-bootstrap: $(UV_MARK)

$(STAMP): requirements.txt requirements-dev.txt | $(UV_MARK)
	$(call venv,$(VENV),-r requirements-dev.txt)

# The CrossGuard pack's own virtualenv (PulumiPolicy.yaml names it): pulumi-policy pins protobuf apart from ours.
POLICY_STAMP := policy/venv/.installed
$(POLICY_STAMP): policy/requirements.txt | $(UV_MARK)
	$(call venv,policy/venv,-r policy/requirements.txt)

# checkov's own virtualenv: checkov pins packaging and others apart from the project's pins.
CHECKOV_STAMP := .venv-checkov/.installed
$(CHECKOV_STAMP): | $(UV_MARK)
	$(call venv,.venv-checkov,checkov==3.3.30)

## checkov-venv: create checkov's virtualenv (the test suite scans rendered objects with it)
checkov-venv: $(CHECKOV_STAMP)

## policy-venv: create the policy pack's virtualenv (for `pulumi preview --policy-pack policy`)
policy-venv: $(POLICY_STAMP)

## plan: evaluate the stack offline and print verdicts, quota, cost and what would be created (STACK=dev|prod FORMAT=text|markdown)
plan: $(STAMP)
	@$(BIN)/python -m aks_gpu_platform.plan plan --stack $(STACK) --format $(FORMAT)

## plan-diff: what the working tree changes against git ref BASE (default main): creates, updates, replaces, deletes
plan-diff: $(STAMP)
	@$(BIN)/python -m aks_gpu_platform.plan plan-diff --stack $(STACK) --base $(BASE) --format $(FORMAT)

## docs: regenerate docs/config-reference.md, the stack-file schema, Pulumi.yaml's config: block, provider/adapters.py, the tested pins (constraints.txt) and the team pool tables of docs/for-ml-teams.md
docs: $(STAMP)
	$(BIN)/python -m tools.config_reference
	$(BIN)/python -m tools.adapters_gen
	$(BIN)/python -m tools.constraints
	$(BIN)/python -m tools.team_pools

## bench: offline evaluation time and memory vs bare SDK registrations, and the deploy critical path
bench: $(STAMP)
	$(BIN)/python -m tools.bench

## test: lint, type check and every test
# The four checks are independent: `make test` runs them side by side (-j), and pytest spreads the test files over
# every core (pytest-xdist; a file's tests stay on one worker, so its module fixtures are evaluated once).
test:
	@$(MAKE) --no-print-directory -j4 lint typecheck workflows unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# pyright allocates mostly short-lived objects: a 128 MB young generation (node's default is 16-32 MB)
# means fewer collections; measured paired on 2 cores, a median 34 s instead of 39 s (+170 MB peak).
# typecheck and workflows are skipped when they passed before on the same inputs (tools/check_stamp.py says which;
# CHECK_STAMPS=off runs them anyway).
typecheck: $(STAMP)
	@$(BIN)/python -m tools.check_stamp typecheck -- \
		env NODE_OPTIONS="$${NODE_OPTIONS:-} --max-semi-space-size=128" $(BIN)/pyright

unit: $(STAMP) $(POLICY_STAMP) $(CHECKOV_STAMP)
	$(BIN)/pytest -n auto --dist loadfile

$(TOOLS_STAMP): requirements-tools.txt | $(UV_MARK)
	$(call venv,$(TOOLS),-r requirements-tools.txt)

## venvs: build all four virtualenvs (make -j4 venvs builds them side by side)
venvs: $(STAMP) $(POLICY_STAMP) $(CHECKOV_STAMP) $(TOOLS_STAMP)

## workflows: validate .github/workflows against GitHub's schema and audit them with zizmor (offline)
workflows: $(TOOLS_STAMP) $(STAMP)
	@$(BIN)/python -m tools.check_stamp workflows -- sh -c '\
		$(TOOLS)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml && \
		$(TOOLS)/bin/zizmor --offline --persona pedantic .github/workflows/'

clean:
	rm -rf $(VENV) $(TOOLS) policy/venv .venv-checkov $(UV_HOME) out .pytest_cache .ruff_cache
