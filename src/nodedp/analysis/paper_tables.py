"""Each seed paper's headline tables in the paper's own layout, from study summaries alone.

A paper table (``PAPER_TABLES``) rebuilds the rows and columns the paper prints from its published cells; every
cell shows the suite's value with its interval, the reference-mode run beside it, the paper's value and the
difference, or what run would produce it. What a cell shows and how it is picked: docs/design/analysis.md.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from nodedp.analysis.published import (
    PAPERS,
    PUBLISHED,
    PUBLISHED_UNREGISTERED,
    SPREADS,
    STAND_INS,
    UNREGISTERED_DATASETS,
    Published,
    stands_in_for,
)
from nodedp.analysis.reproduction import STAND_IN_MARK
from nodedp.analysis.tables import (
    DAGGER,
    GUARANTEE_MARKS,
    GUARANTEE_NOTES,
    ONE_CLASS_MARK,
    ONE_CLASS_NOTE,
    REFERENCE_MARK,
    REFERENCE_NOTE,
    UNACCOUNTED_NOTE,
    format_epsilon_value,
    latex_escape,
    latex_unicode,
    one_class_mark,
)
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.io import atomic_write, write_text

if TYPE_CHECKING:  # polars loads when a table is drawn, not when the workflow plans (it reads PAPER_TABLES)
    import polars as pl

__all__ = [
    "INTERVALS",
    "NOT_CONFIGURED",
    "PAPER_TABLES",
    "CellFeed",
    "PaperTable",
    "render_paper_table",
    "write_main_tex",
    "write_paper_tables",
]

INTERVALS = ("half-width", "range")  # how a cell shows its bootstrap interval: mean ± half-width, or (low–high)
METRIC_LABELS = {"test_accuracy": "test accuracy", "mia_accuracy": "membership-inference attack accuracy"}
_KEY_COLUMNS = ("dataset", "method", "target_epsilon", "n_runs", "confidence", "n_resamples")

# Runs the paper tables name that the suite does not define yet (no variant in nodedp/methods/tuned.yaml;
# their cells say what they need):
# DP-GNN's DP-GCN trained with DP-SGD instead of DP-Adam (Table 1), as variants with `optimizer: sgd`, and its
# 2-layer DP-GIN off ogbn-arxiv (Table 4, on graphs the suite does not build).
NOT_CONFIGURED = frozenset({"dp-gcn-sgd-arxiv", "dp-gcn-sgd", "dp-gin-2hop"})


@dataclass(frozen=True)
class CellFeed:
    """Which suite cell feeds one printed cell, and the printed value it is compared with."""

    published: Published
    dataset: str  # suite dataset id (a stand-in's, where stand_in)
    run: str  # suite run id (method or config variant), without @paper
    epsilon: float  # target ε; with at_most, the largest the cell may read
    at_most: bool
    metric: str
    study: str | None  # the config.yaml study whose runs produce it; None: none does (the cell says what)
    stand_in: bool = False


@dataclass(frozen=True)
class PaperTable:
    key: str  # a key of PAPERS
    row_header: tuple[str, ...]  # names of the row-label columns
    columns: tuple[str, ...]  # column labels, as printed
    rows: tuple[tuple[tuple[str, ...], tuple[CellFeed | None, ...]], ...]  # (row labels, one feed per column)
    studies: tuple[str, ...]  # the studies whose summaries it reads (concatenated)
    notes: tuple[str, ...] = ()
    needs: str | None = None  # what every cell needs beyond a training summary (NIP-GNN Table 4: the audit)
    # Which summary of each study it reads: "summary" (training runs: results/summary/<study>/summary.parquet) or
    # "mia" (the audit's membership-inference attack: results/summary/<study>/mia.parquet, `snakemake audit`).
    summary: str = "summary"

    @property
    def title(self) -> str:
        return PAPERS[self.key]

    @property
    def feeds(self) -> list[CellFeed]:
        return [f for _, feeds in self.rows for f in feeds if f is not None]


def _layout(
    key: str,
    row_header: tuple[str, ...],
    *,
    studies: tuple[str, ...],
    study_of: Mapping[str, str | None],
    notes: tuple[str, ...] = (),
    needs: str | None = None,
    summary: str = "summary",
) -> PaperTable:
    """The paper's table ``key`` from its published cells' coordinates; ``study_of`` maps a run id to the study
    that produces it (``"*"``: every other run)."""
    cells = [p for p in PUBLISHED + PUBLISHED_UNREGISTERED if p.paper == key and p.column]
    columns = tuple(dict.fromkeys(p.column for p in cells))
    row_labels = tuple(dict.fromkeys(p.row for p in cells))
    grid: dict[tuple[tuple[str, ...], str], CellFeed] = {}
    for p in cells:
        if len(p.row) != len(row_header):
            raise ValueError(f"{key}: row {p.row} has {len(p.row)} labels for the header {row_header}")
        if (p.row, p.column) in grid:
            raise ValueError(f"{key}: two published cells at row {p.row}, column {p.column!r}")
        grid[(p.row, p.column)] = CellFeed(
            published=p,
            dataset=p.dataset,
            run=p.suite_method,
            epsilon=p.epsilon,
            at_most=p.at_most,
            metric=p.metric,
            study=study_of.get(p.suite_method, study_of.get("*")),
        )
    rows = tuple((r, tuple(grid.get((r, c)) for c in columns)) for r in row_labels)
    return PaperTable(key, row_header, columns, rows, studies, notes, needs, summary)


_DP_GNN_NOTES = (
    "DP-GNN prints mean ± standard deviation over nine runs at ε ≤ the caption's bound; each suite cell reads the "
    "largest ε ≤ that bound its study ran, shown as [ε = x]. Reddit's F1-Score (micro-F1, as in GraphSAGE) equals "
    "accuracy for single-label classes and is compared with test accuracy.",
    "On ogbn-arxiv and ogbn-arxiv-disjoint the private rows read the `*-arxiv` variants (the paper's Tables 9-12 "
    "settings for ogbn-arxiv); elsewhere the base method with the suite's tuned settings.",
)

PAPER_TABLES: dict[str, PaperTable] = {
    "dpar-t1": _layout(
        "dpar-t1",
        ("Dataset", "(ε, δ)"),
        studies=("dpar-reproduction", "dpar-gap-setting"),
        study_of={"*": "dpar-reproduction"},
        notes=(
            "DPAR prints fractions without spread (here in percent); its non-private columns once per dataset "
            "(here on the ε = 1 row). The suite runs at its own δ (below 1/N), not the paper's.",
        ),
    ),
    "dp-gnn-t1": _layout(
        "dp-gnn-t1", ("Model",), studies=("dp-gnn-ogb",), study_of={"*": "dp-gnn-ogb"}, notes=_DP_GNN_NOTES
    ),
    "dp-gnn-t2": _layout(
        "dp-gnn-t2", ("Model",), studies=("dp-gnn-ogb",), study_of={"*": "dp-gnn-ogb"}, notes=_DP_GNN_NOTES
    ),
    "dp-gnn-t3": _layout(
        "dp-gnn-t3", ("Model",), studies=("dp-gnn-ogb",), study_of={"*": "dp-gnn-ogb"}, notes=_DP_GNN_NOTES
    ),
    "dp-gnn-t4": _layout(
        "dp-gnn-t4", ("Model",), studies=("dp-gnn-ogb",), study_of={"*": "dp-gnn-ogb"}, notes=_DP_GNN_NOTES
    ),
    "progap-t2": _layout(
        "progap-t2",
        ("Privacy level", "Method", "ε"),
        studies=("progap-reproduction", "gap-edge", "main"),
        study_of={
            "sage": "main",
            "dp-sage": "main",
            "edgerand": "gap-edge",
            "gap-edge": "gap-edge",
            "progap-edge": "gap-edge",
            "*": "progap-reproduction",
        },
        notes=(
            "MLP is printed in the edge-level block at ε = 0 (it reads no edges): the suite's non-private mlp "
            "run. DP-GNN uses GraphSAGE (the suite's dp-sage). Edge-level cells are ε-edge-DP, not node-level.",
        ),
    ),
    "nip-gnn-t1": _layout(
        "nip-gnn-t1", ("Dataset",), studies=("nip-gnn-reproduction",), study_of={"*": "nip-gnn-reproduction"}
    ),
    "nip-gnn-t2": _layout(
        "nip-gnn-t2",
        ("Method",),
        studies=("nip-gnn-ablation-reproduction",),
        study_of={"*": "nip-gnn-ablation-reproduction"},
    ),
    "nip-gnn-t3": _layout(
        "nip-gnn-t3",
        ("Method",),
        studies=("nip-gnn-ablation-reproduction",),
        study_of={"*": "nip-gnn-ablation-reproduction"},
    ),
    "nip-gnn-t4": _layout(
        "nip-gnn-t4",
        ("Dataset",),
        studies=("nip-gnn-mia",),
        study_of={"*": "nip-gnn-mia"},
        needs="the membership-inference audit (`make audit STUDY=nip-gnn-mia`)",
        summary="mia",
        notes=(
            "Membership-inference accuracy (TSTF attack, NIP-GNN §5.2.3: target and shadow models of the "
            "audited method, each trained on a quarter of the labelled nodes and queried on the full graph; "
            "nodedp.audit.mia) against each model trained at ε = 4, from the study nip-gnn-mia's audit: lower "
            "is better and 50 is chance; no cell is bold.",
        ),
    ),
}


def _check_key(key: str) -> PaperTable:
    try:
        return PAPER_TABLES[key]
    except KeyError:
        raise ValueError(f"unknown paper table {key!r}; choose from {sorted(PAPER_TABLES)}") from None


# --- reading the summary ---------------------------------------------------------------------------------------


def _check_summary(summary: pl.DataFrame, table: PaperTable) -> None:
    """The key columns, and a training summary's accuracy (an attack summary's cells say what they need)."""
    metrics = ("test_accuracy",) if table.summary == "summary" else ()
    needed = [*_KEY_COLUMNS, *(f"{m}_{s}" for m in metrics for s in ("mean", "ci_low", "ci_high"))]
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing}; it has {summary.columns}")


def _index(summary: pl.DataFrame) -> dict[tuple[str, str, float], dict]:
    # Studies share runs (the same paths): read a cell once, from the summary with the most runs.
    deduped = summary.sort("n_runs", descending=True, maintain_order=True).unique(
        subset=["dataset", "method", "target_epsilon"], keep="first", maintain_order=True
    )
    return {(r["dataset"], r["method"], r["target_epsilon"]): r for r in deduped.iter_rows(named=True)}


def _pick(cells: Mapping[tuple[str, str, float], dict], feed: CellFeed, method: str) -> dict | None:
    if not feed.at_most:
        return cells.get((feed.dataset, method, feed.epsilon))
    grid = [e for d, m, e in cells if d == feed.dataset and m == method and math.isfinite(e) and e <= feed.epsilon]
    return cells[(feed.dataset, method, max(grid))] if grid else None


# --- the view: what each cell shows, format-independent ---------------------------------------------------------


@dataclass
class _CellView:
    main: str  # the suite's value, or what the cell needs, or "—"
    marks: str = ""
    lines: list[str] = field(default_factory=list)  # further lines: reference run, paper value, Δ
    bold: bool = False


@dataclass
class _View:
    header: list[str]
    n_labels: int
    rows: list[tuple[tuple[str, ...], list[_CellView | None]]]
    caption: str
    notes: list[str]


def _single_dataset(feeds: Iterable[CellFeed | None]) -> str | None:
    datasets = {f.dataset for f in feeds if f is not None}
    return datasets.pop() if len(datasets) == 1 else None


def _with_stand_ins(
    table: PaperTable, present: set[str]
) -> tuple[list[str], list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]]]:
    """(columns, rows) of ``table`` with a row (or column) per stand-in dataset of the summary, after the rows
    (column) of the dataset it stands in for."""

    def stand_ins(dataset: str | None) -> list[str]:
        if dataset is None or dataset not in STAND_INS:
            return []
        return sorted(d for d in present if stands_in_for(d) == dataset)

    def swap(feeds: Iterable[CellFeed | None], dataset: str) -> tuple[CellFeed | None, ...]:
        return tuple(None if f is None else replace(f, dataset=dataset, stand_in=True) for f in feeds)

    rows = list(table.rows)
    out_rows: list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]] = []
    group: list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]] = []
    for i, (labels, feeds) in enumerate(rows):
        out_rows.append((labels, feeds))
        dataset = _single_dataset(feeds)
        group = [*group, (labels, feeds)] if group and _single_dataset(group[-1][1]) == dataset else [(labels, feeds)]
        following = _single_dataset(rows[i + 1][1]) if i + 1 < len(rows) else None
        if dataset is not None and following != dataset:
            for s in stand_ins(dataset):
                out_rows += [((s + STAND_IN_MARK, *lab[1:]), swap(fs, s)) for lab, fs in group]
    columns = list(table.columns)
    by_column = [[fs[j] for _, fs in out_rows] for j in range(len(columns))]
    order: list[tuple[str, int, str | None]] = []  # (label, source column, stand-in dataset)
    for j, label in enumerate(columns):
        order.append((label, j, None))
        if len(out_rows) > 1 and all(_single_dataset(fs) is None for _, fs in out_rows):
            order += [(s + STAND_IN_MARK, j, s) for s in stand_ins(_single_dataset(by_column[j]))]
    new_rows = [
        (labels, tuple(fs[j] if s is None else swap([fs[j]], s)[0] for _, j, s in order)) for labels, fs in out_rows
    ]
    return [label for label, _, _ in order], new_rows


def _value_text(row: dict, metric: str, interval: str) -> str:
    m, lo, hi = (100 * row[f"{metric}_{k}"] for k in ("mean", "ci_low", "ci_high"))
    if row.get("n_runs") == 1:  # one seed: no interval
        return f"{m:.1f}"
    if interval == "range":
        return f"{m:.1f} ({lo:.1f}–{hi:.1f})"
    return f"{m:.1f} ± {(hi - lo) / 2:.1f}"


def _marks(row: dict) -> str:
    accounted = row.get("fully_accounted")
    return (
        ("" if accounted is None or accounted else DAGGER)
        + GUARANTEE_MARKS.get(row.get("guarantee") or "", "")
        + one_class_mark(row.get("n_one_class_runs"), row["n_runs"])
    )


def _eps(epsilon: float) -> str:
    return "∞" if math.isinf(epsilon) else f"{epsilon:g}"


def _needs(table: PaperTable, feed: CellFeed, present: set[str], metrics: set[str]) -> str | None:
    """What the summary lacks for ``feed``; None when it may have the cell."""
    if feed.metric not in metrics:
        return f"needs {table.needs or feed.metric}"
    if feed.dataset in UNREGISTERED_DATASETS:
        return f"needs {feed.dataset}\n(not in the suite's registry)"
    if feed.dataset not in present:
        return f"needs {feed.dataset}"
    return None


def _paper_text(p: Published) -> str:
    text = f"paper {p.printed or f'{p.accuracy:g}'}"
    return text + (" s.d." if p.spread == "sd" and p.ci is not None else "")


def _view(table: PaperTable, summary: pl.DataFrame, *, interval: str) -> _View:
    cells = _index(summary)
    present = set(summary["dataset"].to_list())
    metrics = {c.removesuffix("_mean") for c in summary.columns if c.endswith("_mean")}
    columns, rows = _with_stand_ins(table, present)
    picked = _picked(table, rows, cells, present, metrics, has_reference="reference" in summary.columns)
    best = _best(rows, picked)
    used = [r for pair in picked.values() for r in pair if r is not None]
    max_runs = max((r["n_runs"] for r in used), default=0)
    views: list[tuple[tuple[str, ...], list[_CellView | None]]] = []
    for labels, feeds in rows:
        out: list[_CellView | None] = []
        for f in feeds:
            if f is None:
                out.append(None)
                continue
            need = _needs(table, f, present, metrics)
            suite, ref = picked.get(id(f), (None, None))
            if need is not None or (suite is None and ref is None):
                out.append(_missing_view(f, need))
            else:
                out.append(_value_view(f, suite, ref, best=best, max_runs=max_runs, interval=interval))
        views.append((labels, out))
    header = [*table.row_header, *columns]
    caption = _view_caption(table, used, best=best, interval=interval)
    notes = _view_notes(table, rows, views)
    return _View(header=header, n_labels=len(table.row_header), rows=views, caption=caption, notes=notes)


def _picked(
    table: PaperTable,
    rows: list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]],
    cells: Mapping[tuple[str, str, float], dict],
    present: set[str],
    metrics: set[str],
    *,
    has_reference: bool,
) -> dict[int, tuple[dict | None, dict | None]]:
    """id(feed) -> (the suite's row, the reference-mode row) of each feed whose cell the summary may have."""
    picked: dict[int, tuple[dict | None, dict | None]] = {}
    for _, feeds in rows:
        for f in feeds:
            if f is None or _needs(table, f, present, metrics):
                continue
            suite = _pick(cells, f, f.run)
            ref = None
            if has_reference:
                eps = f.epsilon if suite is None else suite["target_epsilon"]
                ref = cells.get((f.dataset, f.run + REFERENCE_SUFFIX, eps))
                ref = ref if ref is not None and ref["reference"] else None
            picked[id(f)] = (suite, ref)
    return picked


def _competes(f: CellFeed | None, suite: dict | None) -> TypeGuard[CellFeed]:
    """Whether the suite's cell of ``f`` (``suite``: its row) competes for bold: a private accuracy whose ε covers
    every read (no uncharged reads, not reference mode)."""
    return (
        f is not None
        and suite is not None
        and f.metric == "test_accuracy"
        and math.isfinite(suite["target_epsilon"])
        and suite.get("fully_accounted") is not False
        and not suite.get("reference")
    )


def _best(
    rows: list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]], picked: dict[int, tuple[dict | None, dict | None]]
) -> dict[tuple[str, float], float]:
    """Bold: the best private cell per (dataset, ε) among those whose ε covers every read, where two compete."""
    contests: dict[tuple[str, float], list[float]] = {}
    for _, feeds in rows:
        for f in feeds:
            suite = picked.get(id(f), (None, None))[0] if f is not None else None
            if _competes(f, suite) and suite is not None:
                contests.setdefault((f.dataset, suite["target_epsilon"]), []).append(suite[f"{f.metric}_mean"])
    return {k: max(v) for k, v in contests.items() if len(v) > 1}


def _missing_view(f: CellFeed, need: str | None) -> _CellView:
    """A cell the summary lacks: what would produce it (``need``, else the run and ε it needs; — for a stand-in),
    and the paper's value."""
    if f.stand_in:
        need = "—"
    elif need is None:
        bound = f"ε ≤ {f.epsilon:g}" if f.at_most else f"ε = {_eps(f.epsilon)}"
        need = f"needs {f.run} at {bound}" + (f"\n(study {f.study})" if f.study else "")
    # A long need wraps onto a second line, to keep the column narrow.
    first, *rest = need.split("\n")
    return _CellView(main=first, lines=[*rest, _paper_text(f.published)])


def _value_view(
    f: CellFeed,
    suite: dict | None,
    ref: dict | None,
    *,
    best: dict[tuple[str, float], float],
    max_runs: int,
    interval: str,
) -> _CellView:
    """A cell the summary has: the suite's value (bold where best, its marks), the reference-mode run's, the paper's
    value and the differences from it."""
    p = f.published
    view = _CellView(main="—")
    deltas = []
    if suite is not None:
        view.main = _value_text(suite, f.metric, interval)
        if f.at_most:
            view.main += f" [ε = {suite['target_epsilon']:g}]"
        if suite["n_runs"] != max_runs:
            view.main += f" [n={suite['n_runs']}]"
        view.marks = _marks(suite)
        view.bold = _competes(f, suite) and best.get((f.dataset, suite["target_epsilon"])) == suite[f"{f.metric}_mean"]
        deltas.append(f"Δ {100 * suite[f'{f.metric}_mean'] - p.accuracy:+.1f}")
    if ref is not None:
        actual = format_epsilon_value(ref["epsilon_max"])
        view.lines.append(f"{REFERENCE_MARK} {_value_text(ref, f.metric, interval)} [ε = {actual}]" + _marks(ref))
        deltas.append(f"{REFERENCE_MARK} {100 * ref[f'{f.metric}_mean'] - p.accuracy:+.1f}")
    view.lines.append(_paper_text(p))
    view.lines.append(" · ".join(deltas) if suite is not None else "Δ " + " · ".join(deltas))
    return view


def _view_caption(table: PaperTable, used: list[dict], *, best: dict[tuple[str, float], float], interval: str) -> str:
    """The caption: what each cell shows (seeds, confidence and resamples of the cells shown), the few-seeds
    caveat, what bold means, the studies read."""
    from nodedp.analysis.bootstrap import few_seeds_text

    metric = table.feeds[0].metric
    if used:
        runs = [r["n_runs"] for r in used]
        seeds = f"{max(runs)}" if min(runs) == max(runs) else f"{min(runs)}–{max(runs)}"
        confidence, n_resamples = (_single(used, c) for c in ("confidence", "n_resamples"))
        spread = "± half the width of its" if interval == "half-width" else "with its"
        shown = (
            f"the suite's {METRIC_LABELS.get(metric, metric)} (%), mean over {seeds} seeds {spread} "
            f"{100 * confidence:g}% percentile-bootstrap interval ({n_resamples} resamples)"
        )
        if min(runs) != max(runs):
            shown += ", [n=k] marking a cell with fewer runs"
        few_seeds = few_seeds_text(runs, confidence=confidence)
    else:
        shown = f"the suite's {METRIC_LABELS.get(metric, metric)} (%); no cell of this table is in the summary"
        few_seeds = ""
    caption = (
        f"{table.title}, in the paper's layout. Each cell: {shown}; the paper's printed value; "
        "Δ = suite − paper (points)."
    )
    if few_seeds:
        caption += f" {few_seeds}"
    if best:
        caption += " Bold: best private cell per dataset and ε whose ε covers every read."
    return caption + f" Summaries of studies: {', '.join(table.studies)}."


def _view_notes(
    table: PaperTable,
    rows: list[tuple[tuple[str, ...], tuple[CellFeed | None, ...]]],
    views: list[tuple[tuple[str, ...], list[_CellView | None]]],
) -> list[str]:
    """The notes below the table: the table's own, the papers' spreads, the stand-ins and unregistered datasets
    shown, and the marks its cells carry."""
    notes = list(table.notes)
    spreads = {f.published.spread for f in table.feeds}
    notes += [f"paper ± x: the paper's {SPREADS[s]}." for s in sorted(spreads) if s != "none"]
    shown_datasets = {f.dataset for _, feeds in rows for f in feeds if f is not None}
    notes += [
        f"{STAND_IN_MARK} {s.note}"
        for key, s in STAND_INS.items()
        if any(f.stand_in and stands_in_for(f.dataset) == key for _, fs in rows for f in fs if f is not None)
    ]
    notes += [
        f"{d}: {UNREGISTERED_DATASETS[d]}; the suite's registry does not build it."
        for d in sorted(shown_datasets & set(UNREGISTERED_DATASETS))
    ]
    all_marks = "".join(v.marks + "".join(v.lines) for _, vs in views for v in vs if v is not None)
    if DAGGER in all_marks:
        notes.append(UNACCOUNTED_NOTE)
    notes += [note for cls, note in GUARANTEE_NOTES.items() if GUARANTEE_MARKS[cls] in all_marks]
    if REFERENCE_MARK in all_marks:
        notes.append(REFERENCE_NOTE)
    if ONE_CLASS_MARK in all_marks:
        notes.append(ONE_CLASS_NOTE)
    return notes


def _single(rows: Sequence[dict], column: str) -> float | int:
    values = sorted({r[column] for r in rows})
    if len(values) != 1:
        raise ValueError(f"the summary's cells mix several {column} values {values}; summarize all runs alike")
    return values[0]


# --- rendering ---------------------------------------------------------------------------------------------------


def _shown_labels(rows: list[tuple[tuple[str, ...], list]]) -> list[tuple[list[str], bool]]:
    """Row labels with a leading label blanked where it repeats the previous row's, and whether a new group
    (a change of the first label) starts there."""
    out, previous = [], None
    for labels, _ in rows:
        shown = list(labels)
        new_group = previous is not None and labels[0] != previous[0] and len(labels) > 1
        for i in range(len(labels) - 1):
            if previous is not None and labels[: i + 1] == previous[: i + 1]:
                shown[i] = ""
        out.append((shown, new_group))
        previous = labels
    return out


def _markdown(view: _View, command: str) -> str:
    def esc(text: str) -> str:
        return text.replace("|", r"\|")

    def cell(v: _CellView | None) -> str:
        if v is None:
            return ""
        main = f"**{v.main}**" if v.bold else v.main
        return "<br>".join(esc(t) for t in [main + v.marks, *v.lines])

    lines = [
        f"Table: {view.caption}",
        "",
        "| " + " | ".join(esc(h) for h in view.header) + " |",
        "|" + "|".join([":---"] * view.n_labels + ["---:"] * (len(view.header) - view.n_labels)) + "|",
    ]
    for (shown, _), (_, cells) in zip(_shown_labels(view.rows), view.rows, strict=True):
        lines.append("| " + " | ".join([*map(esc, shown), *map(cell, cells)]) + " |")
    lines.append("")
    lines += [line for note in view.notes for line in (note, "")]
    lines += [f"Regenerate with: `{command}`", ""]
    return "\n".join(lines)


_TEX_EXTRA = {
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "·": r"$\cdot$",
    "×": r"$\times$",
    DAGGER: r"\textsuperscript{\dag}",
    "‡": r"\textsuperscript{\ddag}",
    "§": r"\S{}",
    REFERENCE_MARK: r"\P{}",
    "<": "$<$",
    ">": "$>$",
    "|": "$|$",
    "`": "",
    '"': "''",
    "—": "---",
}


def latex_ascii(text: str) -> str:
    """``text`` as LaTeX that prints it, in plain ASCII that needs no package."""
    out = latex_unicode("".join(_TEX_EXTRA.get(ch, ch) if ch in _TEX_EXTRA else latex_escape(ch) for ch in text))
    odd = sorted({ch for ch in out if not ch.isascii()})
    if odd:
        raise ValueError(f"no LaTeX for the characters {odd} in {text!r}; add them to _TEX_EXTRA")
    return out


def _latex(view: _View, command: str) -> str:
    def cell(v: _CellView | None) -> str:
        if v is None:
            return ""
        main = latex_ascii(v.main)
        main = (f"\\textbf{{{main}}}" if v.bold else main) + latex_ascii(v.marks)
        body = " \\\\ ".join([main, *map(latex_ascii, v.lines)])
        return f"{{\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{body}\\end{{tabular}}}}"

    n_values = len(view.header) - view.n_labels
    lines = [
        "% Generated by nodedp.analysis.paper_tables; do not edit by hand.",
        "% Needs \\usepackage{booktabs,graphicx}; \\input it inside a table float.",
        f"% Regenerate with: {command}",
        "\\begingroup\\scriptsize",
        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
        "\\begin{tabular}{" + "l" * view.n_labels + "r" * n_values + "}",
        "\\toprule",
        " & ".join(latex_ascii(h) for h in view.header) + " \\\\",
        "\\midrule",
    ]
    for (shown, new_group), (_, cells) in zip(_shown_labels(view.rows), view.rows, strict=True):
        if new_group:
            lines.append("\\midrule")
        lines.append(" & ".join([*map(latex_ascii, shown), *map(cell, cells)]) + " \\\\")
    note = " ".join(latex_ascii(n) for n in [view.caption, *view.notes])
    lines += [
        "\\bottomrule",
        "\\end{tabular}}",
        "\\par\\smallskip",
        f"{{\\footnotesize\\raggedright {note} Regenerate with: \\texttt{{{latex_ascii(command)}}}\\par}}",
        "\\endgroup",
        "",
    ]
    return "\n".join(lines)


def render_paper_table(
    key: str, summary: pl.DataFrame, *, regenerate_command: str, interval: str = "half-width"
) -> tuple[str, str]:
    """(Markdown, LaTeX) of paper table ``key`` (``PAPER_TABLES``) from ``summary``: one study's summary or several
    concatenated (``PAPER_TABLES[key].studies``). ``interval``: one of ``INTERVALS``. The LaTeX is a booktabs
    tabular and its note, to ``\\input`` inside a table float (needs booktabs and graphicx)."""
    table = _check_key(key)
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; choose from {list(INTERVALS)}")
    _check_summary(summary, table)
    view = _view(table, summary, interval=interval)
    return _markdown(view, regenerate_command), _latex(view, regenerate_command)


def write_paper_tables(
    summary: pl.DataFrame,
    out_dir: Path,
    keys: Sequence[str] | None = None,
    *,
    regenerate_command: str,
    interval: str = "half-width",
) -> list[Path]:
    """Write ``<key>.md`` and ``<key>.tex`` into ``out_dir`` for each of ``keys`` (default: every paper table),
    atomically; returns the paths written. ``{key}`` in ``regenerate_command`` becomes each table's key."""
    keys = list(PAPER_TABLES) if keys is None else list(keys)
    for key in keys:
        _check_key(key)
    written = []
    for key in keys:
        command = regenerate_command.replace("{key}", key)
        markdown, latex = render_paper_table(key, summary, regenerate_command=command, interval=interval)
        for suffix, text in ((".md", markdown), (".tex", latex)):
            path = Path(out_dir) / f"{key}{suffix}"
            write_text(path, text)
            written.append(path)
    return written


_TEX_PATH = re.compile(r"^[A-Za-z0-9._/-]+$")


def write_main_tex(
    out_path: Path, table_paths: Sequence[Path], *, title: str = "The seed papers' headline tables, reproduced"
) -> Path:
    """Write a standalone LaTeX document (booktabs, graphicx) that ``\\input``s each table of ``table_paths``
    (paths relative to ``out_path``'s folder in the document), one float per table, atomically."""
    out_path = Path(out_path)
    if not table_paths:
        raise ValueError("table_paths is empty: a document needs at least one table")
    body = []
    for path in map(Path, table_paths):
        if path.suffix != ".tex":
            raise ValueError(f"table {path} is not a .tex file")
        rel = Path(os.path.relpath(path, out_path.parent)).as_posix()
        if not _TEX_PATH.match(rel):
            raise ValueError(
                f"table path {rel!r} has characters LaTeX's \\input may not read; use letters, digits, "
                "'.', '_', '-' and '/'"
            )
        body += [
            "\\begin{table}[!htbp]",
            "\\centering",
            f"\\textbf{{{latex_ascii(path.stem)}}}\\par\\medskip",
            f"\\input{{{rel}}}",
            "\\end{table}",
            "",
        ]
    text = "\n".join(
        [
            "% Generated by nodedp.analysis.paper_tables.write_main_tex; do not edit by hand.",
            "\\documentclass[10pt]{article}",
            "\\usepackage[a4paper,landscape,margin=1.5cm]{geometry}",
            "\\usepackage{booktabs}",
            "\\usepackage{graphicx}",
            "\\begin{document}",
            f"\\section*{{{latex_ascii(title)}}}",
            "",
            *body,
            "\\end{document}",
            "",
        ]
    )
    return atomic_write(out_path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
