"""Tiny summaries as `summarize` writes them, and what a drawn figure shows, for the figure tests."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cell(dataset: str, method: str, eps: float, mean: float, **extra: Any) -> dict[str, Any]:
    """One summary row as `summarize` writes it (the columns figures read), ``extra`` on top."""
    return {
        "dataset": dataset,
        "method": method,
        "target_epsilon": eps,
        "n_runs": 3,
        "epsilon_max": eps if math.isfinite(eps) else math.inf,
        "test_accuracy_mean": mean,
        "test_accuracy_ci_low": mean - 0.02,
        "test_accuracy_ci_high": mean + 0.02,
        "confidence": 0.95,
        "n_resamples": 1000,
        **extra,
    }


def fake_summary() -> pl.DataFrame:
    rows = []
    for dataset in ("cora", "csbm"):
        for method, eps, mean in (
            ("dp-mlp", 1.0, 0.5),
            ("dp-mlp", 4.0, 0.6),
            ("gap", 1.0, 0.55),
            ("gap", 4.0, 0.7),
            ("gcn", math.inf, 0.8),
        ):
            rows.append(cell(dataset, method, eps, mean))
    return pl.DataFrame(rows)


def visible_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def legend_labels(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
