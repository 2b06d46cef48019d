"""`snakemake --profile slurm` against a real single-node Slurm cluster on 127.0.0.1.

The cluster comes from ``slurm/local-slurm.sh`` beside this file (munged,
slurmctld and slurmd under a temporary root, nothing written to /etc; memory
limits enforced). Debian's Slurm packages are installed when missing; where
they cannot be (no root, no apt-get) the tests skip and say why. Every command
runs under ``timeout``, and the daemons are stopped by their pid files whatever
happened.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.workflow._snakemake import ROOT, snakemake, write_config

pytestmark = [pytest.mark.workflow, pytest.mark.slurm]

SCRIPT = Path(__file__).parent / "slurm" / "local-slurm.sh"
PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client"]
COMMANDS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"]
PORTS = (6817, 6818)  # slurmctld, slurmd (the script's slurm.conf)
# Four cells (mlp and dp-mlp × 2 seeds): four training jobs (one per cell) in one train group job, and the graph
# with its splits in one data group job.
CONFIG = {
    "studies": {"demo": {"datasets": ["csbm-tiny"], "methods": ["mlp", "dp-mlp"], "epsilons": [1], "seeds": [0, 1]}},
    "methods": {"mlp": {"epochs": 3}, "dp-mlp": {"epochs": 2, "batch_size": 32}},
}
CELLS = [("mlp", "inf", 0), ("mlp", "inf", 1), ("dp-mlp", "1", 0), ("dp-mlp", "1", 1)]
SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+) \(log: ([^)]+)\)")


def _run(cmd: list[str], *, seconds: int, **kwargs) -> subprocess.CompletedProcess:
    """``cmd`` under coreutils ``timeout`` (and Python's, a little later), never raising on failure."""
    return subprocess.run(
        ["timeout", "-k", "10", str(seconds), *cmd],
        check=False,
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        **kwargs,
    )


def _install_reason() -> str | None:
    """None when Slurm is (now) installed and can be run, else why not."""
    if os.geteuid() != 0:
        return f"the local cluster's daemons run as root, and installing Debian's {PACKAGES} needs root"
    if all(shutil.which(c) for c in COMMANDS):
        return None
    if shutil.which("apt-get") is None:
        return f"Slurm is not installed and there is no apt-get to install {PACKAGES}"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    result = _run(install, seconds=600, env=env)
    if result.returncode != 0:  # stale package lists: refresh once
        _run(["apt-get", "update"], seconds=300, env=env)
        result = _run(install, seconds=600, env=env)
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if result.returncode != 0 or missing:
        return f"could not install Debian's {PACKAGES} (missing {missing}): {result.stderr[-500:]}"
    return None


def _ports_in_use() -> list[int]:
    """The ports something already listens on (a connection succeeds)."""
    busy = []
    for port in PORTS:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            continue
        busy.append(port)
    return busy


@dataclass
class Cluster:
    root: Path
    env: dict[str, str]

    @property
    def controller_log(self) -> str:
        return (self.root / "log" / "slurmctld.log").read_text()

    def pids(self) -> dict[str, int]:
        files = {"slurmctld": "slurmctld.pid", "slurmd": "slurmd.pid", "munged": "munge/munged.pid"}
        return {
            name: int((self.root / "run" / f).read_text())
            for name, f in files.items()
            if (self.root / "run" / f).exists()
        }

    def down(self) -> subprocess.CompletedProcess:
        return _run(["bash", str(SCRIPT), "down"], seconds=120, env=self.env)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    reason = _install_reason()
    if reason is not None:
        pytest.skip(reason)
    busy = _ports_in_use()
    if busy:
        pytest.skip(f"ports {busy} are in use (another Slurm?): the test cluster needs {list(PORTS)}")
    # Not under pytest's tmp dirs (mode 700): munged needs every directory above its socket o+x.
    root = Path(tempfile.mkdtemp(prefix="nodedp-slurm-"))
    root.chmod(0o755)
    env = dict(os.environ, SLURM_LOCAL_ROOT=str(root))
    cluster = Cluster(root, env)
    try:
        up = _run(["bash", str(SCRIPT), "up"], seconds=180, env=env)
        assert up.returncode == 0, f"local-slurm.sh up failed:\n{up.stdout}\n{up.stderr}"
        # What env.sh sets: the config for every command, and the srun wrapper first on PATH
        # (inside jobs the plugin strips SLURM_CONF before its srun).
        cluster.env = dict(
            env,
            SLURM_CONF=str(root / "etc" / "slurm.conf"),
            PATH=os.pathsep.join([str(root / "bin"), str(Path(sys.executable).parent), env["PATH"]]),
        )
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)


def _profile_run(cluster: Cluster, workdir: Path, *args: str, seconds: int = 600):
    """`snakemake --profile slurm` from the repository root (where the profile is found), on ``workdir``.

    ``--cores 2`` fits group jobs to this 2-CPU node; the first status check comes after 5 s."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--profile",
        "slurm",
        "--directory",
        str(workdir),
        "--cores",
        "2",
        "--slurm-init-seconds-before-status-checks",
        "5",
        *args,
    ]
    result = _run(cmd, seconds=seconds, cwd=ROOT, env=cluster.env)
    output = result.stdout + result.stderr
    return result, output, [(int(i), log) for i, log in SUBMITTED.findall(output)]


def _cell(workdir: Path, method: str, eps: str, seed: int) -> dict:
    run = workdir / "results/runs/csbm-tiny" / method / f"eps~{eps}" / f"seed~{seed}"
    metrics = json.loads((run / "metrics.json").read_text())
    ledger = json.loads((run / "ledger.json").read_text())
    return {
        "val": metrics["val"],
        "test": metrics["test"],
        "epsilon": ledger.get("epsilon"),
        "mechanisms": ledger.get("mechanisms"),
    }


@pytest.fixture(scope="module")
def slurm_workdir(cluster, tmp_path_factory) -> tuple[Path, list[tuple[int, str]]]:
    workdir = tmp_path_factory.mktemp("on-slurm")
    config = write_config(workdir, CONFIG)
    result, output, jobs = _profile_run(cluster, workdir, "demo", "--configfile", str(config))
    assert result.returncode == 0, output[-6000:]
    return workdir, jobs


def test_the_workflow_runs_through_sbatch_in_group_jobs(cluster, slurm_workdir):
    workdir, jobs = slurm_workdir
    log = cluster.controller_log
    for job_id, _ in jobs:
        assert f"_slurm_rpc_submit_batch_job: JobId={job_id} " in log
        assert f"_job_complete: JobId={job_id} WEXITSTATUS 0" in log
    # graph + 2 splits in one data group; the 4 cells (one job each) in one train group; aggregation is local.
    kinds = sorted(Path(path).parent.name for _, path in jobs)
    assert len(kinds) == 2 and kinds[0].startswith("group_data") and kinds[1].startswith("group_train"), jobs
    assert (workdir / "paper/demo/tables/accuracy.md").is_file()


def test_cluster_results_equal_a_local_run(slurm_workdir, tmp_path):
    workdir, _ = slurm_workdir
    local = snakemake(tmp_path, "demo", config=write_config(tmp_path, CONFIG))
    assert local.returncode == 0, local.stderr[-4000:]
    for cell in CELLS:
        assert _cell(workdir, *cell) == _cell(tmp_path, *cell), cell


def test_rerunning_one_target_submits_only_its_job(cluster, slurm_workdir):
    workdir, first = slurm_workdir
    target = "results/runs/csbm-tiny/mlp/eps~inf/seed~0/metrics.json"
    others = [workdir / f"results/runs/csbm-tiny/{m}/eps~{e}/seed~{s}/metrics.json" for m, e, s in CELLS[1:]]
    before = {p: p.stat().st_mtime_ns for p in others}
    trained_before = (workdir / target).stat().st_mtime_ns
    result, output, jobs = _profile_run(
        cluster, workdir, f"--forcerun={target}", "demo", "--configfile", str(workdir / "config.yaml")
    )
    assert result.returncode == 0, output[-6000:]
    assert len(jobs) == 1 and jobs[0][0] not in {i for i, _ in first}, jobs
    assert f"_job_complete: JobId={jobs[0][0]} WEXITSTATUS 0" in cluster.controller_log
    assert {p: p.stat().st_mtime_ns for p in others} == before  # no other cell was retrained
    assert (workdir / target).stat().st_mtime_ns > trained_before


def test_a_job_killed_for_memory_is_retried_with_more(cluster, slurm_workdir, tmp_path):
    workdir, _ = slurm_workdir
    expected = _cell(workdir, "mlp", "inf", 1)
    # The job's own Snakemake alone (its batch step) takes 500-700 MB RSS here, and the step that
    # trains 850-1450 MB: 250 MB on the first attempt is killed (the cluster enforces --mem),
    # 250 × 10 = 2500 MB on the retry is not. (250 MB is set as mlp's estimate: the one from the graph's
    # size, about 900 MB, would not be killed.)
    config = write_config(
        tmp_path,
        {**CONFIG, "resources": {"train_mem_mb": 250, "train_mem_growth": 10, "estimates": {"mlp": {"mem_mb": 250}}}},
    )
    target = "results/runs/csbm-tiny/mlp/eps~inf/seed~1/metrics.json"
    result, output, jobs = _profile_run(cluster, workdir, f"--forcerun={target}", target, "--configfile", str(config))
    assert result.returncode == 0, output[-6000:]
    assert len(jobs) == 2, jobs  # the first attempt and its retry
    (failed, failed_log), (retried, _) = jobs
    log = cluster.controller_log
    assert f"_job_complete: JobId={failed} WEXITSTATUS 0" not in log
    assert f"_job_complete: JobId={retried} WEXITSTATUS 0" in log
    assert "exceeded memory limit" in Path(failed_log).read_text()  # the plugin keeps a failed job's log
    assert "mem_mb=250," in output and "mem_mb=2500," in output, output[-3000:]
    assert _cell(workdir, "mlp", "inf", 1) == expected


def test_teardown_stops_every_daemon_by_its_pid_file(cluster):
    pids = cluster.pids()
    assert set(pids) == {"slurmctld", "slurmd", "munged"}
    assert cluster.down().returncode == 0
    for name, pid in pids.items():
        assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) still runs"
    assert not cluster.pids()
