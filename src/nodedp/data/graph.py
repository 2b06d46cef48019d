"""The canonical graph format: one directory with ``graph.pt`` and ``meta.json``.

``graph.pt`` is a plain dict of tensors (``x`` float32 [N, F], ``y`` int64 [N]
in [0, C), ``edge_index`` int64 [2, E] of directed src -> dst pairs; an
undirected graph stores both directions), so ``torch.load(weights_only=True)``
reads it. ``meta.json`` holds summary statistics, the source (how the graph
was made) and the SHA-256 of ``graph.pt``; it is written last, so its presence
means the directory is complete.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import torch
from torch import Tensor

from nodedp.io import read_json, sha256_file, torch_save_atomic, write_json

if TYPE_CHECKING:  # torch_geometric costs seconds to import: structure jobs that need only the tensors skip it
    from torch_geometric.data import Data

FORMAT_VERSION = 1
GRAPH_FILE = "graph.pt"
META_FILE = "meta.json"
_TENSOR_KEYS = ("x", "y", "edge_index")
# What readers of meta.json rely on (the loader, splits, δ's private units).
_META_KEYS = ("name", "num_nodes", "num_edges", "num_classes", "sha256", "source")
# Elements per chunk where a whole-graph temporary would cost GiBs (ogbn-products: 62M edges).
_CHUNK = 1 << 24


class GraphValidationError(ValueError):
    """A graph (in memory or on disk) breaks the canonical format."""


def validate_graph(data: Data | SimpleNamespace, *, where: str, num_classes: int | None = None) -> None:
    """Raise ``GraphValidationError`` naming ``where`` and the problem, else return.

    ``data`` is anything with the attributes ``x``, ``y`` and ``edge_index`` (a PyG ``Data``).

    ``num_classes``, when given, is the label range that ``y`` must respect.
    """

    def fail(problem: str) -> NoReturn:
        raise GraphValidationError(f"{where}: {problem}")

    for key in _TENSOR_KEYS:
        if not isinstance(getattr(data, key, None), Tensor):
            fail(f"missing tensor '{key}'")
    x, y, edge_index = data.x, data.y, data.edge_index
    if x.dtype != torch.float32 or x.dim() != 2:
        fail(f"x must be float32 [N, F], got {x.dtype} {list(x.shape)}")
    if y.dtype != torch.int64 or y.dim() != 1:
        fail(f"y must be int64 [N], got {y.dtype} {list(y.shape)}")
    if edge_index.dtype != torch.int64 or edge_index.dim() != 2 or edge_index.size(0) != 2:
        fail(f"edge_index must be int64 [2, E], got {edge_index.dtype} {list(edge_index.shape)}")
    num_nodes = x.size(0)
    if num_nodes == 0:
        fail("graph has no nodes")
    if y.size(0) != num_nodes:
        fail(f"x has {num_nodes} rows but y has {y.size(0)} labels")
    # Row blocks: isfinite of the whole x is a bool copy of it (245 MiB on ogbn-products).
    rows_per_chunk = max(1, _CHUNK // max(1, x.size(1)))
    if not all(bool(torch.isfinite(rows).all()) for rows in x.split(rows_per_chunk)):
        fail("x contains NaN or inf")
    if int(y.min()) < 0:
        fail(f"labels out of range: min label {int(y.min())} < 0")
    if num_classes is not None and int(y.max()) >= num_classes:
        fail(f"labels out of range: max label {int(y.max())} >= num_classes {num_classes}")
    if edge_index.size(1) > 0:
        low, high = int(edge_index.min()), int(edge_index.max())
        if low < 0:
            fail(f"edge index out of range: negative node id {low}")
        if high >= num_nodes:
            fail(f"edge index out of range: node id {high} >= num_nodes {num_nodes}")
        keys = _sorted_edge_keys(edge_index[0], edge_index[1], num_nodes=num_nodes)
        num_duplicates = int(np.count_nonzero(keys[1:] == keys[:-1]))
        if num_duplicates:
            fail(f"{num_duplicates} duplicate edges")


def _sorted_edge_keys(src: Tensor, dst: Tensor, *, num_nodes: int) -> np.ndarray:
    """src * N + dst per edge, sorted: one int64 array, built and sorted in
    place (torch.unique would keep several edge-sized copies)."""
    products = src * num_nodes
    products += dst
    keys = products.cpu().numpy()
    keys.sort()
    return keys


def _is_undirected(edge_index: Tensor, *, num_nodes: int, in_degree: Tensor, out_degree: Tensor) -> bool:
    """Whether the multiset of edges equals that of the reversed edges (exact)."""
    if not torch.equal(in_degree, out_degree):
        return False
    src, dst = edge_index
    forward = _sorted_edge_keys(src, dst, num_nodes=num_nodes)
    return bool(np.array_equal(forward, _sorted_edge_keys(dst, src, num_nodes=num_nodes)))


def _summary(values: Tensor) -> dict[str, float]:
    # numpy: torch.quantile refuses inputs above 2**24 elements.
    array = values.numpy().astype(np.float64)
    return {
        "min": float(array.min()),
        "max": float(array.max()),
        "mean": float(array.mean()),
        "median": float(np.median(array)),
        "p99": float(np.quantile(array, 0.99)),
    }


def graph_stats(data: Data) -> dict[str, Any]:
    """Structural and label statistics of a valid graph (what ``meta.json`` records)."""
    num_nodes = data.x.size(0)
    src, dst = data.edge_index
    num_classes = int(data.y.max()) + 1
    counts = torch.bincount(data.y, minlength=num_classes)
    shares = (counts.to(torch.float64) / num_nodes).tolist()
    smallest = int(counts.min())
    num_edges = int(src.numel())
    in_degree = torch.bincount(dst, minlength=num_nodes)
    out_degree = torch.bincount(src, minlength=num_nodes)
    # In chunks: y[src] and y[dst] at once are two int64 copies of the edge list.
    same_label = sum(
        int((data.y[s] == data.y[d]).sum()) for s, d in zip(src.split(_CHUNK), dst.split(_CHUNK), strict=True)
    )
    return {
        "num_nodes": num_nodes,
        "num_edges": num_edges,
        "num_features": data.x.size(1),
        "num_classes": num_classes,
        "is_undirected": _is_undirected(
            data.edge_index, num_nodes=num_nodes, in_degree=in_degree, out_degree=out_degree
        ),
        "self_loops": int((src == dst).sum()),
        "degree": {"in": _summary(in_degree), "out": _summary(out_degree)},
        "class_counts": counts.tolist(),
        # None where a class below the largest label is empty: the ratio is unbounded.
        "class_balance": {
            "shares": shares,
            "max_over_min": float(counts.max()) / smallest if smallest else None,
        },
        "edge_homophily": same_label / num_edges if num_edges else None,
    }


def save_graph(data: Data, directory: str | Path, *, name: str, source: dict[str, Any]) -> dict[str, Any]:
    """Validate ``data``, write ``graph.pt`` then ``meta.json`` atomically; return the meta."""
    directory = Path(directory)
    validate_graph(data, where=f"graph '{name}'")
    graph_path = torch_save_atomic(
        {key: getattr(data, key).contiguous() for key in _TENSOR_KEYS}, directory / GRAPH_FILE
    )
    meta = {
        "name": name,
        **graph_stats(data),
        "source": source,
        "sha256": sha256_file(graph_path),
        "format_version": FORMAT_VERSION,
    }
    write_json(directory / META_FILE, meta)
    return meta


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def load_graph_meta(directory: str | Path) -> dict[str, Any]:
    """Read ``meta.json`` of a graph directory (no checksum check: that needs the tensors)."""
    meta_path = Path(directory) / META_FILE
    if not meta_path.is_file():
        raise GraphValidationError(f"{meta_path}: missing file")
    meta = read_json(meta_path)  # invalid JSON: an error naming the file
    if not isinstance(meta, dict):
        raise GraphValidationError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise GraphValidationError(f"{meta_path}: format_version {version!r} is not the supported {FORMAT_VERSION}")
    missing = [key for key in _META_KEYS if key not in meta]
    if missing:
        raise GraphValidationError(
            f"{meta_path}: missing field(s) {missing}; rebuild the graph (`python -m nodedp "
            "graph`, the workflow's graph rule)"
        )
    return meta


def load_graph(directory: str | Path) -> Data:
    """Load a graph directory, checking the checksum in ``meta.json`` and the format."""
    from torch_geometric.data import Data

    return Data(**load_graph_tensors(directory))


def load_graph_tensors(directory: str | Path) -> dict[str, Tensor]:
    """``load_graph``'s checked tensors {x, y, edge_index} as a plain dict, without importing torch_geometric."""
    meta = load_graph_meta(directory)
    graph_path = Path(directory) / GRAPH_FILE
    if not graph_path.is_file():
        raise GraphValidationError(f"{graph_path}: missing file")
    digest = sha256_file(graph_path)
    if digest != meta["sha256"]:
        raise GraphValidationError(f"{graph_path}: checksum mismatch (file {digest}, meta.json {meta['sha256']})")
    try:
        tensors = torch.load(graph_path, weights_only=True)
    except Exception as err:  # torch raises many types for a damaged archive; a checksum match makes this rare
        raise GraphValidationError(f"{graph_path}: not a readable graph file ({_first_line(err)})") from err
    if not isinstance(tensors, dict) or set(tensors) != set(_TENSOR_KEYS):
        found = sorted(tensors) if isinstance(tensors, dict) else type(tensors).__name__
        raise GraphValidationError(f"{graph_path}: expected a dict with keys {list(_TENSOR_KEYS)}, got {found}")
    validate_graph(SimpleNamespace(**tensors), where=str(graph_path), num_classes=meta["num_classes"])
    return tensors
