"""The style every figure of the analysis shares: one colour, marker and dashes per method, the panels, the legend,
the marks, the majority-class line, saving, and the caption pieces that every figure words alike.

A method has one style in every figure and study (``method_style``); the marks are the tables' (‡ hollow,
† uncharged reads, ¶ reference mode at its actual ε). The figures that use it: ``accuracy_figure`` (accuracy vs
ε), ``frontier`` (the privacy–utility frontier), ``sweep`` (hyperparameter sweeps), ``audit_figure`` (the
audit's lower bounds) and ``regime`` (each graph method's gap to DP-MLP against the graph's size).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import textwrap
from collections.abc import Iterator, Sequence
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
from nodedp.analysis.tables import DAGGER, GUARANTEE_MARKS, MAJORITY_LABEL, NON_PRIVATE, format_epsilon_value
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.io import atomic_write

COL_WRAP = 3
PANEL_SIZE = (4.2, 3.2)  # inches per panel
LEGEND_WIDTH = 2.2  # inches added beside a single column of panels
DPI = 150
EPSILON_MARKERS = ["o", "^", "D", "v", "P", "X", "<", ">", "p"]  # a sweep's ε values (squares: reference mode)
EPSILON_LINESTYLES = ["-", "--", "-.", (0, (1, 1)), (0, (5, 1, 1, 1, 1, 1))]  # a sweep's ε values
_DASHES = [(5, 2), (1, 1.5), (6, 2, 1, 2), (3, 3)]
# Short forms of the tables' guarantee notes, for legends and captions.
MARK_LEGEND = {
    "‡": (
        "every degree-bounded method: DP within its public degree bound, else given the sampled edge "
        "list (also runs with uncharged reads)"
    )
}
UNACCOUNTED_LEGEND = f"{DAGGER} reads private data without charge (not covered by ε)"
# Reference-mode points sit at the ε they actually spend; beyond this they are drawn at it, labelled.
ACTUAL_EPSILON_CAP = 1e3


# --- saving, panels and the legend ------------------------------------------------------------------------


def _save(fig: Figure, path: Path, *, fmt: str) -> None:
    # The temporary name has no image suffix, so the format is stated rather than inferred.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight"))


def save_figure(fig: Figure, path: Path, pdf_path: Path | None) -> None:
    """Write ``fig`` as a PNG at ``path`` (and a PDF at ``pdf_path`` where given), each atomically."""
    _save(fig, path, fmt="png")
    if pdf_path is not None:
        _save(fig, pdf_path, fmt="pdf")


@contextlib.contextmanager
def figure_context() -> Iterator[None]:
    """The look every figure is drawn in: seaborn's white grid at the paper's font scale."""
    import seaborn as sns

    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1):
        yield


def panels(n: int, *, extra_legend: bool = True) -> tuple[Figure, np.ndarray, int]:
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


def place_legend(fig: Figure, handles: list[Line2D], n_cols: int) -> None:
    """One legend for all panels: beside one column of panels (it is narrow), otherwise below, as many columns as
    fit the panels; each entry wrapped at ``LEGEND_WRAP`` characters."""
    for handle in handles:
        handle.set_label(textwrap.fill(str(handle.get_label()), LEGEND_WRAP))
    if n_cols == 1:
        fig.legend(handles=handles, loc="outside right upper", frameon=False)
    else:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2 * n_cols), frameon=False)


def log_epsilon_axis(ax: Axes, ticks: Sequence[float], x_min: float, x_max: float, *, label: str) -> None:
    """A logarithmic ε axis from ``x_min`` to ``x_max`` with ticks at ``ticks``, labelled plainly."""
    ax.set_xscale("log")
    ax.set_xlim(x_min, x_max)
    # Ticks at the budgets actually drawn, labelled plainly rather than as powers of ten.
    ticks = sorted(set(ticks)) or [x_min, 1.0, x_max]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{e:g}" for e in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


# --- the summary's columns --------------------------------------------------------------------------------


def require_columns(summary: pl.DataFrame, columns: Sequence[str], *, purpose: str) -> None:
    """Refuse an empty summary, or one without ``columns``, naming them and ``purpose``."""
    if summary.is_empty():
        raise ValueError("summary is empty: nothing to plot")
    missing = [c for c in columns if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing} needed to {purpose}")


def metric_columns(metric: str) -> tuple[str, str, str]:
    """The summary's columns of ``metric``: its mean and its interval's ends."""
    return f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"


def _single(summary: pl.DataFrame, column: str) -> Any:
    values = summary[column].drop_nulls().unique().to_list()
    if len(values) != 1:
        raise ValueError(
            f"summary holds {column} values {values}; one figure needs exactly one (summarize all runs in one call)"
        )
    return values[0]


# --- captions ---------------------------------------------------------------------------------------------


def figure_interval_text(summary: pl.DataFrame) -> str:
    """What a figure's points and intervals are, for its caption: the mean over the seeds of each cell (their
    number, min–max where cells differ) and the percentile-bootstrap interval's confidence and resamples,
    read from the summary's ``n_runs``, ``confidence`` and ``n_resamples``."""
    require_columns(summary, ("n_runs", "confidence", "n_resamples"), purpose="state seeds and confidence in a caption")
    confidence, resamples = _single(summary, "confidence"), _single(summary, "n_resamples")
    return (
        f"mean over {seeds_text(summary['n_runs'].to_list())} per cell with {100 * confidence:g}% "
        f"percentile-bootstrap intervals ({resamples} resamples)"
    )


def few_seeds_caveat(summary: pl.DataFrame) -> str:
    """The caption's sentence on cells of few seeds, as the tables word it (``few_seeds_text``: below
    ``MIN_INFORMATIVE_SEEDS`` the interval is about the seeds' range; one seed, none); empty where every cell has
    enough."""
    require_columns(summary, ("n_runs", "confidence"), purpose="state the seeds behind the intervals")
    return few_seeds_text(summary["n_runs"].to_list(), confidence=_single(summary, "confidence"))


# --- the marks: hollow (‡), † and reference mode ----------------------------------------------------------


def _flag(frame: pl.DataFrame, column: str, *, default: bool) -> np.ndarray:
    if column not in frame.columns:
        return np.full(frame.height, default)
    return frame[column].fill_null(default).to_numpy().astype(bool)


def weak_cells(frame: pl.DataFrame) -> np.ndarray:
    """Cells whose guarantee is weaker than unconditional node-level DP (drawn hollow)."""
    if "guarantee" not in frame.columns:
        return np.zeros(frame.height, dtype=bool)
    return frame["guarantee"].is_in(list(GUARANTEE_MARKS)).fill_null(False).to_numpy()


def unaccounted_cells(frame: pl.DataFrame) -> np.ndarray:
    """Cells whose runs read private data without charge (the tables' †)."""
    return ~_flag(frame, "fully_accounted", default=True)


def reference_cells(frame: pl.DataFrame) -> np.ndarray:
    """Cells of reference mode (``<method>@paper``: the summary's ``reference``)."""
    return _flag(frame, "reference", default=False)


def method_marks(frame: pl.DataFrame) -> str:
    """The marks of the weakest cells of ``frame`` (one method's), in the tables' order: †, then ‡."""
    marks = DAGGER if unaccounted_cells(frame).any() else ""
    weak = weak_cells(frame)
    return marks + "".join(
        sorted({GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]} if weak.any() else set())
    )


def marks_caption(frame: pl.DataFrame) -> str:
    """Sentences explaining the marks that the cells of ``frame`` carry."""
    sentences = []
    weak = weak_cells(frame)
    shown = {GUARANTEE_MARKS[g] for g in frame.filter(pl.Series(weak))["guarantee"]} if weak.any() else set()
    for mark in GUARANTEE_MARKS.values():
        if mark in shown:
            sentences.append(f"Hollow points, {mark} in the legend: {MARK_LEGEND[mark]}.")
    if unaccounted_cells(frame).any():
        sentences.append(
            f"{DAGGER} beside a point: its runs read private data without charge, so its ε does not "
            "cover every read (see the runs' ledgers)."
        )
    return " ".join(sentences)


def mark_handles(frame: pl.DataFrame) -> list[Line2D]:
    """Legend entries explaining the marks that the cells of ``frame`` carry."""
    shown = set("".join(method_marks(frame.filter(pl.col("method") == m)) for m in frame["method"].unique()))
    handles = [
        Line2D(
            [],
            [],
            color="grey",
            marker="o",
            markersize=5,
            linestyle="none",
            markerfacecolor="white",
            label=f"hollow {mark}: {MARK_LEGEND[mark]}",
        )
        for mark in GUARANTEE_MARKS.values()
        if mark in shown
    ]
    if DAGGER in shown:
        handles.append(
            Line2D(
                [], [], color="black", marker=f"${DAGGER}$", markersize=7, linestyle="none", label=UNACCOUNTED_LEGEND
            )
        )
    return handles


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
    "sparse-sage": ("#000080", "v", (5, 2)),
    "sparse-gin": ("#800000", "D", (5, 2)),
    "heterpoisson": ("#0000ff", "h", (5, 2)),
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


# --- drawing a method's cells -----------------------------------------------------------------------------


def dagger_points(ax: Axes, x: np.ndarray, y: np.ndarray, flags: np.ndarray) -> None:
    """† beside each point where ``flags`` (uncharged reads)."""
    for xi, yi in zip(x[flags], y[flags]):
        ax.annotate(DAGGER, (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=8)


def draw_marks(ax: Axes, x: np.ndarray, y: np.ndarray, style: MethodStyle, *, hollow: np.ndarray) -> None:
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


def cap_actual(ax: Axes, x: np.ndarray, y: np.ndarray) -> np.ndarray:
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


def draw_reference_line(ax: Axes, y: float, style: MethodStyle) -> None:
    """A non-private method (ε = ∞) as a horizontal line in its colour and dashes at ``y`` (percent)."""
    ax.axhline(y, color=style.colour, dashes=style.dashes, linewidth=1.3)


def reference_handle(method: str, style: MethodStyle) -> Line2D:
    """The legend entry of a non-private method drawn as a reference line."""
    return Line2D([], [], color=style.colour, dashes=style.dashes, linewidth=1.3, label=f"{method} ({NON_PRIVATE})")


# --- the majority-class line ------------------------------------------------------------------------------

MAJORITY_COLOUR = "#a0a0a0"


def draw_majority(ax: Axes, majority: dict[str, float], dataset: str) -> None:
    """The accuracy of always predicting the most frequent class (``majority``: dataset -> it), where known."""
    if dataset in majority:
        ax.axhline(100 * majority[dataset], color=MAJORITY_COLOUR, linestyle="-.", linewidth=1.1, zorder=0.5)


def majority_handles(majority: dict[str, float]) -> list[Line2D]:
    """The legend entry of the majority-class line, where one is drawn."""
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


def majority_caption(majority: dict[str, float]) -> str:
    """The caption's sentence on the majority-class line, where one is drawn."""
    return (
        "Dash-dotted grey: the accuracy of always predicting the training set's most frequent class; a method "
        "at or below it has learned nothing useful."
        if majority
        else ""
    )


def caption_text(caption: str, *, majority: dict[str, float], summary: pl.DataFrame, cells: pl.DataFrame) -> str:
    """A figure's whole caption: its own sentences, then the shared ones on the majority-class line (where drawn),
    on cells of few seeds and on the marks ``cells`` carry."""
    shared = [majority_caption(majority), few_seeds_caveat(summary), marks_caption(cells)]
    return " ".join(filter(None, [caption, *shared]))
