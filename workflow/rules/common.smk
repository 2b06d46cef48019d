# Validation, wildcard constraints and target functions. No rules here.
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
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
shell.prefix(
    f"set -euo pipefail; exec 9>&2; export PYTHONPATH={shlex.quote(SRC)} NODEDP_PROGRESS=1"
    " NODEDP_WORKER=${{NODEDP_WORKER-60}} NODEDP_CONSOLE_FD=9; "
)

from nodedp.analysis.paper_tables import PAPER_TABLES
from nodedp.cli import format_epsilon
from nodedp.config import ConfigError, audit_plan, check_config, check_schema, resolve_method, structure_bounds

# The grid's file(s), named in every config error: config.yaml, or what --configfile gave instead (Snakefile).
CONFIG_FILES = " + ".join(str(path) for path in workflow.overwrite_configfiles or ["config.yaml"])
try:
    # One line naming the field (Snakemake's validate prints the whole schema after it), then the defaults.
    check_schema(config, os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
    validate(config, "../schemas/config.schema.yaml")
    # What a JSON schema cannot say (method hyperparameters, δ and batch sizes against the datasets'
    # public sizes): checked by the package itself, before any job runs.
    check_config(config, graphs_dir="resources/graphs")
except ConfigError as err:
    raise SystemExit(f"{CONFIG_FILES}: {err}") from None


# Group jobs bundle jobs into one cluster submission (the SLURM profile's `group-components`). A local run ignores
# groups, but Snakemake still builds them for a dry run (0.4 s on the whole grid), so rules name their group unless
# the command is Snakemake's own, run locally, without group options. Snakemake tells a Snakefile neither its
# executor nor its group settings before the DAG, so its command line is parsed again (as `--report` is read).
def _may_bundle_groups():
    import contextlib
    import io
    from pathlib import PurePath

    from snakemake.cli import parse_args

    entry = PurePath(sys.argv[0]).parts[-2:] if sys.argv and sys.argv[0] else ()
    if entry[-1:] != ("snakemake",) and entry != ("snakemake", "__main__.py"):
        return True  # called through the API (or otherwise): keep every group
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            _, args = parse_args(sys.argv[1:])  # with its profile, as Snakemake reads it
    except (Exception, SystemExit):
        return True
    return args.executor not in (None, "local", "dryrun", "touch") or bool(args.group_components or args.groups)


GROUPING = _may_bundle_groups()


def bundled(group):
    """A rule's `group:`: ``group`` unless the run is local without group options (see GROUPING)."""
    return group if GROUPING else None


STUDIES = config["studies"]
ALL_DATASETS = sorted({d for s in STUDIES.values() for d in s["datasets"]})
ALL_METHODS = sorted({m for s in STUDIES.values() for m in s["methods"]})


# A study's tables (paper/<study>/tables/<table>.{md,tex}, and .html for the report).
STUDY_TABLES = ("accuracy", "reproduction", "claims", "crossover")


@functools.cache
def dataset_setting(dataset):
    """The split setting (transductive/inductive) the dataset's preprocessing protocol prescribes."""
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol

    return get_protocol(get_dataset(dataset).protocol).split.setting


wildcard_constraints:
    dataset="|".join(ALL_DATASETS),
    method="|".join(ALL_METHODS),
    study="|".join(STUDIES),
    seed=r"\d+",
    eps=r"inf|\d+(\.\d+)?(e-?\d+)?",
    setting="transductive|inductive",
    figure=r"accuracy_vs_epsilon|frontier|sweep-[A-Za-z0-9_]+",
    table="|".join((*STUDY_TABLES, "audit")),
    key="|".join(PAPER_TABLES),


def study_cells(study, dataset=None):
    """(dataset, method, eps, seed) of every run of a study."""
    from nodedp.methods import get_method

    spec = STUDIES[study]
    for d in spec["datasets"]:
        if dataset is not None and d != dataset:
            continue
        for m in spec["methods"]:
            eps_values = spec["epsilons"] if get_method(resolve_method(config, m)[0]).private else [float("inf")]
            for e in eps_values:
                for s in spec["seeds"]:
                    yield d, m, format_epsilon(e), s


def run_targets(study, dataset=None):
    return [f"results/runs/{d}/{m}/eps~{e}/seed~{s}/metrics.json" for d, m, e, s in study_cells(study, dataset)]


def study_figures(study):
    """The figures of a study: accuracy vs ε; the privacy-utility frontier where it has a private method; one
    accuracy-vs-hyperparameter figure per entry of its `sweeps`."""
    from nodedp.methods import get_method

    spec = STUDIES[study]
    private = any(get_method(resolve_method(config, m)[0]).private for m in spec["methods"])
    return ["accuracy_vs_epsilon", *(["frontier"] if private else []), *(f"sweep-{p}" for p in spec.get("sweeps", []))]


def paper_targets(study):
    """Everything drawn from a study's runs: its tables (Markdown, LaTeX and the report's HTML), figures with
    their captions, its ledger summary, its audit's table and figure (`study_audit_outputs`), and
    paper/<study>/index.md listing them. The audit is a target of its own too: an index drawn before it then
    redraws (under `--rerun-triggers mtime` a missing input alone would not ask for that)."""
    return [*study_drawn(study), *study_audit_outputs(study), f"paper/{study}/index.md"]


def study_outputs(wildcards):
    """What paper/<study>/index.md lists: the study's tables and figures with their captions, and its audit's
    (`study_audit_outputs`)."""
    return [
        *study_drawn(wildcards.study),
        *(f"paper/{wildcards.study}/figures/{figure}.caption.txt" for figure in study_figures(wildcards.study)),
        *study_audit_outputs(wildcards.study),
    ]


def study_drawn(study):
    if study not in STUDIES:
        raise ValueError(f"{CONFIG_FILES} has no study {study!r}; studies: {sorted(STUDIES)}")
    return [
        # Published cells beside reference-mode (`@paper`) and suite runs, claimed vs actual ε, crossover ε.
        *(f"paper/{study}/tables/{table}.{ext}" for table in STUDY_TABLES for ext in ("md", "tex")),
        *(f"paper/{study}/report/{table}.html" for table in (*STUDY_TABLES, "ledgers")),
        *(f"paper/{study}/figures/{figure}.png" for figure in study_figures(study)),
    ]


def figure_kind_option(wildcards):
    if wildcards.figure.startswith("sweep-"):
        return f"--kind sweep --parameter {shlex.quote(wildcards.figure.removeprefix('sweep-'))}"
    return {"accuracy_vs_epsilon": "--kind accuracy", "frontier": "--kind frontier"}[wildcards.figure]


# `snakemake --report` (read from the command line: Snakemake tells a Snakefile nothing else about its mode).
REPORTING = any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv[1:])


def figure_report_caption(wildcards, figure=None):
    """The figure's own caption (interval, seed count, marks; written beside it) for the report, escaped for
    reStructuredText; empty outside `--report`, so a run's recorded parameters never depend on a drawn file."""
    import re

    path = f"paper/{wildcards.study}/figures/{figure or wildcards.figure}.caption.txt"
    if not REPORTING or not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        return re.sub(r"([\\`*_|<>\[\]])", r"\\\1", " ".join(fh.read().split()))


def resolved_config_json(wildcards):
    return json.dumps(config, sort_keys=True, default=str)


# The configuration page: one file, drawn by whichever grid ran last (its params rerun it when the grid changes).
ABOUT_PAGE = "paper/about.html"


def about_page_for_this_config():
    """Under `--report`, which runs no job: make ABOUT_PAGE this grid's page, so that a report (`make report
    CONFIG=my-grid.yaml`) shows the configuration it reports. A page drawn for another grid (the digest it
    carries differs) or none at all is drawn here; it reads only the configuration and the checkout."""
    from pathlib import Path

    from nodedp.analysis.report import about_html, about_page_digest, config_digest, write_html
    from nodedp.provenance import provenance

    resolved = json.loads(resolved_config_json(None))  # what the `about` rule's job reads
    if os.path.exists(ABOUT_PAGE):
        with open(ABOUT_PAGE, encoding="utf-8") as fh:
            if about_page_digest(fh.read()) == config_digest(resolved):
                return
    write_html(Path(ABOUT_PAGE), about_html(resolved, provenance(), config_name=CONFIG_FILES))
    print(f"nodedp: {ABOUT_PAGE} was another grid's (or missing): drawn for {CONFIG_FILES}", file=sys.stderr)


# --- the paper-layout tables of the seed papers (nodedp.analysis.paper_tables) ------------------------------


def configured_paper_tables():
    """Paper tables fed by at least one study of this config (cells of its other studies say what they need)."""
    return [key for key, table in PAPER_TABLES.items() if any(s in STUDIES for s in table.studies)]


def paper_table_studies(key):
    return [s for s in PAPER_TABLES[key].studies if s in STUDIES]


def paper_table_summaries(wildcards):
    kind = PAPER_TABLES[wildcards.key].summary  # "summary" (training runs) or "mia" (the audit's attack)
    return [f"results/summary/{s}/{kind}.parquet" for s in paper_table_studies(wildcards.key)]


def paper_table_ready(key, done):
    """Whether a redraw can draw paper table ``key``: its studies' runs all finished (``done``), or, for a table
    of the audit's attack, every audited cell of its studies there (a redraw never audits)."""
    studies = paper_table_studies(key)
    if PAPER_TABLES[key].summary == "mia":
        return all(s in AUDITS and all(os.path.exists(t) for t in audit_cell_paths(s)) for s in studies)
    return set(studies) <= done


def main_tex_tables(wildcards):
    return [f"paper/tables/{key}.tex" for key in configured_paper_tables()]


def paper_tables_targets(keys):
    return [f"paper/tables/{key}.{ext}" for key in keys for ext in ("md", "tex", "html")]


def all_targets():
    """The whole grid: every study drawn, every paper table and paper/main.tex, the configuration page, and
    every study's audit."""
    keys = configured_paper_tables()
    return [
        *(t for s in STUDIES for t in paper_targets(s)),
        *paper_tables_targets(keys),
        *(["paper/main.tex"] if keys else []),
        "paper/about.html",
        *all_audit_targets(),
    ]


# --- audit: canary lower bounds on ε and membership inference (workflow/rules/audit.smk) -----------------------
# Studies with an `audit:` block, each with its defaults filled in (nodedp.config.audit_plan).
AUDITS = {study: audit_plan(config, study) for study, spec in STUDIES.items() if "audit" in spec}


def audit_targets(study):
    """A study's audit table (Markdown, LaTeX) and figure with its caption."""
    return [
        f"paper/{study}/tables/audit.md",
        f"paper/{study}/tables/audit.tex",
        f"paper/{study}/figures/audit.png",
        f"paper/{study}/figures/audit.caption.txt",
    ]


def all_audit_targets():
    return [t for study in AUDITS for t in audit_targets(study)]


def audit_cell_paths(study):
    """Every audited cell of a study: results/audit/<dataset>/<method>/eps~<ε>/seed~<s>/canaries~<m>.json."""
    if study not in AUDITS:
        raise ValueError(
            f"study {study!r} has no `audit:` block in {CONFIG_FILES}; audited studies: " f"{sorted(AUDITS)}"
        )
    return [audit_cell_path(*cell) for cell in _audited(study)]


def _audited(study):
    """(dataset, method, ε as in paths, seed, canaries) of every audited cell of a study."""
    plan = AUDITS[study]
    return [
        (d, m, format_epsilon(e), s, plan["canaries"])
        for d in plan["datasets"]
        for m in plan["methods"]
        for e in plan["epsilons"]
        for s in plan["seeds"]
    ]


def audit_cell_path(dataset, method, eps, seed, canaries):
    return f"results/audit/{dataset}/{method}/eps~{eps}/seed~{seed}/canaries~{canaries}.json"


def audit_cells(wildcards):
    return audit_cell_paths(wildcards.study)


def audit_confidence(wildcards):
    return AUDITS[wildcards.study]["confidence"]


def audit_report_caption(wildcards):
    """The audit figure's own caption for the report (as figure_report_caption)."""
    return figure_report_caption(wildcards, figure="audit")


def study_audit_outputs(study):
    """The audit a study's index and report show: its table (also as the report's HTML) and figure with caption;
    none without an `audit:` block. A run that may not audit shows only an audit that needs no training: a redraw
    (`--allowed-rules`, as `make paper`, or the `paper` target) one whose audited cells have all run, a report one
    already drawn. Every other run audits first, so the index waits for the audit."""
    if study not in AUDITS:
        return []
    outputs = [*audit_targets(study), f"paper/{study}/report/audit.html"]
    if REPORTING:
        return outputs if all(os.path.exists(p) for p in outputs) else []
    settings = getattr(workflow, "dag_settings", None)  # set before Snakemake asks for any input
    if settings is not None and (settings.allowed_rules or "paper" in settings.targets):
        return outputs if all(os.path.exists(p) for p in audit_cell_paths(study)) else []
    return outputs


# --- redraw: what existing runs can draw ---------------------------------------------------------------------


@functools.cache
def complete_studies():
    """Studies whose every run has finished (its metrics.json exists): the ones a redraw can draw."""
    return [s for s in STUDIES if all(os.path.exists(t) for t in run_targets(s))]


# NODEDP_STUDIES=a,b (`make paper STUDY=a`): redraw only these studies (and the configuration page).
ONLY_STUDIES = [s for s in os.environ.get("NODEDP_STUDIES", "").split(",") if s]
for _s in ONLY_STUDIES:
    if _s not in STUDIES:
        raise SystemExit(f"NODEDP_STUDIES: {CONFIG_FILES} has no study {_s!r}; studies: {sorted(STUDIES)}")


@functools.cache
def redraw_targets():
    """What `snakemake paper` draws: every complete study, every paper table all of whose studies are complete,
    paper/main.tex when every paper table is (with NODEDP_STUDIES: those studies only); it says on stderr what it
    leaves out and why."""
    wanted = ONLY_STUDIES or list(STUDIES)
    done = set(complete_studies()) & set(wanted)
    keys = [] if ONLY_STUDIES else configured_paper_tables()
    drawable = [k for k in keys if paper_table_ready(k, done)]
    for study in wanted:
        if study not in done:
            missing = sum(not os.path.exists(t) for t in run_targets(study))
            total = len(run_targets(study))
            print(
                f"nodedp: not redrawing study {study}: {missing} of its {total} runs have not run "
                f"(`snakemake paper/{study}/index.md` trains them)",
                file=sys.stderr,
            )
    for key in keys:
        if key not in drawable:
            what = "audits" if PAPER_TABLES[key].summary == "mia" else "runs"
            print(
                f"nodedp: not redrawing paper/tables/{key}: needs the {what} of "
                f"{sorted(set(paper_table_studies(key)) - (set() if what == 'audits' else done))}",
                file=sys.stderr,
            )
    if keys and drawable != keys:
        print("nodedp: not redrawing paper/main.tex: it inputs every paper table", file=sys.stderr)
    if not done:
        print(f"nodedp: no study of {CONFIG_FILES} to redraw has all its runs: nothing to redraw", file=sys.stderr)
    targets = [
        *(t for s in wanted if s in done for t in paper_targets(s)),
        *paper_tables_targets(drawable),
        *(["paper/main.tex"] if keys and drawable == keys else []),
        "paper/about.html",
    ]
    return reportable(targets) if REPORTING else targets


def _target_study(target):
    """The study a paper/<study>/... target belongs to, or None (paper tables, main.tex, about.html)."""
    from pathlib import PurePosixPath

    parts = PurePosixPath(target).parts
    return parts[1] if len(parts) > 2 and parts[1] in STUDIES else None


def reportable(targets):
    """Under `--report`: the targets whose outputs are all drawn (a report cannot draw what is missing); each study
    or file left out is named, with the command that draws it. A study is reported whole or not at all."""
    left = {}
    for target in targets:
        if target == ABOUT_PAGE:
            about_page_for_this_config()
        study = _target_study(target)
        drawn = os.path.exists(target) and (
            study is None or all(os.path.exists(f"paper/{study}/figures/{f}.caption.txt") for f in study_figures(study))
        )
        if not drawn:
            left.setdefault(study or target, target)
    for name in left:
        print(
            f"nodedp: the report leaves out {name}: not drawn yet (`make paper` draws it once its runs have "
            "finished)",
            file=sys.stderr,
        )
    return [t for t in targets if (_target_study(t) or t) not in left]


def data_targets():
    """Graphs, their splits in both settings (inductive = cross-split edges removed) and their
    degree-bounding stability reports."""
    seeds = sorted({s for spec in STUDIES.values() for s in spec["seeds"]})
    return expand(
        "results/splits/{dataset}/{setting}/seed~{seed}.pt",
        dataset=ALL_DATASETS,
        setting=["transductive", "inductive"],
        seed=seeds,
    ) + expand("resources/graphs/{dataset}/stability.json", dataset=ALL_DATASETS)


def stability_split(wildcards):
    """The seed-0 split of the dataset's own setting (its training nodes feed DP-GNN's Algorithm 1)."""
    return f"results/splits/{wildcards.dataset}/{dataset_setting(wildcards.dataset)}/seed~0.pt"


def is_downloaded(dataset):
    from nodedp.data import get_dataset

    return get_dataset(dataset).kind == "download"


def graph_raw_inputs(wildcards):
    return [f"resources/raw/{wildcards.dataset}"] if is_downloaded(wildcards.dataset) else []


def graph_raw_option(wildcards):
    return f"--raw resources/raw/{wildcards.dataset}" if is_downloaded(wildcards.dataset) else ""


def mirror_option(wildcards):
    mirror = config["download"]["mirror"]
    return f"--mirror {shlex.quote(mirror)}" if mirror else ""


class SizeLimits:
    """A split job's `--check-limits`: what the grid's runs ask of the dataset's size (δ below 1/N, the largest
    batch of training nodes; nodedp.config.size_limits), checked on the split it cuts, before any training reads
    it: a dataset the run downloads and builds has no size the planner could check. A guard, not an input:
    Snakemake records a params value (a rerun trigger) only where it can represent it (a str, a number, a list),
    not an object like this, so a changed batch size or δ never re-cuts a split, which would retrain every run on
    it (the planner checks a dataset already built: check_config)."""

    def __init__(self, dataset):
        from nodedp.config import size_limits

        self.json = json.dumps({"config": CONFIG_FILES, **size_limits(config, dataset)}, sort_keys=True)

    def __str__(self):
        return self.json


def split_size_limits(wildcards):
    return SizeLimits(wildcards.dataset)


def train_split_input(dataset, seed):
    return f"results/splits/{dataset}/{dataset_setting(dataset)}/seed~{seed}.pt"


# Input functions: named, so rules hold no lambdas.
def demo_targets(wildcards):
    targets = [*paper_targets("demo"), "paper/about.html", *(audit_targets("demo") if "demo" in AUDITS else [])]
    return reportable(targets) if REPORTING else targets


def default_targets(wildcards):
    """The whole grid; under `--report`, what exists to report (a report never trains)."""
    return redraw_targets() if REPORTING else all_targets()


def paper_redraw_targets(wildcards):
    return redraw_targets()


def dataset_run_metrics(wildcards):
    """Every run of the study on the dataset: the metrics.json files `collect` reads (its params)."""
    return run_targets(wildcards.study, wildcards.dataset)


def study_dataset_tables(wildcards):
    return expand(
        "results/summary/{study}/runs/{dataset}.parquet",
        study=wildcards.study,
        dataset=STUDIES[wildcards.study]["datasets"],
    )


def hparams_json(method):
    """Only this method's (or variant's) hyperparameters, so editing one method reruns only its cells."""
    return json.dumps(resolve_method(config, method)[1], sort_keys=True)


@functools.cache
def dp_appr_key(method):
    """The DP-APPR artifact of a DPAR method or variant: `<option>-<digest of its DP-APPR settings>`, so runs
    whose settings differ only in training share one artifact (and its ledger)."""
    import hashlib

    from nodedp.methods import get_method
    from nodedp.methods.specs.dpar import appr_spec

    base, hparams = resolve_method(config, method)
    spec = appr_spec(base, get_method(base).parse_hparams(hparams))
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]
    return f"{spec['option']}-{digest}", base, hparams


def _needs_dp_appr(method):
    from nodedp.methods import get_method

    return "dp-appr" in get_method(resolve_method(config, method)[0]).needs


# Every DP-APPR artifact the config can ask for: key -> (a DPAR method or variant using it).
DP_APPR = {}
for _m in ALL_METHODS:
    if _needs_dp_appr(_m):
        DP_APPR.setdefault(dp_appr_key(_m)[0], _m)


def dp_appr_method(wildcards):
    return resolve_method(config, DP_APPR[wildcards.key])[0]


def dp_appr_hparams(wildcards):
    return json.dumps(resolve_method(config, DP_APPR[wildcards.key])[1], sort_keys=True)


def cell_structure(dataset, method, eps, seed):
    """Structure artifacts a method declares it needs, for one cell. Degree-bounded edge sets at the dataset's
    public bounds unless the method's hyperparameters set their own (`in_degree_bound`, `out_degree_bound`);
    DPAR's DP-APPR matrix at the run's ε and seed."""
    root = f"results/structure/{dataset}/{dataset_setting(dataset)}/seed~{seed}"
    return [
        f"{root}/dp-appr/{dp_appr_key(method)[0]}/eps~{eps}.pt" if kind == "dp-appr" else f"{root}/{kind}~{bound}.pt"
        for kind, bound in _structure_kinds(dataset, method)
    ]


@functools.cache
def _structure_kinds(dataset, method):
    """(kind, public bound) of every artifact the method needs on the dataset (bound None for DP-APPR)."""
    from nodedp.data import get_dataset
    from nodedp.methods import get_method

    base, hparams = resolve_method(config, method)
    bounds = structure_bounds(get_dataset(dataset), hparams)
    return tuple((kind, bounds.get(kind)) for kind in get_method(base).needs)


def cell_split(wildcards):
    """The training split a cell (training or audit job) reads: its seed's, in its dataset's setting."""
    return train_split_input(wildcards.dataset, int(wildcards.seed))


def cell_structure_input(wildcards):
    return cell_structure(wildcards.dataset, wildcards.method, wildcards.eps, int(wildcards.seed))


def method_base(wildcards):
    """The registered method a cell's method (a method, variant or `@paper` name) runs."""
    return resolve_method(config, wildcards.method)[0]


def method_hparams(wildcards):
    return hparams_json(wildcards.method)


# Cluster resources of jobs (config `resources:`; sites set partitions and accounts in the SLURM
# profile). They grow with each retry (Snakemake's `attempt`): attempt n asks for the first
# attempt's memory × train_mem_growth^(n-1) and n × its runtime.
RESOURCES = config["resources"]  # defaults filled in by the schema (validate above)


# Each request is the estimate of nodedp.resources from the datasets' published sizes (registry), times the
# configured margin, never below the configured floor (train_mem_mb, train_runtime; structure_mem_mb,
# structure_runtime for data and structure jobs), or a method's `estimates:` entry in its place.
def _size(dataset):
    from nodedp.data import get_dataset

    return get_dataset(dataset).size


def _grown(mem_mb, attempt):
    return int(mem_mb * RESOURCES["train_mem_growth"] ** (attempt - 1))


@functools.cache
def _method_epochs(method):
    import dataclasses

    from nodedp.methods import get_method
    from nodedp.resources import training_epochs

    base, hparams = resolve_method(config, method)
    return training_epochs(dataclasses.asdict(get_method(base).parse_hparams(hparams)))


@functools.cache
def cell_mem_mb(method, dataset):
    from nodedp.resources import cell_memory_mb

    fixed = RESOURCES["estimates"].get(method, {}).get("mem_mb")
    if fixed is not None:
        return fixed
    return cell_memory_mb(
        resolve_method(config, method)[0],
        _size(dataset),
        margin=RESOURCES["memory_margin"],
        floor=RESOURCES["train_mem_mb"],
    )


@functools.cache
def cell_runtime(method, dataset):
    from nodedp.resources import cell_runtime_min

    fixed = RESOURCES["estimates"].get(method, {}).get("runtime")
    if fixed is not None:
        return fixed
    return cell_runtime_min(
        resolve_method(config, method)[0],
        _size(dataset),
        epochs=_method_epochs(method),
        margin=RESOURCES["runtime_margin"],
        floor=RESOURCES["train_runtime"],
    )


def data_mem_mb(wildcards, attempt):
    """Graph building, splits, degree bounding, stability and DP-APPR: the dataset's graph-sized work."""
    from nodedp.resources import data_memory_mb

    return _grown(
        data_memory_mb(
            _size(wildcards.dataset), margin=RESOURCES["memory_margin"], floor=RESOURCES["structure_mem_mb"]
        ),
        attempt,
    )


def data_runtime(wildcards, attempt):
    from nodedp.resources import data_runtime_min

    return attempt * data_runtime_min(
        _size(wildcards.dataset), margin=RESOURCES["runtime_margin"], floor=RESOURCES["structure_runtime"]
    )


def _cell_mem_mb(wildcards, attempt):
    return _grown(cell_mem_mb(wildcards.method, wildcards.dataset), attempt)


def _cell_runtime(wildcards, attempt):
    return attempt * cell_runtime(wildcards.method, wildcards.dataset)


def _audit_runtime(wildcards, attempt):
    return 3 * _cell_runtime(wildcards, attempt)  # an audit trains three times


# Kinds of jobs (config `resources: {jobs: {<kind>: ...}}`), each with its default requests.
JOB_KINDS = {
    "train": {"mem_mb": _cell_mem_mb, "runtime": _cell_runtime},  # training cells (rule train)
    "audit": {"mem_mb": _cell_mem_mb, "runtime": _audit_runtime},  # audited cells (rule audit_cell)
    "structure": {"mem_mb": data_mem_mb, "runtime": data_runtime},  # bound_degree, dp_appr, bounding_stability
    "data": {"mem_mb": data_mem_mb, "runtime": data_runtime},  # graph, split
}
# Keys of a kind's block -> the resource Snakemake (and its SLURM executor plugin) reads.
JOB_SETTINGS = {
    "partition": "slurm_partition",
    "account": "slurm_account",
    "gres": "gres",
    "constraint": "constraint",
    "mem_mb": "mem_mb",
    "runtime": "runtime",
}


def _fixed(value, grow):
    """A configured request for attempt n: memory × train_mem_growth^(n-1), runtime × n."""

    def request(wildcards, attempt):
        return _grown(value, attempt) if grow == "memory" else value * attempt

    return request


def job_resources(kind):
    """A rule's resources: the kind's estimates (or `resources.jobs.<kind>.mem_mb`/`runtime`, fixed per job and
    grown per retry), its GRES (training and audits: `train_gres` unless the kind names one) and the partition,
    account and constraint the kind names. A method's `estimates:` entry still wins for its cells."""
    settings = RESOURCES["jobs"].get(kind, {})
    resources = dict(JOB_KINDS[kind])
    if kind in ("train", "audit"):
        resources["gres"] = train_gres
    for key, value in settings.items():
        resource = JOB_SETTINGS[key]
        if key in ("mem_mb", "runtime"):
            default = resources[resource]
            resources[resource] = _kind_request(default, _fixed(value, "memory" if key == "mem_mb" else "time"), key)
        else:
            resources[resource] = value
    return resources


def _kind_request(default, fixed, key):
    """A kind's fixed request, except for a method with its own `estimates:` entry (cells only)."""

    def request(wildcards, attempt):
        method = getattr(wildcards, "method", None)
        if method is not None and RESOURCES["estimates"].get(method, {}).get(key) is not None:
            return default(wildcards, attempt)
        return fixed(wildcards, attempt)

    return request


@functools.cache
def cluster_has_gpus():
    """Whether any node of the Slurm cluster this runs against offers a `gpu` GRES (`sinfo`)."""
    if shutil.which("sinfo") is None:
        return False
    try:
        out = subprocess.run(["sinfo", "--noheader", "--format=%G"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and any(g.startswith("gpu") for line in out.stdout.split() for g in line.split(","))


def train_gres(wildcards):
    """A string resource, so a group job of many cells asks for it once (integer resources are summed):
    "auto" asks for one GPU where the cluster has GPU nodes and none elsewhere; "" never asks."""
    gres = RESOURCES["train_gres"]
    if gres == "auto":
        return "gpu:1" if cluster_has_gpus() else ""
    return gres
