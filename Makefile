# From a fresh machine: `make demo`, `make test` and `make reproduce` (each sets everything up).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
NLTK_DATA := $(CURDIR)/resources/nltk_data
export NLTK_DATA
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM := false
CORES ?= 2
MIRROR ?=
STAMP := $(VENV)/.csbench-installed
# Snakemake reads --configfile files before any workflow code runs and names neither the file nor the
# line of a YAML error; every target checks its config files first (file:line:column, then the schema).
CHECK_CONFIG := $(BIN)/python -m csbench.config

.PHONY: setup apt venv demo test reproduce lint dag report clean-demo

APT_PKGS := wordnet-base wordnet-sense-index graphviz

apt:
	@echo "==> [1/4] system packages ($(APT_PKGS))"
	@if dpkg -s $(APT_PKGS) >/dev/null 2>&1; then echo "    already installed"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PKGS) >/dev/null; \
	else echo "    please run: sudo apt-get install $(APT_PKGS)"; exit 1; fi

$(STAMP): envs/requirements.txt pyproject.toml
	@echo "==> [2/4] virtual environment $(VENV)"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/pip install -q --upgrade pip
	@echo "    torch==2.13.0 (CPU build) first"
	@$(BIN)/pip install -q torch==2.13.0
	@echo "    pinned requirements (envs/requirements.txt)"
	@$(BIN)/pip install -q -r envs/requirements.txt
	@$(BIN)/pip install -q --no-deps -e .
	@touch $@

venv: $(STAMP)

setup: apt venv
	@echo "==> [3/4] WordNet for NLTK (offline) in $(NLTK_DATA)"
	@$(BIN)/python -m csbench.nltk_setup $(NLTK_DATA)

demo: setup
	@echo "==> [4/4] demo DAG (resources/demo/config.yaml, $(CORES) cores)"
	@$(CHECK_CONFIG) resources/demo/config.yaml
	$(BIN)/snakemake --cores $(CORES) --configfile resources/demo/config.yaml --printshellcmds
	@echo "demo finished: see results/"

test: setup
	@echo "==> [4/4] tests"
	$(BIN)/python -m pytest -q -ra tests

# Every task on the real sources with real models (config/reproduce.yaml; hours of CPU, see
# docs/reproduce.md). Downloads by default; MIRROR=<dir> reads <dir>/<source>/<file> instead.
reproduce: setup
	@echo "==> [4/4] reproduce (config/reproduce.yaml$(if $(MIRROR), with mirror $(MIRROR)), $(CORES) cores)"
	@$(CHECK_CONFIG) config/reproduce.yaml
	$(BIN)/snakemake --cores $(CORES) --configfile config/reproduce.yaml $(if $(MIRROR),--config mirror=$(MIRROR)) --printshellcmds
	@echo "reproduce finished: see results/RESULTS.md"

lint: setup
	$(BIN)/snakemake --lint

dag: setup
	@$(CHECK_CONFIG) resources/demo/config.yaml
	$(BIN)/snakemake --configfile resources/demo/config.yaml --dag | dot -Tsvg > dag.svg

report: setup
	@$(CHECK_CONFIG) resources/demo/config.yaml
	$(BIN)/snakemake --cores $(CORES) --configfile resources/demo/config.yaml --report results/report.html
