"""The workflow's plan of a grid: every study's cells, run targets and drawn outputs, audits, structure inputs.

Plain functions of the resolved config (``config.yaml`` after the schema filled its defaults) and, where they
check what exists (a redraw, a report), of the working directory. The Snakefile's input functions call them;
tests/test_grid.py checks them without running Snakemake. A ``mode`` says what the run may do: ``"run"`` trains
what is missing, ``"redraw"`` (``--allowed-rules``, the ``paper`` target) only draws from finished runs,
``"report"`` (``snakemake --report``) runs no job. Described in docs/workflow.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from nodedp.analysis.paper_tables import PAPER_TABLES
from nodedp.config.limits import size_limits
from nodedp.config.studies import audit_plan, regime_study
from nodedp.config.variants import resolve_method
from nodedp.contract.naming import format_epsilon
from nodedp.contract.structure import structure_bounds

__all__ = [
    "ABOUT_PAGE",
    "MODES",
    "STUDY_TABLES",
    "SizeLimits",
    "all_audit_targets",
    "all_targets",
    "audit_cell_paths",
    "audit_targets",
    "audits",
    "cell_structure",
    "complete_studies",
    "configured_paper_tables",
    "data_targets",
    "dataset_setting",
    "dp_appr_key",
    "dp_appr_keys",
    "draw_about_page",
    "figure_kind_option",
    "hparams_json",
    "only_studies",
    "paper_table_ready",
    "paper_table_studies",
    "paper_tables_targets",
    "paper_targets",
    "redraw_targets",
    "report_caption",
    "reportable",
    "run_targets",
    "split_path",
    "structure_kinds",
    "study_audit_outputs",
    "study_cells",
    "study_drawn",
    "study_figures",
    "study_outputs",
]

MODES = ("run", "redraw", "report")
# A study's tables (paper/<study>/tables/<table>.{md,tex}, and .html for the report).
STUDY_TABLES = ("accuracy", "reproduction", "claims", "crossover")
# The configuration page: one file, drawn by whichever grid ran last (its rule's params redraw it when the grid
# changes; under `--report`, draw_about_page).
ABOUT_PAGE = "paper/about.html"


def _studies(config: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    return config["studies"]


def _private(config: Mapping[str, Any], method: str) -> bool:
    from nodedp.contract.registry import get_method

    return get_method(resolve_method(config, method)[0]).private


# --- data and cells ------------------------------------------------------------------------------------------


@functools.cache
def dataset_setting(dataset: str) -> str:
    """The split setting (transductive/inductive) the dataset's preprocessing protocol prescribes."""
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol

    return get_protocol(get_dataset(dataset).protocol).split.setting


def split_path(dataset: str, seed: int | str) -> str:
    """The training split a cell (training or audit job) of ``seed`` reads: in its dataset's setting."""
    return f"results/splits/{dataset}/{dataset_setting(dataset)}/seed~{seed}.pt"


def data_targets(config: Mapping[str, Any]) -> list[str]:
    """Graphs, their splits in both settings (inductive = cross-split edges removed) for every seed of the grid,
    and their degree-bounding stability reports."""
    studies = _studies(config).values()
    datasets = sorted({d for s in studies for d in s["datasets"]})
    seeds = sorted({seed for s in studies for seed in s["seeds"]})
    splits = [
        f"results/splits/{d}/{setting}/seed~{seed}.pt"
        for d in datasets
        for setting in ("transductive", "inductive")
        for seed in seeds
    ]
    return splits + [f"resources/graphs/{d}/stability.json" for d in datasets]


class SizeLimits:
    """A split job's `--check-limits`: what the grid's runs ask of the dataset's size (δ below 1/N, the largest
    batch of training nodes; nodedp.config.limits.size_limits), as JSON. A guard, not an input: Snakemake records a
    params value (a rerun trigger) only where it can represent it (a str, a number, a list), not an object like
    this, so a changed batch size or δ never re-cuts a split (docs/workflow.md)."""

    def __init__(self, config: Mapping[str, Any], dataset: str, *, config_name: str = "config.yaml") -> None:
        self.json = json.dumps({"config": config_name, **size_limits(config, dataset)}, sort_keys=True)

    def __str__(self) -> str:
        return self.json


def study_cells(
    config: Mapping[str, Any], study: str, dataset: str | None = None
) -> Iterator[tuple[str, str, str, int]]:
    """(dataset, method, ε as in paths, seed) of every run of a study (of one of its datasets): a non-private
    method runs at ε = ∞ only."""
    spec = _studies(config)[study]
    for d in spec["datasets"]:
        if dataset is not None and d != dataset:
            continue
        for m in spec["methods"]:
            eps_values = spec["epsilons"] if _private(config, m) else [float("inf")]
            for e in eps_values:
                for s in spec["seeds"]:
                    yield d, m, format_epsilon(e), s


def run_targets(config: Mapping[str, Any], study: str, dataset: str | None = None) -> list[str]:
    """The metrics.json of every run of a study (of one of its datasets)."""
    return [f"results/runs/{d}/{m}/eps~{e}/seed~{s}/metrics.json" for d, m, e, s in study_cells(config, study, dataset)]


def hparams_json(config: Mapping[str, Any], method: str) -> str:
    """Only this method's (or variant's) hyperparameters, so editing one method reruns only its cells."""
    return json.dumps(resolve_method(config, method)[1], sort_keys=True)


# --- structure artifacts -------------------------------------------------------------------------------------


def dp_appr_key(config: Mapping[str, Any], method: str) -> tuple[str, str, dict[str, Any]]:
    """(key, registered method, hyperparameters) of a DPAR method's or variant's DP-APPR artifact. The key is
    `<option>-<digest of its DP-APPR settings>`, so runs whose settings differ only in training share one
    artifact (and its ledger)."""
    from nodedp.contract.registry import get_method
    from nodedp.contract.specs.dpar import appr_spec

    base, hparams = resolve_method(config, method)
    spec = appr_spec(base, get_method(base).parse_hparams(hparams))
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]
    return f"{spec['option']}-{digest}", base, hparams


def dp_appr_keys(config: Mapping[str, Any]) -> dict[str, str]:
    """Every DP-APPR artifact the grid can ask for: key -> the first method (or variant, by name) using it."""
    from nodedp.contract.registry import get_method

    methods = sorted({m for s in _studies(config).values() for m in s["methods"]})
    keys: dict[str, str] = {}
    for method in methods:
        if "dp-appr" in get_method(resolve_method(config, method)[0]).needs:
            keys.setdefault(dp_appr_key(config, method)[0], method)
    return keys


def structure_kinds(config: Mapping[str, Any], dataset: str, method: str) -> tuple[tuple[str, int | None], ...]:
    """(kind, public bound) of every artifact the method needs on the dataset (bound None for DP-APPR): the
    dataset's public degree bounds unless the method's hyperparameters set their own (`in_degree_bound`,
    `out_degree_bound`)."""
    from nodedp.contract.registry import get_method
    from nodedp.data import get_dataset

    base, hparams = resolve_method(config, method)
    bounds = structure_bounds(get_dataset(dataset), hparams)
    return tuple((kind, bounds.get(kind)) for kind in get_method(base).needs)


def cell_structure(
    dataset: str, seed: int | str, eps: str, kinds: Sequence[tuple[str, int | None]], dp_appr: str | None
) -> list[str]:
    """The structure artifacts of one cell: degree-bounded edge sets per (kind, bound) of ``kinds``
    (structure_kinds) and DPAR's DP-APPR matrix (artifact key ``dp_appr``) at the run's ε and seed."""
    root = f"results/structure/{dataset}/{dataset_setting(dataset)}/seed~{seed}"
    return [
        f"{root}/dp-appr/{dp_appr}/eps~{eps}.pt" if kind == "dp-appr" else f"{root}/{kind}~{bound}.pt"
        for kind, bound in kinds
    ]


# --- drawn outputs -------------------------------------------------------------------------------------------


def study_figures(config: Mapping[str, Any], study: str) -> list[str]:
    """The figures of a study: accuracy vs ε; the privacy-utility frontier where it has a private method; one
    accuracy-vs-hyperparameter figure per entry of its `sweeps`; with `regime` (true, or the study whose runs it
    draws), each graph method's gap to DP-MLP against the graph's size (drawn by the `regime` rule, which also writes
    tables/regime.md)."""
    spec = _studies(config)[study]
    private = any(_private(config, m) for m in spec["methods"])
    return [
        "accuracy_vs_epsilon",
        *(["frontier"] if private else []),
        *(f"sweep-{p}" for p in spec.get("sweeps", [])),
        *(["regime"] if regime_study(config, study) else []),
    ]


def figure_kind_option(figure: str) -> str:
    """The `nodedp figures` options that draw ``figure``."""
    if figure.startswith("sweep-"):
        return f"--kind sweep --parameter {shlex.quote(figure.removeprefix('sweep-'))}"
    return {"accuracy_vs_epsilon": "--kind accuracy", "frontier": "--kind frontier"}[figure]


def report_caption(path: str | Path) -> str:
    """A figure's own caption file (interval, seed count, marks) escaped for reStructuredText; "" if missing."""
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        return re.sub(r"([\\`*_|<>\[\]])", r"\\\1", " ".join(fh.read().split()))


def study_drawn(config: Mapping[str, Any], study: str, *, config_name: str = "config.yaml") -> list[str]:
    """A study's tables (Markdown, LaTeX and the report's HTML, with its ledger summary) and figures."""
    if study not in _studies(config):
        raise ValueError(f"{config_name} has no study {study!r}; studies: {sorted(_studies(config))}")
    return [
        # Published cells beside reference-mode (`@paper`) and suite runs, claimed vs actual ε, crossover ε.
        *(f"paper/{study}/tables/{table}.{ext}" for table in STUDY_TABLES for ext in ("md", "tex")),
        *(f"paper/{study}/report/{table}.html" for table in (*STUDY_TABLES, "ledgers")),
        *(f"paper/{study}/figures/{figure}.png" for figure in study_figures(config, study)),
        *([f"paper/{study}/tables/regime.md"] if regime_study(config, study) else []),
    ]


def paper_targets(config: Mapping[str, Any], study: str, mode: str) -> list[str]:
    """Everything drawn from a study's runs: its tables, figures, ledger summary, its audit's outputs
    (study_audit_outputs) and paper/<study>/index.md listing them."""
    return [*study_drawn(config, study), *study_audit_outputs(config, study, mode), f"paper/{study}/index.md"]


def study_outputs(config: Mapping[str, Any], study: str, mode: str) -> list[str]:
    """What paper/<study>/index.md lists: the study's tables and figures with their captions, and its audit's."""
    return [
        *study_drawn(config, study),
        *(f"paper/{study}/figures/{figure}.caption.txt" for figure in study_figures(config, study)),
        *study_audit_outputs(config, study, mode),
    ]


def draw_about_page(config: Mapping[str, Any], *, config_name: str, path: str = ABOUT_PAGE) -> bool:
    """Make ``path`` this grid's configuration page unless it is already (the digest it carries): what a report,
    which runs no job, shows. It reads only the configuration and the checkout. Whether it drew the page."""
    from nodedp.analysis.report import about_html, about_page_digest, config_digest, write_html
    from nodedp.provenance import provenance

    resolved = json.loads(json.dumps(config, sort_keys=True, default=str))  # what the `about` rule's job reads
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            if about_page_digest(fh.read()) == config_digest(resolved):
                return False
    write_html(Path(path), about_html(resolved, provenance(), config_name=config_name))
    return True


# --- the paper-layout tables of the seed papers (nodedp.analysis.paper_tables) --------------------------------


def configured_paper_tables(config: Mapping[str, Any]) -> list[str]:
    """Paper tables fed by at least one study of this config (cells of its other studies say what they need)."""
    return [key for key, table in PAPER_TABLES.items() if any(s in _studies(config) for s in table.studies)]


def paper_table_studies(config: Mapping[str, Any], key: str) -> list[str]:
    return [s for s in PAPER_TABLES[key].studies if s in _studies(config)]


def paper_tables_targets(keys: Sequence[str]) -> list[str]:
    return [f"paper/tables/{key}.{ext}" for key in keys for ext in ("md", "tex", "html")]


def paper_table_ready(config: Mapping[str, Any], key: str, done: set[str]) -> bool:
    """Whether a redraw can draw paper table ``key``: its studies' runs all finished (``done``), or, for a table
    of the audit's attack, every audited cell of its studies there (a redraw never audits)."""
    studies = paper_table_studies(config, key)
    plans = audits(config)
    if PAPER_TABLES[key].summary == "mia":
        return all(s in plans and all(os.path.exists(t) for t in audit_cell_paths(config, s)) for s in studies)
    return set(studies) <= done


def all_targets(config: Mapping[str, Any], mode: str = "run") -> list[str]:
    """The whole grid: every study drawn, every paper table and paper/main.tex, the configuration page, and
    every study's audit."""
    keys = configured_paper_tables(config)
    return [
        *(t for s in _studies(config) for t in paper_targets(config, s, mode)),
        *paper_tables_targets(keys),
        *(["paper/main.tex"] if keys else []),
        ABOUT_PAGE,
        *all_audit_targets(config),
    ]


# --- audit: canary lower bounds on ε and membership inference ------------------------------------------------


def audits(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Studies with an `audit:` block, each with its defaults filled in (nodedp.config.studies.audit_plan)."""
    return {study: audit_plan(config, study) for study, spec in _studies(config).items() if "audit" in spec}


def audit_targets(study: str) -> list[str]:
    """A study's audit table (Markdown, LaTeX), its broken-claims table and its figure with its caption."""
    return [
        f"paper/{study}/tables/audit.md",
        f"paper/{study}/tables/audit.tex",
        f"paper/{study}/tables/broken_claims.md",
        f"paper/{study}/tables/broken_claims.tex",
        f"paper/{study}/figures/audit.png",
        f"paper/{study}/figures/audit.caption.txt",
    ]


def all_audit_targets(config: Mapping[str, Any]) -> list[str]:
    return [t for study in audits(config) for t in audit_targets(study)]


def audit_cell_paths(config: Mapping[str, Any], study: str, *, config_name: str = "config.yaml") -> list[str]:
    """Every audited cell of a study: results/audit/<dataset>/<method>/eps~<ε>/seed~<s>/canaries~<m>.json."""
    plans = audits(config)
    if study not in plans:
        raise ValueError(f"study {study!r} has no `audit:` block in {config_name}; audited studies: {sorted(plans)}")
    plan = plans[study]
    return [
        f"results/audit/{d}/{m}/eps~{format_epsilon(e)}/seed~{s}/canaries~{plan['canaries']}.json"
        for d in plan["datasets"]
        for m in plan["methods"]
        for e in plan["epsilons"]
        for s in plan["seeds"]
    ]


def study_audit_outputs(config: Mapping[str, Any], study: str, mode: str) -> list[str]:
    """The audit a study's index and report show: its table (also as the report's HTML) and figure with caption;
    none without an `audit:` block. A run that may not audit shows only an audit that needs no training: a
    redraw one whose audited cells have all run, a report one already drawn. A run audits first, so the index
    waits for the audit."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {MODES}")
    if study not in audits(config):
        return []
    outputs = [*audit_targets(study), f"paper/{study}/report/audit.html"]
    if mode == "report":
        return outputs if all(os.path.exists(p) for p in outputs) else []
    if mode == "redraw":
        return outputs if all(os.path.exists(p) for p in audit_cell_paths(config, study)) else []
    return outputs


# --- redraw and report: what existing runs can draw ----------------------------------------------------------


def _drawn_runs(config: Mapping[str, Any], study: str) -> list[str]:
    """The runs a study's outputs are drawn from: its own, and those of the study its regime figure draws."""
    source = regime_study(config, study)
    return run_targets(config, study) + (run_targets(config, source) if source not in (None, study) else [])


def complete_studies(config: Mapping[str, Any]) -> list[str]:
    """Studies whose every run has finished (its metrics.json exists): the ones a redraw can draw."""
    return [s for s in _studies(config) if all(os.path.exists(t) for t in _drawn_runs(config, s))]


def only_studies(config: Mapping[str, Any], names: str, *, config_name: str = "config.yaml") -> list[str]:
    """The studies of a comma-separated list (NODEDP_STUDIES, `make paper STUDY=a`); ValueError naming one the
    grid lacks."""
    chosen = [s for s in names.split(",") if s]
    for study in chosen:
        if study not in _studies(config):
            raise ValueError(f"{config_name} has no study {study!r}; studies: {sorted(_studies(config))}")
    return chosen


def redraw_targets(
    config: Mapping[str, Any], *, mode: str, only: Sequence[str] = (), config_name: str = "config.yaml"
) -> tuple[list[str], list[str]]:
    """What `snakemake paper` draws: every complete study, every paper table all of whose studies are complete,
    paper/main.tex when every paper table is (with ``only``: those studies alone), and the configuration page.
    (targets, notes): each note says what is left out and why."""
    wanted = list(only) or list(_studies(config))
    done = set(complete_studies(config)) & set(wanted)
    keys = [] if only else configured_paper_tables(config)
    drawable = [k for k in keys if paper_table_ready(config, k, done)]
    notes = []
    for study in wanted:
        if study not in done:
            runs = _drawn_runs(config, study)
            missing = sum(not os.path.exists(t) for t in runs)
            notes.append(
                f"not redrawing study {study}: {missing} of its {len(runs)} runs have not run "
                f"(`snakemake paper/{study}/index.md` trains them)"
            )
    for key in keys:
        if key not in drawable:
            what = "audits" if PAPER_TABLES[key].summary == "mia" else "runs"
            needed = set(paper_table_studies(config, key)) - (set() if what == "audits" else done)
            notes.append(f"not redrawing paper/tables/{key}: needs the {what} of {sorted(needed)}")
    if keys and drawable != keys:
        notes.append("not redrawing paper/main.tex: it inputs every paper table")
    if not done:
        notes.append(f"no study of {config_name} to redraw has all its runs: nothing to redraw")
    targets = [
        *(t for s in wanted if s in done for t in paper_targets(config, s, mode)),
        *paper_tables_targets(drawable),
        *(["paper/main.tex"] if keys and drawable == keys else []),
        ABOUT_PAGE,
    ]
    return targets, notes


def _target_study(config: Mapping[str, Any], target: str) -> str | None:
    """The study a paper/<study>/... target belongs to, or None (paper tables, main.tex, about.html)."""
    parts = PurePosixPath(target).parts
    return parts[1] if len(parts) > 2 and parts[1] in _studies(config) else None


def reportable(config: Mapping[str, Any], targets: Sequence[str]) -> tuple[list[str], list[str]]:
    """Under `--report`: the targets whose outputs are all drawn (a report cannot draw what is missing); a study
    is reported whole or not at all. (targets, notes): each note names a study or file left out."""
    left: dict[str, str] = {}
    for target in targets:
        study = _target_study(config, target)
        drawn = os.path.exists(target) and (
            study is None
            or all(os.path.exists(f"paper/{study}/figures/{f}.caption.txt") for f in study_figures(config, study))
        )
        if not drawn:
            left.setdefault(study or target, target)
    notes = [
        f"the report leaves out {name}: not drawn yet (`make paper` draws it once its runs have finished)"
        for name in left
    ]
    return [t for t in targets if (_target_study(config, t) or t) not in left], notes
