from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nodedp.data.download import (
    MIRROR_ENV,
    ChecksumMismatchError,
    DownloadError,
    RemoteFile,
    fetch_files,
    mirrored_url,
    resolve_mirror,
)

HOST = "example.org"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish(mirror_root: Path, path: str, data: bytes) -> str:
    """Put ``data`` on the mirror as ``https://example.org/<path>``; return that upstream URL."""
    target = mirror_root / HOST / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return f"https://{HOST}/{path}"


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name)


# -- names and URLs -----------------------------------------------------------


def test_filename_defaults_to_last_url_component_and_name_overrides():
    assert RemoteFile("https://h.org/a/ind.cora.x").filename == "ind.cora.x"
    assert RemoteFile("https://h.org/a/b%20c.npz").filename == "b c.npz"
    assert RemoteFile("https://h.org/a/download?id=3", name="x.npz").filename == "x.npz"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"url": "ftp://h.org/a.txt"},
        {"url": "h.org/a.txt"},
        {"url": "https://h.org/dir/"},  # no file name
        {"url": "https://h.org/a.txt", "name": "../a.txt"},
        {"url": "https://h.org/a.txt", "sha256": "ABC"},
        {"url": "https://h.org/a.txt", "sha256": "A" * 64},  # upper case: compared as text, so refused
    ],
)
def test_remote_file_rejects_bad_fields(kwargs):
    with pytest.raises(ValueError):
        RemoteFile(**kwargs)


def test_mirrored_url_maps_host_and_path_for_https_and_http():
    url = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.x"
    expected = "http://127.0.0.1:8765/github.com/kimiyoung/planetoid/raw/master/data/ind.cora.x"
    assert mirrored_url(url, "http://127.0.0.1:8765") == expected
    assert mirrored_url(url, "http://127.0.0.1:8765/") == expected
    assert mirrored_url("http://h.org/x/y.mat", "https://m.net/base") == "https://m.net/base/h.org/x/y.mat"
    assert mirrored_url(url, None) == url


@pytest.mark.parametrize("url", ["ftp://h.org/a.txt", "file:///tmp/a.txt", "/tmp/a.txt"])
def test_mirrored_url_rejects_other_schemes(url):
    with pytest.raises(ValueError, match="scheme"):
        mirrored_url(url, "http://127.0.0.1:8765")


def test_resolve_mirror_argument_beats_environment_and_empty_means_none(monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert resolve_mirror() is None
    monkeypatch.setenv(MIRROR_ENV, "http://env.example:1")
    assert resolve_mirror() == "http://env.example:1"
    assert resolve_mirror("http://arg.example:2") == "http://arg.example:2"
    assert resolve_mirror("") is None
    monkeypatch.setenv(MIRROR_ENV, "")
    assert resolve_mirror() is None
    with pytest.raises(ValueError, match="scheme"):
        resolve_mirror("mirror.example/base")


# -- fetching -----------------------------------------------------------------


def test_pinned_files_are_fetched_through_the_mirror(mirror_root, mirror_server, tmp_path):
    a, b = b"alpha\n", b"\x00\x01binary" * 1000
    files = [
        RemoteFile(publish(mirror_root, "d/a.txt", a), sha256=sha256(a)),
        RemoteFile(publish(mirror_root, "d/b.bin", b), sha256=sha256(b), name="renamed.bin"),
    ]
    out = tmp_path / "raw" / "toy"
    paths = fetch_files(files, out, mirror=mirror_server, retries=1, progress=False)
    assert paths == [out / "a.txt", out / "renamed.bin"]
    assert [p.read_bytes() for p in paths] == [a, b]
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "renamed.bin"]
    assert leftovers(out.parent) == []
    assert not (out.parent / "checksums.lock.json").exists()  # pinned files are not recorded


def test_pinned_mismatch_names_file_and_checksums_and_leaves_no_directory(mirror_root, mirror_server, tmp_path):
    good, bad = b"good\n", b"tampered\n"
    ok = RemoteFile(publish(mirror_root, "d/ok.txt", good), sha256=sha256(good))
    wrong = RemoteFile(publish(mirror_root, "d/w.txt", bad), sha256=sha256(b"what upstream had\n"))
    out = tmp_path / "raw" / "toy"
    with pytest.raises(ChecksumMismatchError) as caught:
        fetch_files([ok, wrong], out, mirror=mirror_server, retries=1, progress=False)
    message = str(caught.value)
    assert wrong.url in message and "w.txt" in message
    assert sha256(b"what upstream had\n") in message and sha256(bad) in message
    assert not out.exists()
    assert leftovers(out.parent) == []


def test_unpinned_file_is_recorded_by_upstream_url_then_verified(mirror_root, mirror_server, tmp_path):
    data = b"first version\n"
    url = publish(mirror_root, "d/u.npz", data)
    out = tmp_path / "raw" / "toy"
    fetch_files([RemoteFile(url)], out, mirror=mirror_server, retries=1, progress=False)
    lock = out.parent / "checksums.lock.json"
    assert json.loads(lock.read_text()) == {url: sha256(data)}  # upstream URL, not the mirrored one

    fetch_files([RemoteFile(url)], out, mirror=mirror_server, retries=1, progress=False)  # same bytes: fine
    assert json.loads(lock.read_text()) == {url: sha256(data)}

    publish(mirror_root, "d/u.npz", b"silently changed upstream\n")
    with pytest.raises(ChecksumMismatchError) as caught:
        fetch_files([RemoteFile(url)], out, mirror=mirror_server, retries=1, progress=False)
    message = str(caught.value)
    assert url in message and str(lock) in message and "delete the entry" in message
    assert sha256(data) in message and sha256(b"silently changed upstream\n") in message
    assert (out / "u.npz").read_bytes() == data  # the previous complete download is untouched
    assert json.loads(lock.read_text()) == {url: sha256(data)}


def test_explicit_lock_path_is_used(mirror_root, mirror_server, tmp_path):
    url = publish(mirror_root, "d/u.txt", b"u")
    lock = tmp_path / "elsewhere" / "my.lock.json"
    fetch_files([RemoteFile(url)], tmp_path / "raw" / "toy", mirror=mirror_server, lock_path=lock, progress=False)
    assert json.loads(lock.read_text()) == {url: sha256(b"u")}
    assert not (tmp_path / "raw" / "checksums.lock.json").exists()


def test_parallel_downloads_keep_every_lock_entry(mirror_root, mirror_server, tmp_path):
    urls = [publish(mirror_root, f"d/f{i}.txt", f"file {i}\n".encode()) for i in range(8)]
    lock = tmp_path / "checksums.lock.json"

    def fetch(i: int) -> None:
        fetch_files([RemoteFile(urls[i])], tmp_path / f"ds{i}", mirror=mirror_server, retries=1, progress=False)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(fetch, range(8)))
    assert json.loads(lock.read_text()) == {u: sha256(f"file {i}\n".encode()) for i, u in enumerate(urls)}


def test_existing_directory_is_replaced_whole(mirror_root, mirror_server, tmp_path):
    data = b"new\n"
    out = tmp_path / "toy"
    out.mkdir()
    (out / "stale.txt").write_text("from an older download")
    fetch_files([RemoteFile(publish(mirror_root, "a.txt", data), sha256=sha256(data))], out, mirror=mirror_server)
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    assert leftovers(tmp_path) == []


def test_mirror_from_environment_and_argument_wins(mirror_root, mirror_server, tmp_path, monkeypatch):
    data = b"via mirror\n"
    remote = RemoteFile(publish(mirror_root, "m/a.txt", data), sha256=sha256(data))
    monkeypatch.setenv(MIRROR_ENV, mirror_server)
    fetch_files([remote], tmp_path / "env", retries=1, progress=False)
    assert (tmp_path / "env" / "a.txt").read_bytes() == data

    # the variable names a mirror that lacks the file: the argument must override it
    monkeypatch.setenv(MIRROR_ENV, f"{mirror_server}/nowhere")
    fetch_files([remote], tmp_path / "arg", mirror=mirror_server, retries=1, progress=False)
    assert (tmp_path / "arg" / "a.txt").read_bytes() == data
    with pytest.raises(DownloadError):
        fetch_files([remote], tmp_path / "bad", retries=1, backoff_s=0, progress=False)


def test_without_mirror_the_upstream_url_is_fetched_as_is(mirror_root, mirror_server, tmp_path, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, "http://127.0.0.1:9/unused")  # "" must switch it off
    (mirror_root / "direct.txt").write_bytes(b"direct")
    url = f"{mirror_server}/direct.txt"
    fetch_files([RemoteFile(url)], tmp_path / "d", mirror="", retries=1, progress=False)
    assert (tmp_path / "d" / "direct.txt").read_bytes() == b"direct"


def test_404_fails_at_once_naming_the_url(mirror_root, mirror_log, mirror_server, tmp_path):
    data = b"present\n"
    present = RemoteFile(publish(mirror_root, "a.txt", data), sha256=sha256(data))
    missing = RemoteFile(f"https://{HOST}/no/such/file.npz")
    out = tmp_path / "raw" / "toy"
    with pytest.raises(DownloadError) as caught:
        fetch_files([present, missing], out, mirror=mirror_server, retries=3, backoff_s=0.01, progress=False)
    message = str(caught.value)
    assert missing.url in message
    assert mirrored_url(missing.url, mirror_server) in message
    assert "HTTP 404" in message and "not retried" in message
    assert caught.value.permanent and caught.value.attempts == 1
    requests = [line for line in mirror_log.read_text().splitlines() if "GET /example.org/no/such/file.npz" in line]
    assert len(requests) == 1
    assert not out.exists()
    assert leftovers(out.parent) == []
    assert not (out.parent / "checksums.lock.json").exists()


def test_failed_download_keeps_the_previous_directory(mirror_root, mirror_server, tmp_path):
    out = tmp_path / "toy"
    out.mkdir()
    (out / "old.txt").write_text("previous complete download")
    with pytest.raises(DownloadError):
        fetch_files([RemoteFile(f"https://{HOST}/gone.txt")], out, mirror=mirror_server, retries=1, progress=False)
    assert (out / "old.txt").read_text() == "previous complete download"
    assert leftovers(tmp_path) == []


def test_progress_bar_goes_to_stderr_only_when_asked(mirror_root, mirror_server, tmp_path, capsys):
    url = publish(mirror_root, "p.bin", b"x" * 5000)
    fetch_files([RemoteFile(url)], tmp_path / "quiet", mirror=mirror_server, progress=False)
    assert capsys.readouterr().err == ""
    fetch_files([RemoteFile(url)], tmp_path / "loud", mirror=mirror_server, progress=True)
    captured = capsys.readouterr()
    assert "100%" in captured.err and captured.out == ""


@pytest.mark.parametrize(
    ("files", "kwargs", "match"),
    [
        ([], {}, "no files"),
        ([RemoteFile("https://a.org/x.txt"), RemoteFile("https://b.org/x.txt")], {}, "x.txt"),
        ([RemoteFile("https://a.org/x.txt")], {"retries": 0}, "retries"),
    ],
)
def test_bad_requests_fail_before_any_download(tmp_path, files, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fetch_files(files, tmp_path / "out", progress=False, **kwargs)
    assert list(tmp_path.iterdir()) == []


# -- transient and permanent failures, from a server that answers as scripted ------


class ScriptedServer:
    """A loopback HTTP server that answers each request for a path with the next step of its script (an HTTP
    status, or "reset": close the connection without an answer), then 200 with the path's bytes; it counts the
    requests per path."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[int | str]] = {}
        self.bodies: dict[str, bytes] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.requests: Counter[str] = Counter()
        self.times: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests[self.path] += 1
                server.times.append(time.monotonic())
                script = server.scripts.get(self.path, [])
                step = script.pop(0) if script else 200
                if step == "reset":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                body = server.bodies.get(self.path, b"") if step == 200 else b"scripted failure\n"
                self.send_response(int(step))
                for key, value in server.headers.get(self.path, {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def publish(self, path: str, data: bytes, *script: int | str, headers: dict[str, str] | None = None) -> str:
        """Serve ``data`` as ``https://example.org/<path>`` after the failures in ``script``; return that URL."""
        served = f"/{HOST}/{path}"
        self.bodies[served], self.scripts[served] = data, list(script)
        self.headers[served] = headers or {}
        return f"https://{HOST}/{path}"

    def count(self, path: str) -> int:
        return self.requests[f"/{HOST}/{path}"]


@pytest.fixture
def scripted():
    server = ScriptedServer()
    server._thread.start()
    try:
        yield server
    finally:
        server._httpd.shutdown()
        server._httpd.server_close()


@pytest.mark.parametrize("failures", [[503], [500, 502, 504], ["reset"], [408, 429]])
def test_transient_failures_are_retried_until_the_file_comes(scripted, tmp_path, failures):
    data = b"arrives in the end\n"
    url = scripted.publish("t/a.bin", data, *failures)
    paths = fetch_files(
        [RemoteFile(url, sha256=sha256(data))],
        tmp_path / "t",
        mirror=scripted.url,
        retries=len(failures) + 1,
        backoff_s=0,
        progress=False,
    )
    assert paths[0].read_bytes() == data
    assert scripted.count("t/a.bin") == len(failures) + 1


def test_a_transient_failure_on_every_attempt_fails_after_them_all(scripted, tmp_path):
    url = scripted.publish("t/down.bin", b"never", *[503] * 10)
    with pytest.raises(DownloadError) as caught:
        fetch_files([RemoteFile(url)], tmp_path / "t", mirror=scripted.url, retries=3, backoff_s=0, progress=False)
    assert scripted.count("t/down.bin") == 3
    assert not caught.value.permanent and caught.value.attempts == 3
    assert url in str(caught.value) and "after 3 attempts" in str(caught.value) and "HTTP 503" in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_permanent_http_errors_fail_on_the_first_request(scripted, tmp_path, status):
    url = scripted.publish("t/p.bin", b"unreachable", status, status, status)
    with pytest.raises(DownloadError) as caught:
        fetch_files([RemoteFile(url)], tmp_path / "t", mirror=scripted.url, retries=3, backoff_s=0, progress=False)
    assert scripted.count("t/p.bin") == 1
    assert caught.value.permanent
    assert f"could not download {url} through the mirror as " in str(caught.value)
    assert f"HTTP {status}" in str(caught.value)


def test_a_permanent_error_after_a_transient_one_stops_the_retries(scripted, tmp_path):
    url = scripted.publish("t/gone.bin", b"gone", 503, 404, 404, 404)
    with pytest.raises(DownloadError) as caught:
        fetch_files([RemoteFile(url)], tmp_path / "t", mirror=scripted.url, retries=5, backoff_s=0, progress=False)
    assert scripted.count("t/gone.bin") == 2
    assert caught.value.permanent and "HTTP 404" in str(caught.value)


def test_retry_after_is_waited_for(scripted, tmp_path):
    url = scripted.publish("t/slow.bin", b"later", 429, headers={"Retry-After": "1"})
    fetch_files([RemoteFile(url)], tmp_path / "t", mirror=scripted.url, retries=2, backoff_s=0, progress=False)
    assert scripted.count("t/slow.bin") == 2
    assert scripted.times[1] - scripted.times[0] >= 0.9


# -- the real files, through a loopback mirror of ../shared/datasets ----------

PLANETOID = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora."
CORA_SHA256 = {
    "x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
}


@pytest.mark.shared
def test_real_cora_planetoid_files_through_the_shared_mirror(shared_mirror, tmp_path):
    files = [RemoteFile(PLANETOID + suffix, sha256=digest) for suffix, digest in CORA_SHA256.items()]
    paths = fetch_files(files, tmp_path / "cora", mirror=shared_mirror, retries=2, progress=False)
    assert [p.name for p in paths] == [f"ind.cora.{suffix}" for suffix in CORA_SHA256]
    assert [sha256(p.read_bytes()) for p in paths] == list(CORA_SHA256.values())
