from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from nodedp.analysis.accuracy_figure import PUBLISHED_GID, plot_accuracy_vs_epsilon, published_points
from nodedp.analysis.published import published_for
from nodedp.analysis.style import ACTUAL_EPSILON_CAP, dodge_offsets, method_style
from nodedp.analysis.tables import DAGGER
from tests.analysis._plots import assert_png, cell, fake_summary, legend_labels, visible_axes


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
