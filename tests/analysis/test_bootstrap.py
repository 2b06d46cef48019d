from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from nodedp.analysis.bootstrap import bootstrap_ci, summarize


def fake_runs(*, n_seeds: int = 5, seed: int = 0) -> pl.DataFrame:
    """Two datasets, a private method at two budgets and a non-private one, in shuffled order."""
    rng = np.random.default_rng(seed)
    rows = []
    for dataset in ("b-graph", "a-graph"):
        for method, eps in (("dp-mlp", 4.0), ("gcn", math.inf), ("dp-mlp", 1.0)):
            for s in range(n_seeds):
                acc = 0.6 + 0.05 * (eps if math.isfinite(eps) else 5.0) / 5 + rng.normal(0, 0.02)
                rows.append(
                    {
                        "dataset": dataset,
                        "method": method,
                        "target_epsilon": eps,
                        "seed": s,
                        "epsilon": eps * 0.98 if math.isfinite(eps) else math.inf,
                        "test_accuracy": acc,
                        "test_macro_f1": acc - 0.05,
                    }
                )
    return pl.DataFrame(rows).sample(fraction=1.0, shuffle=True, seed=seed)


@pytest.mark.parametrize("seed", range(5))
def test_interval_contains_the_mean(seed: int) -> None:
    values = np.random.default_rng(seed).normal(0.7, 0.05, size=6)
    mean, low, high = bootstrap_ci(values, seed=seed)
    assert mean == pytest.approx(values.mean())
    assert low < mean < high


def test_interval_shrinks_with_more_samples() -> None:
    rng = np.random.default_rng(1)
    widths = []
    for n in (5, 50, 500):
        _, low, high = bootstrap_ci(rng.normal(0.0, 1.0, size=n))
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    # Width of a mean's interval scales like 1/sqrt(n): 10x the samples, ~3x narrower.
    assert widths[1] / widths[2] == pytest.approx(math.sqrt(10), rel=0.3)


def test_higher_confidence_gives_a_wider_interval() -> None:
    values = np.random.default_rng(2).normal(size=10)
    _, low90, high90 = bootstrap_ci(values, confidence=0.9)
    _, low99, high99 = bootstrap_ci(values, confidence=0.99)
    assert low99 < low90 and high90 < high99


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    values = np.random.default_rng(3).normal(size=8)
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(values, seed=7)
    assert bootstrap_ci(values, seed=7) != bootstrap_ci(values, seed=8)


def test_agrees_with_scipy_percentile_bootstrap() -> None:
    values = np.random.default_rng(4).normal(0.7, 0.05, size=20)
    _mean, low, high = bootstrap_ci(values, n_resamples=20_000, seed=0)
    ref = stats.bootstrap(
        (values,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95, random_state=1
    ).confidence_interval
    # Monte-Carlo error of a 2.5% quantile from 20k resamples is well under 5% of the width.
    width = ref.high - ref.low
    assert low == pytest.approx(ref.low, abs=0.05 * width)
    assert high == pytest.approx(ref.high, abs=0.05 * width)


def test_a_single_value_is_its_own_interval() -> None:
    assert bootstrap_ci(np.array([0.42])) == (0.42, 0.42, 0.42)


def test_constant_values_give_a_zero_width_interval() -> None:
    assert bootstrap_ci(np.full(4, 0.5)) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        (np.array([]), {}, "non-empty 1-D"),
        (np.ones((2, 2)), {}, "non-empty 1-D"),
        (np.array([0.5, np.nan]), {}, "finite"),
        (np.ones(3), {"n_resamples": 999}, "n_resamples must be >= 1000"),
        (np.ones(3), {"confidence": 1.0}, "confidence must lie in"),
    ],
)
def test_rejects_bad_input(values: np.ndarray, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(values, **kwargs)


def test_summarize_one_row_per_cell_sorted() -> None:
    summary = summarize(fake_runs())
    keys = summary.select("dataset", "method", "target_epsilon").rows()
    assert keys == [
        ("a-graph", "dp-mlp", 1.0),
        ("a-graph", "dp-mlp", 4.0),
        ("a-graph", "gcn", math.inf),
        ("b-graph", "dp-mlp", 1.0),
        ("b-graph", "dp-mlp", 4.0),
        ("b-graph", "gcn", math.inf),
    ]
    assert summary["n_runs"].to_list() == [5] * 6
    assert summary["epsilon_mean"].to_list()[:3] == pytest.approx([0.98, 3.92, math.inf])
    for metric in ("test_accuracy", "test_macro_f1"):
        assert (summary[f"{metric}_ci_low"] <= summary[f"{metric}_mean"]).all()
        assert (summary[f"{metric}_mean"] <= summary[f"{metric}_ci_high"]).all()
    assert set(summary["confidence"]) == {0.95} and set(summary["n_resamples"]) == {1000}


def test_summarize_matches_bootstrap_ci_per_cell() -> None:
    runs = fake_runs()
    summary = summarize(runs, metrics=("test_accuracy",), n_resamples=2000, confidence=0.9, seed=5)
    row = summary.row(3, named=True)
    cell = runs.filter(
        (pl.col("dataset") == row["dataset"])
        & (pl.col("method") == row["method"])
        & (pl.col("target_epsilon") == row["target_epsilon"])
    ).sort("seed")
    expected = bootstrap_ci(cell["test_accuracy"].to_numpy(), n_resamples=2000, confidence=0.9, seed=5)
    assert (row["test_accuracy_mean"], row["test_accuracy_ci_low"], row["test_accuracy_ci_high"]) == expected
    assert "test_macro_f1_mean" not in summary.columns


def test_summarize_is_deterministic_and_independent_of_row_order_and_other_cells() -> None:
    runs = fake_runs()
    first = summarize(runs)
    assert summarize(runs).equals(first)
    assert summarize(runs.sample(fraction=1.0, shuffle=True, seed=99)).equals(first)
    alone = summarize(runs.filter(pl.col("dataset") == "a-graph"))
    assert first.filter(pl.col("dataset") == "a-graph").equals(alone)


def test_summarize_names_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"runs lack columns \['val_accuracy'\]"):
        summarize(fake_runs(), metrics=("val_accuracy",))


def test_a_cell_is_fully_accounted_only_if_all_its_runs_are() -> None:
    runs = fake_runs()
    first_cell = (pl.col("dataset") == "a-graph") & (pl.col("method") == runs["method"][0])
    one_bad = first_cell & (pl.col("seed") == 0)
    summary = summarize(runs.with_columns((~one_bad).alias("fully_accounted")))
    flags = dict(zip(zip(summary["dataset"], summary["method"], summary["target_epsilon"]), summary["fully_accounted"]))
    bad_cells = {k for k, ok in flags.items() if not ok}
    expected = set(runs.filter(one_bad).select("dataset", "method", "target_epsilon").iter_rows())
    assert bad_cells == expected and len(flags) > len(bad_cells)
    assert summarize(runs)["fully_accounted"].all()  # runs without the column: nothing to flag


def test_a_cell_carries_its_runs_settings() -> None:
    runs = fake_runs()
    hp = pl.when(pl.col("method") == "dp-mlp").then(pl.lit('{"lr": 0.01}')).otherwise(pl.lit('{"lr": 0.1}'))
    summary = summarize(runs.with_columns(hp.alias("hyperparameters"), pl.col("method").alias("base_method")))
    for row in summary.iter_rows(named=True):
        assert row["base_method"] == row["method"]
        assert row["hyperparameters"] == ('{"lr": 0.01}' if row["method"] == "dp-mlp" else '{"lr": 0.1}')
    plain = summarize(runs)  # runs collected without them
    assert plain["hyperparameters"].null_count() == plain.height and plain["base_method"].null_count() == plain.height


def test_a_run_without_settings_does_not_hide_the_others() -> None:
    runs = fake_runs().with_columns(
        pl.when(pl.col("seed") == 0).then(None).otherwise(pl.lit('{"lr": 0.01}')).alias("hyperparameters")
    )
    assert set(summarize(runs)["hyperparameters"]) == {'{"lr": 0.01}'}


def test_a_cell_mixing_settings_is_refused_by_name() -> None:
    runs = fake_runs()
    stale = (pl.col("dataset") == "a-graph") & (pl.col("method") == "gcn") & (pl.col("seed") == 2)
    runs = runs.with_columns(
        pl.when(stale).then(pl.lit('{"lr": 0.1}')).otherwise(pl.lit('{"lr": 0.01}')).alias("hyperparameters")
    )
    with pytest.raises(ValueError, match=r"'a-graph'.*'gcn'.*different hyperparameters.*lr"):
        summarize(runs)


def test_a_cell_counts_its_one_class_runs_and_averages_its_majority_class() -> None:
    runs = fake_runs(n_seeds=4)
    one_class = (pl.col("method") == "dp-mlp") & (pl.col("seed") < 2) & (pl.col("target_epsilon") == 1.0)
    runs = runs.with_columns(
        pl.when(one_class).then(1).otherwise(5).alias("test_predicted_classes"),
        (0.2 + 0.01 * pl.col("seed")).alias("test_majority_accuracy"),
    )
    summary = summarize(runs)
    counts = {
        (r["dataset"], r["method"], r["target_epsilon"]): r["n_one_class_runs"] for r in summary.iter_rows(named=True)
    }
    assert counts[("a-graph", "dp-mlp", 1.0)] == counts[("b-graph", "dp-mlp", 1.0)] == 2
    assert sum(counts.values()) == 4
    assert summary["test_majority_accuracy"].to_list() == pytest.approx([0.215] * summary.height)
    assert summary["n_runs"].to_list() == [4] * summary.height  # the seed count figures read
    plain = summarize(fake_runs())  # runs collected without them
    assert plain["n_one_class_runs"].is_null().all() and plain["test_majority_accuracy"].is_null().all()


def test_two_seeds_bootstrap_to_their_min_max_and_the_caption_says_so() -> None:
    """Why captions warn below MIN_INFORMATIVE_SEEDS: with two seeds the 95% interval is their min–max."""
    from nodedp.analysis.bootstrap import MIN_INFORMATIVE_SEEDS, interval_text

    _, low, high = bootstrap_ci(np.array([0.30, 0.50]))
    assert (low, high) == (0.30, 0.50)
    few = interval_text([3, 3], confidence=0.95, n_resamples=1000)
    assert few.startswith("mean over 3 seeds with 95% percentile-bootstrap interval over the seeds (1000 resamples).")
    assert f"fewer than {MIN_INFORMATIVE_SEEDS}) the interval is not informative" in few and "min–max" in few
    enough = interval_text([MIN_INFORMATIVE_SEEDS] * 2, confidence=0.9, n_resamples=2000)
    assert enough == "mean over 5 seeds with 90% percentile-bootstrap interval over the seeds (2000 resamples)."
    mixed = interval_text([10, 4, 3, 10], confidence=0.95, n_resamples=1000)
    assert "mean over 3–10 seeds" in mixed and "In cells with 3–4 seeds (fewer than 5)" in mixed
    assert interval_text([1, 5], confidence=0.95, n_resamples=1000).endswith("A cell with one seed has no interval.")
    with pytest.raises(ValueError, match="number of seeds"):
        interval_text([], confidence=0.95, n_resamples=1000)
