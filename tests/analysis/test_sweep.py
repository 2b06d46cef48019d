from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from nodedp.analysis.sweep import plot_sweep, sweep_cells
from tests.analysis._plots import cell, legend_labels, visible_axes


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
