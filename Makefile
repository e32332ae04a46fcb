# One command each: `make serve` runs Tickets locally, `make test` runs every test.
# Each target creates .venv and installs what it needs on a fresh machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
CDK := node_modules/.bin/cdk
PORT ?= 8000
REGION ?=
ENDPOINT_URL ?=

# jsii (the CDK's bridge to Node) prints an end-of-life banner on Node 20.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: test serve synth deploy bench clean

$(INSTALLED): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

$(CDK): package.json
	npm install --no-audit --no-fund --no-package-lock --loglevel=error
	touch $@

# npm install (package.json) also brings dynalite, the second DynamoDB the tests run against.
test: $(INSTALLED) $(CDK)
	$(PY) -m pytest

serve: $(INSTALLED)
	$(PY) -m tickets_local --port $(PORT) $(if $(REGION),--region $(REGION)) $(if $(ENDPOINT_URL),--endpoint-url $(ENDPOINT_URL))

synth: $(INSTALLED) $(CDK)
	$(CDK) synth --quiet

deploy: $(INSTALLED) $(CDK)
	$(CDK) deploy --all

bench: $(INSTALLED)
	$(PY) -m bench

clean:
	rm -rf $(VENV) node_modules cdk.out bench/out .pytest_cache .hypothesis
