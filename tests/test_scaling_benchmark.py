"""benchmarks/scaling.py end to end on two tiny stand-ins: its figures, not its speed."""

from __future__ import annotations

import json
import math

import pytest

from tests._benchmarks import load_benchmark


@pytest.fixture(scope="module")
def scaling():
    return load_benchmark("scaling")


def test_fit_exponent_recovers_a_power_law(scaling):
    xs = [1e4, 3e4, 1e5, 3e5]
    assert scaling.fit_exponent(xs, [2.0 * x**1.3 for x in xs]) == pytest.approx(1.3)
    assert scaling.fit_exponent(xs, [5.0] * 4) == pytest.approx(0.0, abs=1e-12)
    assert scaling.fit_exponent([1e4], [1.0]) is None


def test_the_benchmark_writes_rows_and_exponents_per_method_and_stage(scaling, tmp_path):
    out = tmp_path / "out.json"
    code = scaling.main(
        [
            "--methods",
            "gap",
            "--nodes",
            "1500",
            "3000",
            "--epochs",
            "1",
            "--workdir",
            str(tmp_path / "work"),
            "--json",
            str(out),
            "--markdown",
            str(tmp_path / "t.md"),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    rows = result["rows"]
    for method in ("gap",):
        for stage in ("structure", "epoch", "evaluation"):
            got = sorted((r for r in rows if r["method"] == method and r["stage"] == stage), key=lambda r: r["nodes"])
            assert [r["nodes"] for r in got] == [1500, 3000]
            assert got[0]["edges"] < got[1]["edges"] and all(r["seconds"] > 0 and r["peak_mib"] > 0 for r in got)
    exponents = {(e["method"], e["stage"]): e for e in result["exponents"]}
    assert math.isfinite(exponents[("gap", "epoch")]["exponent_time"])
    assert result["failures"] == []
    assert "| gap | structure |" in (tmp_path / "t.md").read_text()


def test_an_unknown_method_is_refused_before_any_graph_is_made(scaling, tmp_path, capsys):
    with pytest.raises(SystemExit):
        scaling.main(["--methods", "dp-foo", "--nodes", "1000", "--workdir", str(tmp_path / "work")])
    assert "unknown method 'dp-foo'" in capsys.readouterr().err and not (tmp_path / "work").exists()
