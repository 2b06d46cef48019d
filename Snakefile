# nodedp: one DAG from graphs to paper tables and figures, for every study of the grid.
# Targets: (default) every study of the grid trained and drawn, the seed papers' tables, paper/main.tex;
# `demo`: the demo study (with its quick audit); `runs`: every training run; `data`: graphs and splits; `paper`:
# redraw what finished runs can draw (never trains: use it with --allowed-rules, as `make paper` does); `audit`:
# every study's `audit:` (canary lower bounds on ε beside the claimed ε, membership inference).
# One dataset of a study: `snakemake results/summary/main/runs/<dataset>.parquet`.
# `snakemake --report R.html` (any target; the default one reports what `paper` would redraw).
# The grid is config.yaml, or the file `--configfile` names: that replaces config.yaml, never merges into it.
import os
import sys

from snakemake.utils import min_version

min_version("9.20")  # the workflow tests pass with 9.20.0 and 9.27.1; they fail with 9.0.1 and 8.30.0

sys.path.insert(0, os.path.join(workflow.basedir, "src"))
from nodedp.config.read import ConfigError, read_config

# A YAML error in a --configfile never gets here: Snakemake parses that file before it reads this one and names
# neither file nor line (`make ... CONFIG=` and `python -m nodedp check-config` do; so does `snakemake --verbose`).
if not workflow.overwrite_configfiles:
    try:
        read_config("config.yaml")  # a YAML error with its line (Snakemake's own names neither file nor line)
    except ConfigError as err:
        raise SystemExit(str(err)) from None

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# A scheduler's SIGTERM stops Snakemake after its running jobs at any moment, also while it records a finished job
# (its own handler would wait there for a lock its thread holds, for good): nodedp.signals.
onstart:
    from nodedp.signals import defer_to_thread

    defer_to_thread()


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/structure.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/audit.smk"


rule all:
    default_target: True
    input:
        default_targets,


rule demo:
    input:
        demo_targets,


rule data:
    input:
        data_targets(),


rule runs:
    input:
        [run_targets(study) for study in STUDIES],


rule paper:
    input:
        paper_redraw_targets,


rule audit:
    input:
        all_audit_targets(),
