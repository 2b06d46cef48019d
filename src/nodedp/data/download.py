"""Downloads of upstream dataset files: checksums, retries, a mirror and a lock file.

``fetch_files`` fills a directory that appears complete or not at all (a temporary sibling, renamed once every
checksum holds). A file is checked against its pinned ``sha256`` or the lock file's record of its first
download; a mirror (argument or ``NODEDP_MIRROR``) maps ``https://HOST/PATH`` to ``MIRROR/HOST/PATH``; only
failures that may pass (timeouts, resets, 408/425/429/5xx) are retried, with backoff. Details:
docs/design/data.md.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from nodedp.io import read_json, sha256_file, write_json

if TYPE_CHECKING:  # imported by fetch_files: the catalog names its files (RemoteFile) without it
    import pooch

__all__ = [
    "DEFAULT_LOCK_NAME",
    "MIRROR_ENV",
    "ChecksumMismatchError",
    "DownloadError",
    "RemoteFile",
    "fetch_files",
    "mirrored_url",
    "resolve_mirror",
]

MIRROR_ENV = "NODEDP_MIRROR"
DEFAULT_LOCK_NAME = "checksums.lock.json"
_SCHEMES = ("https", "http")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# (connect, read) seconds: fail fast on a dead host, yet tolerate a slow stream.
_TIMEOUT = (10.0, 60.0)
_MAX_BACKOFF_S = 60.0
# Statuses a later attempt may not see again: timeouts, "too early", rate limits, and every server error.
_TRANSIENT_STATUS = frozenset({408, 425, 429})
# The answers that say an optional file is not served (left out, never retried).
_NOT_SERVED_STATUS = frozenset({404, 410})
_UMASK = os.umask(0)
os.umask(_UMASK)


class ChecksumMismatchError(ValueError):
    """Downloaded bytes whose sha256 is not the pinned or the recorded one."""

    def __init__(self, *, url: str, filename: str, expected: str, actual: str, lock_path: Path | None = None) -> None:
        self.url, self.filename, self.expected, self.actual, self.lock_path = url, filename, expected, actual, lock_path
        if lock_path is None:
            source = f"expected (pinned) sha256 {expected}"
            hint = "the upstream file changed or the download is corrupt"
        else:
            source = f"expected sha256 {expected}, recorded by the lock file {lock_path} on the first download"
            hint = (
                f"if the upstream file changed on purpose, delete the entry {url!r} from {lock_path} and download again"
            )
        super().__init__(f"checksum mismatch for {filename} ({url}): {source}, actual sha256 {actual}; {hint}")


class DownloadError(RuntimeError):
    """A file that could not be fetched: at once (``permanent``: retrying cannot help) or after every attempt."""

    def __init__(
        self, *, url: str, fetched_url: str, attempts: int, last_error: BaseException, permanent: bool = False
    ) -> None:
        self.url, self.fetched_url, self.attempts, self.last_error = url, fetched_url, attempts, last_error
        self.permanent = permanent
        via = "" if fetched_url == url else f" through the mirror as {fetched_url}"
        if permanent:
            super().__init__(
                f"could not download {url}{via}: {_describe(last_error)} (not retried: "
                "a later attempt would get the same answer)"
            )
        else:
            super().__init__(
                f"could not download {url}{via} after {attempts} attempt{'s' if attempts != 1 else ''}; "
                f"last error: {_describe(last_error)}"
            )


def _status(error: BaseException) -> int | None:
    """The HTTP status of a failed request, if it got one."""
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _describe(error: BaseException) -> str:
    status = _status(error)
    if status is not None:
        reason = getattr(error.response, "reason", None)  # type: ignore[attr-defined]
        return f"HTTP {status}{f' {reason}' if reason else ''}"
    return f"{type(error).__name__}: {error}"


def _is_transient(error: BaseException) -> bool:
    """Whether a later attempt may succeed: no HTTP answer yet (timeout, connection refused, reset or dropped
    mid-body) or a status that says "later" (``_TRANSIENT_STATUS``, 5xx)."""
    import requests

    status = _status(error)
    if status is not None:
        return status in _TRANSIENT_STATUS or 500 <= status < 600
    return isinstance(error, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError))


def _retry_after_s(error: BaseException) -> float | None:
    """A ``Retry-After`` given in seconds (the HTTP-date form is ignored)."""
    response = getattr(error, "response", None)
    value = response.headers.get("Retry-After") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES or not parts.netloc:
        raise ValueError(f"URL {url!r}: expected an absolute URL with a scheme among {list(_SCHEMES)}")


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file. ``sha256`` is pinned only where the upstream bytes are
    vouched for; ``name`` is the local file name (default: the URL's last path
    component). An ``optional`` file the server answers 404 or 410 for is left out
    (a union of what a source serves, e.g. the Facebook100 schools)."""

    url: str
    sha256: str | None = None
    name: str | None = None
    optional: bool = False

    def __post_init__(self) -> None:
        _check_url(self.url)
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"{self.url}: sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        name = self.filename
        if name in ("", ".", "..") or "/" in name or "\\" in name:
            raise ValueError(f"{self.url}: {name!r} is not a plain local file name; pass name=")

    @property
    def filename(self) -> str:
        if self.name is not None:
            return self.name
        return unquote(urlsplit(self.url).path.rsplit("/", 1)[-1])


def resolve_mirror(mirror: str | None = None) -> str | None:
    """The mirror to use: ``mirror`` if given, else ``$NODEDP_MIRROR``, else none.
    An empty string (argument or variable) means no mirror."""
    value = os.environ.get(MIRROR_ENV) if mirror is None else mirror
    if not value:
        return None
    _check_url(value)
    return value


def mirrored_url(url: str, mirror: str | None) -> str:
    """``https://HOST/PATH`` (or ``http://``) -> ``MIRROR/HOST/PATH``; ``url`` itself without a mirror."""
    _check_url(url)
    if not mirror:
        return url
    return f"{mirror.rstrip('/')}/{url.split('://', 1)[1]}"


def fetch_files(
    files: Sequence[RemoteFile],
    directory: Path,
    *,
    mirror: str | None = None,
    lock_path: Path | None = None,
    retries: int = 5,
    backoff_s: float = 1.0,
    progress: bool = True,
) -> list[Path]:
    """Download ``files`` into ``directory`` (replacing it) and verify every checksum.

    ``retries`` is the number of attempts per file (>= 1), with exponential
    backoff starting at ``backoff_s`` (1, 2, 4, 8 s for the default 5); only
    transient failures are retried (module docstring), a permanent one raises
    ``DownloadError`` at once. Unpinned files are checked against, or recorded
    in, ``lock_path`` (default ``directory.parent / "checksums.lock.json"``).
    ``directory`` appears only when every file is present and verified; on any
    error it is left as it was. An optional file that is not served (404, 410) is
    left out, said on stderr; at least one file must be fetched. Returns the local
    paths of the files fetched, in the order of ``files``.
    """
    if not files:
        raise ValueError(f"fetch_files({directory}): no files requested")
    names = [f.filename for f in files]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"fetch_files({directory}): several files would be saved as {duplicates}; pass name=")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise ValueError(f"retries must be an integer >= 1 (the number of attempts), got {retries!r}")
    if backoff_s < 0:
        raise ValueError(f"backoff_s must be >= 0, got {backoff_s!r}")
    directory = Path(directory)
    lock_path = directory.parent / DEFAULT_LOCK_NAME if lock_path is None else Path(lock_path)
    base = resolve_mirror(mirror)
    directory.parent.mkdir(parents=True, exist_ok=True)

    import pooch

    partial = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.partial-"))
    try:
        downloader = pooch.HTTPDownloader(progressbar=progress, timeout=_TIMEOUT)
        digests: dict[RemoteFile, str] = {}
        not_served: list[str] = []
        for remote in files:
            target = partial / remote.filename
            fetched_url = mirrored_url(remote.url, base)
            try:
                _download(remote.url, fetched_url, target, downloader, attempts=retries, backoff_s=backoff_s)
            except DownloadError as error:
                if not (remote.optional and error.permanent and _status(error.last_error) in _NOT_SERVED_STATUS):
                    raise
                target.unlink(missing_ok=True)
                not_served.append(remote.filename)
                print(
                    f"not served, left out (optional): {fetched_url} ({_describe(error.last_error)})", file=sys.stderr
                )
                continue
            digests[remote] = sha256_file(target)
        if not digests:
            raise DownloadError(
                url=files[0].url,
                fetched_url=mirrored_url(files[0].url, base),
                attempts=1,
                last_error=FileNotFoundError(
                    f"none of the {len(files)} optional files is served ({not_served[:3]}, ...)"
                ),
                permanent=True,
            )
        for remote, actual in digests.items():
            if remote.sha256 is not None and actual != remote.sha256:
                raise ChecksumMismatchError(
                    url=remote.url, filename=remote.filename, expected=remote.sha256, actual=actual
                )
        _check_and_record(
            {remote: actual for remote, actual in digests.items() if remote.sha256 is None}, lock_path=lock_path
        )
        # mkdtemp makes the directory 0700; give it the mode an ordinary one would get.
        os.chmod(partial, 0o777 & ~_UMASK)
        _replace_directory(partial, directory)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return [directory / remote.filename for remote in files if remote in digests]


def _download(
    url: str, fetched_url: str, target: Path, downloader: pooch.HTTPDownloader, *, attempts: int, backoff_s: float
) -> None:
    for attempt in range(1, attempts + 1):
        try:
            # pooch opens the target "w+b", so a retry overwrites a partial attempt.
            downloader(fetched_url, str(target), None)
            return
        except Exception as error:  # Ctrl-C is never caught
            if not _is_transient(error):
                raise DownloadError(
                    url=url, fetched_url=fetched_url, attempts=attempt, last_error=error, permanent=True
                ) from error
            if attempt == attempts:
                raise DownloadError(url=url, fetched_url=fetched_url, attempts=attempts, last_error=error) from error
            wait = max(backoff_s * 2 ** (attempt - 1), _retry_after_s(error) or 0.0)
            time.sleep(min(wait, _MAX_BACKOFF_S))


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive flock on a side file, so parallel downloads serialise their
    read-modify-write of ``lock_path`` (the lock file itself is replaced, not locked)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path.with_name(f"{lock_path.name}.flock"), "a") as side:
        fcntl.flock(side, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(side, fcntl.LOCK_UN)


def _read_lock(lock_path: Path) -> dict[str, str]:
    if not lock_path.exists():
        return {}
    recorded = read_json(lock_path)
    if not isinstance(recorded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and _SHA256.fullmatch(v) for k, v in recorded.items()
    ):
        raise ValueError(f"lock file {lock_path}: expected a JSON object {{upstream_url: sha256}}")
    return recorded


def _check_and_record(digests: dict[RemoteFile, str], *, lock_path: Path) -> None:
    """Verify unpinned files against ``lock_path`` and record the new ones, atomically."""
    if not digests:
        return
    with _exclusive(lock_path):
        recorded = _read_lock(lock_path)
        for remote, actual in digests.items():
            expected = recorded.get(remote.url)
            if expected is not None and expected != actual:
                raise ChecksumMismatchError(
                    url=remote.url, filename=remote.filename, expected=expected, actual=actual, lock_path=lock_path
                )
        new = {remote.url: actual for remote, actual in digests.items() if remote.url not in recorded}
        if new:
            write_json(lock_path, {**recorded, **new})


def _replace_directory(source: Path, directory: Path) -> None:
    """Move ``source`` to ``directory``; an existing ``directory`` is moved aside first
    (``os.replace`` cannot overwrite a non-empty directory) and removed after."""
    if not directory.exists():
        os.replace(source, directory)
        return
    old = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.old-"))
    os.replace(directory, old / directory.name)
    os.replace(source, directory)
    shutil.rmtree(old, ignore_errors=True)
