"""nodedp.jobs: each kind of job's cluster requests, and `train_gres: auto` against a fake `sinfo`."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from nodedp import jobs
from nodedp.data import get_dataset
from nodedp.resources import cell_memory_mb, data_memory_mb
from tests.test_grid import GRID, resolved

SLEEP = shutil.which("sleep")  # found before a test empties PATH


def fake_sinfo(folder: Path, script: str) -> Path:
    """An executable `sinfo` in ``folder`` running ``script`` (sh), which also appends a line to calls.log."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sinfo"
    path.write_text(f'#!/bin/sh\necho "$@" >> {folder / "calls.log"}\n{script}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def only(monkeypatch, tmp_path):
    """Put a folder of fake commands alone on PATH (no real `sinfo`)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


@pytest.mark.parametrize(
    ("output", "gpus"),
    [
        ("printf 'gpu:a100:4(S:0-1)\\n(null)\\n'", True),
        ("printf '(null)\\n(null)\\n'", False),
        ("printf 'tmpdisk:100,gpu:2\\n'", True),
        ("printf 'gpu:1\\n'; exit 1", False),  # a failing sinfo's output is not trusted
    ],
)
def test_the_cluster_has_gpus_where_sinfo_lists_a_gpu_gres(only, output, gpus):
    fake_sinfo(only, output)
    assert jobs.cluster_has_gpus() is gpus
    assert calls(only) == ["--noheader --format=%G"]


def test_no_sinfo_or_a_hanging_one_means_no_gpus(only, capsys, monkeypatch):
    monkeypatch.setattr(jobs, "_WARNED", set())
    assert jobs.cluster_has_gpus() is False  # not on PATH: no Slurm here, nothing to say
    assert capsys.readouterr().err == ""
    fake_sinfo(only, f"{SLEEP} 5; echo gpu:1")
    assert jobs.cluster_has_gpus(timeout=0.5) is False
    assert "did not answer" in capsys.readouterr().err


def test_a_failing_sinfo_is_said_on_the_console_once_with_how_to_set_the_gres(only, capsys, monkeypatch):
    monkeypatch.setattr(jobs, "_WARNED", set())
    fake_sinfo(only, "echo 'slurm_load_partitions: Unable to contact slurm controller' >&2; exit 1")
    assert jobs.resolve_gres("auto") == "" and jobs.resolve_gres("auto") == ""
    err = capsys.readouterr().err
    assert err.count("nodedp: ") == 1, err  # once
    assert "failed (exit 1: slurm_load_partitions: Unable to contact slurm controller)" in err
    assert 'resources: {train_gres: "gpu:1"}' in err and "\\" not in err


def test_resolve_gres():
    assert jobs.resolve_gres("auto", lambda: True) == "gpu:1"
    assert jobs.resolve_gres("auto", lambda: False) == ""
    assert jobs.resolve_gres("gpu:a100:1", lambda: pytest.fail("probed")) == "gpu:a100:1"
    assert jobs.resolve_gres("", lambda: pytest.fail("probed")) == ""


def test_auto_gres_probes_sinfo_once_when_a_job_asks_and_never_before(only):
    fake_sinfo(only, "echo gpu:2")
    resources = jobs.job_resources(resolved(GRID), "train")  # the schema's default train_gres: auto
    assert calls(only) == []  # reading the workflow probes nothing
    cell = SimpleNamespace(dataset="csbm-tiny", method="dp-mlp")
    assert resources["gres"](cell) == "gpu:1" and resources["gres"](cell) == "gpu:1"
    assert len(calls(only)) == 1
    assert "gres" not in jobs.job_resources(resolved(GRID), "data")
    fixed = resolved({**GRID, "resources": {"train_gres": "gpu:h100:1"}})
    assert jobs.job_resources(fixed, "audit")["gres"](cell) == "gpu:h100:1" and len(calls(only)) == 1


def test_requests_follow_the_estimates_and_grow_per_attempt():
    config = resolved({**GRID, "resources": {"train_mem_mb": 1500, "train_mem_growth": 2}})
    train, audit, data = (jobs.job_resources(config, kind) for kind in ("train", "audit", "data"))
    cell = SimpleNamespace(dataset="csbm-tiny", method="dp-mlp")
    size = get_dataset("csbm-tiny").size
    first = cell_memory_mb("dp-mlp", size, margin=config["resources"]["memory_margin"], floor=1500)
    assert train["mem_mb"](cell, 1) == first and train["mem_mb"](cell, 3) == 4 * first
    assert train["runtime"](cell, 2) == 2 * train["runtime"](cell, 1)
    assert audit["runtime"](cell, 1) == 3 * train["runtime"](cell, 1)  # an audit trains three times
    floor = config["resources"]["structure_mem_mb"]
    assert data["mem_mb"](cell, 1) == data_memory_mb(size, margin=config["resources"]["memory_margin"], floor=floor)


def test_a_kind_block_sets_its_jobs_requests_and_a_method_estimate_wins():
    config = resolved(
        {
            **GRID,
            "resources": {
                "train_gres": "",
                "estimates": {"dp-mlp-wide": {"mem_mb": 12345}},
                "jobs": {
                    "train": {"partition": "gpu", "account": "lab", "gres": "gpu:a100:1", "mem_mb": 3000},
                    "structure": {"constraint": "avx2", "runtime": 20},
                },
            },
        }
    )
    train = jobs.job_resources(config, "train")
    assert (train["slurm_partition"], train["slurm_account"], train["gres"]) == ("gpu", "lab", "gpu:a100:1")
    plain, own = (SimpleNamespace(dataset="csbm-tiny", method=m) for m in ("dp-mlp", "dp-mlp-wide"))
    assert train["mem_mb"](plain, 1) == 3000 and train["mem_mb"](own, 1) == 12345
    structure = jobs.job_resources(config, "structure")
    assert structure["constraint"] == "avx2" and structure["runtime"](SimpleNamespace(dataset="csbm-tiny"), 2) == 40
    assert "slurm_partition" not in jobs.job_resources(config, "audit")
    with pytest.raises(ValueError, match="job kind 'gpu'"):
        jobs.job_resources(config, "gpu")
