"""A warm worker: the workflow's jobs (one process per training cell) start from a fork of a process that has
already imported torch and nodedp, instead of importing them anew.

``python -m nodedp VERB ...`` with ``NODEDP_WORKER=<idle seconds>`` asks this host's worker to run the command in
a forked child with the caller's directory, environment, umask and stdio; the caller forwards signals and exits
with the child's status. Never used inside a cluster job. Keying, security and fallbacks: docs/design/runtime.md.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

ENV = "NODEDP_WORKER"
STARTUP_SECONDS = 300.0  # how long a caller waits for a starting worker's imports before running the command itself
_FDS = (0, 1, 2)
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Imported once by the worker, before any fork. Not polars or matplotlib (their thread pools do not survive a fork):
# verbs that use them import them in the child.
PRELOAD = (
    "torch",
    "torch_geometric",
    "nodedp.cli",
    "nodedp.methods",
    "nodedp.data",
    "nodedp.accounting",
    "nodedp.train.loop",
    "nodedp.audit.run",
)


# Inside a batch system's job, every command runs where the job's limits (memory, GPUs) hold: a worker forked
# elsewhere would escape them, and one started by a job step dies with that step.
BATCH_JOB_ENV = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")


def idle_seconds() -> float | None:
    """``$NODEDP_WORKER`` as seconds (> 0), or None: no worker (also inside a batch system's job)."""
    value = os.environ.get(ENV, "").strip()
    if not value or any(os.environ.get(name) for name in BATCH_JOB_ENV):
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"{ENV}={value!r}: give the worker's idle seconds (a number; 0 or unset: no worker)") from None
    return seconds if seconds > 0 else None


def address() -> bytes:
    """This user's worker for this interpreter and these nodedp sources (an abstract socket name)."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{os.getuid()}\0{sys.executable}\0{package}\0{sys.version}".encode())
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return b"\0nodedp-worker-" + digest.hexdigest()[:32].encode()


# --- the caller ---------------------------------------------------------------------------------------------------


def delegate(argv: Sequence[str]) -> int | None:
    """Run ``python -m nodedp argv`` in the worker and return its exit status; None when no worker can run it (the
    caller then runs it itself)."""
    if not sys.platform.startswith("linux"):
        return None
    idle = idle_seconds()
    if idle is None:
        return None
    name = address()
    conn = _connect(name)
    if conn is None:
        conn = _start(name, idle)
        if conn is None:
            return None
    with conn:
        return _submit(conn, list(argv))


def _connect(name: bytes) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(name)
    except OSError:
        conn.close()
        return None
    return conn


def _start(name: bytes, idle: float) -> socket.socket | None:
    """Start a worker and connect to it once its imports are done (another caller's, if it started one first)."""
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nodedp.worker", name[1:].decode(), str(idle)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd="/",
        )
    except OSError:
        return None
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        conn = _connect(name)
        if conn is not None:
            return conn
        if proc.poll() not in (None, _TAKEN):  # it failed: run the command here
            return None
        time.sleep(0.05)
    return None


def _submit(conn: socket.socket, argv: list[str]) -> int | None:
    umask = os.umask(0)
    os.umask(umask)
    fds = [*_FDS, *_console_fd()]
    request = json.dumps(
        {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "fds": fds}
    ).encode()
    # A signal that lands before the child's pid is known waits (blocked) and is forwarded once it is: never may the
    # caller die of it while its command goes on in the worker, unseen by whoever interrupted it.
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    previous = {}
    try:
        try:
            conn.settimeout(STARTUP_SECONDS)
            conn.sendmsg(
                [struct.pack("!Q", len(request))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
            )
            conn.sendall(request)
            reader = conn.makefile("rb")
            first = reader.readline()
            conn.settimeout(None)
        except OSError:
            return None  # the worker's handler sees the caller gone and stops whatever it started
        if not first:
            return None  # refused before it started: run the command here
        child = json.loads(first)["pid"]
        previous = {sig: signal.signal(sig, lambda sig, _frame: _forward(child, sig)) for sig in _FORWARDED}
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)  # a pending signal goes to the child now
        line = reader.readline()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not line:
        return 1  # the worker died under the command
    status = json.loads(line)["status"]
    return status if status >= 0 else 128 - status


def _console_fd() -> list[int]:
    """The console descriptor of ``$NODEDP_CONSOLE_FD`` (nodedp.cli.tell_console), where it is open."""
    try:
        fd = int(os.environ.get("NODEDP_CONSOLE_FD", ""))
        os.fstat(fd)
    except (ValueError, OSError):
        return []
    return [fd] if fd not in _FDS else []


def _forward(child: int, sig: int) -> None:
    try:
        os.killpg(child, sig)
    except OSError:
        pass


# --- the worker ---------------------------------------------------------------------------------------------------

_TAKEN = 3  # exit status of a worker that found its address taken (another caller started one first)


def serve(name: bytes, idle: float) -> int:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(name)
    except OSError:
        return _TAKEN
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    server.listen(64)
    server.settimeout(idle)
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            return 0
        except InterruptedError:
            continue
        _pid, uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        )
        if uid != os.getuid() or os.fork() != 0:
            conn.close()
            continue
        server.close()  # the handler: one request
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            _handle(conn)
        finally:
            os._exit(0)


def _handle(conn: socket.socket) -> None:
    """Receive a request, fork its child, tell the caller its pid, then its status; kill it if the caller dies."""
    size = struct.calcsize("!Q")
    fds = array.array("i")
    head, ancillary, _, _ = conn.recvmsg(size, socket.CMSG_LEN((len(_FDS) + 1) * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if len(head) != size or len(fds) < len(_FDS):
        return
    (length,) = struct.unpack("!Q", head)
    body = b""
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            return
        body += chunk
    request = json.loads(body)
    child = os.fork()
    if child == 0:
        conn.close()
        _run(request, list(fds))
    with contextlib.suppress(OSError):  # its own group from the start (the child sets it too): _kill reaches it
        os.setpgid(child, child)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(json.dumps({"pid": child}).encode() + b"\n")
    except OSError:  # the caller died (interrupted) before it heard of its command: so does the command
        _kill(child)
        return
    conn.setblocking(False)
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
            try:
                conn.sendall(json.dumps({"status": code}).encode() + b"\n")
            except OSError:
                pass
            return
        try:
            gone = conn.recv(1) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:  # the caller died (killed, or its node lost): so does its command
            _kill(child)
            return
        time.sleep(0.05)


def _kill(child: int) -> None:
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(child, sig)
        except OSError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if os.waitpid(child, os.WNOHANG)[0]:
                return
            time.sleep(0.05)
    os.waitpid(child, 0)


def _run(request: dict, fds: list[int]) -> None:
    """The child: become the caller's command, as a fresh interpreter would run it."""
    status = 1
    try:
        os.setpgid(0, 0)
        targets = request["fds"]
        moved = [os.dup(fd) for fd in fds]  # out of the way of every target first
        for fd in fds:
            os.close(fd)
        for target, fd in zip(targets, moved):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False, encoding=sys.stdin.encoding if sys.stdin else None)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request["umask"])
        import nodedp.io

        nodedp.io._UMASK = request["umask"]
        sys.argv = [sys.argv[0], *request["argv"]]
        from nodedp.cli import main

        status = main(request["argv"])
    except SystemExit as err:
        status = err.code if isinstance(err.code, int) else (0 if err.code is None else 1)
        if not isinstance(err.code, int) and err.code is not None:
            print(err.code, file=sys.stderr)
    except KeyboardInterrupt:
        status = 128 + signal.SIGINT
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing left to say
                stream.flush()
        os._exit(status)


if __name__ == "__main__":
    sys.exit(serve(b"\0" + sys.argv[1].encode(), float(sys.argv[2])))
