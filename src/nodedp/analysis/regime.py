"""Where structure pays: each graph method's test accuracy minus DP-MLP's against the graph's size.

On one graph family (single schools and unions of Facebook100 schools, one preprocessing), the difference is
taken per seed, where both methods share the split, and its mean gets a percentile-bootstrap interval over the
seeds. Reference-mode runs and runs with uncharged reads are left out: the gap is between private methods that
each spend their ε. Sizes are the preprocessed graphs' node counts from their meta.json: an analysis of the
input datasets, labelled as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nodedp.analysis.bootstrap import bootstrap_ci, interval_text
from nodedp.io import write_text

if TYPE_CHECKING:
    import polars as pl

__all__ = ["graph_sizes", "paired_gaps", "write_regime"]

BASELINE = "dp-mlp"
SIZE_LABEL = "nodes after preprocessing (an analysis of the input graphs)"


def paired_gaps(
    runs: pl.DataFrame,
    *,
    baseline: str = BASELINE,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per (dataset, method, finite target ε) of a private method other than ``baseline``: the mean over
    seeds of (its test accuracy − the baseline's on the same seed), its interval, the number of paired seeds and
    both accuracies' means. Raises naming what is missing where the runs hold no baseline."""
    import polars as pl

    needed = {"dataset", "method", "target_epsilon", "seed", "test_accuracy"}
    missing = sorted(needed - set(runs.columns))
    if missing:
        raise ValueError(f"runs lack columns {missing}")
    usable = runs.filter(pl.col("target_epsilon").is_finite())
    if "reference" in usable.columns:
        usable = usable.filter(~pl.col("reference").fill_null(False))
    if "fully_accounted" in usable.columns:
        usable = usable.filter(pl.col("fully_accounted").fill_null(True))
    base = usable.filter(pl.col("method") == baseline).select(
        "dataset", "target_epsilon", "seed", pl.col("test_accuracy").alias("baseline_accuracy")
    )
    if base.is_empty():
        raise ValueError(
            f"no {baseline} runs at a finite ε to take differences from; methods: {sorted(set(runs['method']))}"
        )
    pairs = usable.filter(pl.col("method") != baseline).join(base, on=["dataset", "target_epsilon", "seed"])
    rows = []
    for (dataset, method, eps), cell in sorted(
        pairs.group_by("dataset", "method", "target_epsilon"), key=lambda item: tuple(map(str, item[0]))
    ):
        gap = (cell["test_accuracy"] - cell["baseline_accuracy"]).to_numpy()
        mean, low, high = bootstrap_ci(gap, n_resamples=n_resamples, confidence=confidence, seed=seed)
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                "target_epsilon": float(eps),
                "n_pairs": int(gap.size),
                "gap_mean": mean,
                "gap_low": low,
                "gap_high": high,
                "accuracy_mean": float(cell["test_accuracy"].mean()),
                "baseline_accuracy_mean": float(cell["baseline_accuracy"].mean()),
            }
        )
    if not rows:
        raise ValueError(f"no method shares a seed and ε with {baseline}")
    return pl.DataFrame(rows)


def _markdown(gaps: pl.DataFrame, sizes: Mapping[str, int], *, baseline: str, caption: str, command: str) -> str:
    order = sorted(set(gaps["dataset"]), key=lambda d: (sizes[d], d))
    epsilons = sorted(set(gaps["target_epsilon"]))
    methods = sorted(set(gaps["method"]))
    most = int(gaps["n_pairs"].max())
    header = ["Dataset", "Nodes", "ε", f"{baseline} (%)", *(f"{m} − {baseline} (pp)" for m in methods)]
    lines = [
        f"Table: {caption}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for dataset in order:
        for eps in epsilons:
            cells = gaps.filter((gaps["dataset"] == dataset) & (gaps["target_epsilon"] == eps))
            if cells.is_empty():
                continue
            texts = []
            for method in methods:
                row = cells.filter(cells["method"] == method)
                if row.is_empty():
                    texts.append("—")
                    continue
                r = row.row(0, named=True)
                if r["n_pairs"] == 1:  # one seed: no interval
                    texts.append(f"{100 * r['gap_mean']:+.1f} [n=1]")
                    continue
                interval = f"({100 * r['gap_low']:+.1f} to {100 * r['gap_high']:+.1f})"
                texts.append(
                    f"{100 * r['gap_mean']:+.1f} {interval}" + (f" [n={r['n_pairs']}]" if r["n_pairs"] < most else "")
                )
            base = 100 * float(cells["baseline_accuracy_mean"][0])
            lines.append("| " + " | ".join([dataset, f"{sizes[dataset]:,}", f"{eps:g}", f"{base:.1f}", *texts]) + " |")
    lines += ["", f"Regenerate with: `{command}`", ""]
    return "\n".join(lines)


def write_regime(
    runs: pl.DataFrame,
    sizes: Mapping[str, int],
    *,
    png: Path,
    caption_path: Path,
    markdown_path: Path,
    baseline: str = BASELINE,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    regenerate_command: str,
) -> str:
    """Draw the regime figure (one panel per ε: each method's gap to ``baseline`` against the node count, log
    scale, with intervals) and write its caption and Markdown table. ``sizes``: dataset -> nodes. Returns the
    caption."""
    gaps = paired_gaps(runs, baseline=baseline, n_resamples=n_resamples, confidence=confidence, seed=seed)
    unknown = sorted(set(gaps["dataset"]) - set(sizes))
    if unknown:
        raise ValueError(f"no node count for dataset(s) {unknown}: pass their graphs' meta.json")
    _draw_regime(gaps, sizes, baseline=baseline, png=png)
    n_pairs = gaps["n_pairs"].to_list()
    caption = (
        f"Each private graph method's test accuracy minus {baseline}'s on the same seed's split (percentage points), "
        f"against the graph's {SIZE_LABEL}, by ε. Each point: the "
        + interval_text(n_pairs, confidence=confidence, n_resamples=n_resamples)
        + f" Above 0: the graph method beats {baseline}. Reference-mode runs and runs with uncharged reads are left out."
    )
    write_text(caption_path, caption + "\n")
    write_text(markdown_path, _markdown(gaps, sizes, baseline=baseline, caption=caption, command=regenerate_command))
    return caption


def _draw_regime(gaps: pl.DataFrame, sizes: Mapping[str, int], *, baseline: str, png: Path) -> None:
    """The figure: a panel per ε, each method's gaps (``paired_gaps``) against the node count, one legend below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nodedp.analysis.style import DPI

    epsilons = sorted(set(gaps["target_epsilon"]))
    fig, axes = plt.subplots(1, len(epsilons), figsize=(4.6 * len(epsilons), 3.6), sharey=True, squeeze=False)
    for ax, eps in zip(axes[0], epsilons):
        _draw_panel(ax, gaps.filter(gaps["target_epsilon"] == eps), eps, sizes, methods=sorted(set(gaps["method"])))
    axes[0][0].set_ylabel(f"test accuracy − {baseline} (pp)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


def _draw_panel(ax: Any, gaps: pl.DataFrame, eps: float, sizes: Mapping[str, int], *, methods: list[str]) -> None:
    """The panel of ``eps`` (``gaps``: its rows): the zero line, each of ``methods`` (all the figure's, so each
    keeps its offset) against the node count on a log axis, set a little apart, with its intervals."""
    from nodedp.analysis.style import method_style

    ax.axhline(0.0, color="#606060", linewidth=0.8)
    for i, method in enumerate(methods):
        cell = gaps.filter(gaps["method"] == method)
        if cell.is_empty():
            continue
        cell = cell.with_columns(nodes=cell["dataset"].replace_strict(dict(sizes), return_dtype=cell["n_pairs"].dtype))
        cell = cell.sort("nodes")
        style = method_style(method)
        x = cell["nodes"].to_numpy().astype(float) * (1.0 + 0.04 * (i - (len(methods) - 1) / 2))
        y = 100 * cell["gap_mean"].to_numpy()
        err = 100 * np.vstack([cell["gap_mean"] - cell["gap_low"], cell["gap_high"] - cell["gap_mean"]])
        ax.errorbar(x, y, yerr=err, color=style.colour, marker=style.marker, linestyle="-", capsize=3, label=method)
    ax.set_xscale("log")
    ax.set_title(f"ε = {eps:g}")
    ax.set_xlabel("nodes (after preprocessing)")
    ax.grid(True, alpha=0.3)


def graph_sizes(meta_paths: Sequence[Path]) -> dict[str, int]:
    """Dataset -> node count, from each graph's meta.json."""
    from nodedp.io import read_json

    sizes = {}
    for path in meta_paths:
        meta = read_json(Path(path))
        nodes = meta.get("num_nodes")
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise ValueError(f"{path}: no node count (num_nodes)")
        sizes[str(meta["name"])] = nodes
    return sizes
