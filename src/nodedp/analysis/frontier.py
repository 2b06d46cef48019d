"""The privacy–utility frontier: every private cell's metric against the budget it is held to, one panel per dataset,
with the best accuracy reachable at ≤ ε as a step line through ringed cells.

``plot_frontier`` writes the PNG (and a PDF where asked) and returns its caption; ``pareto_frontier``,
``budget_epsilon`` and ``frontier_cells`` compute the frontier, so it can be checked without a picture. The style
(colours, marks, panels, legend) is ``nodedp.analysis.style``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from nodedp.analysis import style
from nodedp.analysis.tables import DAGGER, NON_PRIVATE, REFERENCE_MARK, majority_accuracy, metric_label

FRONTIER_GID = "frontier"  # the gid of a panel's frontier (envelope) line
# A cell spending at most this much (relative) above its target ε is held to the target: calibration lands a hair
# off it (0.99748 for 1), and two such cells are one budget, not two.
BUDGET_TOLERANCE = 1e-3


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
    style.require_columns(
        summary, ("dataset", "method", "target_epsilon", "epsilon_max", mean), purpose="find the frontier"
    )
    eligible = summary.filter(pl.col("target_epsilon").is_finite())
    eligible = (
        eligible.filter(pl.Series(~style.unaccounted_cells(eligible)))
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
    columns = style.metric_columns(metric)
    style.require_columns(
        summary,
        ("dataset", "method", "target_epsilon", "epsilon_max", *columns),
        purpose=f"plot the {metric!r} frontier",
    )
    private = summary.filter(pl.col("target_epsilon").is_finite())
    if private.is_empty():
        raise ValueError("summary has no private cell (finite target_epsilon): no frontier to draw")
    interval = style.figure_interval_text(summary)
    envelope = frontier_cells(summary, metric=metric)
    private = private.with_columns(budget_epsilon().alias("budget"))
    layout = _layout(summary, private, metric=metric)

    with style.figure_context():
        fig, axes, n_cols = style.panels(len(layout.datasets))
        for ax, dataset in zip(axes, layout.datasets):
            best = envelope.filter(pl.col("dataset") == dataset)
            _draw_panel(ax, private.filter(pl.col("dataset") == dataset), best, dataset, layout, columns, metric)
        handles = _handles(layout, private) + style.majority_handles(layout.majority) + style.mark_handles(private)
        style.place_legend(fig, handles, n_cols)
    style.save_figure(fig, path, pdf_path)

    return _caption(summary, private, layout, metric=metric, interval=interval)


@dataclass(frozen=True)
class _Layout:
    """What the figure draws where, from the summary alone: the datasets, the methods (private, non-private
    references, those in reference mode), their styles and offsets, the ε axis, the majority-class lines."""

    datasets: list[str]
    reference: pl.DataFrame  # the non-private cells of the datasets drawn
    private_methods: list[str]
    reference_methods: list[str]
    paper_methods: set[str]
    styles: dict[str, style.MethodStyle]
    offsets: dict[str, float]
    overspent: bool  # a cell spends more than its target ε
    ticks: list[float]
    x_min: float
    x_max: float
    majority: dict[str, float]


def _layout(summary: pl.DataFrame, private: pl.DataFrame, *, metric: str) -> _Layout:
    """``private``: the private cells with their ``budget``."""
    datasets = sorted(private["dataset"].unique().to_list())
    reference = summary.filter(pl.col("target_epsilon").is_infinite() & pl.col("dataset").is_in(datasets))
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    at_target = private.filter(pl.col("budget") == pl.col("target_epsilon"))
    overspent = private.filter(pl.col("budget") != pl.col("target_epsilon"))
    budgets = np.minimum(private["budget"].to_numpy(), style.ACTUAL_EPSILON_CAP)
    x_min, x_max = budgets.min() / 1.6, budgets.max() * 1.6
    targets = sorted(set(at_target["budget"].to_list()))
    ticks = targets + [t for t in _log_ticks(x_min, x_max) if overspent.height and t > 1.6 * max(targets, default=0)]
    return _Layout(
        datasets=datasets,
        reference=reference,
        private_methods=private_methods,
        reference_methods=reference_methods,
        paper_methods=set(private.filter(pl.Series(style.reference_cells(private)))["method"].to_list()),
        styles={m: style.method_style(m) for m in private_methods + reference_methods},
        offsets=style.dodge_offsets(private_methods, targets),
        overspent=bool(overspent.height),
        ticks=ticks,
        x_min=x_min,
        x_max=x_max,
        majority=majority_accuracy(summary) if metric == "test_accuracy" else {},
    )


def _draw_panel(
    ax: Axes,
    cells: pl.DataFrame,
    best: pl.DataFrame,
    dataset: str,
    layout: _Layout,
    columns: tuple[str, str, str],
    metric: str,
) -> None:
    """One dataset's panel: its private cells (``cells``), the non-private references, the majority-class line, the
    frontier (``best``: its cells on it) and the ε axis."""
    on_frontier = set(zip(best["method"].to_list(), best["target_epsilon"].to_list()))
    for method in layout.private_methods:
        rows = cells.filter(pl.col("method") == method).sort("budget")
        if not rows.is_empty():
            _draw_cells(ax, rows, layout.styles[method], columns, layout.offsets[method], on_frontier)
    for method in layout.reference_methods:
        rows = layout.reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
        if rows.height:
            style.draw_reference_line(ax, 100 * float(rows[columns[0]][0]), layout.styles[method])
    style.draw_majority(ax, layout.majority, dataset)
    if best.height:
        _draw_steps(ax, best, layout.x_max)
    style.log_epsilon_axis(ax, layout.ticks, layout.x_min, layout.x_max, label="privacy budget ε (log scale)")
    ax.set_title(dataset)
    ax.set_ylabel(f"{metric_label(metric)} (%)")


def _draw_cells(
    ax: Axes,
    rows: pl.DataFrame,
    look: style.MethodStyle,
    columns: tuple[str, str, str],
    offset: float,
    on_frontier: set[tuple[str, float]],
) -> None:
    """One method's private cells on a frontier panel: bars, points (hollow where weak), rings on the frontier, †."""
    mean, low, high = columns
    y, lo, hi = (100 * rows[c].to_numpy() for c in (mean, low, high))
    # At a target budget, side by side; past it, at the ε spent (capped, labelled).
    budget = rows["budget"].to_numpy()
    x = budget * 10**offset
    over = (rows["budget"] != rows["target_epsilon"]).to_numpy()
    if over.any():
        x[over] = style.cap_actual(ax, budget[over], y[over])
    ax.errorbar(x, y, yerr=[y - lo, hi - y], color=look.colour, linestyle="none", linewidth=1, capsize=2, alpha=0.8)
    style.draw_marks(ax, x, y, look, hollow=style.weak_cells(rows))
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
    style.dagger_points(ax, x, y, style.unaccounted_cells(rows))


def _draw_steps(ax: Axes, best: pl.DataFrame, x_max: float) -> None:
    """The frontier of one panel as a black step line."""
    x = np.minimum(best["epsilon"].to_numpy(), style.ACTUAL_EPSILON_CAP)
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


def _handles(layout: _Layout, private: pl.DataFrame) -> list[Line2D]:
    """The frontier legend's method entries and the frontier's own."""
    return (
        [
            Line2D(
                [],
                [],
                color=layout.styles[m].colour,
                marker=layout.styles[m].marker,
                markersize=5.5,
                linestyle="none",
                label=m
                + style.method_marks(private.filter(pl.col("method") == m))
                + (f" {REFERENCE_MARK} at its actual ε" if m in layout.paper_methods else ""),
            )
            for m in layout.private_methods
        ]
        + [style.reference_handle(m, layout.styles[m]) for m in layout.reference_methods]
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


def _caption(summary: pl.DataFrame, private: pl.DataFrame, layout: _Layout, *, metric: str, interval: str) -> str:
    """The frontier figure's caption: what is drawn, then the notes its cells call for."""
    caption = (
        f"Privacy–utility frontier: {metric_label(metric)} (%) of every private cell against its privacy "
        "budget, the target ε it was run at (log scale; cells of one target are one budget, whatever they "
        "spend below it), one panel per dataset: "
        f"{interval}, as bars. At each budget the methods sit side by side, slightly apart. Black steps: the "
        "best accuracy reachable at ≤ ε; the ringed cells are on them."
    )
    if style.unaccounted_cells(private).any():
        caption += f" Cells marked {DAGGER} are shown but cannot be on the frontier."
    if layout.overspent:
        caption += (
            " A cell that spends more than its target ε sits at the ε it spends"
            + (f" ({REFERENCE_MARK}: reference mode, the paper's accounting)" if layout.paper_methods else "")
            + f"; past {style.ACTUAL_EPSILON_CAP:g} at {style.ACTUAL_EPSILON_CAP:g}, labelled."
        )
    elif layout.paper_methods:
        caption += f" Squares, {REFERENCE_MARK}: reference mode (the paper's accounting), within its claimed ε."
    if layout.reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞)."
    return style.caption_text(caption, majority=layout.majority, summary=summary, cells=private)


def _log_ticks(x_min: float, x_max: float) -> list[float]:
    """The powers of ten inside [x_min, x_max], with 2 and 5 times them where the range spans two decades or less."""
    low, high = math.floor(math.log10(x_min)), math.ceil(math.log10(x_max))
    steps = (1, 2, 5) if high - low <= 2 else (1,)
    return [m * 10.0**k for k in range(low, high + 1) for m in steps if x_min <= m * 10.0**k <= x_max]
