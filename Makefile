# One virtualenv for everything: the folder Pulumi.yaml names (runtime.options.virtualenv).
PYTHON ?= python3
VENV := venv
BIN := $(VENV)/bin
STACK ?= dev
DETAIL ?=
FORMAT ?= text
BASE ?=
STAMP := $(VENV)/.installed
# Workflow linters live in their own venv so their dependencies never move the stack's pins.
TOOLS := .venv-tools
TOOLS_STAMP := $(TOOLS)/.installed

# Every virtualenv installs from its lock in locks/: the whole dependency closure, each file pinned by hash, one set
# for every machine and every later day. The requirement files say what we ask for; `make lock` resolves them into
# locks/, keeping every version the lock already has; `make lock UPGRADE=1` takes the newest each file allows.
# Virtualenvs are built by uv (seconds instead of minutes); `INSTALLER=pip` or a machine where uv cannot be had
# falls back to `python -m venv` + pip, from the same locks. uv comes from PATH, else a private copy in .venv-uv
# installed once with pip from locks/uv.txt.
INSTALLER ?= uv
UV_HOME := .venv-uv
UV = $(or $(shell command -v uv 2>/dev/null),$(UV_HOME)/bin/uv)
# uv must use the interpreter make was given and never download one of its own.
export UV_PYTHON_DOWNLOADS := never
# uv installs without compiling the SDKs' 10,000 modules (pip's 1-2 minutes); Python writes the bytecode
# of the few hundred the program imports on first use. PYTHONDONTWRITEBYTECODE would make every run
# parse them again (make plan: ~4.5 s becomes ~9 s), so make's commands run without it.
unexport PYTHONDONTWRITEBYTECODE

# $(call venv,DIR,LOCK[,editable]): make DIR's packages exactly LOCK's, plus the project itself with `editable`. uv
# creates DIR if missing and removes anything else; pip removes nothing, so the pip path builds DIR afresh without the
# seeded pip/setuptools and installs into it with the outer interpreter's pip (`--python`, pip >= 22.3).
define venv
	@set -e; if [ "$(INSTALLER)" = uv ] && [ -x "$(UV)" ]; then \
		test -x $(1)/bin/python || "$(UV)" venv --quiet --python "$(PYTHON)" $(1); \
		echo "uv pip sync $(2) -> $(1)" >&2; \
		"$(UV)" pip sync --quiet --require-hashes --python $(1)/bin/python $(2); \
	else \
		rm -rf $(1); $(PYTHON) -m venv --without-pip $(1); \
		echo "pip install -r $(2) -> $(1)" >&2; \
		$(PYTHON) -m pip --python $(1)/bin/python install --quiet --disable-pip-version-check \
			--require-hashes --no-deps -r $(2); \
	fi
	$(if $(3),$(call editable,$(1)))
	@touch $(1)/.installed
endef

# $(call editable,DIR): the project itself into DIR as an editable install. setuptools maps `aks_gpu_platform.components`
# and `aks_gpu_platform.config` to components/ and config/ from pyproject.toml's package-dir, the mapping the wheel is
# built with, so a checkout imports the one package name on any OS. --no-deps: the lock brought them; setuptools comes
# from DIR's own lock (no build isolation, nothing downloaded). A sync removes it (not in the lock): installed after.
define editable
	@set -e; if [ "$(INSTALLER)" = uv ] && [ -x "$(UV)" ]; then \
		"$(UV)" pip install --quiet --no-deps --no-build-isolation --python $(1)/bin/python -e .; \
	else \
		$(PYTHON) -m pip --python $(1)/bin/python install --quiet --disable-pip-version-check \
			--no-deps --no-build-isolation -e .; \
	fi
endef

# Pyright cannot run the editable install's import hook: setuptools' strict editable mode writes the same package-dir
# mapping as a tree of links to the sources (build/__editable__.*, pyproject.toml's pyright extraPaths), made afresh so
# a new or deleted module shows.
STATIC_VIEW = rm -rf build/__editable__.* build/static-view && mkdir -p build/static-view && $(BIN)/python -c \
	'from setuptools import build_meta; build_meta.build_editable("build/static-view", {"editable_mode": "strict"})' \
	>build/static-view/log 2>&1 || { cat build/static-view/log >&2; exit 1; }

# $(call lock,REQUIREMENTS,LOCK): resolve REQUIREMENTS for every Python from 3.11 and every platform, with hashes.
LOCK_UPGRADE = $(if $(UPGRADE),--upgrade)
define lock
	"$(UV)" pip compile --quiet --universal --python-version 3.11 --generate-hashes $(LOCK_UPGRADE) \
		--custom-compile-command "make lock" -o $(2) $(1)

endef
LOCKS := requirements-dev.txt:locks/venv.txt policy/requirements.txt:locks/policy.txt \
	requirements-tools.txt:locks/tools.txt requirements-checkov.txt:locks/checkov.txt requirements-uv.txt:locks/uv.txt

## help: list these targets (the default)
help:
	@sed -n 's/^## \([a-z-]*\): /\1\t/p' $(MAKEFILE_LIST) | awk -F'\t' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: help plan plan-diff check test lint typecheck unit workflows bench clean policy-venv checkov-venv venvs uv-bootstrap docs lock

# Tried once (the marker stays on failure too): a machine without uv goes on with pip, never retrying.
UV_MARK := $(UV_HOME)/.tried
$(UV_MARK):
	@if [ "$(INSTALLER)" = uv ] && ! command -v uv >/dev/null 2>&1; then \
		$(PYTHON) -m pip install --quiet --require-hashes --target $(UV_HOME) -r locks/uv.txt 2>/dev/null || \
		{ rm -rf $(UV_HOME) && $(PYTHON) -m venv $(UV_HOME) && \
			$(UV_HOME)/bin/python -m pip install --quiet --require-hashes -r locks/uv.txt; } || \
		echo "uv could not be installed; building virtualenvs with pip" >&2; \
	fi
	@mkdir -p $(UV_HOME) && touch $(UV_MARK)

## uv-bootstrap: install uv into .venv-uv unless it is on PATH
uv-bootstrap: $(UV_MARK)

$(STAMP): locks/venv.txt pyproject.toml | $(UV_MARK)
	$(call venv,$(VENV),locks/venv.txt,editable)
	@$(STATIC_VIEW)

# The CrossGuard pack's own virtualenv (PulumiPolicy.yaml names it): pulumi-policy pins protobuf apart from ours.
POLICY_STAMP := policy/venv/.installed
$(POLICY_STAMP): locks/policy.txt pyproject.toml | $(UV_MARK)
	$(call venv,policy/venv,locks/policy.txt,editable)

# checkov's own virtualenv: checkov pins packaging and others apart from the project's pins.
CHECKOV_STAMP := .venv-checkov/.installed
$(CHECKOV_STAMP): locks/checkov.txt | $(UV_MARK)
	$(call venv,.venv-checkov,locks/checkov.txt)

## checkov-venv: create checkov's virtualenv (the test suite scans rendered objects with it)
checkov-venv: $(CHECKOV_STAMP)

## policy-venv: create the policy pack's virtualenv (for `pulumi preview --policy-pack policy`)
policy-venv: $(POLICY_STAMP)

## plan: evaluate the stack offline and print verdicts, quota, cost and what would be created (STACK=dev|prod FORMAT=text|markdown)
plan: $(STAMP)
	@$(BIN)/python -m aks_gpu_platform.plan plan --stack $(STACK) --format $(FORMAT)$(if $(DETAIL), --detail)

## plan-diff: what the working tree changes against git ref BASE (default: origin/HEAD, main or master): creates, updates, replaces, deletes
plan-diff: $(STAMP)
	@$(BIN)/python -m aks_gpu_platform.plan plan-diff --stack $(STACK) $(if $(BASE),--base $(BASE)) --format $(FORMAT)

## docs: regenerate docs/config-reference.md, the stack-file schema, Pulumi.yaml's config: block, provider/adapters.py, the tested pins (constraints.txt), the team pool tables of docs/for-ml-teams.md and the add-on tables of docs/charts.md
docs: $(STAMP)
	$(BIN)/python -m tools.config_reference
	$(BIN)/python -m tools.adapters_gen
	$(BIN)/python -m tools.constraints
	$(BIN)/python -m tools.team_pools
	$(BIN)/python -m tools.charts_doc

## check: will the stack's cluster take a Job, JobSet, Pod or Deployment: admission, Pod Security, queue and quota, nodes (STACK=dev MANIFEST="a.yaml b.yaml")
check: $(STAMP)
	@test -n "$(MANIFEST)" || { echo 'make check: name the manifests, e.g. make check STACK=dev MANIFEST=examples/team-jobset/jobset.yaml' >&2; exit 2; }
	@$(BIN)/python -m aks_gpu_platform.plan check --stack $(STACK) $(MANIFEST)

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
	@$(STATIC_VIEW)
	@$(BIN)/python -m tools.check_stamp typecheck -- \
		env NODE_OPTIONS="$${NODE_OPTIONS:-} --max-semi-space-size=128" $(BIN)/pyright

unit: $(STAMP) $(POLICY_STAMP) $(CHECKOV_STAMP)
	$(BIN)/pytest -n auto --dist loadfile

$(TOOLS_STAMP): locks/tools.txt | $(UV_MARK)
	$(call venv,$(TOOLS),locks/tools.txt)

## lock: resolve the requirement files into locks/ (UPGRADE=1 takes the newest versions they allow), then rebuild
lock: $(UV_MARK)
	@test -x "$(UV)" || { echo "make lock needs uv (make uv-bootstrap, or uv on PATH)" >&2; exit 2; }
	$(foreach pair,$(LOCKS),$(call lock,$(word 1,$(subst :, ,$(pair))),$(word 2,$(subst :, ,$(pair)))))
	@$(MAKE) --no-print-directory -j4 venvs
	$(BIN)/python -m tools.constraints

## venvs: build all four virtualenvs (make -j4 venvs builds them side by side)
venvs: $(STAMP) $(POLICY_STAMP) $(CHECKOV_STAMP) $(TOOLS_STAMP)

## workflows: validate .github/workflows against GitHub's schema and audit them with zizmor (offline)
workflows: $(TOOLS_STAMP) $(STAMP)
	@$(BIN)/python -m tools.check_stamp workflows -- sh -c '\
		$(TOOLS)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml && \
		$(TOOLS)/bin/zizmor --offline --persona pedantic .github/workflows/'

clean:
	rm -rf $(VENV) $(TOOLS) policy/venv .venv-checkov $(UV_HOME) out .pytest_cache .ruff_cache
