# The two quickstart commands (`make demo`, `make test`) set up .venv when needed.
# torch is installed first, pinned, so pip takes the CPU wheel where one is
# provided and never resolves a newer (multi-GB CUDA) build behind our back.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
CORES ?= 2
TEST_WORKERS ?= 2
STAMP := $(VENV)/.installed
# Rules call `python -m nodedp`: the venv's python must come first.
export PATH := $(abspath $(BIN)):$(PATH)

# CONFIG=my-grid.yaml: a grid of one's own instead of config.yaml (replaces it, never merges; checked
# first by `python -m nodedp check-config`, which names a YAML error's line). STUDY=name: one study.
# SNAKEMAKE_ARGS: more Snakemake options, given last (e.g. `--dry-run`, `--profile slurm`).
CONFIG ?=
STUDY ?=
SNAKEMAKE_ARGS ?=
CONFIG_ARGS := $(if $(CONFIG),--configfile $(CONFIG))
CHECK_CONFIG := $(if $(CONFIG),$(BIN)/python -m nodedp check-config $(CONFIG) &&)
# What redrawing may run: it never trains.
REDRAW_RULES := collect summarize tables figures regime reproduction_tables paper_tables main_tex study_table_html \
  paper_table_html ledger_summary about study_index audit_report
# The `paper` rule draws what finished runs can draw: every study whose runs have all finished, the paper tables
# they feed, paper/main.tex; STUDY=name (NODEDP_STUDIES for the Snakefile): that study only.
export NODEDP_STUDIES := $(STUDY)
REPORT ?= paper/report.html

.PHONY: venv demo test paper report audit lint dryrun clean-demo gpu-wheels gpu-check

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[workflow,test,lint]"
	touch $(STAMP)

## The main job on the embedded synthetic default: runs -> paper/demo/{tables,figures}.
demo: $(STAMP)
	$(CHECK_CONFIG) $(BIN)/snakemake --cores $(CORES) demo $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

## The tests (CI runs this). TEST_WORKERS=N: the test files spread over N processes (pytest-xdist; a file's tests
## stay in one process, so the Slurm cluster comes up once; each process builds its own session fixtures), 0: all
## in this process.
test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

## Redraw every study's tables and figures (or STUDY's) from existing runs; refuses to train anything.
## Targets come first: options that take several values (--allowed-rules, --configfile) would swallow them.
paper: $(STAMP)
	$(CHECK_CONFIG) $(BIN)/snakemake --cores $(CORES) paper --rerun-triggers mtime input --forcerun about \
	  $(CONFIG_ARGS) --allowed-rules $(REDRAW_RULES) $(SNAKEMAKE_ARGS)

## The HTML report of what is drawn (after `make demo` or `make paper`): tables, figures with captions, ledger
## summaries, configuration, version and commit. REPORT=path: where (default paper/report.html).
report: $(STAMP)
	$(CHECK_CONFIG) $(BIN)/snakemake --cores $(CORES) --report $(REPORT) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

## Every study's empirical privacy audit (its `audit:` block; STUDY=name: that study's only): canary lower bounds
## on ε beside the claimed ε and a TSTF membership-inference attack -> paper/<study>/tables/audit.{md,tex},
## paper/<study>/figures/audit.png.
audit: $(STAMP)
	$(CHECK_CONFIG) $(BIN)/snakemake --cores $(CORES) $(if $(STUDY),paper/$(STUDY)/tables/audit.md,audit) \
	  $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

## What `snakemake` would run for the whole grid (or CONFIG's), without running it.
dryrun: $(STAMP)
	$(CHECK_CONFIG) $(BIN)/snakemake --cores $(CORES) --dry-run --quiet rules $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

## Delete every file the demo study made (graphs, splits, runs, summaries, tables and figures of its DAG).
clean-demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) demo --delete-all-output $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

## The project's checks (CI runs them): ruff's lint and format, mypy on src/nodedp, snakefmt and Snakemake's lint on
## the workflow, and a dry run of the whole grid.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/snakemake --lint
	$(BIN)/snakemake --dry-run --quiet rules --cores $(CORES)

## The GPU check (benchmarks/gpu_check.py, docs/scaling.md): every private method's cell on CUDA against CPU (the
## same ledger, accuracy within a tolerance, per-epoch time and GPU memory) -> $(GPU_CHECK_OUT)/gpu-check.{json,md}.
## Run on a GPU node whose Python has a CUDA torch: a venv that sees it installs the wheel files in $(GPU_WHEELS)/ (made
## by `make gpu-wheels` on a machine with network, dependencies included; carry the folder along) or, without them,
## the requirements by name.
GPU_PYTHON ?= python3
GPU_VENV := .gpu-venv
GPU_WHEELS ?= gpu-wheels
GPU_CHECK_OUT ?= gpu-check
GPU_CHECK_ARGS ?=
# What `nodedp` imports at run time, torch aside (pyproject.toml's dependencies), for the GPU node's Python.
GPU_PYVER ?= $(shell $(GPU_PYTHON) -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
GPU_REQUIREMENTS := $(shell $(PYTHON) -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb")); \
  print(" ".join(chr(34) + r.replace(" ", "") + chr(34) for r in d["project"]["dependencies"] if not r.startswith("torch>")))')

gpu-wheels:
	$(PYTHON) -m pip download --quiet --only-binary=:all: --python-version $(GPU_PYVER) \
	  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --dest $(GPU_WHEELS) $(GPU_REQUIREMENTS)
	@du -sh $(GPU_WHEELS)

gpu-check:
	test -x $(GPU_VENV)/bin/python || $(GPU_PYTHON) -m venv --system-site-packages $(GPU_VENV)
	$(GPU_PYTHON) -c 'import torch; assert torch.cuda.is_available(), "no CUDA device seen by $(GPU_PYTHON)"'
	$(GPU_VENV)/bin/python -m pip install --quiet \
	  $(if $(wildcard $(GPU_WHEELS)/*.whl),--no-deps $(wildcard $(GPU_WHEELS)/*.whl),$(GPU_REQUIREMENTS))
	$(GPU_VENV)/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(GPU_VENV)/bin/python benchmarks/gpu_check.py --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)
