"""Percentile-bootstrap confidence intervals of the mean, the per-cell summary of runs, and the words a caption
uses for them (``interval_text``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from nodedp.accounting.ledger import GUARANTEE_CLASSES

CELL_KEY = ("dataset", "method", "target_epsilon")
MIN_RESAMPLES = 1000
# Per-run settings a cell carries unchanged (all its runs must agree): what figures plot a variant against.
CELL_SETTINGS = ("base_method", "hyperparameters")
# Below this many seeds a percentile bootstrap over seeds is close to their min–max range (with 2 seeds, exactly
# it): captions say so (``interval_text``).
MIN_INFORMATIVE_SEEDS = 5


def bootstrap_ci(
    values: np.ndarray,
    *,
    n_resamples: int = MIN_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean, low, high): the sample mean and its percentile-bootstrap interval.

    A single value has no spread to resample, so it returns ``(v, v, v)``; callers
    that care (tables) flag such cells by their run count. Below ``MIN_INFORMATIVE_SEEDS`` values the
    interval is nearly their min–max (``interval_text`` words the caveat).
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

    Columns: the key, ``n_runs`` (the cell's runs: its seeds, one run each), ``epsilon_mean`` (ε spent, averaged),
    ``fully_accounted`` (every run's ledger charges every read of private data), ``replanned`` (every run's plan
    was re-derived from public inputs where it was collected; null for runs collected without it), ``guarantee``
    (the weakest guarantee class of the cell's runs; None for runs collected without one),
    ``epsilon_max`` and ``delta`` (the largest over the cell's runs), and for reference-mode cells
    (``reference``) the paper's ``claimed_delta`` and ``claim_actual_epsilon_max`` (the largest actual ε
    at that δ; the claimed ε is the key's), the runs' ``base_method`` and ``hyperparameters`` (JSON; null
    where the runs lack them, an error where they disagree: such a cell mixes settings), for each
    metric ``{m}_mean``/``{m}_ci_low``/``{m}_ci_high``, ``test_majority_accuracy`` (the mean over the runs of
    the accuracy of always predicting the training set's most frequent class: a non-private reference line),
    ``n_one_class_runs`` (how many runs predict one class for every test node: a constant predictor; both null
    where a run was recorded without them), and the ``confidence`` and ``n_resamples`` used, so tables built
    from the summary alone can state them.
    Every cell resamples its runs, ordered by seed, with the same ``seed``, so a
    cell's interval depends neither on row order nor on the other cells in the frame.
    """
    needed = [*CELL_KEY, "seed", "epsilon", *metrics]
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lack columns {missing}; available: {runs.columns}")
    rows = [
        # Resampling picks rows by position: fix their order so the input's row order cannot matter.
        _cell_row(key, cell.sort("seed"), metrics=metrics, n_resamples=n_resamples, confidence=confidence, seed=seed)
        for key, cell in runs.group_by(list(CELL_KEY))
    ]
    return pl.DataFrame(rows, schema=_summary_schema(metrics)).sort(list(CELL_KEY))


def _cell_row(
    key: tuple, cell: pl.DataFrame, *, metrics: Sequence[str], n_resamples: int, confidence: float, seed: int
) -> dict[str, object]:
    """The summary's row of one cell (``cell``: its runs, by seed)."""
    row: dict[str, object] = dict(zip(CELL_KEY, key))
    row["n_runs"] = cell.height
    row["epsilon_mean"] = float(cell["epsilon"].mean())
    # A cell is fully accounted only if every run's ledger is (tables mark the others).
    row["fully_accounted"] = bool(cell["fully_accounted"].all()) if "fully_accounted" in cell.columns else True
    # A cell is re-derived only if every run's plan was (tables mark the others); null: collected before.
    row["replanned"] = bool(cell["replanned"].all()) if "replanned" in cell.columns else None
    # A cell's guarantee is its weakest run's (GUARANTEE_CLASSES runs from strongest to weakest).
    row["guarantee"] = (
        max(cell["guarantee"].to_list(), key=GUARANTEE_CLASSES.index) if "guarantee" in cell.columns else None
    )
    row |= _spent(cell, key)
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
    row["test_majority_accuracy"] = _mean_if_all(cell, "test_majority_accuracy")
    row["n_one_class_runs"] = (
        None
        if _mean_if_all(cell, "test_predicted_classes") is None
        else int((cell["test_predicted_classes"] == 1).sum())
    )
    row["confidence"] = confidence
    row["n_resamples"] = n_resamples
    return row


def _spent(cell: pl.DataFrame, key: tuple) -> dict[str, object]:
    """What the cell's runs spend: ``reference``, ``epsilon_max`` and ``delta``, and for reference mode the paper's
    δ and the actual ε at it. Refuses a cell mixing reference-mode and suite-accounted runs."""
    # Reference mode (`<method>@paper`): the largest actual ε of the cell's runs, at the suite's δ and at the
    # paper's (the claimed ε is the cell's target_epsilon).
    reference = "reference" in cell.columns and bool(cell["reference"].any())
    if reference and not cell["reference"].all():
        raise ValueError(f"cell {dict(zip(CELL_KEY, key))} mixes reference-mode and suite-accounted runs")
    return {
        "reference": reference,
        "epsilon_max": float(cell["epsilon"].max()),
        "delta": cell["delta"].max() if "delta" in cell.columns else None,  # the suite's δ of the runs
        "claimed_delta": float(cell["claimed_delta"].max()) if reference else None,
        "claim_actual_epsilon_max": float(cell["claim_actual_epsilon"].max()) if reference else None,
    }


def _summary_schema(metrics: Sequence[str]) -> dict[str, pl.DataType]:
    return {
        "dataset": pl.String(),
        "method": pl.String(),
        "target_epsilon": pl.Float64(),
        "n_runs": pl.Int64(),
        "epsilon_mean": pl.Float64(),
        "fully_accounted": pl.Boolean(),
        "replanned": pl.Boolean(),
        "guarantee": pl.String(),
        "reference": pl.Boolean(),
        "epsilon_max": pl.Float64(),
        "delta": pl.Float64(),
        "claimed_delta": pl.Float64(),
        "claim_actual_epsilon_max": pl.Float64(),
        "base_method": pl.String(),
        "hyperparameters": pl.String(),
        **{f"{m}_{s}": pl.Float64() for m in metrics for s in ("mean", "ci_low", "ci_high")},
        "test_majority_accuracy": pl.Float64(),
        "n_one_class_runs": pl.Int64(),
        "confidence": pl.Float64(),
        "n_resamples": pl.Int64(),
    }


def _mean_if_all(cell: pl.DataFrame, column: str) -> float | None:
    """The mean of ``column`` over the cell's runs; None where the column is absent or a run lacks it."""
    if column not in cell.columns or cell[column].null_count():
        return None
    return float(cell[column].mean())


def seeds_text(n_runs: Sequence[int]) -> str:
    """The seeds of a table's cells in words: "3 seeds", "1 seed", "3–5 seeds" where cells differ."""
    low, high = min(n_runs), max(n_runs)
    return f"{high} seed{'s' if high != 1 else ''}" if low == high else f"{low}–{high} seeds"


def interval_text(n_runs: Sequence[int], *, confidence: float, n_resamples: int) -> str:
    """A caption's words for what each cell shows: the mean over its seeds (``n_runs``, one count per cell) with
    its percentile-bootstrap interval, then ``few_seeds_text``."""
    caveat = few_seeds_text(n_runs, confidence=confidence)  # checks the counts
    text = (
        f"mean over {seeds_text(n_runs)} with {100 * confidence:g}% percentile-bootstrap interval over the "
        f"seeds ({n_resamples} resamples)."
    )
    return f"{text} {caveat}" if caveat else text


def few_seeds_text(n_runs: Sequence[int], *, confidence: float) -> str:
    """What a caption must add about cells with few seeds (``n_runs``, one count per cell): with 2 to
    ``MIN_INFORMATIVE_SEEDS`` - 1 seeds, that the interval is nearly the seeds' min–max range and not
    informative; with one, that it has no interval. Empty when every cell has enough."""
    n_runs = [int(n) for n in n_runs]
    if not n_runs or min(n_runs) < 1:
        raise ValueError(f"need each cell's number of seeds (>= 1), got {n_runs}")
    sentences = []
    few = [n for n in n_runs if 1 < n < MIN_INFORMATIVE_SEEDS]
    if few:
        where = "With" if len(few) == len(n_runs) else "In cells with"
        sentences.append(
            f"{where} {seeds_text(few)} (fewer than {MIN_INFORMATIVE_SEEDS}) the interval is not "
            "informative: a bootstrap over so few seeds is nearly their min–max range, their spread "
            f"rather than a {100 * confidence:g}% confidence interval."
        )
    if 1 in n_runs:
        sentences.append("A cell with one seed has no interval.")
    return " ".join(sentences)


def _cell_setting(cell: pl.DataFrame, column: str, key: tuple) -> str | None:
    """The one value of ``column`` that a cell's runs share (nulls: runs recorded without it), or None."""
    if column not in cell.columns:
        return None
    values = cell[column].drop_nulls().unique().sort().to_list()
    if len(values) > 1:
        raise ValueError(
            f"cell {dict(zip(CELL_KEY, key))} mixes runs with different {column}: {values}; rerun "
            "its stale runs so that every seed has the same settings"
        )
    return values[0] if values else None
