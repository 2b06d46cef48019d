from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from nodedp.analysis.accuracy_figure import plot_accuracy_vs_epsilon
from nodedp.analysis.bootstrap import few_seeds_text
from nodedp.analysis.frontier import plot_frontier
from nodedp.analysis.style import (
    REFERENCE_MARKER,
    dodge_offsets,
    few_seeds_caveat,
    figure_interval_text,
    method_style,
)
from nodedp.analysis.sweep import plot_sweep
from tests.analysis._plots import cell, fake_summary, legend_labels, visible_axes


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

    import nodedp
    from nodedp.analysis.style import _FALLBACK_COLOURS, _REGISTERED_STYLES
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
        "from nodedp.analysis.style import method_style as s; "
        "print(s('dpdgc-fast'), s('dp-gcn-k5@paper'), s('dpar-em0-ratio30'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        # The child imports the package this test imported (a checkout's src/ as much as an installed one).
        env={"PYTHONHASHSEED": "123", "PATH": "", "PYTHONPATH": str(Path(nodedp.__file__).parents[1])},
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


def test_a_long_legend_entry_does_not_widen_the_figure_beyond_its_panels(tmp_path: Path) -> None:
    import matplotlib.image

    from nodedp.analysis.style import DPI, PANEL_SIZE

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
