"""The warm worker: `python -m nodedp` run in a fork of a process that imported torch once, as if run directly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodedp import worker

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the worker needs Linux")


def _nodedp(tmp_path: Path, *args: str, worker_idle: str, **env: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NODEDP_WORKER=worker_idle, **env)
    return subprocess.run(
        [sys.executable, "-m", "nodedp", *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _workers() -> set[int]:
    """Pids of this checkout's running workers."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"nodedp.worker" in cmdline and worker.address()[1:] in cmdline:
            found.add(int(proc.name))
    return found


def test_a_command_in_the_worker_writes_what_it_writes_directly(tmp_path):
    direct = _nodedp(tmp_path, "datasets", worker_idle="0")
    first = _nodedp(tmp_path, "datasets", worker_idle="30")  # starts the worker
    assert _workers(), "a worker serves the next command"
    warm = _nodedp(tmp_path, "datasets", worker_idle="30")
    assert direct.returncode == first.returncode == warm.returncode == 0
    assert direct.stdout == first.stdout == warm.stdout and "csbm-tiny" in warm.stdout


def test_the_worker_keeps_the_callers_directory_environment_and_exit_status(tmp_path):
    bad = _nodedp(
        tmp_path,
        "train",
        "--graph",
        "missing",
        "--split",
        "missing.pt",
        "--method",
        "dp-mlp",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--out",
        "run",
        worker_idle="30",
        NODEDP_MIRROR="http://x.invalid",
    )
    direct = _nodedp(
        tmp_path,
        "train",
        "--graph",
        "missing",
        "--split",
        "missing.pt",
        "--method",
        "dp-mlp",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--out",
        "run",
        worker_idle="0",
    )
    assert bad.returncode == direct.returncode == 2
    assert bad.stderr == direct.stderr and "missing" in bad.stderr
    usage = _nodedp(tmp_path, "no-such-verb", worker_idle="30")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    # Relative paths are the caller's: a file written by a verb lands in its working directory.
    other = tmp_path / "elsewhere"
    other.mkdir()
    made = _nodedp(other, "check-config", "no-such-config.yaml", worker_idle="30")
    assert made.returncode != 0 and "no-such-config.yaml" in made.stdout + made.stderr


def test_without_the_variable_or_inside_a_cluster_job_no_worker_is_used(monkeypatch):
    monkeypatch.delenv(worker.ENV, raising=False)
    assert worker.delegate(["datasets"]) is None
    monkeypatch.setenv(worker.ENV, "30")
    monkeypatch.setenv("SLURM_JOB_ID", "17")  # a job's memory and GPU limits must hold for its commands
    assert worker.delegate(["datasets"]) is None
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setenv(worker.ENV, "0")
    assert worker.delegate(["datasets"]) is None
    monkeypatch.setenv(worker.ENV, "soon")
    with pytest.raises(SystemExit, match="idle seconds"):
        worker.delegate(["datasets"])


def test_the_address_follows_the_sources(tmp_path, monkeypatch):
    """An edited checkout gets a fresh worker: the address changes with any source file's size or time."""
    before = worker.address()
    source = Path(worker.__file__)
    stat = source.stat()
    try:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert worker.address() != before
    finally:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert worker.address() == before
