"""The accuracy-vs-ε figure: one panel per dataset, private methods as lines, non-private as references."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from nodedp.analysis.tables import GUARANTEE_MARKS, NON_PRIVATE, REFERENCE_MARK, format_epsilon_value, metric_label
from nodedp.io import atomic_write

COL_WRAP = 3
PANEL_SIZE = (4.2, 3.2)  # inches per panel
LEGEND_WIDTH = 2.2  # inches added beside a single column of panels
DPI = 150
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "p"]
_DASHES = [(5, 2), (1, 1.5), (6, 2, 1, 2), (3, 3)]
# Short forms of the tables' guarantee notes, for the legend.
_MARK_LEGEND = {"§": "DP within the degree bound (graph within it)", "‡": "DP given the sampled edge list"}
# Reference-mode points sit at the ε they actually spend; beyond this they are drawn at it, labelled.
ACTUAL_EPSILON_CAP = 1e3


def _save(fig: Figure, path: Path, *, fmt: str) -> None:
    # The temporary name has no image suffix, so the format is stated rather than inferred.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight"))


def plot_accuracy_vs_epsilon(
    summary: pl.DataFrame,
    path: Path,
    *,
    metric: str = "test_accuracy",
    pdf_path: Path | None = None,
) -> None:
    """Draw ``metric`` (percent) against target ε, one panel per dataset; write PNG (and PDF).

    Private methods are lines with markers and a band for their bootstrap interval;
    non-private methods (ε = ∞) are dashed horizontal references with a light band.
    Each method keeps one colour across panels, and one legend serves all panels.
    Where the summary has a ``guarantee`` column, points whose guarantee is weaker than
    unconditional node-level DP are hollow, the method's legend entry carries the mark of
    its weakest cell (as the tables do), and the legend explains the marks. Reference-mode methods
    (``<method>@paper``, the summary's ``reference`` column) are dotted and drawn at the ε they actually
    spend (``epsilon_max``), never at the claimed one; past ``ACTUAL_EPSILON_CAP`` at the cap, labelled.
    """
    if summary.is_empty():
        raise ValueError("summary is empty: nothing to plot")
    mean, low, high = f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"
    needed = ("dataset", "method", "target_epsilon", mean, low, high)
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing} needed to plot {metric!r}")

    import seaborn as sns  # seconds to import; only the figure needs it

    datasets = sorted(summary["dataset"].unique().to_list())
    private = summary.filter(pl.col("target_epsilon").is_finite())
    reference = summary.filter(pl.col("target_epsilon").is_infinite())
    private_methods = sorted(private["method"].unique().to_list())
    reference_methods = sorted(set(reference["method"].unique().to_list()) - set(private_methods))
    methods = private_methods + reference_methods
    # Private methods in distinct hues with distinct markers; references in greys with
    # distinct dashes, so the eye separates "what DP buys" from "what it costs" at once.
    palette = "tab10" if len(private_methods) <= 10 else "husl"
    colours = dict(zip(private_methods, sns.color_palette(palette, len(private_methods))))
    colours |= dict(zip(reference_methods, sns.color_palette("Greys_r", len(reference_methods) + 2)))
    markers = dict(zip(private_methods, _MARKERS * (len(private_methods) // len(_MARKERS) + 1)))
    dashes = dict(zip(reference_methods, _DASHES * (len(reference_methods) // len(_DASHES) + 1)))

    weak = (pl.col("guarantee").is_in(list(GUARANTEE_MARKS)) if "guarantee" in summary.columns
            else pl.lit(False))
    # The weakest class a method reaches anywhere, for its legend entry.
    method_marks = {
        m: "".join(sorted({GUARANTEE_MARKS[g] for g in private.filter((pl.col("method") == m) & weak)["guarantee"]}))
        if "guarantee" in summary.columns else ""
        for m in private_methods
    }

    is_reference = pl.col("reference").fill_null(False) if "reference" in summary.columns else pl.lit(False)
    paper_methods = set(private.filter(is_reference)["method"].to_list())
    epsilons = sorted(set(private.filter(~is_reference)["target_epsilon"].to_list()))
    actual = sorted(min(e, ACTUAL_EPSILON_CAP) for e in private.filter(is_reference)["epsilon_max"].to_list()
                    ) if paper_methods else []
    # Without private runs there is no ε axis to speak of; draw the references over a nominal range.
    span = epsilons + actual
    x_min, x_max = (min(span) / 1.6, max(span) * 1.6) if span else (0.1, 10.0)

    # Balanced grid: 4 panels as 2x2 rather than 3+1.
    n_rows = math.ceil(len(datasets) / COL_WRAP)
    n_cols = math.ceil(len(datasets) / n_rows)
    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        legend_width = LEGEND_WIDTH if n_cols == 1 else 0.0
        size = (PANEL_SIZE[0] * n_cols + legend_width, PANEL_SIZE[1] * n_rows)
        fig = Figure(figsize=size, layout="constrained")
        axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
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
                        for xi, yi in zip(x, y):
                            if xi > ACTUAL_EPSILON_CAP:
                                ax.annotate(f"ε = {format_epsilon_value(xi)}", (ACTUAL_EPSILON_CAP, yi), fontsize=7,
                                            xytext=(-4, 4), textcoords="offset points", ha="right")
                        x = x.clip(max=ACTUAL_EPSILON_CAP)
                    ax.plot(x, y, color=colours[method], marker=markers[method], markersize=5, linewidth=1.5,
                            linestyle=":" if paper else "-")
                    hollow = finite.select(weak).to_series().to_numpy()
                    if hollow.any():  # a conditional guarantee: the point is hollow
                        ax.plot(x[hollow], y[hollow], linestyle="none", marker=markers[method], markersize=5,
                                color=colours[method], markerfacecolor="white")
                    if x.size > 1:
                        ax.fill_between(x, lo, hi, color=colours[method], alpha=0.2, linewidth=0)
                    else:  # a band over one budget has no width: show the interval as a bar
                        yerr = [y - lo, hi - y]
                        ax.errorbar(x, y, yerr=yerr, color=colours[method], capsize=3, linewidth=1)
                infinite = rows.filter(pl.col("target_epsilon").is_infinite())
                if method in reference_methods and infinite.height:
                    y, lo, hi = (100 * float(infinite[c][0]) for c in (mean, low, high))
                    ax.axhspan(lo, hi, color=colours[method], alpha=0.1, linewidth=0)
                    ax.axhline(y, color=colours[method], dashes=dashes[method], linewidth=1.3)
            ax.set_xscale("log")
            ax.set_xlim(x_min, x_max)
            # Ticks at the budgets actually run, labelled plainly rather than as powers of ten.
            ticks = sorted(set(epsilons + ([ACTUAL_EPSILON_CAP] if actual and actual[-1] == ACTUAL_EPSILON_CAP
                                           else []))) or [x_min, 1.0, x_max]
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_major_formatter(FixedFormatter([f"{e:g}" for e in ticks]))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_title(dataset)
            ax.set_xlabel("privacy budget ε")
            ax.set_ylabel(f"{metric_label(metric)} (%)")
        for ax in axes[len(datasets):]:
            ax.set_visible(False)

        handles = [
            Line2D([], [], color=colours[m], marker=markers[m], markersize=5, linewidth=1.5,
                   linestyle=":" if m in paper_methods else "-",
                   label=m + method_marks[m] + (f" {REFERENCE_MARK} at its actual ε" if m in paper_methods else ""))
            for m in private_methods
        ] + [
            Line2D([], [], color=colours[m], dashes=dashes[m], linewidth=1.3, label=f"{m} ({NON_PRIVATE})")
            for m in reference_methods
        ]
        shown = set("".join(method_marks.values()))
        handles += [
            Line2D([], [], color="grey", marker="o", markersize=5, linestyle="none", markerfacecolor="white",
                   label=f"hollow {mark}: {_MARK_LEGEND[mark]}")
            for mark in GUARANTEE_MARKS.values() if mark in shown
        ]
        # One column of panels is narrow: the legend goes beside it, otherwise below.
        if n_cols == 1:
            fig.legend(handles=handles, loc="outside right upper", frameon=False)
        else:
            ncol = min(len(handles), 2 * n_cols)
            fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)
    _save(fig, path, fmt="png")
    if pdf_path is not None:
        _save(fig, pdf_path, fmt="pdf")

