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
EXTRA ?=
STAMP := $(VENV)/.csbench-installed
# Snakemake reads --configfile files before any workflow code runs and names neither the file nor the
# line of a YAML error; every target checks its config files first (file:line:column, then the schema).
CHECK_CONFIG := $(BIN)/python -m csbench.config

.PHONY: setup apt venv demo test reproduce lint dag report clean-demo server

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
# docs/reproduce.md). Downloads by default; MIRROR=<dir> reads <dir>/<source>/<file> instead;
# EXTRA=<files> adds config files over it (e.g. config/reproduce-instruct.yaml: chat rows and the 1.5B in 20Q and ProtoQA).
reproduce: setup
	@echo "==> [4/4] reproduce (config/reproduce.yaml $(EXTRA)$(if $(MIRROR), with mirror $(MIRROR)), $(CORES) cores)"
	@for f in config/reproduce.yaml $(EXTRA); do $(CHECK_CONFIG) $$f || exit 1; done
	$(BIN)/snakemake --cores $(CORES) --configfile config/reproduce.yaml $(EXTRA) $(if $(MIRROR),--config mirror=$(MIRROR)) --printshellcmds --rerun-incomplete
	@echo "reproduce finished: see results/RESULTS.md"

# llama-cpp-python's OpenAI-compatible server in its own venv (the project's .venv stays as
# pinned): no wheel on PyPI for this machine, so pip compiles llama.cpp from source (gcc, cmake).
# ggml keeps -march=native (AVX-512 etc. where the CPU has them) but the AMX instructions are
# compiled out: on CPUs with AMX, ggml's AMX matmul path dies with a general protection fault in
# libggml-cpu.so on the first completion (upstream ggml bug). gcc's explicit -mno-* flags win over
# what -march=native turns on. The stamp records the package and the flags: when either changes,
# or an older .venv-server has no stamp, the venv is rebuilt from scratch (--no-cache-dir: pip's
# cache of built wheels is keyed by the sdist, not by CMAKE_ARGS). Used by
# tests/test_served_real.py (skipped without it) and bench/served_agreement.py; see docs/models.md.
SERVER_VENV := .venv-server
LLAMA_CPP_PYTHON := llama-cpp-python[server]==0.3.36
SERVER_CPU_FLAGS := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
SERVER_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=ON -DCMAKE_C_FLAGS='$(SERVER_CPU_FLAGS)' -DCMAKE_CXX_FLAGS='$(SERVER_CPU_FLAGS)'
SERVER_STAMP := $(SERVER_VENV)/.csbench-server
SERVER_BUILD_ID = printf '%s\n' "$(LLAMA_CPP_PYTHON)" "CMAKE_ARGS=$(SERVER_CMAKE_ARGS)"

server:
	@echo "==> llama-cpp-python server in $(SERVER_VENV) (compiles llama.cpp once: see docs/models.md for the time)"
	@if [ -f $(SERVER_STAMP) ] && $(SERVER_BUILD_ID) | cmp -s - $(SERVER_STAMP) && \
	  $(SERVER_VENV)/bin/python -c "import llama_cpp.server.app" 2>/dev/null; then \
	  echo "    up to date ($(SERVER_STAMP))"; exit 0; fi; \
	if command -v cmake >/dev/null && command -v g++ >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ >/dev/null; \
	else echo "    please run: sudo apt-get install cmake g++"; exit 1; fi; \
	if [ -e $(SERVER_VENV) ]; then echo "    replacing $(SERVER_VENV) (built with other flags or unfinished)"; rm -rf -- "$(SERVER_VENV)"; fi; \
	$(PY) -m venv $(SERVER_VENV) && $(SERVER_VENV)/bin/pip install -q --upgrade pip || exit 1; \
	echo "    CMAKE_ARGS=\"$(SERVER_CMAKE_ARGS)\""; \
	echo "    compiling (log: $(SERVER_VENV)/build.log)"; SECONDS=0; \
	if ! CMAKE_ARGS="$(SERVER_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(CORES) \
	  $(SERVER_VENV)/bin/pip install -v --no-cache-dir '$(LLAMA_CPP_PYTHON)' >$(SERVER_VENV)/build.log 2>&1; then \
	  tail -n 30 $(SERVER_VENV)/build.log; echo "    build failed: see $(SERVER_VENV)/build.log"; exit 1; fi; \
	echo "    built in $$((SECONDS / 60)) min $$((SECONDS % 60)) s"; \
	$(SERVER_VENV)/bin/python -c "import llama_cpp, llama_cpp.server.app; \
	info = llama_cpp.llama_print_system_info().decode(); print('   ', info); \
	assert 'AMX' not in info, 'AMX compiled in: ggml crashes with it, see docs/models.md'; \
	print('    llama-cpp-python', llama_cpp.__version__, 'server ready')" || exit 1; \
	$(SERVER_BUILD_ID) >$(SERVER_STAMP)

lint: setup
	$(BIN)/snakemake --lint

dag: setup
	@$(CHECK_CONFIG) resources/demo/config.yaml
	$(BIN)/snakemake --configfile resources/demo/config.yaml --dag | dot -Tsvg > dag.svg

report: setup
	@$(CHECK_CONFIG) resources/demo/config.yaml
	$(BIN)/snakemake --cores $(CORES) --configfile resources/demo/config.yaml --report results/report.html
