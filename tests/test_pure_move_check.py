"""benchmarks/pure_move_check.py: the comparisons that decide whether a refactor was a pure move."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._benchmarks import load_benchmark


@pytest.fixture(scope="module")
def check():
    return load_benchmark("pure_move_check")


def _workspace(root: Path, *, accuracy: float, seconds: float, commit: str) -> Path:
    run = root / "results/runs/g/dp-mlp/eps~1/seed~0"
    run.mkdir(parents=True)
    metrics = {"test": {"accuracy": accuracy}, "timings": {"total_s": seconds}, "version": {"git_commit": commit}}
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "ledger.json").write_text(json.dumps({"epsilon": 0.99}))
    (root / "paper").mkdir()
    (root / "paper/about.html").write_text(f"<p>commit {commit}</p>")
    return root


def test_two_workspaces_differ_in_results_only_where_the_code_s_results_differ(check, tmp_path, capsys):
    before = _workspace(tmp_path / "a", accuracy=0.5, seconds=1.0, commit="a" * 40)
    same = _workspace(tmp_path / "b", accuracy=0.5, seconds=9.0, commit="b" * 40)  # other times and commit
    other = _workspace(tmp_path / "c", accuracy=0.6, seconds=1.0, commit="a" * 40)
    assert check.compare_workspaces(before, same) == 0
    assert "all 3 files identical" in capsys.readouterr().out
    assert check.compare_workspaces(before, other) == 1
    assert "differs: results/runs/g/dp-mlp/eps~1/seed~0/metrics.json" in capsys.readouterr().out


def test_two_drawings_compare_byte_for_byte(check, tmp_path, capsys):
    for name, text in (("a", "x"), ("b", "x"), ("c", "y")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.md").write_text(text)
    assert check.compare(tmp_path / "a", tmp_path / "b") == 0
    assert check.compare(tmp_path / "a", tmp_path / "c") == 1
    assert "differs: t.md" in capsys.readouterr().out


def test_a_torch_artifact_compares_by_its_tensors_not_its_timings(check, tmp_path):
    import torch

    for name, values, seconds in (("a", [1.0, 2.0], 0.1), ("b", [1.0, 2.0], 0.9), ("c", [1.0, 2.5], 0.1)):
        path = tmp_path / name / "results/structure/x.pt"
        path.parent.mkdir(parents=True)
        (tmp_path / name / "paper").mkdir()
        torch.save({"value": torch.tensor(values), "appr_seconds": seconds}, path)
    assert check.compare_workspaces(tmp_path / "a", tmp_path / "b") == 0
    assert check.compare_workspaces(tmp_path / "a", tmp_path / "c") == 1
