"""benchmarks/gpu_check.py: the GPU check runs on CPU (so that it cannot rot), and on CUDA where there is one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests._benchmarks import load_benchmark


@pytest.fixture(scope="module")
def gpu_check():
    return load_benchmark("gpu_check")


def _check(gpu_check, tmp_path: Path, device: str, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "check"
    code = gpu_check.main(
        [
            "--device",
            device,
            "--targets",
            "arxiv:1500",
            "--methods",
            "dp-mlp",
            "gap",
            "--threads",
            "1",
            "--out",
            str(out),
            *extra,
        ]
    )
    return code, json.loads((out / "gpu-check.json").read_text())


def test_every_private_method_is_checked_by_default(gpu_check):
    methods = gpu_check.private_methods()
    assert {"dp-mlp", "dp-gcn", "gap", "progap", "dpar-em0", "nip-gnn", "dpdgc"} <= set(methods)
    assert not {"mlp", "gcn", "gap-nodp"} & set(methods)


def test_the_check_runs_on_cpu_and_fails_what_differs(gpu_check, tmp_path):
    code, report = _check(gpu_check, tmp_path, "cpu")
    assert code == 0, report
    assert [r["method"] for r in report["rows"]] == ["dp-mlp", "gap"]
    for row in report["rows"]:
        assert row["ledger_identical"] and not row["problems"]
        assert row["accuracy_difference_points"] == 0.0  # the same device, the same seed: the same run
        assert row["epoch_s_cpu"] > 0 and row["epoch_s_checked"] > 0
    table = (tmp_path / "check" / "gpu-check.md").read_text()
    assert "| arxiv:1500 | gap | yes |" in table and "Wall time of the whole check" in table
    # a forged ledger on one side is reported and fails the check
    ledger = next((tmp_path / "check" / "work").glob("arxiv-1500/checked/*/runs/gap/ledger.json"))
    ledger.write_text(ledger.read_text().replace('"epsilon"', '"epsilon" ', 1))
    args = gpu_check.argparse.Namespace(methods=["gap"], tolerance=5.0, device="cpu", out=str(tmp_path / "check"))
    work = tmp_path / "check" / "work" / "arxiv-1500"
    (row,) = gpu_check.compare("arxiv:1500", work / "reference", work / "checked", args)
    assert row["problems"] == ["ledgers differ"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_check_passes_on_cuda(gpu_check, tmp_path):
    code, report = _check(gpu_check, tmp_path, "cuda")
    assert code == 0, report
    assert all(row["device_recorded"].startswith("cuda") for row in report["rows"])
