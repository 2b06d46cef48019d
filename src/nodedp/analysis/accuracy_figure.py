"""The accuracy-vs-ε figure: a metric against the target ε on a log axis, one panel per dataset, with the values the
seed papers print for the summary's cells as stars.

``plot_accuracy_vs_epsilon`` writes the PNG (and a PDF where asked) and returns its caption; ``published_points``
computes the stars, so they can be checked without a picture. The style (colours, marks, panels, legend) is
``nodedp.analysis.style``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from nodedp.analysis import style
from nodedp.analysis.published import PAPERS, published_for
from nodedp.analysis.tables import NON_PRIVATE, REFERENCE_MARK, majority_accuracy, metric_label
from nodedp.contract.naming import REFERENCE_SUFFIX

PUBLISHED_GID = "published"  # the gid of the Line2D artists of published points
PUBLISHED_MARKER = "*"


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


def _draw_published(
    ax: Axes, points: pl.DataFrame, styles: dict[str, style.MethodStyle], *, infinity_at: float
) -> None:
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
    """A filled star for the papers' own datasets, a hollow one for the datasets a stand-in stands in for."""
    kinds = [
        (False, "published (paper's table)"),
        (True, "published, for a dataset this one stands in for"),
    ]
    return [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=PUBLISHED_MARKER,
            markersize=10,
            color="grey",
            markerfacecolor="none" if stand_in else None,
            markeredgecolor="black",
            markeredgewidth=0.6,
            label=label,
        )
        for stand_in, label in kinds
        if (points["stand_in"] == stand_in).any()
    ]


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
    columns = style.metric_columns(metric)
    style.require_columns(summary, ("dataset", "method", "target_epsilon", *columns), purpose=f"plot {metric!r}")
    interval = style.figure_interval_text(summary)

    datasets = sorted(summary["dataset"].unique().to_list())
    private = summary.filter(pl.col("target_epsilon").is_finite())
    layout = _layout(summary, private, metric=metric, published=published)
    with style.figure_context():
        fig, axes, n_cols = style.panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            _draw_panel(ax, summary.filter(pl.col("dataset") == dataset), dataset, layout, columns, metric)
        style.place_legend(fig, _handles(layout, private), n_cols)
    style.save_figure(fig, path, pdf_path)
    return _caption(summary, private, layout, metric=metric, interval=interval)


@dataclass(frozen=True)
class _Layout:
    """What the figure draws where, from the summary alone: the methods (private, non-private references, those
    in reference mode), their styles and offsets, the published points, the ε axis, the majority-class lines."""

    private_methods: list[str]
    reference_methods: list[str]
    paper_methods: set[str]
    styles: dict[str, style.MethodStyle]
    offsets: dict[str, float]
    points: pl.DataFrame
    ticks: list[float]
    x_min: float
    x_max: float
    majority: dict[str, float]


def _layout(summary: pl.DataFrame, private: pl.DataFrame, *, metric: str, published: bool) -> _Layout:
    reference = summary.filter(pl.col("target_epsilon").is_infinite())
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    is_paper = style.reference_cells(private)
    paper_methods = set(private.filter(pl.Series(is_paper))["method"].to_list())
    epsilons = sorted(set(private.filter(pl.Series(~is_paper))["target_epsilon"].to_list()))
    actual = sorted(
        min(e, style.ACTUAL_EPSILON_CAP) for e in private.filter(pl.Series(is_paper))["epsilon_max"].to_list()
    )
    points = published_points(summary if published else summary.clear(), metric=metric)
    printed = [e for e in points["epsilon"].to_list() if math.isfinite(e)]
    # Without private runs there is no ε axis to speak of; draw the references over a nominal range.
    span = epsilons + actual + printed
    x_min, x_max = (min(span) / 1.6, max(span) * 1.6) if span else (0.1, 10.0)
    ticks = (
        epsilons + printed + ([style.ACTUAL_EPSILON_CAP] if actual and actual[-1] == style.ACTUAL_EPSILON_CAP else [])
    )
    return _Layout(
        private_methods=private_methods,
        reference_methods=reference_methods,
        paper_methods=paper_methods,
        styles={m: style.method_style(m) for m in private_methods + reference_methods},
        # Reference-mode points sit at an ε of their own: only the methods sharing the target budgets move aside.
        offsets=style.dodge_offsets([m for m in private_methods if m not in paper_methods], epsilons),
        points=points,
        ticks=ticks,
        x_min=x_min,
        x_max=x_max,
        majority=majority_accuracy(summary) if metric == "test_accuracy" else {},
    )


def _draw_panel(
    ax: Axes, cell: pl.DataFrame, dataset: str, layout: _Layout, columns: tuple[str, str, str], metric: str
) -> None:
    """One dataset's panel: each private method's line, each non-private one's line and band, the majority-class
    line, the published points, the ε axis."""
    for method in layout.private_methods + layout.reference_methods:
        rows = cell.filter(pl.col("method") == method).sort("target_epsilon")
        finite = rows.filter(pl.col("target_epsilon").is_finite())
        if method in layout.private_methods and finite.height:
            paper = method in layout.paper_methods
            offset = 0.0 if paper else layout.offsets[method]
            _draw_private_method(ax, finite, layout.styles[method], columns, paper=paper, offset=offset)
        infinite = rows.filter(pl.col("target_epsilon").is_infinite())
        if method in layout.reference_methods and infinite.height:
            y, lo, hi = (100 * float(infinite[c][0]) for c in columns)
            ax.axhspan(lo, hi, color=layout.styles[method].colour, alpha=0.1, linewidth=0)
            style.draw_reference_line(ax, y, layout.styles[method])
    style.draw_majority(ax, layout.majority, dataset)
    _draw_published(ax, layout.points.filter(pl.col("dataset") == dataset), layout.styles, infinity_at=layout.x_max)
    style.log_epsilon_axis(ax, layout.ticks, layout.x_min, layout.x_max, label="privacy budget ε (log scale)")
    ax.set_title(dataset)
    ax.set_ylabel(f"{metric_label(metric)} (%)")


def _draw_private_method(
    ax: Axes,
    finite: pl.DataFrame,
    look: style.MethodStyle,
    columns: tuple[str, str, str],
    *,
    paper: bool,
    offset: float,
) -> None:
    """One private method's line on an accuracy-vs-ε panel: bars, points (hollow where weak), †; a reference-mode
    method at the ε its noise actually spends, dotted."""
    mean, low, high = columns
    if paper:  # at the ε the paper's noise actually spends
        finite = finite.sort("epsilon_max")
    x = finite["epsilon_max" if paper else "target_epsilon"].to_numpy()
    y, lo, hi = (100 * finite[c].to_numpy() for c in (mean, low, high))
    x = style.cap_actual(ax, x, y) if paper else x * 10**offset
    ax.errorbar(
        x,
        y,
        yerr=[y - lo, hi - y],
        color=look.colour,
        linestyle=":" if paper else "-",
        linewidth=1.5,
        elinewidth=1,
        capsize=2,
        alpha=0.9,
    )
    style.draw_marks(ax, x, y, look, hollow=style.weak_cells(finite))
    style.dagger_points(ax, x, y, style.unaccounted_cells(finite))


def _handles(layout: _Layout, private: pl.DataFrame) -> list[Line2D]:
    """The legend: each private method (its marks; reference mode ¶), each non-private one, then the majority-class
    line, the marks and the published points where drawn."""
    handles = [
        Line2D(
            [],
            [],
            color=layout.styles[m].colour,
            marker=layout.styles[m].marker,
            markersize=5.5,
            linewidth=1.5,
            linestyle=":" if m in layout.paper_methods else "-",
            label=m
            + style.method_marks(private.filter(pl.col("method") == m))
            + (f" {REFERENCE_MARK} at its actual ε" if m in layout.paper_methods else ""),
        )
        for m in layout.private_methods
    ] + [style.reference_handle(m, layout.styles[m]) for m in layout.reference_methods]
    return (
        handles
        + style.majority_handles(layout.majority)
        + style.mark_handles(private)
        + _published_handles(layout.points)
    )


def _caption(summary: pl.DataFrame, private: pl.DataFrame, layout: _Layout, *, metric: str, interval: str) -> str:
    caption = (
        f"{metric_label(metric).capitalize()} (%) against the privacy budget ε (log scale), one panel per "
        f"dataset: {interval}, as bars. At each budget the methods sit side by side, slightly apart, so "
        "that equal accuracies stay readable."
    )
    if layout.reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞) with their intervals as bands."
    if layout.paper_methods:
        caption += (
            f" Dotted squares, {REFERENCE_MARK}: reference mode (the noise the paper's accounting gives the "
            "target ε), drawn at the ε that noise actually spends under the suite's accountant (the largest "
            f"over seeds; past {style.ACTUAL_EPSILON_CAP:g} at {style.ACTUAL_EPSILON_CAP:g}, labelled)."
        )
    caption = style.caption_text(caption, majority=layout.majority, summary=summary, cells=private)
    return " ".join(filter(None, [caption, _published_caption(layout.points)]))
