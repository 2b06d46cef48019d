from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from nodedp.analysis.frontier import FRONTIER_GID, frontier_cells, pareto_frontier, plot_frontier
from nodedp.analysis.style import REFERENCE_MARKER, dodge_offsets
from nodedp.analysis.tables import DAGGER
from tests.analysis._plots import cell, fake_summary, legend_labels, visible_axes


def test_pareto_frontier_drops_dominated_points() -> None:
    eps = [8.0, 1.0, 2.0, 2.0, 4.0, 16.0, 0.5]
    acc = [0.70, 0.50, 0.40, 0.60, 0.55, 0.70, 0.30]
    # 2.0/0.40 loses to 2.0/0.60 at the same ε; 4.0/0.55 to 2.0/0.60; 16.0 only ties 8.0.
    assert pareto_frontier(eps, acc) == [6, 1, 3, 0]


@pytest.mark.parametrize("seed", range(5))
def test_pareto_frontier_is_the_best_accuracy_at_most_epsilon(seed: int) -> None:
    rng = np.random.default_rng(seed)
    eps = rng.choice([0.5, 1.0, 2.0, 4.0, 8.0], size=30)
    acc = rng.uniform(0.2, 0.9, size=30).round(2)
    front = pareto_frontier(eps, acc)
    assert list(eps[front]) == sorted(eps[front]) and list(acc[front]) == sorted(acc[front])
    for e in np.unique(eps):
        reachable = [i for i in front if eps[i] <= e]
        assert acc[reachable[-1]] == acc[eps <= e].max()  # the envelope read at e is the best at ≤ e
    for i in set(range(eps.size)) - set(front):  # every other point is dominated by one on it
        assert any(eps[j] <= eps[i] and acc[j] >= acc[i] for j in front)


def test_pareto_frontier_refuses_mismatched_input() -> None:
    with pytest.raises(ValueError, match="as many accuracies"):
        pareto_frontier([1.0, 2.0], [0.5])


def frontier_summary() -> pl.DataFrame:
    return pl.DataFrame(
        [
            cell("cora", "dp-mlp", 1.0, 0.50, epsilon_max=0.98),
            cell("cora", "dp-mlp", 8.0, 0.60, epsilon_max=7.9),
            cell("cora", "gap", 1.0, 0.45, epsilon_max=1.0),  # dominated by dp-mlp at 1
            cell("cora", "gap", 8.0, 0.70, epsilon_max=8.0),
            cell("cora", "dp-gcn", 4.0, 0.90, epsilon_max=4.0, fully_accounted=False),  # best, but †
            cell("cora", "dpar-em0@paper", 1.0, 0.80, epsilon_max=150.0, reference=True),  # at its actual ε
            cell("cora", "mlp", math.inf, 0.75),
            cell("csbm", "dp-mlp", 1.0, 0.65, epsilon_max=1.0),
            cell("csbm", "gap", 8.0, 0.60, epsilon_max=8.0),  # worse at more ε: off the frontier
        ]
    )


def test_frontier_cells_per_dataset_at_their_target_budgets() -> None:
    front = frontier_cells(frontier_summary())
    assert front.select("dataset", "method", "epsilon").rows() == [
        ("cora", "dp-mlp", 1.0),
        ("cora", "gap", 8.0),
        ("cora", "dpar-em0@paper", 150.0),
        ("csbm", "dp-mlp", 1.0),
    ]
    assert front.filter(pl.col("method") == "dp-mlp")["spent"].to_list() == [0.98, 1.0]
    assert "mlp" not in front["method"] and "dp-gcn" not in front["method"]


def test_cells_spending_a_hair_apart_at_one_target_are_one_budget() -> None:
    # The case: DP-GCN at ε 0.9974815 must not stand on the frontier over GAP at 0.9974847 with 71%.
    summary = pl.DataFrame(
        [
            cell("cora", "dp-gcn", 1.0, 0.60, epsilon_max=0.9974815),
            cell("cora", "gap", 1.0, 0.71, epsilon_max=0.9974847),
            cell("cora", "dp-mlp", 1.0, 0.65, epsilon_max=1.0000004),
        ]
    )  # within the tolerance
    front = frontier_cells(summary)
    assert front.select("method", "epsilon").rows() == [("gap", 1.0)]
    # Reference mode that spends more than it claims is a budget of its own, at what it spends.
    over = pl.concat(
        [summary, pl.DataFrame([cell("cora", "gap@paper", 1.0, 0.80, epsilon_max=1.4, reference=True)])],
        how="diagonal_relaxed",
    )
    assert frontier_cells(over).select("method", "epsilon").rows() == [("gap", 1.0), ("gap@paper", 1.4)]


def test_plot_frontier_draws_the_envelope_through_ringed_cells_without_labels(tmp_path: Path, saved: list) -> None:
    summary = frontier_summary()
    caption = plot_frontier(summary, tmp_path / "f.png")
    (fig,) = saved
    axes = {ax.get_title(): ax for ax in visible_axes(fig)}
    assert sorted(axes) == ["cora", "csbm"]
    front = frontier_cells(summary)
    methods = sorted(summary.filter(pl.col("target_epsilon").is_finite())["method"].unique().to_list())
    offsets = dodge_offsets(methods, [1.0, 4.0, 8.0])
    for dataset, ax in axes.items():
        assert ax.get_xscale() == "log"
        (line,) = [line for line in ax.get_lines() if line.get_gid() == FRONTIER_GID]
        assert line.get_drawstyle() == "steps-post"
        expected = front.filter(pl.col("dataset") == dataset)
        assert list(line.get_xdata()[:-1]) == expected["epsilon"].to_list()
        assert list(line.get_ydata()[:-1]) == pytest.approx(list(100 * expected["mean"].to_numpy()))
        rings = sorted(
            (float(x), float(y))
            for ring in ax.get_lines()
            if ring.get_markersize() == 11
            for x, y in zip(ring.get_xdata(), ring.get_ydata())
        )
        at = [
            (e if m.endswith("@paper") else e * 10 ** offsets[m], 100 * v)
            for m, e, v in expected.select("method", "epsilon", "mean").rows()
        ]
        assert np.allclose(rings, sorted(at))  # each frontier cell ringed where it is drawn
        assert [t.get_text() for t in ax.texts if t.get_text() != DAGGER] == []  # no labels to collide
    assert DAGGER in [t.get_text() for t in axes["cora"].texts]  # dp-gcn's uncharged cell is shown, marked
    squares = [line for line in axes["cora"].get_lines() if line.get_marker() == REFERENCE_MARKER]
    assert [list(line.get_xdata()) for line in squares] == [[150.0]]  # reference mode at its actual ε
    labels = legend_labels(fig)
    assert {"dp-mlp", "gap", "dpar-em0@paper ¶ at its actual ε"} <= set(labels)
    assert "Black steps" in caption and f"{DAGGER} are shown but cannot be on the frontier" in caption
    assert "target ε" in caption and "¶" in caption


def test_plot_frontier_needs_a_private_cell(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no private cell"):
        plot_frontier(fake_summary().filter(pl.col("target_epsilon").is_infinite()), tmp_path / "f.png")
