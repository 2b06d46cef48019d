"""Loopback HTTP mirrors for the download tests: ``python -m http.server`` on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SHARED_DATASETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 5.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True  # an HTTP status, even an error, means the server is up
    except OSError:
        return False


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=_STOP_TIMEOUT_S)


@contextmanager
def serve_directory(directory: Path, *, log_path: Path | None = None) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port; yield the base URL (no trailing slash).

    The server logs one line per request to ``log_path`` (else nowhere). A port
    taken between probing and binding makes the server exit: try another.
    """
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(directory), str(port)]
        with open(log_path if log_path is not None else os.devnull, "ab") as log:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
            try:
                while process.poll() is None and time.monotonic() < deadline and not _answers(url):
                    time.sleep(0.05)
                if process.poll() is None and _answers(url):
                    yield url
                    return
            finally:
                _stop(process)
    raise RuntimeError(f"http.server for {directory} did not answer within {_START_TIMEOUT_S} s")


@pytest.fixture
def mirror_root(tmp_path: Path) -> Path:
    """The directory that ``mirror_server`` serves: lay files out as HOST/PATH."""
    root = tmp_path / "mirror"
    root.mkdir()
    return root


@pytest.fixture
def mirror_log(tmp_path: Path) -> Path:
    """The request log of ``mirror_server`` (one line per request, status included)."""
    return tmp_path / "mirror.log"


@pytest.fixture
def mirror_server(mirror_root: Path, mirror_log: Path) -> Iterator[str]:
    """Base URL of a loopback server over ``mirror_root``."""
    with serve_directory(mirror_root, log_path=mirror_log) as url:
        yield url


@pytest.fixture(scope="session")
def shared_mirror() -> Iterator[str]:
    """Base URL of a loopback server over ../shared/datasets (the real dataset files)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    with serve_directory(SHARED_DATASETS.resolve()) as url:
        yield url
