from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from nodedp.analysis.figures import plot_accuracy_vs_epsilon

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "target_epsilon": eps,
                    "n_runs": 3,
                    "test_accuracy_mean": mean,
                    "test_accuracy_ci_low": mean - 0.02,
                    "test_accuracy_ci_high": mean + 0.02,
                }
            )
    return pl.DataFrame(rows)


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


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


def test_conditional_points_are_hollow_and_the_legend_explains_the_mark(tmp_path, monkeypatch):
    import matplotlib.figure

    saved = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: saved.append(self))
    rows = [
        {"dataset": "cora", "method": m, "target_epsilon": e, "test_accuracy_mean": 0.5, "test_accuracy_ci_low": 0.4,
         "test_accuracy_ci_high": 0.6, "guarantee": g}
        for m, g in (("gap", "conditional"), ("dp-mlp", "unconditional")) for e in (1.0, 8.0)
    ]
    plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (fig,) = saved
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "gap‡" in labels and "dp-mlp" in labels
    assert any(label.startswith("hollow ‡") for label in labels)
    hollow = [line for ax in fig.axes for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and len(hollow[0].get_xdata()) == 2  # gap's two points, not dp-mlp's


def test_reference_runs_are_drawn_at_the_epsilon_they_actually_spend(tmp_path, monkeypatch):
    import matplotlib.figure

    from nodedp.analysis.figures import ACTUAL_EPSILON_CAP

    saved = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: saved.append(self))
    rows = [
        {"dataset": "cora", "method": m, "target_epsilon": e, "test_accuracy_mean": 0.5, "test_accuracy_ci_low": 0.4,
         "test_accuracy_ci_high": 0.6, "reference": ref, "epsilon_max": actual}
        for m, ref, pairs in (("dp-mlp", False, ((1.0, 1.0), (8.0, 8.0))),
                              ("dpar-em0@paper", True, ((1.0, 154.0), (8.0, 2277.0))))
        for e, actual in pairs
    ]
    plot_accuracy_vs_epsilon(pl.DataFrame(rows), tmp_path / "f.png")
    (fig,) = saved
    (ax,) = [a for a in fig.axes if a.get_visible()]
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == 1 and list(dotted[0].get_xdata()) == [154.0, ACTUAL_EPSILON_CAP]  # never at 1 or 8
    assert [t.get_text() for t in ax.texts] == ["ε = 2.28e+03"]
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "dpar-em0@paper ¶ at its actual ε" in labels
