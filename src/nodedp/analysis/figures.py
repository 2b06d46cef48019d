"""Figures from a bootstrap summary: accuracy vs ε, the privacy–utility frontier, and hyperparameter sweeps.

Every plot function writes a PNG (and a PDF where asked) and returns the figure's caption (the intervals' confidence
and resamples, the seeds per cell, what each mark means). A method has one colour and marker in every figure
(``method_style``); the marks are the tables' (‡ hollow, † uncharged reads, ¶ reference mode at its actual ε).
The pure helpers (``method_style``, ``dodge_offsets``, ``published_points``, ``pareto_frontier``,
``budget_epsilon``, ``frontier_cells``, ``sweep_cells``, ``figure_interval_text``) compute what is drawn, so it can
be checked without a picture.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from nodedp.analysis.bootstrap import few_seeds_text, seeds_text
from nodedp.analysis.published import PAPERS, published_for
from nodedp.analysis.tables import (
    DAGGER,
    GUARANTEE_MARKS,
    MAJORITY_LABEL,
    NON_PRIVATE,
    REFERENCE_MARK,
    _majority,
    format_epsilon_value,
    metric_label,
)
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.io import atomic_write

COL_WRAP = 3
PANEL_SIZE = (4.2, 3.2)  # inches per panel
LEGEND_WIDTH = 2.2  # inches added beside a single column of panels
DPI = 150
_MARKERS = ["o", "^", "D", "v", "P", "X", "<", ">", "p"]  # a sweep's ε values (squares: reference mode)
_DASHES = [(5, 2), (1, 1.5), (6, 2, 1, 2), (3, 3)]
_LINESTYLES = ["-", "--", "-.", (0, (1, 1)), (0, (5, 1, 1, 1, 1, 1))]
# Short forms of the tables' guarantee notes, for legends and captions.
_MARK_LEGEND = {
    "‡": (
        "every degree-bounded method: DP within its public degree bound, else given the sampled edge "
        "list (also runs with uncharged reads)"
    )
}
_UNACCOUNTED_LEGEND = f"{DAGGER} reads private data without charge (not covered by ε)"
# Reference-mode points sit at the ε they actually spend; beyond this they are drawn at it, labelled.
ACTUAL_EPSILON_CAP = 1e3
PUBLISHED_GID = "published"  # the gid of the Line2D artists of published points
FRONTIER_GID = "frontier"  # the gid of a panel's frontier (envelope) line
PUBLISHED_MARKER = "*"


def _save(fig: Figure, path: Path, *, fmt: str) -> None:
    # The temporary name has no image suffix, so the format is stated rather than inferred.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight"))


def _save_all(fig: Figure, path: Path, pdf_path: Path | None) -> None:
    _save(fig, path, fmt="png")
    if pdf_path is not None:
        _save(fig, pdf_path, fmt="pdf")


def _require(summary: pl.DataFrame, columns: Sequence[str], *, purpose: str) -> None:
    if summary.is_empty():
        raise ValueError("summary is empty: nothing to plot")
    missing = [c for c in columns if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing} needed to {purpose}")


def _metric_columns(metric: str) -> tuple[str, str, str]:
    return f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"


def _single(summary: pl.DataFrame, column: str) -> Any:
    values = summary[column].drop_nulls().unique().to_list()
    if len(values) != 1:
        raise ValueError(
            f"summary holds {column} values {values}; one figure needs exactly one (summarize all runs in one call)"
        )
    return values[0]


def figure_interval_text(summary: pl.DataFrame) -> str:
    """What a figure's points and intervals are, for its caption: the mean over the seeds of each cell (their
    number, min–max where cells differ) and the percentile-bootstrap interval's confidence and resamples,
    read from the summary's ``n_runs``, ``confidence`` and ``n_resamples``."""
    _require(summary, ("n_runs", "confidence", "n_resamples"), purpose="state seeds and confidence in a caption")
    confidence, resamples = _single(summary, "confidence"), _single(summary, "n_resamples")
    return (
        f"mean over {seeds_text(summary['n_runs'].to_list())} per cell with {100 * confidence:g}% "
        f"percentile-bootstrap intervals ({resamples} resamples)"
    )


def few_seeds_caveat(summary: pl.DataFrame) -> str:
    """The caption's sentence on cells of few seeds, as the tables word it (``few_seeds_text``: below
    ``MIN_INFORMATIVE_SEEDS`` the interval is about the seeds' range; one seed, none); empty where every cell has
    enough."""
    _require(summary, ("n_runs", "confidence"), purpose="state the seeds behind the intervals")
    return few_seeds_text(summary["n_runs"].to_list(), confidence=_single(summary, "confidence"))


def _flag(frame: pl.DataFrame, column: str, *, default: bool) -> np.ndarray:
    if column not in frame.columns:
        return np.full(frame.height, default)
    return frame[column].fill_null(default).to_numpy().astype(bool)


def _weak(frame: pl.DataFrame) -> np.ndarray:
    """Cells whose guarantee is weaker than unconditional node-level DP (drawn hollow)."""
    if "guarantee" not in frame.columns:
        return np.zeros(frame.height, dtype=bool)
    return frame["guarantee"].is_in(list(GUARANTEE_MARKS)).fill_null(False).to_numpy()


def _unaccounted(frame: pl.DataFrame) -> np.ndarray:
    """Cells whose runs read private data without charge (the tables' †)."""
    return ~_flag(frame, "fully_accounted", default=True)


def _reference(frame: pl.DataFrame) -> np.ndarray:
    return _flag(frame, "reference", default=False)


def _method_marks(frame: pl.DataFrame) -> str:
    """The marks of the weakest cells of ``frame`` (one method's), in the tables' order: †, then ‡."""
    marks = DAGGER if _unaccounted(frame).any() else ""
    weak = _weak(frame)
    return marks + "".join(
        sorted({GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]} if weak.any() else set())
    )


def _marks_caption(frame: pl.DataFrame) -> str:
    """Sentences explaining the marks that the cells of ``frame`` carry."""
    sentences = []
    weak = _weak(frame)
    shown = {GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]} if weak.any() else set()
    for mark in GUARANTEE_MARKS.values():
        if mark in shown:
            sentences.append(f"Hollow points, {mark} in the legend: {_MARK_LEGEND[mark]}.")
    if _unaccounted(frame).any():
        sentences.append(
            f"{DAGGER} beside a point: its runs read private data without charge, so its ε does not "
            "cover every read (see the runs' ledgers)."
        )
    return " ".join(sentences)


# --- one style per method, in every figure ----------------------------------------------------------------


@dataclass(frozen=True)
class MethodStyle:
    """How a method is drawn in every figure and study: its colour, its marker, and the dashes of its line where
    it is drawn as a non-private reference (a horizontal line at ε = ∞)."""

    colour: str
    marker: str
    dashes: tuple[float, ...]


REFERENCE_MARKER = "s"  # reference mode (`<method>@paper`): its method's colour, squares, a dotted line
# The registered methods, in a fixed order: private ones in distinct hues (tab10's, then colours picked greedily to
# lie far, in CIELAB, from those before them), non-private ones in greys with dashes of their own, so the eye
# separates "what DP buys" from "what it costs" at once. Squares (reference mode) and stars (published values) are
# no method's marker.
_REGISTERED_STYLES: dict[str, tuple[str, str, tuple[float, ...]]] = {
    "dp-mlp": ("#1f77b4", "o", (5, 2)),
    "dp-gcn": ("#ff7f0e", "^", (5, 2)),
    "dp-sage": ("#2ca02c", "v", (5, 2)),
    "dp-gin": ("#d62728", "D", (5, 2)),
    "dp-gat": ("#9467bd", "<", (5, 2)),
    "gap": ("#8c564b", "P", (5, 2)),
    "progap": ("#e377c2", "X", (5, 2)),
    "dpar-em0": ("#bcbd22", "p", (5, 2)),
    "nip-gnn": ("#17becf", "h", (5, 2)),
    "dpdgc": ("#165937", ">", (5, 2)),
    "dpar-em1": ("#a6b17a", "H", (5, 2)),
    "dpar-gm": ("#a6004e", "d", (5, 2)),
    "dpar-features": ("#9b6f0b", "8", (5, 2)),
    "edgerand": ("#ff907a", "o", (5, 2)),
    "gap-edge": ("#00b185", "P", (5, 2)),
    "progap-edge": ("#0085ff", "X", (5, 2)),
    "mlp": ("#4d4d4d", "o", (1, 1.5)),
    "gcn": ("#262626", "^", (5, 2)),
    "sage": ("#737373", "v", (6, 2, 1, 2)),
    "gin": ("#595959", "D", (3, 3)),
    "gat": ("#8c8c8c", "<", (8, 2, 2, 2)),
    "gap-nodp": ("#404040", "P", (2, 2)),
    "progap-nodp": ("#666666", "X", (4, 1, 1, 1)),
    "dpar-nodp": ("#7f7f7f", "p", (10, 3)),
    "dpdgc-nodp": ("#333333", ">", (1, 3)),
}
# Any other name (a variant such as dpdgc-fast) hashes into colours no registered method has (the greedy picks
# after theirs), a marker and dashes; under this salt no two variants of one shipped study (config.yaml) share a
# colour.
_FALLBACK_COLOURS = (
    "#9b0085",
    "#4e6400",
    "#7a3764",
    "#90370b",
    "#b1a6de",
    "#ff597a",
    "#de90a6",
    "#2c43b1",
    "#00bcff",
    "#de85ff",
    "#dea621",
    "#644e16",
    "#90bc59",
    "#d39b64",
    "#bc4e4e",
    "#006f21",
    "#de3790",
    "#6fa6ff",
    "#594e85",
)
_FALLBACK_MARKERS = ("o", "^", "v", "D", "<", ">", "P", "X", "p", "h", "H", "d", "8")
_FALLBACK_SALT = "883"


def method_style(method: str) -> MethodStyle:
    """The one style of ``method`` in every figure: a registered method's fixed entry; any other name's from a hash
    of it (the same in every process). Reference mode (``<method>@paper``) keeps its method's colour and dashes
    with squares (``REFERENCE_MARKER``); figures draw its line dotted. An audit row of a release
    (``<method> · NAP release``) takes its method's style."""
    name = method.split(" · ")[0]
    base = name.removesuffix(REFERENCE_SUFFIX)
    if base in _REGISTERED_STYLES:
        colour, marker, dashes = _REGISTERED_STYLES[base]
    else:
        digest = int.from_bytes(hashlib.sha256(f"{_FALLBACK_SALT}:{base}".encode()).digest()[:8], "big")
        colour = _FALLBACK_COLOURS[digest % len(_FALLBACK_COLOURS)]
        digest //= len(_FALLBACK_COLOURS)
        marker = _FALLBACK_MARKERS[digest % len(_FALLBACK_MARKERS)]
        dashes = _DASHES[digest // len(_FALLBACK_MARKERS) % len(_DASHES)]
    return MethodStyle(colour, REFERENCE_MARKER if name != base else marker, dashes)


def dodge_offsets(methods: Sequence[str], budgets: Sequence[float], *, step: float = 0.03) -> dict[str, float]:
    """Each method's horizontal offset on a log ε axis, in decades: methods side by side around each budget (in
    the order given, the same in every panel), ``step`` apart, the whole group within 40% of the narrowest gap
    between budgets, so overlapping points and intervals stay apart without crossing to the next budget."""
    k = len(methods)
    if k < 2:
        return dict.fromkeys(methods, 0.0)
    logs = sorted({math.log10(b) for b in budgets if b > 0 and math.isfinite(b)})
    gap = min((b - a for a, b in itertools.pairwise(logs)), default=1.0)
    step = min(step, 0.4 * gap / (k - 1))
    return {m: (i - (k - 1) / 2) * step for i, m in enumerate(methods)}


def _cycle(items: Sequence[Any], styles: Sequence[Any]) -> dict[Any, Any]:
    return {item: styles[i % len(styles)] for i, item in enumerate(items)}


def _panels(n: int, *, extra_legend: bool = True) -> tuple[Figure, np.ndarray, int]:
    """A figure with ``n`` panels in a balanced grid (4 as 2x2 rather than 3+1); unused ones hidden."""
    n_rows = math.ceil(n / COL_WRAP)
    n_cols = math.ceil(n / n_rows)
    legend_width = LEGEND_WIDTH if n_cols == 1 and extra_legend else 0.0
    fig = Figure(figsize=(PANEL_SIZE[0] * n_cols + legend_width, PANEL_SIZE[1] * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes, n_cols


# Legend entries wrap at this many characters, so that a long one (a mark's explanation) never sets the figure's width.
LEGEND_WRAP = 38


def _legend(fig: Figure, handles: list[Line2D], n_cols: int) -> None:
    # One column of panels is narrow: the legend goes beside it, otherwise below, as many columns as fit the panels.
    for handle in handles:
        handle.set_label(textwrap.fill(str(handle.get_label()), LEGEND_WRAP))
    if n_cols == 1:
        fig.legend(handles=handles, loc="outside right upper", frameon=False)
    else:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * n_cols), frameon=False)


def _log_epsilon_axis(ax: Axes, ticks: Sequence[float], x_min: float, x_max: float, *, label: str) -> None:
    ax.set_xscale("log")
    ax.set_xlim(x_min, x_max)
    # Ticks at the budgets actually drawn, labelled plainly rather than as powers of ten.
    ticks = sorted(set(ticks)) or [x_min, 1.0, x_max]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{e:g}" for e in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def _dagger_points(ax: Axes, x: np.ndarray, y: np.ndarray, flags: np.ndarray) -> None:
    for xi, yi in zip(x[flags], y[flags]):
        ax.annotate(DAGGER, (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=8)


def _draw_marks(ax: Axes, x: np.ndarray, y: np.ndarray, style: MethodStyle, *, hollow: np.ndarray) -> None:
    """A method's points in its marker: filled, or hollow where ``hollow`` (a conditional guarantee)."""
    for part, face in ((~hollow, style.colour), (hollow, "white")):
        if part.any():
            ax.plot(
                x[part],
                y[part],
                linestyle="none",
                marker=style.marker,
                markersize=5.5,
                color=style.colour,
                markerfacecolor=face,
                zorder=3,
            )


def _cap_actual(ax: Axes, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x`` capped at ``ACTUAL_EPSILON_CAP``, each capped point labelled with its ε."""
    for xi, yi in zip(x, y):
        if xi > ACTUAL_EPSILON_CAP:
            # Below-left of the point: above it runs the frontier's step, where there is one.
            ax.annotate(
                f"ε = {format_epsilon_value(xi)}",
                (ACTUAL_EPSILON_CAP, yi),
                fontsize=7,
                xytext=(-6, -4),
                textcoords="offset points",
                ha="right",
                va="top",
            )
    return x.clip(max=ACTUAL_EPSILON_CAP)


# --- published points -------------------------------------------------------------------------------------


def published_points(summary: pl.DataFrame, *, metric: str = "test_accuracy") -> pl.DataFrame:
    """The published cells (``nodedp.analysis.published``) of the summary's (dataset, method, target ε) cells.

    One row per printed cell and dataset: ``dataset``, ``method`` (the first of the summary's methods it
    matches, in sorted order, so a suite method takes it before its ``@paper`` twin), ``epsilon`` (the printed
    ε; ∞ non-private), ``value`` (a fraction, as the summary's means), ``paper`` and ``stand_in`` (the dataset
    only stands in for the paper's: a different graph or setting).
    """
    rows: list[dict[str, Any]] = []
    seen = set()
    cells = summary.select("dataset", "method", "target_epsilon").unique().sort("dataset", "method", "target_epsilon")
    for dataset, method, epsilon in cells.iter_rows():
        for cell, stand_in in published_for(dataset, method.removesuffix(REFERENCE_SUFFIX), epsilon, metric=metric):
            if (dataset, cell) in seen:
                continue
            seen.add((dataset, cell))
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "epsilon": float(cell.epsilon),
                    "value": cell.accuracy / 100,
                    "paper": cell.paper,
                    "stand_in": stand_in,
                }
            )
    schema = {
        "dataset": pl.String(),
        "method": pl.String(),
        "epsilon": pl.Float64(),
        "value": pl.Float64(),
        "paper": pl.String(),
        "stand_in": pl.Boolean(),
    }
    return pl.DataFrame(rows, schema=schema)


def _draw_published(ax: Axes, points: pl.DataFrame, styles: dict[str, MethodStyle], *, infinity_at: float) -> None:
    for stand_in in (False, True):
        for method in points["method"].unique().sort():
            rows = points.filter((pl.col("method") == method) & (pl.col("stand_in") == stand_in))
            if rows.is_empty():
                continue
            # Non-private published values sit on the right edge of the ε axis.
            x = np.where(np.isinf(rows["epsilon"].to_numpy()), infinity_at, rows["epsilon"].to_numpy())
            ax.plot(
                x,
                100 * rows["value"].to_numpy(),
                linestyle="none",
                marker=PUBLISHED_MARKER,
                markersize=10,
                color=styles[method].colour,
                markeredgecolor="black",
                markeredgewidth=0.6,
                clip_on=False,
                markerfacecolor="none" if stand_in else styles[method].colour,
                gid=PUBLISHED_GID,
                zorder=3,
            )


def _published_handles(points: pl.DataFrame) -> list[Line2D]:
    handles = []
    if (~points["stand_in"]).any():
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=PUBLISHED_MARKER,
                markersize=10,
                color="grey",
                markeredgecolor="black",
                markeredgewidth=0.6,
                label="published (paper's table)",
            )
        )
    if points["stand_in"].any():
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=PUBLISHED_MARKER,
                markersize=10,
                color="grey",
                markerfacecolor="none",
                markeredgecolor="black",
                markeredgewidth=0.6,
                label="published, for a dataset this one stands in for",
            )
        )
    return handles


def _published_caption(points: pl.DataFrame) -> str:
    if points.is_empty():
        return ""
    papers = "; ".join(PAPERS[p] for p in sorted(points["paper"].unique().to_list()))
    text = (
        "Stars: the values the papers print for the method at that ε, under their own accounting and δ "
        "(non-private ones on the right edge)"
    )
    if points["stand_in"].any():
        text += "; hollow stars: printed for a dataset this one only stands in for"
    return f"{text}. Papers: {papers}."


# --- accuracy against ε -----------------------------------------------------------------------------------


def plot_accuracy_vs_epsilon(
    summary: pl.DataFrame,
    path: Path,
    *,
    metric: str = "test_accuracy",
    pdf_path: Path | None = None,
    published: bool = True,
) -> str:
    """Draw ``metric`` (percent) against target ε on a log axis, one panel per dataset; write PNG (and PDF).

    Private methods are lines with markers and bars for their bootstrap interval, set side by side around each
    budget (``dodge_offsets``) so that methods of equal accuracy stay apart; non-private methods (ε = ∞) are
    dashed horizontal references with a light band. Each method has its one style (``method_style``) in every
    figure, and one legend serves all panels.
    Where the summary has a ``guarantee`` column, points whose guarantee is weaker than
    unconditional node-level DP are hollow, the method's legend entry carries the mark of
    its weakest cell (as the tables do), and the legend explains the marks; where it has
    ``fully_accounted``, points with uncharged reads carry † (and so does their method's entry).
    Reference-mode methods (``<method>@paper``, the summary's ``reference`` column) are dotted squares
    drawn at the ε they actually spend (``epsilon_max``), never at the claimed one; past
    ``ACTUAL_EPSILON_CAP`` at the cap, labelled. With ``published``, the values the papers print for
    the summary's cells (``published_points``) are stars in the method's colour. Returns the caption.
    """
    mean, low, high = _metric_columns(metric)
    _require(summary, ("dataset", "method", "target_epsilon", mean, low, high), purpose=f"plot {metric!r}")
    interval = figure_interval_text(summary)

    datasets = sorted(summary["dataset"].unique().to_list())
    private = summary.filter(pl.col("target_epsilon").is_finite())
    reference = summary.filter(pl.col("target_epsilon").is_infinite())
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    methods = private_methods + reference_methods
    styles = {m: method_style(m) for m in methods}
    method_marks = {m: _method_marks(private.filter(pl.col("method") == m)) for m in private_methods}

    is_paper = _reference(private)
    paper_methods = set(private.filter(pl.Series(is_paper))["method"].to_list())
    epsilons = sorted(set(private.filter(pl.Series(~is_paper))["target_epsilon"].to_list()))
    actual = sorted(min(e, ACTUAL_EPSILON_CAP) for e in private.filter(pl.Series(is_paper))["epsilon_max"].to_list())
    points = published_points(summary if published else summary.clear(), metric=metric)
    printed = [e for e in points["epsilon"].to_list() if math.isfinite(e)]
    # Without private runs there is no ε axis to speak of; draw the references over a nominal range.
    span = epsilons + actual + printed
    x_min, x_max = (min(span) / 1.6, max(span) * 1.6) if span else (0.1, 10.0)
    ticks = epsilons + printed + ([ACTUAL_EPSILON_CAP] if actual and actual[-1] == ACTUAL_EPSILON_CAP else [])
    # Reference-mode points sit at an ε of their own: only the methods sharing the target budgets move aside.
    offsets = dodge_offsets([m for m in private_methods if m not in paper_methods], epsilons)
    majority = _majority(summary) if metric == "test_accuracy" else {}

    import seaborn as sns

    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        fig, axes, n_cols = _panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            cell = summary.filter(pl.col("dataset") == dataset)
            for method in methods:
                rows = cell.filter(pl.col("method") == method).sort("target_epsilon")
                finite = rows.filter(pl.col("target_epsilon").is_finite())
                if method in private_methods and finite.height:
                    paper = method in paper_methods
                    offset = 0.0 if paper else offsets[method]
                    _draw_private_method(ax, finite, styles[method], (mean, low, high), paper=paper, offset=offset)
                infinite = rows.filter(pl.col("target_epsilon").is_infinite())
                if method in reference_methods and infinite.height:
                    y, lo, hi = (100 * float(infinite[c][0]) for c in (mean, low, high))
                    ax.axhspan(lo, hi, color=styles[method].colour, alpha=0.1, linewidth=0)
                    ax.axhline(y, color=styles[method].colour, dashes=styles[method].dashes, linewidth=1.3)
            _draw_majority(ax, majority, dataset)
            _draw_published(ax, points.filter(pl.col("dataset") == dataset), styles, infinity_at=x_max)
            _log_epsilon_axis(ax, ticks, x_min, x_max, label="privacy budget ε (log scale)")
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = [
            Line2D(
                [],
                [],
                color=styles[m].colour,
                marker=styles[m].marker,
                markersize=5.5,
                linewidth=1.5,
                linestyle=":" if m in paper_methods else "-",
                label=m + method_marks[m] + (f" {REFERENCE_MARK} at its actual ε" if m in paper_methods else ""),
            )
            for m in private_methods
        ] + [
            Line2D([], [], color=styles[m].colour, dashes=styles[m].dashes, linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
            for m in reference_methods
        ]
        handles += _majority_handles(majority) + _mark_handles(private) + _published_handles(points)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    caption = (
        f"{metric_label(metric).capitalize()} (%) against the privacy budget ε (log scale), one panel per "
        f"dataset: {interval}, as bars. At each budget the methods sit side by side, slightly apart, so "
        "that equal accuracies stay readable."
    )
    if reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞) with their intervals as bands."
    if paper_methods:
        caption += (
            f" Dotted squares, {REFERENCE_MARK}: reference mode (the noise the paper's accounting gives the "
            "target ε), drawn at the ε that noise actually spends under the suite's accountant (the largest "
            f"over seeds; past {ACTUAL_EPSILON_CAP:g} at {ACTUAL_EPSILON_CAP:g}, labelled)."
        )
    return " ".join(
        filter(
            None,
            [
                caption,
                _majority_caption(majority),
                few_seeds_caveat(summary),
                _marks_caption(private),
                _published_caption(points),
            ],
        )
    )


def _draw_private_method(
    ax: Any, finite: pl.DataFrame, style: Any, columns: tuple[str, str, str], *, paper: bool, offset: float
) -> None:
    """One private method's line on an accuracy-vs-ε panel: bars, points (hollow where weak), †; a reference-mode
    method at the ε its noise actually spends, dotted."""
    mean, low, high = columns
    if paper:  # at the ε the paper's noise actually spends
        finite = finite.sort("epsilon_max")
    x = finite["epsilon_max" if paper else "target_epsilon"].to_numpy()
    y, lo, hi = (100 * finite[c].to_numpy() for c in (mean, low, high))
    x = _cap_actual(ax, x, y) if paper else x * 10**offset
    ax.errorbar(
        x,
        y,
        yerr=[y - lo, hi - y],
        color=style.colour,
        linestyle=":" if paper else "-",
        linewidth=1.5,
        elinewidth=1,
        capsize=2,
        alpha=0.9,
    )
    _draw_marks(ax, x, y, style, hollow=_weak(finite))
    _dagger_points(ax, x, y, _unaccounted(finite))


def _mark_handles(frame: pl.DataFrame) -> list[Line2D]:
    """Legend entries explaining the marks that the cells of ``frame`` carry."""
    shown = set("".join(_method_marks(frame.filter(pl.col("method") == m)) for m in frame["method"].unique()))
    handles = [
        Line2D(
            [],
            [],
            color="grey",
            marker="o",
            markersize=5,
            linestyle="none",
            markerfacecolor="white",
            label=f"hollow {mark}: {_MARK_LEGEND[mark]}",
        )
        for mark in GUARANTEE_MARKS.values()
        if mark in shown
    ]
    if DAGGER in shown:
        handles.append(
            Line2D(
                [], [], color="black", marker=f"${DAGGER}$", markersize=7, linestyle="none", label=_UNACCOUNTED_LEGEND
            )
        )
    return handles


MAJORITY_COLOUR = "#a0a0a0"


def _draw_majority(ax: Axes, majority: dict[str, float], dataset: str) -> None:
    if dataset in majority:
        ax.axhline(100 * majority[dataset], color=MAJORITY_COLOUR, linestyle="-.", linewidth=1.1, zorder=0.5)


def _majority_handles(majority: dict[str, float]) -> list[Line2D]:
    return (
        [
            Line2D(
                [],
                [],
                color=MAJORITY_COLOUR,
                linestyle="-.",
                linewidth=1.1,
                label=f"{MAJORITY_LABEL} (predicts one class)",
            )
        ]
        if majority
        else []
    )


def _majority_caption(majority: dict[str, float]) -> str:
    return (
        "Dash-dotted grey: the accuracy of always predicting the training set's most frequent class; a method "
        "at or below it has learned nothing useful."
        if majority
        else ""
    )


# --- the privacy–utility frontier -------------------------------------------------------------------------


def pareto_frontier(epsilons: Sequence[float], accuracies: Sequence[float]) -> list[int]:
    """Indices of the points on the upper envelope, by increasing ε: each is strictly more accurate than every
    point at ≤ its ε, so reading the envelope at ε gives the best accuracy reachable at ≤ ε. Of points at the
    same ε only the most accurate (the first of equals) can be on it."""
    eps, acc = np.asarray(epsilons, dtype=np.float64), np.asarray(accuracies, dtype=np.float64)
    if eps.shape != acc.shape or eps.ndim != 1:
        raise ValueError(f"need as many accuracies as epsilons, got shapes {acc.shape} and {eps.shape}")
    if np.isnan(eps).any() or np.isnan(acc).any():
        raise ValueError("epsilons and accuracies must not be NaN")
    order = sorted(range(eps.size), key=lambda i: (eps[i], -acc[i], i))
    frontier, best = [], -math.inf
    for i in order:
        if acc[i] > best:
            frontier.append(i)
            best = acc[i]
    return frontier


# A cell spending at most this much (relative) above its target ε is held to the target: calibration lands a hair
# off it (0.99748 for 1), and two such cells are one budget, not two.
BUDGET_TOLERANCE = 1e-3


def budget_epsilon() -> pl.Expr:
    """The budget a private cell is held to: its target ε, unless it spends more (``epsilon_max`` above the target by
    more than ``BUDGET_TOLERANCE``, as reference mode does where its paper's accounting under-reports), then the ε it
    actually spends. So cells configured at one ε are one budget, whatever they spend to the fifth decimal."""
    target, spent = pl.col("target_epsilon"), pl.col("epsilon_max")
    return pl.when(spent <= target * (1 + BUDGET_TOLERANCE)).then(target).otherwise(spent)


def frontier_cells(summary: pl.DataFrame, *, metric: str = "test_accuracy") -> pl.DataFrame:
    """Per dataset, the private cells on the privacy–utility frontier: ``metric``'s mean against the budget each
    cell is held to (``budget_epsilon``: the target ε, or the ε actually spent where that is more). Cells with uncharged
    reads (†) do not count, as their ε does not cover every read. Of cells at one budget only the most accurate
    can be on it. Columns: ``dataset``, ``method``, ``target_epsilon``, ``epsilon`` (the budget), ``spent``
    (``epsilon_max``), ``mean``; by dataset, then increasing budget."""
    mean = f"{metric}_mean"
    _require(summary, ("dataset", "method", "target_epsilon", "epsilon_max", mean), purpose="find the frontier")
    eligible = summary.filter(pl.col("target_epsilon").is_finite())
    eligible = (
        eligible.filter(pl.Series(~_unaccounted(eligible)))
        .sort("dataset", "method", "target_epsilon")
        .with_columns(budget_epsilon().alias("budget"))
    )
    parts = []
    for (_dataset,), cells in eligible.group_by("dataset", maintain_order=True):
        on = pareto_frontier(cells["budget"].to_list(), cells[mean].to_list())
        parts.append(
            cells[on, :].select(
                "dataset",
                "method",
                "target_epsilon",
                pl.col("budget").alias("epsilon"),
                pl.col("epsilon_max").alias("spent"),
                pl.col(mean).alias("mean"),
            )
        )
    schema = {
        "dataset": pl.String(),
        "method": pl.String(),
        "target_epsilon": pl.Float64(),
        "epsilon": pl.Float64(),
        "spent": pl.Float64(),
        "mean": pl.Float64(),
    }
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def plot_frontier(
    summary: pl.DataFrame,
    path: Path,
    *,
    metric: str = "test_accuracy",
    pdf_path: Path | None = None,
) -> str:
    """Draw the privacy–utility frontier per dataset: every private cell's ``metric`` (percent, with its interval)
    against the budget it is held to (``budget_epsilon``, log axis), methods side by side around each budget
    (``dodge_offsets``), the frontier (``frontier_cells``) as a black step line through ringed points, non-private
    methods as dashed references. No text labels: each method is its style (``method_style``) in the legend.
    Reference-mode cells are squares (¶) at the ε they spend; hollow and † as in ``plot_accuracy_vs_epsilon``.
    Returns the caption."""
    mean, low, high = _metric_columns(metric)
    _require(
        summary,
        ("dataset", "method", "target_epsilon", "epsilon_max", mean, low, high),
        purpose=f"plot the {metric!r} frontier",
    )
    private = summary.filter(pl.col("target_epsilon").is_finite())
    if private.is_empty():
        raise ValueError("summary has no private cell (finite target_epsilon): no frontier to draw")
    interval = figure_interval_text(summary)
    envelope = frontier_cells(summary, metric=metric)
    private = private.with_columns(budget_epsilon().alias("budget"))

    datasets = sorted(private["dataset"].unique().to_list())
    reference = summary.filter(pl.col("target_epsilon").is_infinite() & pl.col("dataset").is_in(datasets))
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    styles = {m: method_style(m) for m in private_methods + reference_methods}
    paper_methods = set(private.filter(pl.Series(_reference(private)))["method"].to_list())
    at_target = private.filter(pl.col("budget") == pl.col("target_epsilon"))
    overspent = private.filter(pl.col("budget") != pl.col("target_epsilon"))
    budgets = np.minimum(private["budget"].to_numpy(), ACTUAL_EPSILON_CAP)
    x_min, x_max = budgets.min() / 1.6, budgets.max() * 1.6
    targets = sorted(set(at_target["budget"].to_list()))
    ticks = targets + [t for t in _log_ticks(x_min, x_max) if overspent.height and t > 1.6 * max(targets, default=0)]
    offsets = dodge_offsets(private_methods, targets)
    majority = _majority(summary) if metric == "test_accuracy" else {}

    import seaborn as sns

    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        fig, axes, n_cols = _panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            cells = private.filter(pl.col("dataset") == dataset)
            best = envelope.filter(pl.col("dataset") == dataset)
            on_frontier = set(zip(best["method"].to_list(), best["target_epsilon"].to_list()))
            for method in private_methods:
                rows = cells.filter(pl.col("method") == method).sort("budget")
                if not rows.is_empty():
                    _draw_frontier_cells(ax, rows, styles[method], (mean, low, high), offsets[method], on_frontier)
            for method in reference_methods:
                rows = reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
                if rows.height:
                    ax.axhline(
                        100 * float(rows[mean][0]),
                        color=styles[method].colour,
                        dashes=styles[method].dashes,
                        linewidth=1.3,
                    )
            _draw_majority(ax, majority, dataset)
            if best.height:
                _draw_frontier_steps(ax, best, x_max)
            _log_epsilon_axis(ax, ticks, x_min, x_max, label="privacy budget ε (log scale)")
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = _frontier_handles(private, private_methods, reference_methods, styles, paper_methods)
        handles += _majority_handles(majority) + _mark_handles(private)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    return _frontier_caption(summary, private, metric, interval, majority, overspent, paper_methods, reference_methods)


def _draw_frontier_cells(
    ax: Any, rows: pl.DataFrame, style: Any, columns: tuple[str, str, str], offset: float, on_frontier: set
) -> None:
    """One method's private cells on a frontier panel: bars, points (hollow where weak), rings on the frontier, †."""
    mean, low, high = columns
    y, lo, hi = (100 * rows[c].to_numpy() for c in (mean, low, high))
    # At a target budget, side by side; past it, at the ε spent (capped, labelled).
    budget = rows["budget"].to_numpy()
    x = budget * 10**offset
    over = (rows["budget"] != rows["target_epsilon"]).to_numpy()
    if over.any():
        x[over] = _cap_actual(ax, budget[over], y[over])
    ax.errorbar(x, y, yerr=[y - lo, hi - y], color=style.colour, linestyle="none", linewidth=1, capsize=2, alpha=0.8)
    _draw_marks(ax, x, y, style, hollow=_weak(rows))
    ringed = np.array([(rows["method"][0], e) in on_frontier for e in rows["target_epsilon"].to_list()])
    if ringed.any():
        ax.plot(
            x[ringed],
            y[ringed],
            linestyle="none",
            marker="o",
            markersize=11,
            markerfacecolor="none",
            markeredgecolor="black",
            markeredgewidth=1,
            zorder=4,
        )
    _dagger_points(ax, x, y, _unaccounted(rows))


def _draw_frontier_steps(ax: Any, best: pl.DataFrame, x_max: float) -> None:
    """The frontier of one panel as a black step line."""
    x = np.minimum(best["epsilon"].to_numpy(), ACTUAL_EPSILON_CAP)
    y = 100 * best["mean"].to_numpy()
    # Steps: the best accuracy reachable at ≤ ε holds until the next frontier point.
    ax.plot(
        np.append(x, x_max),
        np.append(y, y[-1]),
        drawstyle="steps-post",
        color="black",
        linewidth=1.2,
        alpha=0.7,
        gid=FRONTIER_GID,
        zorder=1,
    )


def _frontier_handles(
    private: pl.DataFrame, private_methods: list, reference_methods: list, styles: dict, paper_methods: set
) -> list:
    """The frontier legend's method entries and the frontier's own."""
    return (
        [
            Line2D(
                [],
                [],
                color=styles[m].colour,
                marker=styles[m].marker,
                markersize=5.5,
                linestyle="none",
                label=m
                + _method_marks(private.filter(pl.col("method") == m))
                + (f" {REFERENCE_MARK} at its actual ε" if m in paper_methods else ""),
            )
            for m in private_methods
        ]
        + [
            Line2D([], [], color=styles[m].colour, dashes=styles[m].dashes, linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
            for m in reference_methods
        ]
        + [
            Line2D(
                [],
                [],
                color="black",
                alpha=0.7,
                linewidth=1.2,
                marker="o",
                markersize=11,
                markerfacecolor="none",
                label="frontier: best at ≤ ε (ringed)",
            )
        ]
    )


def _frontier_caption(
    summary: pl.DataFrame,
    private: pl.DataFrame,
    metric: str,
    interval: str,
    majority: dict,
    overspent: pl.DataFrame,
    paper_methods: set,
    reference_methods: list,
) -> str:
    """The frontier figure's caption: what is drawn, then the notes its cells call for."""
    caption = (
        f"Privacy–utility frontier: {metric_label(metric)} (%) of every private cell against its privacy "
        "budget, the target ε it was run at (log scale; cells of one target are one budget, whatever they "
        "spend below it), one panel per dataset: "
        f"{interval}, as bars. At each budget the methods sit side by side, slightly apart. Black steps: the "
        "best accuracy reachable at ≤ ε; the ringed cells are on them."
    )
    if _unaccounted(private).any():
        caption += f" Cells marked {DAGGER} are shown but cannot be on the frontier."
    if overspent.height:
        caption += (
            " A cell that spends more than its target ε sits at the ε it spends"
            + (f" ({REFERENCE_MARK}: reference mode, the paper's accounting)" if paper_methods else "")
            + f"; past {ACTUAL_EPSILON_CAP:g} at {ACTUAL_EPSILON_CAP:g}, labelled."
        )
    elif paper_methods:
        caption += f" Squares, {REFERENCE_MARK}: reference mode (the paper's accounting), within its claimed ε."
    if reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞)."
    return " ".join(
        filter(None, [caption, _majority_caption(majority), few_seeds_caveat(summary), _marks_caption(private)])
    )


def _log_ticks(x_min: float, x_max: float) -> list[float]:
    """The powers of ten inside [x_min, x_max], with 2 and 5 times them where the range spans two decades or less."""
    low, high = math.floor(math.log10(x_min)), math.ceil(math.log10(x_max))
    steps = (1, 2, 5) if high - low <= 2 else (1,)
    return [m * 10.0**k for k in range(low, high + 1) for m in steps if x_min <= m * 10.0**k <= x_max]


# --- hyperparameter sweeps --------------------------------------------------------------------------------


def sweep_cells(summary: pl.DataFrame, *, parameter: str, metric: str = "test_accuracy") -> pl.DataFrame:
    """The private cells whose ``hyperparameters`` hold ``parameter``, with its value and the line they lie on.

    A line is a method base (the summary's ``base_method``, else the name without ``@paper``; ``@paper`` kept
    for reference mode) with every other hyperparameter fixed, at one target ε: variants that change only
    ``parameter`` fall on one line. Where lines of one base differ in other hyperparameters, their ``line``
    label names those (``dpar-em0 (max_rows=70)``). Columns: ``dataset``, ``method``, ``line``,
    ``target_epsilon``, ``value``, ``mean``, ``low``, ``high``, plus ``guarantee``, ``fully_accounted`` and
    ``reference`` where the summary has them; by dataset, line, ε, value.
    """
    mean, low, high = _metric_columns(metric)
    _require(
        summary,
        ("dataset", "method", "target_epsilon", "hyperparameters", mean, low, high),
        purpose=f"plot {metric!r} against {parameter!r} (summarize runs collected with their hyperparameters)",
    )
    private = summary.filter(pl.col("target_epsilon").is_finite() & pl.col("hyperparameters").is_not_null())
    bases = private["base_method"].to_list() if "base_method" in private.columns else [None] * private.height
    paper = _reference(private)
    rows, seen_keys = [], set()
    for r, base, ref in zip(private.iter_rows(named=True), bases, paper):
        hp = json.loads(r["hyperparameters"])
        seen_keys |= set(hp)
        if parameter not in hp:
            continue
        value = hp.pop(parameter)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"hyperparameter {parameter!r} of {r['method']} is {value!r}: a sweep needs numbers")
        family = (base or r["method"].removesuffix(REFERENCE_SUFFIX)) + (REFERENCE_SUFFIX if ref else "")
        rows.append({"r": r, "family": family, "others": hp, "value": float(value)})
    if not rows:
        raise ValueError(
            f"no private cell has hyperparameter {parameter!r}; hyperparameters present: {sorted(seen_keys)}"
        )
    # Within a family, the settings that tell its lines apart (the same everywhere: none).
    labels: dict[tuple[str, str], str] = {}
    for family in sorted({row["family"] for row in rows}):
        variants = {json.dumps(row["others"], sort_keys=True): row["others"] for row in rows if row["family"] == family}
        keys = sorted({k for hp in variants.values() for k in hp})
        differ = [k for k in keys if len({json.dumps(hp.get(k)) for hp in variants.values()}) > 1]
        for text, hp in variants.items():
            setting = ", ".join(f"{k}={hp.get(k)}" for k in differ)
            labels[(family, text)] = f"{family} ({setting})" if setting else family
    out = [
        {
            "dataset": row["r"]["dataset"],
            "method": row["r"]["method"],
            "line": labels[(row["family"], json.dumps(row["others"], sort_keys=True))],
            "target_epsilon": row["r"]["target_epsilon"],
            "value": row["value"],
            "mean": row["r"][mean],
            "low": row["r"][low],
            "high": row["r"][high],
            **{c: row["r"][c] for c in ("guarantee", "fully_accounted", "reference") if c in summary.columns},
        }
        for row in rows
    ]
    schema = {
        "dataset": pl.String(),
        "method": pl.String(),
        "line": pl.String(),
        "target_epsilon": pl.Float64(),
        "value": pl.Float64(),
        "mean": pl.Float64(),
        "low": pl.Float64(),
        "high": pl.Float64(),
    }
    schema |= {c: summary.schema[c] for c in ("guarantee", "fully_accounted", "reference") if c in summary.columns}
    return pl.DataFrame(out, schema=schema).sort("dataset", "line", "target_epsilon", "value", "method")


def plot_sweep(
    summary: pl.DataFrame,
    path: Path,
    *,
    parameter: str,
    metric: str = "test_accuracy",
    pdf_path: Path | None = None,
) -> str:
    """Draw ``metric`` (percent) against hyperparameter ``parameter``, one panel per dataset, one line per method
    base and target ε (``sweep_cells``): colour for the base and its fixed settings, line style for ε, bars for
    the intervals; non-private methods of those datasets as dashed grey references. The axis is logarithmic
    where the values are positive and span a factor of 20 or more. Marks as in ``plot_accuracy_vs_epsilon``.
    Returns the caption."""
    cells = sweep_cells(summary, parameter=parameter, metric=metric)
    mean = f"{metric}_mean"
    datasets = sorted(cells["dataset"].unique().to_list())
    shown = summary.filter(pl.col("dataset").is_in(datasets))
    drawn = pl.col("target_epsilon").is_infinite() | pl.col("method").is_in(cells["method"].unique().to_list())
    interval = figure_interval_text(shown.filter(drawn))
    reference = shown.filter(pl.col("target_epsilon").is_infinite())
    lines = sorted(cells["line"].unique().to_list())
    reference_methods = sorted(reference["method"].unique().to_list())
    line_styles = {line: method_style(_line_method(cells, line)) for line in lines}
    references = {m: method_style(m) for m in reference_methods}
    paper_lines = {line for line in lines if line.split(" (")[0].endswith(REFERENCE_SUFFIX)}
    epsilons = sorted(cells["target_epsilon"].unique().to_list())
    styles = _cycle(epsilons, _LINESTYLES)
    markers = _cycle(epsilons, _MARKERS)
    values = sorted(cells["value"].unique().to_list())
    log_axis = values[0] > 0 and values[-1] / values[0] >= 20

    import seaborn as sns

    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        fig, axes, n_cols = _panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            for (line, eps), rows in cells.filter(pl.col("dataset") == dataset).group_by(
                "line", "target_epsilon", maintain_order=True
            ):
                x = rows["value"].to_numpy()
                y, lo, hi = (100 * rows[c].to_numpy() for c in ("mean", "low", "high"))
                colour = line_styles[line].colour
                marker = REFERENCE_MARKER if line in paper_lines else markers[eps]
                ax.errorbar(
                    x,
                    y,
                    yerr=[y - lo, hi - y],
                    color=colour,
                    linestyle=styles[eps],
                    marker=marker,
                    markersize=5,
                    linewidth=1.4,
                    capsize=3,
                )
                hollow = _weak(rows)
                if hollow.any():
                    ax.plot(
                        x[hollow],
                        y[hollow],
                        linestyle="none",
                        marker=marker,
                        markersize=5,
                        color=colour,
                        markerfacecolor="white",
                    )
                _dagger_points(ax, x, y, _unaccounted(rows))
            for method in reference_methods:
                rows = reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
                if rows.height:
                    ax.axhline(
                        100 * float(rows[mean][0]),
                        color=references[method].colour,
                        dashes=references[method].dashes,
                        linewidth=1.3,
                    )
            if log_axis:
                ax.set_xscale("log")
            ax.xaxis.set_major_locator(FixedLocator(values))
            ax.xaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel(parameter + (" (log scale)" if log_axis else ""))
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = [
            Line2D(
                [],
                [],
                color=line_styles[line].colour,
                linewidth=1.4,
                marker=REFERENCE_MARKER if line in paper_lines else "none",
                markersize=5,
                label=line
                + _method_marks(cells.filter(pl.col("line") == line))
                + (f" {REFERENCE_MARK} claimed ε" if line in paper_lines else ""),
            )
            for line in lines
        ]
        handles += [
            Line2D(
                [],
                [],
                color="grey",
                linestyle=styles[e],
                marker=markers[e],
                markersize=5,
                label=f"ε = {format_epsilon_value(e)}",
            )
            for e in epsilons
        ]
        handles += [
            Line2D(
                [],
                [],
                color=references[m].colour,
                dashes=references[m].dashes,
                linewidth=1.3,
                label=f"{m} ({NON_PRIVATE})",
            )
            for m in reference_methods
        ]
        handles += _mark_handles(cells)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    caption = (
        f"{metric_label(metric).capitalize()} (%) against the hyperparameter {parameter}"
        f"{' (log scale)' if log_axis else ''}, one panel per dataset, one line per method and privacy "
        f"budget ε (colour: the method with its other settings fixed; line style: target ε): {interval}, "
        "as bars."
    )
    if _reference(cells).any():
        caption += (
            f" Squares, {REFERENCE_MARK}: reference mode (the paper's accounting), at its claimed ε (the ε "
            "its noise actually spends is in the reproduction tables)."
        )
    if reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞)."
    return " ".join(filter(None, [caption, few_seeds_caveat(shown.filter(drawn)), _marks_caption(cells)]))


def _line_method(cells: pl.DataFrame, line: str) -> str:
    """The method whose style a sweep line takes: its base's own id where that lies on it (the line holding
    ``dpar-em0`` is dpar-em0's colour in every figure), else the first method on it."""
    methods = sorted(cells.filter(pl.col("line") == line)["method"].unique().to_list())
    family = line.split(" (")[0]
    return family if family in methods else methods[0]
