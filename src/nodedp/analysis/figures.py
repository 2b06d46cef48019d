"""Figures from a bootstrap summary: accuracy vs ε, the privacy–utility frontier, and hyperparameter sweeps.

Every plot function writes a PNG (and a PDF where asked) and returns the figure's caption: the confidence
level and resamples of its intervals, the seeds per cell (min–max where cells differ) and what each mark
drawn means, so a report can print it under the figure. The marks are the tables' (``nodedp.analysis.tables``):
hollow points for guarantees weaker than unconditional node-level DP (§, ‡), † beside a point whose runs read
private data without charge, ¶ and a dotted line for reference mode (``<method>@paper``), drawn at the ε its
noise actually spends. The pure helpers (``published_points``, ``pareto_frontier``, ``frontier_cells``,
``sweep_cells``, ``figure_interval_text``) compute what is drawn, so it can be checked without a picture.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from nodedp.analysis.published import PAPERS, published_for
from nodedp.analysis.tables import (
    DAGGER,
    GUARANTEE_MARKS,
    NON_PRIVATE,
    REFERENCE_MARK,
    format_epsilon_value,
    metric_label,
)
from nodedp.config import REFERENCE_SUFFIX
from nodedp.io import atomic_write

COL_WRAP = 3
PANEL_SIZE = (4.2, 3.2)  # inches per panel
LEGEND_WIDTH = 2.2  # inches added beside a single column of panels
DPI = 150
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "p"]
_DASHES = [(5, 2), (1, 1.5), (6, 2, 1, 2), (3, 3)]
_LINESTYLES = ["-", "--", "-.", (0, (1, 1)), (0, (5, 1, 1, 1, 1, 1))]
# Short forms of the tables' guarantee notes, for legends and captions.
_MARK_LEGEND = {"§": "DP within the degree bound (graph within it)", "‡": "DP given the sampled edge list"}
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
        raise ValueError(f"summary holds {column} values {values}; one figure needs exactly one "
                         "(summarize all runs in one call)")
    return values[0]


def figure_interval_text(summary: pl.DataFrame) -> str:
    """What a figure's points and intervals are, for its caption: the mean over the seeds of each cell (their
    number, min–max where cells differ) and the percentile-bootstrap interval's confidence and resamples,
    read from the summary's ``n_runs``, ``confidence`` and ``n_resamples``."""
    _require(summary, ("n_runs", "confidence", "n_resamples"), purpose="state seeds and confidence in a caption")
    confidence, resamples = _single(summary, "confidence"), _single(summary, "n_resamples")
    low, high = int(summary["n_runs"].min()), int(summary["n_runs"].max())
    seeds = f"{high} seed{'s' if high > 1 else ''}" if low == high else f"{low}–{high} seeds"
    text = (f"mean over {seeds} per cell with {100 * confidence:g}% percentile-bootstrap intervals "
            f"({resamples} resamples)")
    if low == 1:
        text += "; a cell with one seed has no interval"
    return text


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
    """The marks of the weakest cells of ``frame`` (one method's), in the tables' order: †, then §/‡."""
    marks = DAGGER if _unaccounted(frame).any() else ""
    weak = _weak(frame)
    return marks + "".join(sorted({GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]}
                                  if weak.any() else set()))


def _marks_caption(frame: pl.DataFrame) -> str:
    """Sentences explaining the marks that the cells of ``frame`` carry."""
    sentences = []
    weak = _weak(frame)
    shown = {GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]} if weak.any() else set()
    for mark in GUARANTEE_MARKS.values():
        if mark in shown:
            sentences.append(f"Hollow points, {mark} in the legend: {_MARK_LEGEND[mark]}.")
    if _unaccounted(frame).any():
        sentences.append(f"{DAGGER} beside a point: its runs read private data without charge, so its ε does not "
                         "cover every read (see the runs' ledgers).")
    return " ".join(sentences)


def _colours(private: list[str], references: list[str]) -> dict[str, Any]:
    import seaborn as sns  # seconds to import; only the figures need it

    # Private methods in distinct hues; references in greys, so the eye separates "what DP buys" from
    # "what it costs" at once.
    palette = "tab10" if len(private) <= 10 else "husl"
    colours = dict(zip(private, sns.color_palette(palette, len(private))))
    return colours | dict(zip(references, sns.color_palette("Greys_r", len(references) + 2)))


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


def _legend(fig: Figure, handles: list[Line2D], n_cols: int) -> None:
    # One column of panels is narrow: the legend goes beside it, otherwise below.
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


def _cap_actual(ax: Axes, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x`` capped at ``ACTUAL_EPSILON_CAP``, each capped point labelled with its ε."""
    for xi, yi in zip(x, y):
        if xi > ACTUAL_EPSILON_CAP:
            ax.annotate(f"ε = {format_epsilon_value(xi)}", (ACTUAL_EPSILON_CAP, yi), fontsize=7,
                        xytext=(-4, 4), textcoords="offset points", ha="right")
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
            rows.append({"dataset": dataset, "method": method, "epsilon": float(cell.epsilon),
                         "value": cell.accuracy / 100, "paper": cell.paper, "stand_in": stand_in})
    schema = {"dataset": pl.String(), "method": pl.String(), "epsilon": pl.Float64(), "value": pl.Float64(),
              "paper": pl.String(), "stand_in": pl.Boolean()}
    return pl.DataFrame(rows, schema=schema)


def _draw_published(ax: Axes, points: pl.DataFrame, colours: dict[str, Any], *, infinity_at: float) -> None:
    for stand_in in (False, True):
        for method in points["method"].unique().sort():
            rows = points.filter((pl.col("method") == method) & (pl.col("stand_in") == stand_in))
            if rows.is_empty():
                continue
            # Non-private published values sit on the right edge of the ε axis.
            x = np.where(np.isinf(rows["epsilon"].to_numpy()), infinity_at, rows["epsilon"].to_numpy())
            ax.plot(x, 100 * rows["value"].to_numpy(), linestyle="none", marker=PUBLISHED_MARKER, markersize=10,
                    color=colours[method], markeredgecolor="black", markeredgewidth=0.6, clip_on=False,
                    markerfacecolor="none" if stand_in else colours[method], gid=PUBLISHED_GID, zorder=3)


def _published_handles(points: pl.DataFrame) -> list[Line2D]:
    handles = []
    if (~points["stand_in"]).any():
        handles.append(Line2D([], [], linestyle="none", marker=PUBLISHED_MARKER, markersize=10, color="grey",
                              markeredgecolor="black", markeredgewidth=0.6, label="published (paper's table)"))
    if points["stand_in"].any():
        handles.append(Line2D([], [], linestyle="none", marker=PUBLISHED_MARKER, markersize=10, color="grey",
                              markerfacecolor="none", markeredgecolor="black", markeredgewidth=0.6,
                              label="published, for a dataset this one stands in for"))
    return handles


def _published_caption(points: pl.DataFrame) -> str:
    if points.is_empty():
        return ""
    papers = "; ".join(PAPERS[p] for p in sorted(points["paper"].unique().to_list()))
    text = ("Stars: the values the papers print for the method at that ε, under their own accounting and δ "
            "(non-private ones on the right edge)")
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

    Private methods are lines with markers and a band for their bootstrap interval;
    non-private methods (ε = ∞) are dashed horizontal references with a light band.
    Each method keeps one colour across panels, and one legend serves all panels.
    Where the summary has a ``guarantee`` column, points whose guarantee is weaker than
    unconditional node-level DP are hollow, the method's legend entry carries the mark of
    its weakest cell (as the tables do), and the legend explains the marks; where it has
    ``fully_accounted``, points with uncharged reads carry † (and so does their method's entry).
    Reference-mode methods (``<method>@paper``, the summary's ``reference`` column) are dotted and
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
    colours = _colours(private_methods, reference_methods)
    markers = _cycle(private_methods, _MARKERS)
    dashes = _cycle(reference_methods, _DASHES)
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
                    if paper:  # at the ε the paper's noise actually spends
                        finite = finite.sort("epsilon_max")
                    x = finite["epsilon_max" if paper else "target_epsilon"].to_numpy()
                    y, lo, hi = (100 * finite[c].to_numpy() for c in (mean, low, high))
                    if paper:
                        x = _cap_actual(ax, x, y)
                    ax.plot(x, y, color=colours[method], marker=markers[method], markersize=5, linewidth=1.5,
                            linestyle=":" if paper else "-")
                    hollow = _weak(finite)
                    if hollow.any():  # a conditional guarantee: the point is hollow
                        ax.plot(x[hollow], y[hollow], linestyle="none", marker=markers[method], markersize=5,
                                color=colours[method], markerfacecolor="white")
                    _dagger_points(ax, x, y, _unaccounted(finite))
                    if x.size > 1:
                        ax.fill_between(x, lo, hi, color=colours[method], alpha=0.2, linewidth=0)
                    else:  # a band over one budget has no width: show the interval as a bar
                        ax.errorbar(x, y, yerr=[y - lo, hi - y], color=colours[method], capsize=3, linewidth=1)
                infinite = rows.filter(pl.col("target_epsilon").is_infinite())
                if method in reference_methods and infinite.height:
                    y, lo, hi = (100 * float(infinite[c][0]) for c in (mean, low, high))
                    ax.axhspan(lo, hi, color=colours[method], alpha=0.1, linewidth=0)
                    ax.axhline(y, color=colours[method], dashes=dashes[method], linewidth=1.3)
            _draw_published(ax, points.filter(pl.col("dataset") == dataset), colours, infinity_at=x_max)
            _log_epsilon_axis(ax, ticks, x_min, x_max, label="privacy budget ε (log scale)")
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = [
            Line2D([], [], color=colours[m], marker=markers[m], markersize=5, linewidth=1.5,
                   linestyle=":" if m in paper_methods else "-",
                   label=m + method_marks[m] + (f" {REFERENCE_MARK} at its actual ε" if m in paper_methods else ""))
            for m in private_methods
        ] + [
            Line2D([], [], color=colours[m], dashes=dashes[m], linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
            for m in reference_methods
        ]
        handles += _mark_handles(private) + _published_handles(points)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    caption = (f"{metric_label(metric).capitalize()} (%) against the privacy budget ε (log scale), one panel per "
               f"dataset: {interval}, as bands (bars at a single budget).")
    if reference_methods:
        caption += f" Dashed grey lines: {NON_PRIVATE} methods (ε = ∞) with their intervals."
    if paper_methods:
        caption += (f" Dotted, {REFERENCE_MARK}: reference mode (the noise the paper's accounting gives the target ε), "
                    "drawn at the ε that noise actually spends under the suite's accountant (the largest over "
                    f"seeds; past {ACTUAL_EPSILON_CAP:g} at {ACTUAL_EPSILON_CAP:g}, labelled).")
    return " ".join(filter(None, [caption, _marks_caption(private), _published_caption(points)]))


def _mark_handles(frame: pl.DataFrame) -> list[Line2D]:
    """Legend entries explaining the marks that the cells of ``frame`` carry."""
    shown = set("".join(_method_marks(frame.filter(pl.col("method") == m)) for m in frame["method"].unique()))
    handles = [
        Line2D([], [], color="grey", marker="o", markersize=5, linestyle="none", markerfacecolor="white",
               label=f"hollow {mark}: {_MARK_LEGEND[mark]}")
        for mark in GUARANTEE_MARKS.values() if mark in shown
    ]
    if DAGGER in shown:
        handles.append(Line2D([], [], color="black", marker=f"${DAGGER}$", markersize=7, linestyle="none",
                              label=_UNACCOUNTED_LEGEND))
    return handles


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


def frontier_cells(summary: pl.DataFrame, *, metric: str = "test_accuracy") -> pl.DataFrame:
    """Per dataset, the private cells on the privacy–utility frontier: ``metric``'s mean against the ε actually
    spent (``epsilon_max``, the largest over the cell's seeds, at the suite's δ). Reference-mode cells count at
    that ε; cells with uncharged reads (†) do not, as their ε does not cover every read. Columns: ``dataset``,
    ``method``, ``target_epsilon``, ``epsilon`` (spent), ``mean``; by dataset, then increasing ε."""
    mean = f"{metric}_mean"
    _require(summary, ("dataset", "method", "target_epsilon", "epsilon_max", mean), purpose="find the frontier")
    eligible = summary.filter(pl.col("target_epsilon").is_finite())
    eligible = eligible.filter(pl.Series(~_unaccounted(eligible))).sort("dataset", "method", "target_epsilon")
    parts = []
    for (dataset,), cells in eligible.group_by("dataset", maintain_order=True):
        on = pareto_frontier(cells["epsilon_max"].to_list(), cells[mean].to_list())
        parts.append(cells[on, :].select("dataset", "method", "target_epsilon", pl.col("epsilon_max").alias("epsilon"),
                                      pl.col(mean).alias("mean")))
    schema = {"dataset": pl.String(), "method": pl.String(), "target_epsilon": pl.Float64(), "epsilon": pl.Float64(),
              "mean": pl.Float64()}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def plot_frontier(
    summary: pl.DataFrame,
    path: Path,
    *,
    metric: str = "test_accuracy",
    pdf_path: Path | None = None,
) -> str:
    """Draw the privacy–utility frontier per dataset: every private cell's ``metric`` (percent, with its interval)
    against the ε it actually spends (log axis), the frontier (``frontier_cells``) as a black step line labelled
    by the method reaching each stretch, non-private methods as dashed references. Reference-mode cells are
    squares (¶) at their actual ε; hollow and † as in ``plot_accuracy_vs_epsilon``. Returns the caption."""
    mean, low, high = _metric_columns(metric)
    _require(summary, ("dataset", "method", "target_epsilon", "epsilon_max", mean, low, high),
             purpose=f"plot the {metric!r} frontier")
    private = summary.filter(pl.col("target_epsilon").is_finite())
    if private.is_empty():
        raise ValueError("summary has no private cell (finite target_epsilon): no frontier to draw")
    interval = figure_interval_text(summary)
    envelope = frontier_cells(summary, metric=metric)

    datasets = sorted(private["dataset"].unique().to_list())
    reference = summary.filter(pl.col("target_epsilon").is_infinite() & pl.col("dataset").is_in(datasets))
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    colours = _colours(private_methods, reference_methods)
    dashes = _cycle(reference_methods, _DASHES)
    paper_methods = set(private.filter(pl.Series(_reference(private)))["method"].to_list())
    spent = np.minimum(private["epsilon_max"].to_numpy(), ACTUAL_EPSILON_CAP)
    x_min, x_max = spent.min() / 1.6, spent.max() * 1.6

    import seaborn as sns

    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        fig, axes, n_cols = _panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            cells = private.filter(pl.col("dataset") == dataset)
            for method in private_methods:
                rows = cells.filter(pl.col("method") == method).sort("epsilon_max")
                if rows.is_empty():
                    continue
                y, lo, hi = (100 * rows[c].to_numpy() for c in (mean, low, high))
                x = _cap_actual(ax, rows["epsilon_max"].to_numpy(), y)
                marker = "s" if method in paper_methods else "o"
                weak = _weak(rows)
                ax.errorbar(x, y, yerr=[y - lo, hi - y], color=colours[method], linestyle="none", linewidth=1,
                            capsize=2, alpha=0.8)
                for hollow in (False, True):
                    part = weak == hollow
                    if part.any():
                        ax.plot(x[part], y[part], linestyle="none", marker=marker, markersize=5,
                                color=colours[method], markerfacecolor="white" if hollow else colours[method])
                _dagger_points(ax, x, y, _unaccounted(rows))
            for method in reference_methods:
                rows = reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
                if rows.height:
                    ax.axhline(100 * float(rows[mean][0]), color=colours[method], dashes=dashes[method], linewidth=1.3)
            best = envelope.filter(pl.col("dataset") == dataset)
            if best.height:
                x = np.minimum(best["epsilon"].to_numpy(), ACTUAL_EPSILON_CAP)
                y = 100 * best["mean"].to_numpy()
                # Steps: the best accuracy reachable at ≤ ε holds until the next frontier point.
                ax.plot(np.append(x, x_max), np.append(y, y[-1]), drawstyle="steps-post", color="black",
                        linewidth=1.2, alpha=0.7, gid=FRONTIER_GID, zorder=1)
                owners = best["method"].to_list()
                for i, owner in enumerate(owners):
                    if i == 0 or owner != owners[i - 1]:  # one label per stretch a method holds
                        ax.annotate(owner, (x[i], y[i]), xytext=(2, 5), textcoords="offset points", fontsize=7)
            _log_epsilon_axis(ax, _log_ticks(x_min, x_max), x_min, x_max, label="ε actually spent (log scale)")
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = [
            Line2D([], [], color=colours[m], marker="s" if m in paper_methods else "o", markersize=5,
                   linestyle="none",
                   label=m + _method_marks(private.filter(pl.col("method") == m))
                   + (f" {REFERENCE_MARK} at its actual ε" if m in paper_methods else ""))
            for m in private_methods
        ] + [
            Line2D([], [], color=colours[m], dashes=dashes[m], linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
            for m in reference_methods
        ] + [Line2D([], [], color="black", alpha=0.7, linewidth=1.2, label="frontier: best at ≤ ε")]
        handles += _mark_handles(private)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    caption = (f"Privacy–utility frontier: {metric_label(metric)} (%) of every private cell against the ε it "
               "actually spends (the largest over its seeds, at the suite's δ; log scale), one panel per dataset: "
               f"{interval}, as bars. Black steps: the best accuracy reachable at ≤ ε, labelled by the method "
               "that reaches it.")
    if _unaccounted(private).any():
        caption += f" Cells marked {DAGGER} are shown but cannot be on the frontier."
    if paper_methods:
        caption += (f" Squares, {REFERENCE_MARK}: reference mode (the paper's accounting), at the ε its noise "
                    f"actually spends (past {ACTUAL_EPSILON_CAP:g} at {ACTUAL_EPSILON_CAP:g}, labelled).")
    if reference_methods:
        caption += f" Dashed grey lines: {NON_PRIVATE} methods (ε = ∞)."
    return " ".join(filter(None, [caption, _marks_caption(private)]))


def _log_ticks(x_min: float, x_max: float) -> list[float]:
    """The powers of ten inside [x_min, x_max], with 2 and 5 times them where the range spans two decades or less."""
    low, high = math.floor(math.log10(x_min)), math.ceil(math.log10(x_max))
    steps = (1, 2, 5) if high - low <= 2 else (1,)
    return [m * 10.0 ** k for k in range(low, high + 1) for m in steps if x_min <= m * 10.0 ** k <= x_max]


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
    _require(summary, ("dataset", "method", "target_epsilon", "hyperparameters", mean, low, high),
             purpose=f"plot {metric!r} against {parameter!r} (summarize runs collected with their hyperparameters)")
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
        raise ValueError(f"no private cell has hyperparameter {parameter!r}; hyperparameters present: "
                         f"{sorted(seen_keys)}")
    # Within a family, the settings that tell its lines apart (the same everywhere: none).
    labels: dict[tuple[str, str], str] = {}
    for family in sorted({row["family"] for row in rows}):
        variants = {json.dumps(row["others"], sort_keys=True): row["others"] for row in rows
                    if row["family"] == family}
        keys = sorted({k for hp in variants.values() for k in hp})
        differ = [k for k in keys if len({json.dumps(hp.get(k)) for hp in variants.values()}) > 1]
        for text, hp in variants.items():
            setting = ", ".join(f"{k}={hp.get(k)}" for k in differ)
            labels[(family, text)] = f"{family} ({setting})" if setting else family
    out = [{
        "dataset": row["r"]["dataset"], "method": row["r"]["method"],
        "line": labels[(row["family"], json.dumps(row["others"], sort_keys=True))],
        "target_epsilon": row["r"]["target_epsilon"], "value": row["value"],
        "mean": row["r"][mean], "low": row["r"][low], "high": row["r"][high],
        **{c: row["r"][c] for c in ("guarantee", "fully_accounted", "reference") if c in summary.columns},
    } for row in rows]
    schema = {"dataset": pl.String(), "method": pl.String(), "line": pl.String(), "target_epsilon": pl.Float64(),
              "value": pl.Float64(), "mean": pl.Float64(), "low": pl.Float64(), "high": pl.Float64()}
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
    colours = _colours(lines, reference_methods)
    dashes = _cycle(reference_methods, _DASHES)
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
                    "line", "target_epsilon", maintain_order=True):
                x = rows["value"].to_numpy()
                y, lo, hi = (100 * rows[c].to_numpy() for c in ("mean", "low", "high"))
                ax.errorbar(x, y, yerr=[y - lo, hi - y], color=colours[line], linestyle=styles[eps],
                            marker=markers[eps], markersize=5, linewidth=1.4, capsize=3)
                hollow = _weak(rows)
                if hollow.any():
                    ax.plot(x[hollow], y[hollow], linestyle="none", marker=markers[eps], markersize=5,
                            color=colours[line], markerfacecolor="white")
                _dagger_points(ax, x, y, _unaccounted(rows))
            for method in reference_methods:
                rows = reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
                if rows.height:
                    ax.axhline(100 * float(rows[mean][0]), color=colours[method], dashes=dashes[method], linewidth=1.3)
            if log_axis:
                ax.set_xscale("log")
            ax.xaxis.set_major_locator(FixedLocator(values))
            ax.xaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel(parameter + (" (log scale)" if log_axis else ""))
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")

        handles = [Line2D([], [], color=colours[line], linewidth=1.4,
                          label=line + _method_marks(cells.filter(pl.col("line") == line))
                          + (f" {REFERENCE_MARK} claimed ε" if line.split(" ")[0].endswith(REFERENCE_SUFFIX) else ""))
                   for line in lines]
        handles += [Line2D([], [], color="grey", linestyle=styles[e], marker=markers[e], markersize=5,
                           label=f"ε = {format_epsilon_value(e)}") for e in epsilons]
        handles += [Line2D([], [], color=colours[m], dashes=dashes[m], linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
                    for m in reference_methods]
        handles += _mark_handles(cells)
        _legend(fig, handles, n_cols)
    _save_all(fig, path, pdf_path)

    caption = (f"{metric_label(metric).capitalize()} (%) against the hyperparameter {parameter}"
               f"{' (log scale)' if log_axis else ''}, one panel per dataset, one line per method and privacy "
               f"budget ε (colour: the method with its other settings fixed; line style: target ε): {interval}, "
               "as bars.")
    if _reference(cells).any():
        caption += (f" {REFERENCE_MARK}: reference mode (the paper's accounting), at its claimed ε (the ε its noise "
                    "actually spends is in the reproduction tables).")
    if reference_methods:
        caption += f" Dashed grey lines: {NON_PRIVATE} methods (ε = ∞)."
    return " ".join(filter(None, [caption, _marks_caption(cells)]))
