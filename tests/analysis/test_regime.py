"""The regime figure: each graph method's accuracy minus DP-MLP's, paired by seed, against the graph's size."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from nodedp.analysis.regime import graph_sizes, paired_gaps, write_regime
from nodedp.cli import main


def _runs(rows: list[tuple[str, str, float, int, float]], **extra) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=["dataset", "method", "target_epsilon", "seed", "test_accuracy"], orient="row")
    for name, value in extra.items():
        frame = frame.with_columns(pl.lit(value).alias(name))
    return frame


def _grid(rng: np.random.Generator) -> pl.DataFrame:
    rows = []
    for dataset, lift in (("small", -0.05), ("large", 0.04)):
        for eps in (4.0, 8.0):
            for seed in range(4):
                base = 0.5 + 0.1 * rng.random()
                rows.append((dataset, "dp-mlp", eps, seed, base))
                rows.append((dataset, "gap", eps, seed, base + lift + 0.001 * seed))
    return _runs(rows, reference=False, fully_accounted=True)


def test_gaps_are_paired_by_seed():
    runs = _grid(np.random.default_rng(0))
    gaps = paired_gaps(runs)
    assert set(gaps["method"]) == {"gap"} and gaps.height == 4
    small = gaps.filter((pl.col("dataset") == "small") & (pl.col("target_epsilon") == 8.0)).row(0, named=True)
    # the baseline varies a lot from seed to seed, the paired difference barely: a tight interval around -5 pp
    assert small["n_pairs"] == 4
    assert small["gap_mean"] == pytest.approx(-0.05 + 0.0015)
    assert small["gap_low"] <= small["gap_mean"] <= small["gap_high"] and small["gap_high"] - small["gap_low"] < 0.005


def test_reference_and_uncharged_runs_are_left_out_and_a_missing_baseline_is_refused():
    runs = _grid(np.random.default_rng(1))
    forged = _runs([("small", "gap", 8.0, s, 0.99) for s in range(4)], reference=True, fully_accounted=True)
    uncharged = _runs([("small", "gap-x", 8.0, s, 0.99) for s in range(4)], reference=False, fully_accounted=False)
    gaps = paired_gaps(pl.concat([runs, forged, uncharged]))
    assert set(gaps["method"]) == {"gap"} and gaps["gap_mean"].max() < 0.06
    with pytest.raises(ValueError, match=r"no dp-mlp runs at a finite ε .*methods: \['gap'\]"):
        paired_gaps(runs.filter(pl.col("method") == "gap"))


def test_figure_table_and_caption_are_written(tmp_path):
    runs = _grid(np.random.default_rng(2))
    metas = []
    for name, nodes in (("small", 700), ("large", 400_000)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"name": name, "num_nodes": nodes}))
        metas.append(path)
    sizes = graph_sizes(metas)
    caption = write_regime(
        runs,
        sizes,
        png=tmp_path / "regime.png",
        caption_path=tmp_path / "regime.caption.txt",
        markdown_path=tmp_path / "regime.md",
        regenerate_command="snakemake regime",
    )
    assert (tmp_path / "regime.png").stat().st_size > 10_000
    assert "minus dp-mlp's on the same seed's split" in caption and "4 seeds" in caption
    table = (tmp_path / "regime.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| small") or line.startswith("| large")]
    assert [row.split(" | ")[0] for row in rows] == ["| small", "| small", "| large", "| large"]  # by size
    assert "| 400,000 | 8 |" in table and "gap − dp-mlp (pp)" in table
    with pytest.raises(ValueError, match=r"no node count for dataset\(s\) \['large'\]"):
        write_regime(
            runs,
            {"small": 700},
            png=tmp_path / "b.png",
            caption_path=tmp_path / "b.txt",
            markdown_path=tmp_path / "b.md",
            regenerate_command="x",
        )


def test_the_regime_verb_draws_with_the_bootstrap_settings_it_is_given(tmp_path):
    runs = tmp_path / "runs.parquet"
    _grid(np.random.default_rng(3)).write_parquet(runs)
    metas = []
    for name, nodes in (("small", 700), ("large", 400_000)):
        metas.append(tmp_path / f"{name}.json")
        metas[-1].write_text(json.dumps({"name": name, "num_nodes": nodes}))
    out = {kind: tmp_path / f"regime.{kind}" for kind in ("png", "txt", "md")}
    args = ["regime", "--runs", str(runs), "--graph-meta", *map(str, metas), "--png", str(out["png"])]
    args += ["--caption", str(out["txt"]), "--markdown", str(out["md"])]
    assert main([*args, "--confidence", "0.8", "--resamples", "2000", "--seed", "5"]) == 0
    assert "80% percentile-bootstrap interval over the seeds (2000 resamples)" in out["txt"].read_text()
    narrow = out["md"].read_text()
    assert main(args) == 0  # the defaults: 95%, 1000 resamples, a wider interval than at 80%
    assert "95% percentile-bootstrap" in out["txt"].read_text() and out["md"].read_text() != narrow
