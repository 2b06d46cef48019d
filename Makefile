# The two quickstart commands (`make demo`, `make test`) set up .venv when needed.
# torch is installed first, pinned, so pip takes the CPU wheel where one is
# provided and never resolves a newer (multi-GB CUDA) build behind our back.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
CORES ?= 2
STAMP := $(VENV)/.installed
# Rules call `python -m nodedp`: the venv's python must come first.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: venv demo test paper lint dryrun clean-demo

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[workflow,test]"
	touch $(STAMP)

## The main job on the embedded synthetic default: runs -> paper/demo/{tables,figures}.
demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) demo

## The tests (CI runs this).
test: $(STAMP)
	$(BIN)/python -m pytest

## Redraw a study's tables and figures from its existing runs; refuses to train anything.
STUDY ?= demo
paper: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --rerun-triggers mtime --allowed-rules collect summarize tables figures reproduction_tables \
	  paper/$(STUDY)/tables/accuracy.md paper/$(STUDY)/tables/accuracy.tex \
	  paper/$(STUDY)/figures/accuracy_vs_epsilon.png

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakemake --dry-run --quiet rules --cores $(CORES)
