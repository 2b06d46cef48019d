"""Percentile-bootstrap confidence intervals of the mean, and the per-cell summary of runs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from nodedp.accounting.ledger import GUARANTEE_CLASSES

CELL_KEY = ("dataset", "method", "target_epsilon")
MIN_RESAMPLES = 1000
# Per-run settings a cell carries unchanged (all its runs must agree): what figures plot a variant against.
CELL_SETTINGS = ("base_method", "hyperparameters")


def bootstrap_ci(
    values: np.ndarray,
    *,
    n_resamples: int = MIN_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean, low, high): the sample mean and its percentile-bootstrap interval.

    A single value has no spread to resample, so it returns ``(v, v, v)``; callers
    that care (tables) flag such cells by their run count.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"values must be finite, got {values}")
    if n_resamples < MIN_RESAMPLES:
        raise ValueError(f"n_resamples must be >= {MIN_RESAMPLES} for stable tails, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    mean = float(values.mean())
    if values.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, values.size, size=(n_resamples, values.size))
    means = values[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1.0 - alpha / 2])
    return mean, float(low), float(high)


def summarize(
    runs: pl.DataFrame,
    *,
    metrics: Sequence[str] = ("test_accuracy", "test_macro_f1"),
    n_resamples: int = MIN_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per (dataset, method, target_epsilon), sorted by that key.

    Columns: the key, ``n_runs``, ``epsilon_mean`` (ε spent, averaged),
    ``fully_accounted`` (every run's ledger charges every read of private data), ``guarantee``
    (the weakest guarantee class of the cell's runs; None for runs collected without one),
    ``epsilon_max`` and ``delta`` (the largest over the cell's runs), and for reference-mode cells
    (``reference``) the paper's ``claimed_delta`` and ``claim_actual_epsilon_max`` (the largest actual ε
    at that δ; the claimed ε is the key's), the runs' ``base_method`` and ``hyperparameters`` (JSON; null
    where the runs lack them, an error where they disagree: such a cell mixes settings), for each
    metric ``{m}_mean``/``{m}_ci_low``/``{m}_ci_high``, and the ``confidence`` and
    ``n_resamples`` used, so tables built from the summary alone can state them.
    Every cell resamples its runs, ordered by seed, with the same ``seed``, so a
    cell's interval depends neither on row order nor on the other cells in the frame.
    """
    needed = [*CELL_KEY, "seed", "epsilon", *metrics]
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lack columns {missing}; available: {runs.columns}")
    rows = []
    for key, cell in runs.group_by(list(CELL_KEY)):
        # Resampling picks rows by position: fix their order so the input's row order cannot matter.
        cell = cell.sort("seed")
        row: dict[str, object] = dict(zip(CELL_KEY, key))
        row["n_runs"] = cell.height
        row["epsilon_mean"] = float(cell["epsilon"].mean())
        # A cell is fully accounted only if every run's ledger is (tables mark the others).
        row["fully_accounted"] = bool(cell["fully_accounted"].all()) if "fully_accounted" in cell.columns else True
        # A cell's guarantee is its weakest run's (GUARANTEE_CLASSES runs from strongest to weakest).
        row["guarantee"] = (max(cell["guarantee"].to_list(), key=GUARANTEE_CLASSES.index)
                            if "guarantee" in cell.columns else None)
        # Reference mode (`<method>@paper`): the largest actual ε of the cell's runs, at the suite's δ and at the
        # paper's (the claimed ε is the cell's target_epsilon).
        reference = "reference" in cell.columns and bool(cell["reference"].any())
        if reference and not cell["reference"].all():
            raise ValueError(f"cell {dict(zip(CELL_KEY, key))} mixes reference-mode and suite-accounted runs")
        row["reference"] = reference
        row["epsilon_max"] = float(cell["epsilon"].max())
        row["delta"] = cell["delta"].max() if "delta" in cell.columns else None  # the suite's δ of the runs
        row["claimed_delta"] = float(cell["claimed_delta"].max()) if reference else None
        row["claim_actual_epsilon_max"] = float(cell["claim_actual_epsilon"].max()) if reference else None
        for column in CELL_SETTINGS:
            row[column] = _cell_setting(cell, column, key)
        for metric in metrics:
            mean, low, high = bootstrap_ci(
                cell[metric].to_numpy(),
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
            )
            row[f"{metric}_mean"] = mean
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
        row["confidence"] = confidence
        row["n_resamples"] = n_resamples
        rows.append(row)
    schema: dict[str, pl.DataType] = {
        "dataset": pl.String(),
        "method": pl.String(),
        "target_epsilon": pl.Float64(),
        "n_runs": pl.Int64(),
        "epsilon_mean": pl.Float64(),
        "fully_accounted": pl.Boolean(),
        "guarantee": pl.String(),
        "reference": pl.Boolean(),
        "epsilon_max": pl.Float64(),
        "delta": pl.Float64(),
        "claimed_delta": pl.Float64(),
        "claim_actual_epsilon_max": pl.Float64(),
        "base_method": pl.String(),
        "hyperparameters": pl.String(),
        **{f"{m}_{s}": pl.Float64() for m in metrics for s in ("mean", "ci_low", "ci_high")},
        "confidence": pl.Float64(),
        "n_resamples": pl.Int64(),
    }
    return pl.DataFrame(rows, schema=schema).sort(list(CELL_KEY))


def _cell_setting(cell: pl.DataFrame, column: str, key: tuple) -> str | None:
    """The one value of ``column`` that a cell's runs share (nulls: runs recorded without it), or None."""
    if column not in cell.columns:
        return None
    values = cell[column].drop_nulls().unique().sort().to_list()
    if len(values) > 1:
        raise ValueError(f"cell {dict(zip(CELL_KEY, key))} mixes runs with different {column}: {values}; rerun "
                         "its stale runs so that every seed has the same settings")
    return values[0] if values else None
