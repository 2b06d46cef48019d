"""Small file helpers shared by every stage.

Every write goes to a temporary file in the destination directory and is then
moved into place with ``os.replace`` (atomic on POSIX), so a job killed half-way
never leaves a file that Snakemake or a later reader would take as complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "read_json", "sha256_file", "torch_save_atomic", "write_json"]

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, write_fn: Callable[[Path], object]) -> Path:
    """Call ``write_fn(tmp_path)`` and move the result to ``path`` atomically.

    The temporary file lies in the same directory as ``path`` (``os.replace``
    is only atomic within one file system); it is removed if ``write_fn`` fails.
    Missing parent directories are created. Returns ``path`` as a ``Path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write_fn(tmp)
        # mkstemp creates 0600; give the result the mode an ordinary file would get.
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON with sorted keys; NaN/inf raise ``ValueError``."""
    text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_json(path: str | Path) -> Any:
    """Parse a JSON file. Invalid JSON raises ``json.JSONDecodeError`` whose message names the file
    (the decoder's own names only the line and column)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise json.JSONDecodeError(f"{path}: not valid JSON ({err.msg})", err.doc, err.pos) from None


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def torch_save_atomic(obj: Any, path: str | Path) -> Path:
    """``torch.save`` atomically. torch is handed an open file, not a path: it
    names the archive after a path (here a random temporary one) but not after
    a file object, so equal objects get equal checksums. Streaming to the file
    (rather than to memory first) keeps a 2 GiB graph from costing 4 GiB more."""
    import torch  # here, so that torch-free stages (analysis, accounting) do not pay for it

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            torch.save(obj, handle)

    return atomic_write(path, write)
