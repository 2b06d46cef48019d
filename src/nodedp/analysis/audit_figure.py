"""The audit figure: per audited cell, the pooled lower bound ε̂ as a bar beside its claimed ε as a tick, on one
linear ε axis at the claims' scale, one panel per dataset.

``plot_audit`` draws an audit summary (``nodedp.analysis.audit.summarize_audits``) and returns its caption;
``audit_points`` computes what it draws, so it can be checked without a picture. The audit's table and the pooling
are ``nodedp.analysis.audit``'s; the style (each method's colour and marker, saving) ``nodedp.analysis.style``'s.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from nodedp.analysis.audit import VIOLATION_MARK, require_audit_columns
from nodedp.analysis.style import figure_context, method_style, save_figure
from nodedp.analysis.tables import format_epsilon_value, single_value
from nodedp.contract.naming import REFERENCE_SUFFIX

__all__ = ["AXIS_HEADROOM", "CLAIM_GID", "ROW_INCHES", "VIOLATION_GID", "audit_points", "plot_audit"]

VIOLATION_GID = "violation"  # the gid of the values written beside violating rows
CLAIM_GID = "claim"  # the gid of the ticks at the claimed ε
_HAT = r"$\hat{\varepsilon}$"  # ε̂ in matplotlib's mathtext (a combining accent may not render)
_FIGURE_COLUMNS = (
    "dataset",
    "method",
    "target_epsilon",
    "claimed_epsilon",
    "epsilon_lower",
    "violated",
    "accounting",
    "canaries",
    "seeds",
    "confidence",
    "delta",
)
AXIS_HEADROOM = 1.2  # the ε axis runs from 0 to this times the largest claimed ε
ROW_INCHES = 0.3  # height per audited cell


def audit_points(summary: pl.DataFrame) -> tuple[pl.DataFrame, float]:
    """What ``plot_audit`` draws, and the end of its linear ε axis (``AXIS_HEADROOM`` times the largest claimed ε,
    so the claims set the scale). Per cell, in drawing order (dataset, method, target ε): ``label`` (the method,
    with its target ε where the figure holds more than one), ``claimed_epsilon``, ``epsilon_lower``, ``drawn`` (the
    bound, at most the axis end) and ``clipped`` (beyond it: drawn at the end, its value written), ``violated`` and
    ``reference`` (audited against a paper's claim)."""
    require_audit_columns(summary, _FIGURE_COLUMNS, "plot the audit")
    x_max = AXIS_HEADROOM * float(summary["claimed_epsilon"].max())
    several = summary["target_epsilon"].n_unique() > 1
    label = (
        pl.concat_str(
            pl.col("method"),
            pl.lit(", ε = "),
            pl.col("target_epsilon").map_elements(format_epsilon_value, return_dtype=pl.String()),
        )
        if several
        else pl.col("method")
    )
    points = summary.sort("dataset", "method", "target_epsilon").select(
        "dataset",
        "method",
        "target_epsilon",
        label.alias("label"),
        "claimed_epsilon",
        "epsilon_lower",
        pl.min_horizontal(pl.col("epsilon_lower"), pl.lit(x_max)).alias("drawn"),
        (pl.col("epsilon_lower") > x_max).alias("clipped"),
        "violated",
        ((pl.col("accounting") == "paper") | pl.col("method").str.contains(REFERENCE_SUFFIX, literal=True)).alias(
            "reference"
        ),
    )
    return points, x_max


def plot_audit(summary: pl.DataFrame, path: Path, *, pdf_path: Path | None = None) -> str:
    """Draw, per audited cell, the pooled lower bound ε̂ as a bar beside its claimed ε as a black tick, on one
    linear ε axis from 0 (``audit_points``): one row per method and target ε, labelled by it, one panel per
    dataset, each bar in its method's colour and marker (``method_style``; releases of a method in its colour,
    reference runs with squares), ε̂ written beside each row. A bar past its tick refutes its claim: red, marked
    ``VIOLATION_MARK``. Writes a PNG (and a PDF where asked); returns the caption."""
    points, x_max = audit_points(summary)
    datasets = sorted(points["dataset"].unique().to_list())
    with figure_context():
        fig, axes = _panels(points, datasets)
        for ax, dataset in zip(axes, datasets):
            _draw_panel(ax, points.filter(pl.col("dataset") == dataset), dataset, x_max)
        handles = _handles(points)
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    save_figure(fig, path, pdf_path)
    return _caption(summary, points)


def _panels(points: pl.DataFrame, datasets: list[str]) -> tuple[Figure, np.ndarray]:
    """A figure with a panel per dataset, two abreast, as tall as the most rows and as wide as the longest label
    needs; unused panels hidden."""
    rows_most = max(points.filter(pl.col("dataset") == d).height for d in datasets)
    n_cols = min(len(datasets), 2)
    n_rows = math.ceil(len(datasets) / n_cols)
    label_inches = 0.07 * max(len(label) for label in points["label"].to_list())
    fig = Figure(
        figsize=(n_cols * (3.6 + label_inches), n_rows * (ROW_INCHES * rows_most + 1.1) + 0.5), layout="constrained"
    )
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    return fig, axes


def _draw_panel(ax: Axes, panel: pl.DataFrame, dataset: str, x_max: float) -> None:
    """One dataset's panel: a row per cell (``_draw_row``), the first on top, labelled; the ε axis from 0 to
    ``x_max``; ε̂ above the column of values."""
    y = np.arange(panel.height)
    for i, r in enumerate(panel.iter_rows(named=True)):
        _draw_row(ax, i, r)
    ax.set_yticks(y, panel["label"].to_list())
    ax.set_ylim(panel.height - 0.5, -0.5)  # the first method on top
    ax.yaxis.grid(False)
    ax.set_xlim(0, x_max)
    ax.set_xlabel("ε")
    ax.set_title(dataset)
    ax.annotate(
        _HAT,
        (1.0, 1.0),
        xycoords="axes fraction",
        xytext=(4, 3),
        textcoords="offset points",
        va="bottom",
        fontsize=9,
    )


def _draw_row(ax: Axes, i: int, r: dict[str, Any]) -> None:
    """Row ``i``: the bound as a bar and a point in its method's colour and marker (a red edge where it violates
    the claim), the claimed ε as a black tick, the bound's value at the right."""
    style = method_style(r["method"])
    edge = "red" if r["violated"] else style.colour
    ax.barh(
        i,
        r["drawn"],
        height=0.55,
        color=style.colour,
        alpha=0.55,
        edgecolor=edge,
        linewidth=1.5 if r["violated"] else 0.5,
    )
    ax.plot(
        r["drawn"],
        i,
        marker=style.marker,
        markersize=6,
        color=style.colour,
        markeredgecolor="black",
        markeredgewidth=0.5,
        linestyle="none",
        clip_on=False,
        zorder=4,
    )
    ax.plot(
        r["claimed_epsilon"],
        i,
        marker="|",
        markersize=15,
        markeredgewidth=2.2,
        color="black",
        linestyle="none",
        gid=CLAIM_GID,
        zorder=5,
    )
    value = format_epsilon_value(r["epsilon_lower"]) + (" ⚠" if r["violated"] else "")
    ax.annotate(
        value,
        (1.0, i),
        xycoords=("axes fraction", "data"),
        xytext=(4, 0),
        textcoords="offset points",
        va="center",
        fontsize=8,
        color="red" if r["violated"] else "black",
        gid=VIOLATION_GID if r["violated"] else None,
    )


def _handles(points: pl.DataFrame) -> list[Line2D | Patch]:
    """The legend: the claim's tick, the bound's bar, and a violation's where one is drawn (no entry per method)."""
    handles: list[Line2D | Patch] = [
        Line2D(
            [],
            [],
            color="black",
            marker="|",
            markersize=12,
            markeredgewidth=2.2,
            linestyle="none",
            label="claimed ε",
        ),
        Patch(facecolor="grey", alpha=0.55, label=f"lower bound {_HAT} (bar and point; value at right)"),
    ]
    if points["violated"].any():
        handles.append(
            Patch(facecolor="white", edgecolor="red", linewidth=1.5, label=f"⚠ violation: {_HAT} > claimed ε")
        )
    return handles


def _range_text(values: pl.Series, one: str, many: str) -> str:
    low, high = int(values.min()), int(values.max())
    return f"{high} {one if high == 1 else many}" if low == high else f"{low}–{high} {many}"


def _caption(summary: pl.DataFrame, points: pl.DataFrame) -> str:
    """The caption: what each row shows, at which confidence and δ, from how many canaries and seeds, how many
    cells refute their claim or have a bound of 0, then the notes its rows call for."""
    confidence = single_value(summary, "confidence")
    deltas = sorted(summary["delta"].unique().to_list())
    delta_text = f"δ = {deltas[0]:g}" if len(deltas) == 1 else "δ = " + ", ".join(f"{d:g}" for d in deltas)
    violations, zeros = int(points["violated"].sum()), int((points["epsilon_lower"] == 0).sum())
    canaries = _range_text(summary["canaries"], "canary", "canaries")
    seeds = _range_text(summary["seeds"], "seed", "seeds")
    caption = (
        f"Empirical privacy audit: per method and target ε (one row each, one panel per dataset), the "
        f"one-run lower bound ε̂ on ε ({100 * confidence:g}% confidence, at {delta_text}: each run's claimed "
        f"δ) as a bar, its value at the right, against the ε the runs claim as a black tick, on a linear "
        f"axis from 0 to {AXIS_HEADROOM:g} times the largest claim. Each row pools {canaries} over {seeds}. "
        f"A bar past its tick refutes the claim (red, {VIOLATION_MARK}): {violations} of {points.height} "
        f"cells do. {zeros} of {points.height} bounds are 0 (no evidence against the claim: a point on the "
        "zero line)."
    )
    clipped = int(points["clipped"].sum())
    if clipped:
        caption += f" {clipped} bound{'s' if clipped > 1 else ''} beyond the axis end sit at it, value written."
    if points["reference"].any():
        caption += (
            f" Squares: reference runs ({REFERENCE_SUFFIX}), against their paper's claimed ε and δ; a "
            "violation there refutes the paper's claim, one elsewhere is a bug."
        )
    if points["method"].str.contains(" · ", literal=True).any():
        caption += " A release row (· NAP release, · DP-SGD release) is its method's noise audited white-box."
    return caption + (
        " ε̂ is a lower bound; one-run audits are loose, so a bar short of its tick does not certify the claim."
    )
