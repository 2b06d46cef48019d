from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from nodedp.analysis.bootstrap import few_seeds_text
from nodedp.analysis.figures import (
    ACTUAL_EPSILON_CAP,
    FRONTIER_GID,
    PUBLISHED_GID,
    REFERENCE_MARKER,
    dodge_offsets,
    few_seeds_caveat,
    figure_interval_text,
    frontier_cells,
    method_style,
    pareto_frontier,
    plot_accuracy_vs_epsilon,
    plot_frontier,
    plot_sweep,
    published_points,
    sweep_cells,
)
from nodedp.analysis.published import published_for
from nodedp.analysis.tables import DAGGER

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


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list:
    """The figures that would have been saved (nothing is written)."""
    import matplotlib.figure

    figures: list = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    return figures


def visible_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def legend_labels(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


# --- accuracy against ε -----------------------------------------------------------------------------------


def test_writes_png_and_pdf_without_leftovers(tmp_path: Path) -> None:
    png, pdf = tmp_path / "fig" / "acc.png", tmp_path / "fig" / "acc.pdf"
    plot_accuracy_vs_epsilon(fake_summary(), png, pdf_path=pdf)
    assert_png(png)
    assert pdf.read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in png.parent.iterdir()) == ["acc.pdf", "acc.png"]


def test_one_dataset(tmp_path: Path) -> None:
    path = tmp_path / "one.png"
    plot_accuracy_vs_epsilon(fake_summary().filter(pl.col("dataset") == "cora"), path)
    assert_png(path)


def test_only_non_private_methods(tmp_path: Path) -> None:
    path = tmp_path / "np.png"
    plot_accuracy_vs_epsilon(fake_summary().filter(pl.col("target_epsilon").is_infinite()), path)
    assert_png(path)


def test_only_private_methods_at_a_single_budget(tmp_path: Path) -> None:
    path = tmp_path / "single.png"
    plot_accuracy_vs_epsilon(fake_summary().filter(pl.col("target_epsilon") == 4.0), path)
    assert_png(path)


def test_refuses_an_empty_summary(tmp_path: Path) -> None:
    path = tmp_path / "empty.png"
    with pytest.raises(ValueError, match="summary is empty"):
        plot_accuracy_vs_epsilon(fake_summary().clear(), path)
    assert not path.exists()


def test_names_missing_metric_columns(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"lacks columns \['test_macro_f1_mean'.*'test_macro_f1'"):
        plot_accuracy_vs_epsilon(fake_summary(), tmp_path / "f1.png", metric="test_macro_f1")


def test_the_epsilon_axis_is_logarithmic_with_ticks_at_the_budgets(tmp_path: Path, saved: list) -> None:
    plot_accuracy_vs_epsilon(fake_summary(), tmp_path / "f.png")
    (fig,) = saved
    axes = visible_axes(fig)
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_xscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4"]


def test_conditional_points_are_hollow_and_the_legend_explains_the_mark(tmp_path: Path, saved: list) -> None:
    rows = [
        cell("cora", m, e, 0.5, guarantee=g)
        for m, g in (("gap", "conditional"), ("dp-mlp", "unconditional"))
        for e in (1.0, 8.0)
    ]
    caption = plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (fig,) = saved
    labels = legend_labels(fig)
    assert "gap‡" in labels and "dp-mlp" in labels
    assert any(label.startswith("hollow ‡") for label in labels)
    hollow = [line for ax in fig.axes for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and len(hollow[0].get_xdata()) == 2  # gap's two points, not dp-mlp's
    assert "‡" in caption and "§" not in caption


def test_points_with_uncharged_reads_carry_a_dagger(tmp_path: Path, saved: list) -> None:
    rows = [cell("csbm", "dp-gcn", e, 0.6, fully_accounted=e != 8.0) for e in (1.0, 8.0)]
    rows += [cell("csbm", "dp-mlp", e, 0.5, fully_accounted=True) for e in (1.0, 8.0)]
    caption = plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (fig,) = saved
    (ax,) = visible_axes(fig)
    daggers = [t for t in ax.texts if t.get_text() == DAGGER]
    shift = 10 ** dodge_offsets(["dp-gcn", "dp-mlp"], [1.0, 8.0])["dp-gcn"]
    assert len(daggers) == 1 and daggers[0].xy == pytest.approx((8.0 * shift, 60.0))  # dp-gcn's uncharged cell only
    labels = legend_labels(fig)
    assert f"dp-gcn{DAGGER}" in labels and "dp-mlp" in labels
    assert any(label.startswith(DAGGER) for label in labels)
    assert DAGGER in caption


def test_reference_runs_are_drawn_at_the_epsilon_they_actually_spend(tmp_path: Path, saved: list) -> None:
    rows = [
        cell("cora", m, e, 0.5, reference=ref, epsilon_max=actual)
        for m, ref, pairs in (
            ("dp-mlp", False, ((1.0, 1.0), (8.0, 8.0))),
            ("dpar-em0@paper", True, ((1.0, 154.0), (8.0, 2277.0))),
        )
        for e, actual in pairs
    ]
    caption = plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (fig,) = saved
    (ax,) = visible_axes(fig)
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == 1 and list(dotted[0].get_xdata()) == [154.0, ACTUAL_EPSILON_CAP]  # never at 1 or 8
    assert [t.get_text() for t in ax.texts] == ["ε = 2.28e+03"]
    assert "dpar-em0@paper ¶ at its actual ε" in legend_labels(fig)
    assert "¶" in caption and "actually spends" in caption


# --- one style per method ---------------------------------------------------------------------------------


def drawn_colours(fig) -> dict[str, str]:
    """Legend label (the method, before any mark) -> the colour its entry is drawn in."""
    from matplotlib.colors import to_hex

    return {
        t.get_text().split(" ")[0].rstrip("†‡§"): to_hex(h.get_color())
        for legend in fig.legends
        for t, h in zip(legend.get_texts(), legend.legend_handles)
    }


def test_a_method_keeps_its_colour_and_marker_in_every_figure_and_study(tmp_path: Path, saved: list) -> None:
    one = pl.DataFrame(
        [cell("cora", m, e, 0.5) for m in ("dp-mlp", "gap", "dpdgc-fast") for e in (1.0, 8.0)]
        + [cell("cora", "gcn", math.inf, 0.8)]
    )
    other = pl.DataFrame(
        [cell("csbm", m, e, 0.4) for m in ("dp-gcn", "dp-mlp", "progap", "nip-gnn", "dpdgc-fast") for e in (2.0,)]
        + [cell("csbm", "mlp", math.inf, 0.6)]
    )
    plot_accuracy_vs_epsilon(one, tmp_path / "a.png")
    plot_accuracy_vs_epsilon(other, tmp_path / "b.png")
    plot_frontier(other, tmp_path / "c.png")
    first, second, frontier = (drawn_colours(fig) for fig in saved)
    # A method's colour does not depend on where it sits in the sorted list of a figure's methods.
    for method in ("dp-mlp", "dpdgc-fast"):
        assert first[method] == second[method] == frontier[method] == method_style(method).colour
    assert len({second[m] for m in ("dp-gcn", "dp-mlp", "progap", "nip-gnn", "dpdgc-fast")}) == 5
    markers = {h.get_label().split(" ")[0]: h.get_marker() for h in saved[0].legends[0].legend_handles}
    assert markers["dp-mlp"] == method_style("dp-mlp").marker


def test_registered_methods_have_fixed_distinct_styles_and_variants_a_stable_one() -> None:
    import subprocess
    import sys

    from nodedp.analysis.figures import _FALLBACK_COLOURS, _REGISTERED_STYLES
    from nodedp.contract.registry import get_method, method_names

    assert set(method_names()) <= set(_REGISTERED_STYLES), "give a newly registered method a style of its own"
    private = [m for m in method_names() if get_method(m).private]
    assert len({method_style(m).colour for m in private}) == len(private)
    assert not {method_style(m).colour for m in method_names()} & set(_FALLBACK_COLOURS)
    # Reference mode and release audits keep their method's colour; reference mode alone changes its marker.
    assert method_style("gap@paper").colour == method_style("gap").colour
    assert method_style("gap@paper").marker == REFERENCE_MARKER != method_style("gap").marker
    assert method_style("gap · NAP release") == method_style("gap")
    assert all(method_style(m).marker != REFERENCE_MARKER for m in (*method_names(), "dpdgc-fast", "dp-gcn-k5"))
    # A variant's style comes from its name alone, the same in another process (whatever its hash seed).
    code = (
        "from nodedp.analysis.figures import method_style as s; "
        "print(s('dpdgc-fast'), s('dp-gcn-k5@paper'), s('dpar-em0-ratio30'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    ).stdout.strip()
    assert out == f"{method_style('dpdgc-fast')} {method_style('dp-gcn-k5@paper')} {method_style('dpar-em0-ratio30')}"
    assert method_style("dpdgc-fast").colour in _FALLBACK_COLOURS


def test_methods_at_one_budget_sit_side_by_side_within_the_gap_to_the_next() -> None:
    methods = ["a", "b", "c", "d"]
    offsets = dodge_offsets(methods, [1.0, 8.0])
    assert list(offsets.values()) == sorted(offsets.values()) and sum(offsets.values()) == pytest.approx(0)
    assert len(set(offsets.values())) == 4
    tight = dodge_offsets(methods, [1.0, 1.25, 8.0])  # budgets a tenth of a decade apart: the group shrinks
    assert max(tight.values()) - min(tight.values()) <= 0.4 * math.log10(1.25) + 1e-12
    assert dodge_offsets(["a"], [1.0]) == {"a": 0.0}


def test_overlapping_methods_stay_apart_on_the_heterophilous_panel(tmp_path: Path, saved: list) -> None:
    # Four methods at chance (20%) at the same budgets, as on the demo's heterophilous graph.
    rows = [
        cell("csbm-heterophilous", m, e, 0.20 + 0.002 * i)
        for i, m in enumerate(("dp-gcn", "dpar-em0", "dpdgc-fast", "nip-gnn"))
        for e in (1.0, 8.0)
    ]
    plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (ax,) = visible_axes(saved[0])
    points = [line for line in ax.get_lines() if line.get_linestyle() == "None" and line.get_marker() not in "_|"]
    xs = sorted(float(x) for line in points for x in line.get_xdata())
    assert len(xs) == 8 and len(set(np.round(xs, 9))) == 8  # no two points share an x
    assert {line.get_marker() for line in points} == {
        method_style(m).marker for m in ("dp-gcn", "dpar-em0", "dpdgc-fast", "nip-gnn")
    }
    for budget in (1.0, 8.0):  # each group stays by its budget
        near = [x for x in xs if abs(math.log10(x / budget)) < 0.15]
        assert len(near) == 4


def test_the_majority_class_accuracy_is_a_reference_line_per_dataset(tmp_path: Path, saved: list) -> None:
    rows = [
        cell(d, m, e, 0.3, test_majority_accuracy=maj)
        for d, maj in (("a", 0.2), ("b", None))
        for m in ("dp-mlp", "gap")
        for e in (1.0, 8.0)
    ]
    summary = pl.DataFrame(rows)
    captions = [plot_accuracy_vs_epsilon(summary, tmp_path / "f.png"), plot_frontier(summary, tmp_path / "g.png")]
    for fig, caption in zip(saved, captions):
        axes = {ax.get_title(): ax for ax in visible_axes(fig)}
        lines = {d: [line for line in ax.get_lines() if line.get_linestyle() == "-."] for d, ax in axes.items()}
        assert [list(line.get_ydata()) for line in lines["a"]] == [[20.0, 20.0]] and lines["b"] == []
        assert "most frequent class" in caption and any("majority class" in t for t in legend_labels(fig))
    saved.clear()
    caption = plot_accuracy_vs_epsilon(summary.drop("test_majority_accuracy"), tmp_path / "f.png")
    assert "most frequent class" not in caption


def published_lines(fig) -> list:
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == PUBLISHED_GID]


def test_published_points_match_the_summary_cells() -> None:
    summary = pl.DataFrame(
        [
            cell("cora", "gap", 4.0, 0.4),
            cell("cora", "gap@paper", 4.0, 0.3, reference=True, epsilon_max=40.0),  # the same printed cell
            cell("fb100-swarthmore42", "progap", 8.0, 0.5),  # stands in for ProGAP's FB-100
            cell("csbm-homophilous", "dp-mlp", 1.0, 0.5),  # no paper prints a synthetic graph
        ]
    )
    points = published_points(summary)
    expected = {
        (d, p.accuracy / 100, s)
        for d, m, e in (("cora", "gap", 4.0), ("fb100-swarthmore42", "progap", 8.0))
        for p, s in published_for(d, m, e)
    }
    assert expected and set(zip(points["dataset"], points["value"], points["stand_in"])) == expected
    assert points.height == len(expected)  # gap@paper adds nothing: its cell is gap's
    assert points.filter(pl.col("dataset") == "cora")["method"].to_list() == ["gap"]
    assert points.filter(pl.col("dataset") == "fb100-swarthmore42")["stand_in"].to_list() == [True]
    assert published_points(summary, metric="test_macro_f1").is_empty()


def test_published_points_are_overlaid_as_stars(tmp_path: Path, saved: list) -> None:
    summary = pl.DataFrame(
        [cell("cora", "gap", e, 0.4) for e in (1.0, 4.0)] + [cell("fb100-swarthmore42", "progap", 8.0, 0.5)]
    )
    caption = plot_accuracy_vs_epsilon(summary, tmp_path / "f.png")
    (fig,) = saved
    lines = published_lines(fig)
    points = published_points(summary)
    drawn = sorted((float(x), float(y)) for line in lines for x, y in zip(line.get_xdata(), line.get_ydata()))
    assert drawn == sorted(zip(points["epsilon"], 100 * points["value"]))
    hollow = [line for line in lines if line.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [8.0]  # the stand-in
    assert "Stars" in caption and "stands in" in caption
    assert any(label.startswith("published") for label in legend_labels(fig))

    saved.clear()
    caption = plot_accuracy_vs_epsilon(summary, tmp_path / "f.png", published=False)
    assert published_lines(saved[0]) == [] and "Stars" not in caption


def test_no_published_overlay_without_a_matching_cell(tmp_path: Path, saved: list) -> None:
    caption = plot_accuracy_vs_epsilon(pl.DataFrame([cell("csbm", "dp-mlp", 1.0, 0.5)]), tmp_path / "f.png")
    assert published_lines(saved[0]) == [] and "Stars" not in caption


# --- captions ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "runs", "text"),
    [
        (0.95, (5, 5), "mean over 5 seeds per cell with 95% percentile-bootstrap intervals (1000 resamples)"),
        (0.9, (3, 5), "mean over 3–5 seeds per cell with 90% percentile-bootstrap intervals (1000 resamples)"),
    ],
)
def test_captions_state_the_confidence_and_the_seeds(
    tmp_path: Path, saved: list, confidence: float, runs: tuple[int, int], text: str
) -> None:
    summary = pl.DataFrame(
        [cell("cora", "dp-mlp", e, 0.5, n_runs=n, confidence=confidence) for e, n in zip((1.0, 4.0), runs)]
        + [cell("cora", "mlp", math.inf, 0.7, n_runs=runs[1], confidence=confidence)]
    )
    assert figure_interval_text(summary) == text
    hp = json.dumps({"lr": 0.01})
    swept = summary.with_columns(pl.lit(hp).alias("hyperparameters"))
    for caption in (
        plot_accuracy_vs_epsilon(summary, tmp_path / "a.png"),
        plot_frontier(summary, tmp_path / "b.png"),
        plot_sweep(swept, tmp_path / "c.png", parameter="lr"),
    ):
        assert text in caption
        assert "non-private" in caption  # the mlp reference is explained


@pytest.mark.parametrize(
    ("runs", "says"),
    [
        ((5, 10), None),
        ((3, 3), "With 3 seeds (fewer than 5)"),
        ((2, 3), "With 2–3 seeds (fewer than 5)"),
        ((2, 5), "In cells with 2 seeds (fewer than 5)"),
        ((1, 5), "A cell with one seed has no interval."),
    ],
)
def test_captions_say_when_cells_have_fewer_than_five_seeds(
    tmp_path: Path, saved: list, runs: tuple[int, int], says: str | None
) -> None:
    summary = pl.DataFrame([cell("cora", "dp-mlp", e, 0.5, n_runs=n) for e, n in zip((1.0, 4.0), runs)])
    hp = summary.with_columns(pl.lit(json.dumps({"lr": 0.01})).alias("hyperparameters"))
    captions = [
        plot_accuracy_vs_epsilon(summary, tmp_path / "a.png"),
        plot_frontier(summary, tmp_path / "b.png"),
        plot_sweep(hp, tmp_path / "c.png", parameter="lr"),
    ]
    assert few_seeds_caveat(summary) == few_seeds_text(list(runs), confidence=0.95)  # the tables' words
    for caption in captions:
        assert "95% percentile-bootstrap intervals (1000 resamples)" in caption  # the interval named
        assert f"mean over {runs[0]}–{runs[1]} seeds per cell" in caption or runs[0] == runs[1]
        if says is None:
            assert "fewer than" not in caption and "no interval" not in caption
        else:
            assert says in caption and caption.count(says) == 1


def test_a_figure_refuses_mixed_confidence_levels_or_no_confidence(tmp_path: Path) -> None:
    mixed = pl.DataFrame([cell("cora", "dp-mlp", 1.0, 0.5), cell("cora", "dp-mlp", 2.0, 0.5, confidence=0.9)])
    with pytest.raises(ValueError, match="confidence values"):
        plot_accuracy_vs_epsilon(mixed, tmp_path / "f.png")
    with pytest.raises(ValueError, match=r"lacks columns \['confidence'\]"):
        plot_frontier(fake_summary().drop("confidence"), tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()


# --- the frontier -----------------------------------------------------------------------------------------


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


# --- sweeps -----------------------------------------------------------------------------------------------


def dpar_hp(**changes: Any) -> str:
    return json.dumps(
        {"epochs": 200, "k": 2, "max_rows": 2, "ratio": 0.5, "accounting": "suite", **changes}, sort_keys=True
    )


def sweep_summary() -> pl.DataFrame:
    rows = []
    for eps in (1.0, 8.0):
        for method, ratio in (("dpar-em0-r25", 0.25), ("dpar-em0", 0.5), ("dpar-em0-r75", 0.75)):
            rows.append(
                cell(
                    "cora-ml",
                    method,
                    eps,
                    0.3 + ratio / 10 + eps / 100,
                    base_method="dpar-em0",
                    hyperparameters=dpar_hp(ratio=ratio),
                )
            )
        rows.append(
            cell(
                "cora-ml",
                "dpar-em0-nocap",
                eps,
                0.4,
                base_method="dpar-em0",
                hyperparameters=dpar_hp(max_rows=70),
                guarantee="conditional",
            )
        )
        rows.append(cell("cora-ml", "gap", eps, 0.5, base_method="gap", hyperparameters=json.dumps({"hops": 2})))
    rows.append(
        cell(
            "cora-ml",
            "dpar-em0@paper",
            1.0,
            0.35,
            base_method="dpar-em0",
            reference=True,
            hyperparameters=dpar_hp(accounting="paper"),
            epsilon_max=150.0,
        )
    )
    rows.append(cell("cora-ml", "mlp", math.inf, 0.7, base_method="mlp", hyperparameters=json.dumps({"lr": 0.01})))
    return pl.DataFrame(rows)


def test_sweep_cells_group_variants_into_lines() -> None:
    cells = sweep_cells(sweep_summary(), parameter="ratio")
    assert "gap" not in cells["method"] and "mlp" not in cells["method"]
    lines = {line: rows for (line,), rows in cells.group_by("line")}
    assert sorted(lines) == ["dpar-em0 (max_rows=2)", "dpar-em0 (max_rows=70)", "dpar-em0@paper"]
    main = lines["dpar-em0 (max_rows=2)"]
    for eps in (1.0, 8.0):
        on = main.filter(pl.col("target_epsilon") == eps)
        assert on["value"].to_list() == [0.25, 0.5, 0.75]
        assert on["method"].to_list() == ["dpar-em0-r25", "dpar-em0", "dpar-em0-r75"]
    assert lines["dpar-em0@paper"]["reference"].to_list() == [True]


def test_sweep_cells_name_the_missing_parameter_and_the_ones_present() -> None:
    with pytest.raises(ValueError, match=r"no private cell has hyperparameter 'rati'.*'ratio'"):
        sweep_cells(sweep_summary(), parameter="rati")
    with pytest.raises(ValueError, match="'accounting' of dpar-em0.*needs numbers"):
        sweep_cells(sweep_summary(), parameter="accounting")
    with pytest.raises(ValueError, match=r"lacks columns \['hyperparameters'\]"):
        sweep_cells(sweep_summary().drop("hyperparameters"), parameter="ratio")


def test_sweep_cells_fall_back_to_the_name_without_base_method() -> None:
    summary = sweep_summary().drop("base_method").filter(pl.col("method") == "dpar-em0@paper")
    assert sweep_cells(summary, parameter="ratio")["line"].to_list() == ["dpar-em0@paper"]


def test_plot_sweep_draws_one_line_per_method_and_epsilon(tmp_path: Path, saved: list) -> None:
    summary = sweep_summary()
    caption = plot_sweep(summary, tmp_path / "f.png", parameter="ratio")
    (fig,) = saved
    (ax,) = visible_axes(fig)
    assert ax.get_xscale() == "linear"  # 0.25 to 0.75: no log axis
    assert ax.get_xlabel() == "ratio"
    # errorbar draws one data line per (line, ε) with the swept values as x.
    data = sorted(
        tuple(line.get_xdata())
        for line in ax.get_lines()
        if len(line.get_xdata()) == 3 and line.get_linestyle() != "None"
    )
    assert data == [(0.25, 0.5, 0.75)] * 2
    labels = legend_labels(fig)
    assert {
        "dpar-em0 (max_rows=2)",
        "dpar-em0 (max_rows=70)‡",
        "dpar-em0@paper ¶ claimed ε",
        "ε = 1",
        "ε = 8",
        "mlp (non-private)",
    } <= set(labels)
    assert "ratio" in caption and "‡" in caption and "¶" in caption


def test_plot_sweep_uses_a_log_axis_for_wide_ranges(tmp_path: Path, saved: list) -> None:
    rows = [
        cell(
            "cora",
            f"dp-gcn-k{k}",
            1.0,
            0.5,
            base_method="dp-gcn",
            hyperparameters=json.dumps({"in_degree_bound": k, "lr": 0.01}),
        )
        for k in (1, 3, 10, 30)
    ]
    caption = plot_sweep(pl.DataFrame(rows), tmp_path / "f.png", parameter="in_degree_bound")
    (ax,) = visible_axes(saved[0])
    assert ax.get_xscale() == "log" and "log scale" in caption
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "3", "10", "30"]


def test_a_long_legend_entry_does_not_widen_the_figure_beyond_its_panels(tmp_path: Path) -> None:
    import matplotlib.image

    from nodedp.analysis.figures import DPI, PANEL_SIZE

    methods = [
        ("gap", "conditional"),
        ("progap", "conditional"),
        ("dp-mlp", "unconditional"),
        ("dp-gcn", "conditional"),
    ]
    rows = [cell(d, m, e, 0.5, guarantee=g) for d in ("cora", "csbm") for m, g in methods for e in (1.0, 8.0)]
    png = tmp_path / "f.png"
    plot_accuracy_vs_epsilon(pl.DataFrame(rows), png)
    width = matplotlib.image.imread(png).shape[1]
    panels = 2 * PANEL_SIZE[0] * DPI  # two panels side by side
    assert width <= 1.1 * panels, f"{width} px wide for {panels:.0f} px of panels"
