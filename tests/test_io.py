from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import torch

from nodedp.io import (
    atomic_write,
    read_json,
    sha256_file,
    torch_save_atomic,
    write_json,
)


def test_write_json_round_trips_sorted_and_indented(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "meta.json"
    obj = {"b": [1, 2.5], "a": {"z": None, "y": "text"}}
    write_json(path, obj)
    text = path.read_text()
    assert read_json(path) == obj
    assert text == json.dumps(obj, indent=2, sort_keys=True) + "\n"
    assert text.index('"a"') < text.index('"b"')


def test_write_json_refuses_nan_and_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_json(path, {"ok": 1})
    with pytest.raises(ValueError):
        write_json(path, {"acc": math.nan})
    assert read_json(path) == {"ok": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_atomic_write_failure_leaves_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"

    def half_write(tmp: Path) -> None:
        tmp.write_bytes(b"partial")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        atomic_write(path, half_write)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old")
    assert atomic_write(path, lambda tmp: tmp.write_text("new")) == path
    assert path.read_text() == "new"
    assert list(tmp_path.iterdir()) == [path]


def test_sha256_file_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    payload = bytes(range(256)) * 5000  # spans several read blocks
    path.write_bytes(payload)
    assert sha256_file(path) == hashlib.sha256(payload).hexdigest()


def test_torch_save_atomic_bytes_do_not_depend_on_file_name(tmp_path: Path) -> None:
    obj = {"edge_index": torch.arange(6).view(2, 3), "seed": 3, "kind": "in-degree"}
    first = torch_save_atomic(obj, tmp_path / "a.pt")
    second = torch_save_atomic(obj, tmp_path / "other" / "b.pt")
    assert sha256_file(first) == sha256_file(second)
    loaded = torch.load(second, weights_only=True)
    assert torch.equal(loaded["edge_index"], obj["edge_index"]) and loaded["seed"] == 3


def test_atomic_files_get_the_ordinary_mode_not_mkstemps_0600(tmp_path):
    import os

    from nodedp.io import write_json

    umask = os.umask(0o022)
    try:
        path = write_json(tmp_path / "a.json", {"a": 1})
    finally:
        os.umask(umask)
    # The module read the umask at import; under the common 022 that is 0644.
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
