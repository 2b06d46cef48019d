"""Hyperparameter sweeps: a metric against one hyperparameter that a study's variants vary, one panel per dataset,
one line per method base and target ε.

``plot_sweep`` writes the PNG (and a PDF where asked) and returns its caption; ``sweep_cells`` computes the lines,
so they can be checked without a picture. The style (colours, marks, panels, legend) is
``nodedp.analysis.style``'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from nodedp.analysis import style
from nodedp.analysis.tables import NON_PRIVATE, REFERENCE_MARK, format_epsilon_value, metric_label
from nodedp.contract.naming import REFERENCE_SUFFIX

# The settings a sweep cell may carry beside its line and value, where the summary has them.
_MARK_COLUMNS = ("guarantee", "fully_accounted", "reference")


def sweep_cells(summary: pl.DataFrame, *, parameter: str, metric: str = "test_accuracy") -> pl.DataFrame:
    """The private cells whose ``hyperparameters`` hold ``parameter``, with its value and the line they lie on.

    A line is a method base (the summary's ``base_method``, else the name without ``@paper``; ``@paper`` kept
    for reference mode) with every other hyperparameter fixed, at one target ε: variants that change only
    ``parameter`` fall on one line. Where lines of one base differ in other hyperparameters, their ``line``
    label names those (``dpar-em0 (max_rows=70)``). Columns: ``dataset``, ``method``, ``line``,
    ``target_epsilon``, ``value``, ``mean``, ``low``, ``high``, plus ``guarantee``, ``fully_accounted`` and
    ``reference`` where the summary has them; by dataset, line, ε, value.
    """
    mean, low, high = style.metric_columns(metric)
    style.require_columns(
        summary,
        ("dataset", "method", "target_epsilon", "hyperparameters", mean, low, high),
        purpose=f"plot {metric!r} against {parameter!r} (summarize runs collected with their hyperparameters)",
    )
    rows = _swept_rows(summary, parameter)
    labels = _line_labels(rows)
    marks = [c for c in _MARK_COLUMNS if c in summary.columns]
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
            **{c: row["r"][c] for c in marks},
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
    schema |= {c: summary.schema[c] for c in marks}
    return pl.DataFrame(out, schema=schema).sort("dataset", "line", "target_epsilon", "value", "method")


def _swept_rows(summary: pl.DataFrame, parameter: str) -> list[dict[str, Any]]:
    """Each private cell whose hyperparameters hold ``parameter``: its row (``r``), its ``family`` (the method base,
    ``@paper`` kept for reference mode), its ``others`` hyperparameters and the ``value``. Refuses a value that
    is no number, and a summary where no cell holds ``parameter`` (naming the hyperparameters present)."""
    private = summary.filter(pl.col("target_epsilon").is_finite() & pl.col("hyperparameters").is_not_null())
    bases = private["base_method"].to_list() if "base_method" in private.columns else [None] * private.height
    paper = style.reference_cells(private)
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
    return rows


def _line_labels(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(family, its other hyperparameters as JSON) -> the line's label: the family, with the settings that tell
    its lines apart (none where they are the same everywhere)."""
    labels: dict[tuple[str, str], str] = {}
    for family in sorted({row["family"] for row in rows}):
        variants = {json.dumps(row["others"], sort_keys=True): row["others"] for row in rows if row["family"] == family}
        keys = sorted({k for hp in variants.values() for k in hp})
        differ = [k for k in keys if len({json.dumps(hp.get(k)) for hp in variants.values()}) > 1]
        for text, hp in variants.items():
            setting = ", ".join(f"{k}={hp.get(k)}" for k in differ)
            labels[(family, text)] = f"{family} ({setting})" if setting else family
    return labels


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
    datasets = sorted(cells["dataset"].unique().to_list())
    shown = summary.filter(pl.col("dataset").is_in(datasets))
    drawn = pl.col("target_epsilon").is_infinite() | pl.col("method").is_in(cells["method"].unique().to_list())
    interval = style.figure_interval_text(shown.filter(drawn))
    layout = _layout(cells, shown.filter(pl.col("target_epsilon").is_infinite()))

    with style.figure_context():
        fig, axes, n_cols = style.panels(len(datasets))
        for ax, dataset in zip(axes, datasets):
            _draw_panel(ax, cells.filter(pl.col("dataset") == dataset), dataset, layout, f"{metric}_mean")
            _sweep_axis(ax, layout, parameter)
            ax.set_title(dataset)
            ax.set_ylabel(f"{metric_label(metric)} (%)")
        style.place_legend(fig, _handles(layout, cells), n_cols)
    style.save_figure(fig, path, pdf_path)
    return _caption(cells, layout, parameter=parameter, metric=metric, interval=interval, drawn=shown.filter(drawn))


def _cycle(items: Sequence[Any], styles: Sequence[Any]) -> dict[Any, Any]:
    return {item: styles[i % len(styles)] for i, item in enumerate(items)}


@dataclass(frozen=True)
class _Layout:
    """What the figure draws, from the sweep's cells alone: its lines (their styles; those in reference mode), the
    non-private references, each ε's line style and marker, the swept values and whether their axis is
    logarithmic."""

    lines: list[str]
    line_styles: dict[str, style.MethodStyle]
    paper_lines: set[str]
    reference: pl.DataFrame  # the non-private cells of the datasets drawn
    reference_methods: list[str]
    references: dict[str, style.MethodStyle]
    epsilons: list[float]
    linestyles: dict[float, Any]
    markers: dict[float, str]
    values: list[float]
    log_axis: bool


def _layout(cells: pl.DataFrame, reference: pl.DataFrame) -> _Layout:
    lines = sorted(cells["line"].unique().to_list())
    reference_methods = sorted(reference["method"].unique().to_list())
    epsilons = sorted(cells["target_epsilon"].unique().to_list())
    values = sorted(cells["value"].unique().to_list())
    return _Layout(
        lines=lines,
        line_styles={line: style.method_style(_line_method(cells, line)) for line in lines},
        paper_lines={line for line in lines if line.split(" (")[0].endswith(REFERENCE_SUFFIX)},
        reference=reference,
        reference_methods=reference_methods,
        references={m: style.method_style(m) for m in reference_methods},
        epsilons=epsilons,
        linestyles=_cycle(epsilons, style.EPSILON_LINESTYLES),
        markers=_cycle(epsilons, style.EPSILON_MARKERS),
        values=values,
        log_axis=values[0] > 0 and values[-1] / values[0] >= 20,
    )


def _draw_panel(ax: Axes, cells: pl.DataFrame, dataset: str, layout: _Layout, mean: str) -> None:
    """One dataset's panel: each line (one per line and ε) with its bars, hollow points and †; the non-private
    references (their ``mean`` column)."""
    for (line, eps), rows in cells.group_by("line", "target_epsilon", maintain_order=True):
        x = rows["value"].to_numpy()
        y, lo, hi = (100 * rows[c].to_numpy() for c in ("mean", "low", "high"))
        colour = layout.line_styles[line].colour
        marker = style.REFERENCE_MARKER if line in layout.paper_lines else layout.markers[eps]
        ax.errorbar(
            x,
            y,
            yerr=[y - lo, hi - y],
            color=colour,
            linestyle=layout.linestyles[eps],
            marker=marker,
            markersize=5,
            linewidth=1.4,
            capsize=3,
        )
        hollow = style.weak_cells(rows)
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
        style.dagger_points(ax, x, y, style.unaccounted_cells(rows))
    for method in layout.reference_methods:
        rows = layout.reference.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
        if rows.height:
            style.draw_reference_line(ax, 100 * float(rows[mean][0]), layout.references[method])


def _sweep_axis(ax: Axes, layout: _Layout, parameter: str) -> None:
    """The swept values' axis: ticks at the values, logarithmic where ``layout.log_axis``."""
    if layout.log_axis:
        ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(layout.values))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in layout.values]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(parameter + (" (log scale)" if layout.log_axis else ""))


def _handles(layout: _Layout, cells: pl.DataFrame) -> list[Line2D]:
    """The legend: each line (its marks; reference mode ¶), each ε's line style, each non-private reference, then
    the marks."""
    handles = [
        Line2D(
            [],
            [],
            color=layout.line_styles[line].colour,
            linewidth=1.4,
            marker=style.REFERENCE_MARKER if line in layout.paper_lines else "none",
            markersize=5,
            label=line
            + style.method_marks(cells.filter(pl.col("line") == line))
            + (f" {REFERENCE_MARK} claimed ε" if line in layout.paper_lines else ""),
        )
        for line in layout.lines
    ]
    handles += [
        Line2D(
            [],
            [],
            color="grey",
            linestyle=layout.linestyles[e],
            marker=layout.markers[e],
            markersize=5,
            label=f"ε = {format_epsilon_value(e)}",
        )
        for e in layout.epsilons
    ]
    handles += [style.reference_handle(m, layout.references[m]) for m in layout.reference_methods]
    return handles + style.mark_handles(cells)


def _caption(
    cells: pl.DataFrame, layout: _Layout, *, parameter: str, metric: str, interval: str, drawn: pl.DataFrame
) -> str:
    """The caption: what is drawn, then the notes its cells call for (``drawn``: the summary's cells drawn)."""
    caption = (
        f"{metric_label(metric).capitalize()} (%) against the hyperparameter {parameter}"
        f"{' (log scale)' if layout.log_axis else ''}, one panel per dataset, one line per method and privacy "
        f"budget ε (colour: the method with its other settings fixed; line style: target ε): {interval}, "
        "as bars."
    )
    if style.reference_cells(cells).any():
        caption += (
            f" Squares, {REFERENCE_MARK}: reference mode (the paper's accounting), at its claimed ε (the ε "
            "its noise actually spends is in the reproduction tables)."
        )
    if layout.reference_methods:
        caption += f" Dashed lines: {NON_PRIVATE} methods (ε = ∞)."
    return style.caption_text(caption, majority={}, summary=drawn, cells=cells)


def _line_method(cells: pl.DataFrame, line: str) -> str:
    """The method whose style a sweep line takes: its base's own id where that lies on it (the line holding
    ``dpar-em0`` is dpar-em0's colour in every figure), else the first method on it."""
    methods = sorted(cells.filter(pl.col("line") == line)["method"].unique().to_list())
    family = line.split(" (")[0]
    return family if family in methods else methods[0]
