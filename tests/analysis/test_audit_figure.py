from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from nodedp.analysis.audit_figure import AXIS_HEADROOM, CLAIM_GID, VIOLATION_GID, audit_points, plot_audit
from nodedp.analysis.style import method_style
from tests.analysis._audits import report_summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def audit_figure(summary: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import matplotlib.figure

    figures: list = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    caption = plot_audit(summary, tmp_path / "audit.png")
    (fig,) = figures
    return fig, caption


def figure_summary(rows: list[tuple[str, float, float, float]], **extra: Any) -> pl.DataFrame:
    """An audit summary of (method, target ε, claimed ε, lower bound) rows on one dataset."""
    return pl.DataFrame(
        [
            {
                "dataset": "csbm",
                "method": m,
                "target_epsilon": e,
                "claimed_epsilon": c,
                "epsilon_lower": lo,
                "violated": lo > c,
                "accounting": "paper" if "@" in m else "suite",
                "canaries": 100,
                "seeds": 1,
                "confidence": 0.95,
                "delta": 1e-4,
                **extra,
            }
            for m, e, c, lo in rows
        ]
    )


def test_figure_is_a_png_and_its_caption_states_the_numbers(tmp_path: Path) -> None:
    summary = report_summary(tmp_path)
    points, x_max = audit_points(summary)
    assert x_max == pytest.approx(AXIS_HEADROOM * 4.0)  # the largest claim sets the scale
    zero = points.filter(pl.col("epsilon_lower") == 0)
    assert zero.height == 2 and (zero["drawn"] == 0).all() and not zero["clipped"].any()
    assert points.filter(pl.col("violated"))["method"].to_list() == ["dp_mlp"]
    assert points.filter(pl.col("reference"))["method"].to_list() == ["gap@paper"]
    assert points["label"].to_list() == ["dp_mlp, ε = 1", "dp_mlp, ε = 1", "gap@paper, ε = 4"]  # two targets

    path = tmp_path / "fig" / "audit.png"
    caption = plot_audit(summary, path)
    assert path.read_bytes()[:8] == PNG_MAGIC
    for text in (
        "200 canaries over 2 seeds",
        "95% confidence",
        "δ = 0.0001",
        "1 of 3 cells",
        "2 of 3 bounds are 0",
        "linear axis from 0",
        "Squares: reference runs (@paper)",
    ):
        assert text in caption, text


def test_the_figure_reads_at_the_claims_scale_one_row_per_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo's audit: every claim 8, most bounds 0, a few release bounds above it.
    methods = [
        "dp-gcn",
        "dp-mlp",
        "dp-mlp · DP-SGD release",
        "dpar-em0",
        "dpdgc-fast",
        "nip-gnn",
        "progap",
        "progap · NAP release",
        "progap · DP-SGD release",
    ]
    bounds = [0.0, 0.0, 2.49, 0.0, 0.0, 0.0, 0.0, 0.136, 1.12]
    fig, caption = audit_figure(
        figure_summary([(m, 8.0, 7.98, b) for m, b in zip(methods, bounds)]), tmp_path, monkeypatch
    )
    (ax,) = [ax for ax in fig.axes if ax.get_visible()]
    assert ax.get_xscale() == "linear" and ax.get_xlim() == pytest.approx((0.0, AXIS_HEADROOM * 7.98))
    assert [t.get_text() for t in ax.get_yticklabels()] == sorted(methods)  # one row each, named; one ε: no ε
    claims = [line for line in ax.get_lines() if line.get_gid() == CLAIM_GID]
    assert [float(line.get_xdata()[0]) for line in claims] == [7.98] * len(methods)
    # Each row's point in its method's colour and marker; a release in its method's colour.
    from matplotlib.colors import to_hex

    drawn = [line for line in ax.get_lines() if line.get_gid() is None and line.get_marker() != "|"]
    styles = [method_style(m) for m in sorted(methods)]
    assert [(to_hex(line.get_color()), line.get_marker()) for line in drawn] == [(s.colour, s.marker) for s in styles]
    assert len({to_hex(line.get_color()) for line in drawn}) == 6  # six methods, releases in their method's colour
    # No legend entry per method: only claim, bound (and violation where there is one).
    assert len(fig.legends[0].get_texts()) == 2
    assert "0 of 9 cells" in caption and "6 of 9 bounds are 0" in caption


def test_violations_and_bounds_past_the_axis_are_marked_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = figure_summary(
        [("dpar-em0@paper", 1.0, 1.0, 40.0), ("gap@paper", 1.0, 1.0, 0.4), ("dp-mlp", 4.0, 3.99, 4.5)]
    )
    fig, caption = audit_figure(summary, tmp_path, monkeypatch)
    (ax,) = [ax for ax in fig.axes if ax.get_visible()]
    assert ax.get_xlim()[1] == pytest.approx(AXIS_HEADROOM * 3.99)  # 40 does not stretch the axis
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "dp-mlp, ε = 4",
        "dpar-em0@paper, ε = 1",
        "gap@paper, ε = 1",
    ]
    flagged = sorted(t.get_text() for t in ax.texts if t.get_gid() == VIOLATION_GID)
    assert flagged == ["4.5 ⚠", "40 ⚠"]
    points, _ = audit_points(summary)
    assert points.filter(pl.col("clipped"))["method"].to_list() == ["dpar-em0@paper"]
    assert "2 of 3 cells do" in caption and "1 bound beyond the axis end" in caption and "Squares" in caption
    assert any("violation" in t.get_text() for t in fig.legends[0].get_texts())
