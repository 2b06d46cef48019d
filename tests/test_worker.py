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


def _request(conn, argv: list[str], cwd: Path) -> None:
    """What a caller sends: the request's length with its stdio descriptors, then the request."""
    import array
    import json
    import socket
    import struct

    body = json.dumps({"argv": argv, "cwd": str(cwd), "env": dict(os.environ), "umask": 0o022, "fds": [0, 1, 2]})
    fds = array.array("i", [0, 1, 2])
    conn.sendmsg([struct.pack("!Q", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    conn.sendall(body.encode())


def _slow_main(argv):
    """A command that leaves a mark if it runs to its end."""
    import time

    time.sleep(1.5)
    Path(argv[0]).write_text("ran to its end")
    return 0


def test_a_command_whose_caller_died_before_hearing_its_pid_is_stopped(tmp_path, monkeypatch):
    """Ctrl-C between a caller's request and the worker's answer: the command must not go on unseen (it would write
    a cell's outputs after Snakemake has gone, a run nobody started)."""
    import socket
    import time

    import nodedp.cli

    monkeypatch.setattr(nodedp.cli, "main", _slow_main)  # the handler's fork inherits it
    mark = tmp_path / "mark"
    handler, caller = socket.socketpair()
    _request(caller, [str(mark)], tmp_path)
    caller.close()  # the caller is gone before the handler answers
    pid = os.fork()
    if pid == 0:  # the handler runs in a fork of the worker; here, of this test
        try:
            worker._handle(handler)
        finally:
            os._exit(0)
    handler.close()
    os.waitpid(pid, 0)
    time.sleep(2.5)
    assert not mark.exists(), "the command ran on after its caller died"

    # The same command with its caller alive runs to its end and reports its status.
    handler, caller = socket.socketpair()
    _request(caller, [str(mark)], tmp_path)
    pid = os.fork()
    if pid == 0:
        try:
            worker._handle(handler)
        finally:
            os._exit(0)
    handler.close()
    reader = caller.makefile("rb")
    assert b"pid" in reader.readline() and b'"status": 0' in reader.readline()
    os.waitpid(pid, 0)
    assert mark.read_text() == "ran to its end"


def test_a_signal_before_the_pid_is_known_reaches_the_command(tmp_path):
    """The caller's side of the same moment: Ctrl-C lands after the request is sent, before the worker answers. The
    caller must not die of it and leave the command running; it forwards the signal once it knows the command."""
    import json
    import signal
    import socket
    import time

    ours, theirs = socket.socketpair()
    caller = os.fork()
    if caller == 0:  # a caller, submitting to this test as its worker
        ours.close()
        status = 1
        try:
            status = worker._submit(theirs, ["datasets"])
        finally:
            os._exit(status if isinstance(status, int) else 99)
    theirs.close()
    ours.recv(1 << 16)  # the request arrived: the caller now waits for the pid
    time.sleep(0.2)
    os.kill(caller, signal.SIGINT)  # the interrupt, before the answer
    time.sleep(0.5)
    command = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the command, in its own group
    try:
        ours.sendall(json.dumps({"pid": command.pid}).encode() + b"\n")
        assert command.wait(timeout=30) == -signal.SIGINT, "the interrupt reached the command"
        ours.sendall(json.dumps({"status": -signal.SIGINT}).encode() + b"\n")
        _, status = os.waitpid(caller, 0)
        assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGINT
    finally:
        if command.poll() is None:
            command.kill()
