# Validation, wildcard constraints and input functions: each asks the package's planner (nodedp.grid for cells,
# targets and what a redraw or report can draw; nodedp.jobs for cluster requests). No rules here.
import functools
import json
import os
import shlex
import sys

from snakemake.utils import validate

# Jobs (local, conda or SLURM) run this checkout's nodedp, whatever the environment. NODEDP_PROGRESS=1:
# progress bars into each rule's log, one line every 30 s (a prefix, not an option in every rule's
# command: a changed command would rerun every finished job under Snakemake's `code` rerun trigger).
# NODEDP_WORKER: `python -m nodedp` runs in a fork of this host's warm worker (nodedp.worker), which exits after
# that many idle seconds; NODEDP_WORKER=0 in the environment runs each job in a fresh interpreter.
SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
# NODEDP_CONSOLE_FD: a rule's output goes to its log, so a failing command also writes its one-line error on
# descriptor 9, Snakemake's own stderr (the console), naming the log.
# NODEDP_WORKFLOW=1: a table's or figure's footer names its workflow target (by hand: the command itself).
shell.prefix(
    f"set -euo pipefail; exec 9>&2; export PYTHONPATH={shlex.quote(SRC)} NODEDP_PROGRESS=1"
    " NODEDP_WORKER=${{NODEDP_WORKER-60}} NODEDP_CONSOLE_FD=9 NODEDP_WORKFLOW=1; "
)

from nodedp import grid
from nodedp.analysis.paper_tables import PAPER_TABLES
from nodedp.config.check import check_config
from nodedp.config.read import SCHEMA, ConfigError, check_schema
from nodedp.config.studies import regime_study
from nodedp.config.variants import resolve_method
from nodedp.contract.registry import PluginError
from nodedp.jobs import job_resources as _job_resources

# The grid's file(s), named in every config error: config.yaml, or what --configfile gave instead (Snakefile).
CONFIG_FILES = " + ".join(str(path) for path in workflow.overwrite_configfiles or ["config.yaml"])
try:
    # One line naming the field (Snakemake's validate prints the whole schema after it), then the defaults.
    check_schema(config)
    validate(config, str(SCHEMA))
    # What a JSON schema cannot say (method hyperparameters, δ and batch sizes against the datasets'
    # public sizes): checked by the package itself, before any job runs.
    check_config(config, graphs_dir="resources/graphs")
except (ConfigError, PluginError) as err:
    raise SystemExit(f"{CONFIG_FILES}: {err}") from None
try:
    # NODEDP_STUDIES=a,b (`make paper STUDY=a`): redraw only these studies (and the configuration page).
    ONLY_STUDIES = grid.only_studies(config, os.environ.get("NODEDP_STUDIES", ""), config_name=CONFIG_FILES)
except ValueError as err:
    raise SystemExit(f"NODEDP_STUDIES: {err}") from None

STUDIES = config["studies"]
ALL_DATASETS = sorted({d for s in STUDIES.values() for d in s["datasets"]})
ALL_METHODS = sorted({m for s in STUDIES.values() for m in s["methods"]})
AUDITS = grid.audits(config)
DP_APPR = grid.dp_appr_keys(config)  # DP-APPR artifact key -> a DPAR method or variant using it
ABOUT_PAGE = grid.ABOUT_PAGE
# `snakemake --report` (read from the command line: Snakemake tells a Snakefile nothing else about its mode).
REPORTING = any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv[1:])


wildcard_constraints:
    dataset="|".join(ALL_DATASETS),
    method="|".join(ALL_METHODS),
    study="|".join(STUDIES),
    seed=r"\d+",
    eps=r"inf|\d+(\.\d+)?(e-?\d+)?",
    setting="transductive|inductive",
    figure=r"accuracy_vs_epsilon|frontier|sweep-[A-Za-z0-9_]+",
    table="|".join((*grid.STUDY_TABLES, "audit")),
    key="|".join(PAPER_TABLES),


def run_mode():
    """nodedp.grid's mode: "report" under `--report` (no job runs), "redraw" where only drawing may run (the
    `paper` target, or `--allowed-rules` as `make paper` gives), else "run". Read once Snakemake asks for inputs."""
    if REPORTING:
        return "report"
    settings = getattr(workflow, "dag_settings", None)  # set before Snakemake asks for any input
    if settings is not None and (settings.allowed_rules or "paper" in settings.targets):
        return "redraw"
    return "run"


def _say(notes):
    for line in notes:
        print(f"nodedp: {line}", file=sys.stderr)


def reportable(targets):
    """Under `--report`: the targets drawn already, this grid's configuration page among them."""
    if ABOUT_PAGE in targets and grid.draw_about_page(config, config_name=CONFIG_FILES):
        _say([f"{ABOUT_PAGE} was another grid's (or missing): drawn for {CONFIG_FILES}"])
    kept, notes = grid.reportable(config, targets)
    _say(notes)
    return kept


# --- targets -------------------------------------------------------------------------------------------------


def data_targets():
    return grid.data_targets(config)


def run_targets(study, dataset=None):
    return grid.run_targets(config, study, dataset)


def all_audit_targets():
    return grid.all_audit_targets(config)


@functools.cache
def redraw_targets():
    """What `snakemake paper` draws (nodedp.grid.redraw_targets); says on stderr what it leaves out and why."""
    targets, notes = grid.redraw_targets(config, mode=run_mode(), only=ONLY_STUDIES, config_name=CONFIG_FILES)
    _say(notes)
    return reportable(targets) if REPORTING else targets


def demo_targets(wildcards):
    targets = [
        *grid.paper_targets(config, "demo", run_mode()),
        ABOUT_PAGE,
        *(grid.audit_targets("demo") if "demo" in AUDITS else []),
    ]
    return reportable(targets) if REPORTING else targets


def default_targets(wildcards):
    """The whole grid; under `--report`, what exists to report (a report never trains)."""
    return redraw_targets() if REPORTING else grid.all_targets(config, run_mode())


def paper_redraw_targets(wildcards):
    return redraw_targets()


# --- input functions and params, by stage --------------------------------------------------------------------


def mirror_option(wildcards):
    mirror = config["download"]["mirror"]
    return f"--mirror {shlex.quote(mirror)}" if mirror else ""


def _downloaded(dataset):
    from nodedp.data import get_dataset

    return get_dataset(dataset).kind == "download"


def graph_raw_inputs(wildcards):
    return [f"resources/raw/{wildcards.dataset}"] if _downloaded(wildcards.dataset) else []


def graph_raw_option(wildcards):
    return f"--raw resources/raw/{wildcards.dataset}" if _downloaded(wildcards.dataset) else ""


# A dataset declared in the config (`datasets:`) is built from its file(s), and rebuilt when they or its
# declaration (format, direction, split, degree bounds) change; for any other dataset both are empty (nodedp.data.user).
def declared_graph_files(wildcards):
    from nodedp.data.user import declared_files

    return declared_files(wildcards.dataset)


def declared_graph(wildcards):
    from nodedp.data.user import declared_graph_params

    return declared_graph_params(wildcards.dataset)


def split_size_limits(wildcards):
    return grid.SizeLimits(config, wildcards.dataset, config_name=CONFIG_FILES)


def stability_split(wildcards):
    """The seed-0 split of the dataset's own setting (its training nodes feed DP-GNN's Algorithm 1)."""
    return grid.split_path(wildcards.dataset, 0)


def cell_split(wildcards):
    return grid.split_path(wildcards.dataset, int(wildcards.seed))


@functools.cache
def _dp_appr_key(method):
    return grid.dp_appr_key(config, method)[0]


@functools.cache
def _structure_kinds(dataset, method):
    return grid.structure_kinds(config, dataset, method)


def cell_structure_input(wildcards):
    kinds = _structure_kinds(wildcards.dataset, wildcards.method)
    key = _dp_appr_key(wildcards.method) if any(kind == "dp-appr" for kind, _ in kinds) else None
    return grid.cell_structure(wildcards.dataset, int(wildcards.seed), wildcards.eps, kinds, key)


def dp_appr_method(wildcards):
    return resolve_method(config, DP_APPR[wildcards.key])[0]


def dp_appr_hparams(wildcards):
    return grid.hparams_json(config, DP_APPR[wildcards.key])


def method_base(wildcards):
    """The registered method a cell's method (a method, variant or `@paper` name) runs."""
    return resolve_method(config, wildcards.method)[0]


def method_hparams(wildcards):
    return grid.hparams_json(config, wildcards.method)


def job_resources(kind):
    """A rule's cluster requests for its kind of job (nodedp.jobs; config `resources:`)."""
    return _job_resources(config, kind)


def dataset_run_metrics(wildcards):
    """Every run of the study on the dataset: the metrics.json files `collect` reads (its params)."""
    return grid.run_targets(config, wildcards.study, wildcards.dataset)


def study_dataset_tables(wildcards):
    return [f"results/summary/{wildcards.study}/runs/{d}.parquet" for d in STUDIES[wildcards.study]["datasets"]]


def regime_dataset_tables(wildcards):
    """The run tables the study's regime figure draws: its own (`regime: true`) or the named study's."""
    source = regime_study(config, wildcards.study)
    return [f"results/summary/{source}/runs/{d}.parquet" for d in STUDIES[source]["datasets"]]


def regime_graph_metas(wildcards):
    """The regime figure's graphs' meta.json (their node counts)."""
    return [f"resources/graphs/{d}/meta.json" for d in STUDIES[regime_study(config, wildcards.study)]["datasets"]]


def study_served_metas(wildcards):
    """The graphs' meta.json of the study's `served` Facebook100 unions, whose schools are known only there."""
    from nodedp.data.user import union_schools

    return [
        f"resources/graphs/{d}/meta.json"
        for d in STUDIES[wildcards.study]["datasets"]
        if (union_schools(d) or ("",))[0] == "served"
    ]


def study_dataset_notes(wildcards):
    """The notes naming the schools of the study's other Facebook100 unions (their declarations'), as JSON."""
    from nodedp.analysis.tables import union_note
    from nodedp.data.user import union_schools

    notes = []
    for dataset in STUDIES[wildcards.study]["datasets"]:
        union = union_schools(dataset)
        if union is not None and union[0] != "served":
            notes.append(union_note(dataset, *union))
    return json.dumps(notes)


def regime_report_caption(wildcards):
    return figure_report_caption(wildcards, figure="regime")


def study_outputs(wildcards):
    return grid.study_outputs(config, wildcards.study, run_mode())


def figure_kind_option(wildcards):
    return grid.figure_kind_option(wildcards.figure)


def figure_report_caption(wildcards, figure=None):
    """The figure's own caption for the report; empty outside `--report`, so a run's recorded parameters never
    depend on a drawn file."""
    path = f"paper/{wildcards.study}/figures/{figure or wildcards.figure}.caption.txt"
    return grid.report_caption(path) if REPORTING else ""


def resolved_config_json(wildcards):
    return json.dumps(config, sort_keys=True, default=str)


def paper_table_summaries(wildcards):
    kind = PAPER_TABLES[wildcards.key].summary  # "summary" (training runs) or "mia" (the audit's attack)
    return [f"results/summary/{s}/{kind}.parquet" for s in grid.paper_table_studies(config, wildcards.key)]


def main_tex_tables(wildcards):
    return [f"paper/tables/{key}.tex" for key in grid.configured_paper_tables(config)]


def audit_cells(wildcards):
    return grid.audit_cell_paths(config, wildcards.study, config_name=CONFIG_FILES)


def audit_confidence(wildcards):
    return AUDITS[wildcards.study]["confidence"]


def audit_report_caption(wildcards):
    """The audit figure's own caption for the report (as figure_report_caption)."""
    return figure_report_caption(wildcards, figure="audit")
