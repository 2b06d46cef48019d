"""DP-GNN's training subgraphs (Daigavane et al., Algorithms 2-3) as padded dense tensors.

``sample_subgraphs`` expands each root along its kept out-edges up to r hops, each node once at its shortest
distance, so a node occurs only in the subgraphs of its ≤ K kept in-neighbours and their ancestors (Lemma 1); the
edges' out-degrees must be bounded too (subgraphs are padded to 1 + K + ... + K^r). ``save_subgraphs`` and
``load_subgraphs`` store them. Direction, size and repeated nodes: docs/design/models.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from nodedp.accounting import max_occurrences
from nodedp.io import torch_save_atomic

__all__ = [
    "Subgraphs",
    "gather_features",
    "load_subgraphs",
    "occurrence_counts",
    "sample_subgraphs",
    "save_subgraphs",
    "trim_padding",
]

FORMAT = "nodedp-subgraphs-v1"


@dataclass(frozen=True)
class Subgraphs:
    """One padded subgraph per training root.

    ``nodes[i]`` lists the global ids of root i's subgraph, the root first,
    then by distance from the root and id, padded with -1 to width
    S = N(K, r). ``adj[i, a, b]`` is True iff column a aggregates from column b,
    i.e. (nodes[i, a], nodes[i, b]) is a kept edge that Algorithm 2 used.
    """

    nodes: Tensor
    adj: Tensor
    num_layers: int
    max_degree: int

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ValueError(f"invalid Subgraphs: {problem}")


def _problem(sg: Subgraphs) -> str | None:
    for name, value, minimum in (("num_layers", sg.num_layers, 0), ("max_degree", sg.max_degree, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return f"{name} must be an integer >= {minimum}, got {value!r}"
    width = max_occurrences(max_degree=sg.max_degree, num_layers=sg.num_layers)
    if not isinstance(sg.nodes, Tensor) or sg.nodes.dtype != torch.int64 or sg.nodes.dim() != 2:
        return "nodes must be an int64 tensor [M, S]"
    if sg.nodes.size(1) != width:
        return f"nodes has width {sg.nodes.size(1)}, expected N(K={sg.max_degree}, r={sg.num_layers}) = {width}"
    if not isinstance(sg.adj, Tensor) or sg.adj.dtype != torch.bool or sg.adj.shape != (len(sg.nodes), width, width):
        return f"adj must be a bool tensor [{len(sg.nodes)}, {width}, {width}]"
    if sg.nodes.numel() and (int(sg.nodes.min()) < -1 or int(sg.nodes[:, 0].min()) < 0):
        return "nodes must hold ids >= 0 and -1 padding, with the root in column 0"
    valid = sg.nodes >= 0
    if (sg.adj & ~(valid[:, :, None] & valid[:, None, :])).any():
        return "adj has edges at padding columns"
    return None


def _check_index(tensor: Tensor, name: str, *, dim: int, num_nodes: int) -> None:
    if not isinstance(tensor, Tensor) or tensor.dtype != torch.int64 or tensor.dim() != dim:
        shape = "[2, E]" if dim == 2 else "[M]"
        raise ValueError(f"{name} must be an int64 tensor {shape}, got {getattr(tensor, 'dtype', type(tensor))}")
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_nodes):
        raise ValueError(f"{name} has node ids outside [0, num_nodes={num_nodes})")


def _neighbour_table(edge_index: Tensor, *, num_nodes: int, max_degree: int) -> Tensor:
    """Kept out-neighbours of every node, ascending, padded with -1: [num_nodes + 1, K].

    The extra last row is all -1, so looking up a padding id (-1) yields padding.
    """
    src, dst = edge_index
    in_degree = torch.bincount(dst, minlength=num_nodes)
    out_degree = torch.bincount(src, minlength=num_nodes)
    if src.numel() and int(in_degree.max()) > max_degree:
        raise ValueError(
            f"a node has {int(in_degree.max())} kept in-edges > max_degree={max_degree}: "
            "bound the edges with nodedp.data.bound_in_degree (Lemma 1 rests on it)"
        )
    if src.numel() and int(out_degree.max()) > max_degree:
        raise ValueError(
            f"a node has {int(out_degree.max())} kept out-edges > max_degree={max_degree}: "
            "bound them with nodedp.data.bound_out_degree so subgraphs fit N(K, r) columns"
        )
    order = torch.argsort(src * num_nodes + dst)
    src, dst = src[order], dst[order]
    first = torch.cumsum(out_degree, 0) - out_degree
    rank = torch.arange(src.numel()) - first[src]
    table = torch.full((num_nodes + 1, max_degree), -1, dtype=torch.int64)
    table[src, rank] = dst
    return table


def sample_subgraphs(
    edge_index: Tensor, *, roots: Tensor, num_nodes: int, num_layers: int, max_degree: int
) -> Subgraphs:
    """SAMPLE-SUBGRAPHS (Algorithm 3): RECURSIVE-NEIGHBORHOOD(v, E, r) for every root v.

    ``edge_index`` holds the kept edges (src -> dst, every in- and out-degree
    <= K, see docs/design/models.md); row i of the result is ``roots[i]``'s
    subgraph. Deterministic: the randomness was spent bounding the degrees.
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be an integer >= 1, got {num_nodes!r}")
    for name, value, minimum in (("num_layers", num_layers, 0), ("max_degree", max_degree, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    _check_index(edge_index, "edge_index", dim=2, num_nodes=num_nodes)
    if edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be int64 [2, E], got {list(edge_index.shape)}")
    _check_index(roots, "roots", dim=1, num_nodes=num_nodes)
    if torch.unique(roots).numel() != roots.numel():
        raise ValueError("roots has repeated nodes: each training node owns one subgraph")
    edge_index, roots = edge_index.cpu(), roots.cpu()
    table = _neighbour_table(edge_index, num_nodes=num_nodes, max_degree=max_degree)

    # Every path of length <= r from the root, level by level: N(K, r) candidates.
    frontier = roots[:, None]
    levels, depths = [frontier], [torch.zeros_like(frontier)]
    for hops in range(1, num_layers + 1):
        frontier = table[frontier].reshape(len(roots), -1)
        levels.append(frontier)
        depths.append(torch.full_like(frontier, hops))
    candidates, depth = torch.cat(levels, 1), torch.cat(depths, 1)
    missing = candidates < 0
    ids = candidates.masked_fill(missing, num_nodes)

    # Keep each node once, at its shortest distance (Algorithm 2's set union).
    order = torch.argsort(ids * (num_layers + 1) + depth, dim=1, stable=True)
    ids, depth = ids.gather(1, order), depth.gather(1, order)
    repeated = torch.zeros_like(missing)
    repeated[:, 1:] = ids[:, 1:] == ids[:, :-1]
    dropped = repeated | (ids == num_nodes)
    # Root first, then by distance and id; padding last.
    key = (depth * (num_nodes + 1) + ids).masked_fill(dropped, torch.iinfo(torch.int64).max)
    order = torch.argsort(key, dim=1)
    nodes = ids.gather(1, order).masked_fill(dropped.gather(1, order), -1)
    depth = depth.gather(1, order)

    # Edges of the recursion: every kept (x, y) with x < r hops from the root.
    width = nodes.size(1)
    expanded = (nodes >= 0) & (depth < num_layers)
    targets = table[nodes].masked_fill(~expanded[:, :, None], -1).reshape(len(roots), -1)
    by_id, position = torch.sort(nodes.masked_fill(nodes < 0, num_nodes), dim=1)
    slot = torch.searchsorted(by_id, targets).clamp(max=width - 1)
    found = (targets >= 0) & (by_id.gather(1, slot) == targets)
    row, flat = found.nonzero(as_tuple=True)
    adj = torch.zeros(len(roots), width, width, dtype=torch.bool)
    adj[row, flat // max_degree, position.gather(1, slot)[row, flat]] = True
    return Subgraphs(nodes=nodes, adj=adj, num_layers=num_layers, max_degree=max_degree)


def occurrence_counts(subgraphs: Subgraphs, num_nodes: int) -> Tensor:
    """[num_nodes] int64: how many subgraphs each node occurs in (Lemma 1: <= N(K, r))."""
    present = subgraphs.nodes[subgraphs.nodes >= 0]
    if present.numel() and int(present.max()) >= num_nodes:
        raise ValueError(f"subgraphs hold node {int(present.max())}, outside [0, num_nodes={num_nodes})")
    return torch.bincount(present, minlength=num_nodes)


def gather_features(subgraphs: Subgraphs, x: Tensor, idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The batch of subgraphs ``idx`` (rows of ``subgraphs``) on ``x``'s device.

    Returns x_local [B, S, F] (zeros at padding), adj [B, S, S] in x's dtype
    (adj[b, a, c] = 1 iff column a aggregates from column c) and mask [B, S]
    (True at real nodes; column 0 is the root).
    """
    nodes = subgraphs.nodes[idx.to(subgraphs.nodes.device)].to(x.device)
    mask = nodes >= 0
    x_local = x[nodes.clamp(min=0)].masked_fill(~mask[:, :, None], 0)
    adj = subgraphs.adj[idx.to(subgraphs.adj.device)].to(device=x.device, dtype=x.dtype)
    return x_local, adj, mask


def save_subgraphs(subgraphs: Subgraphs, path: str | Path) -> Path:
    payload = {
        "format": FORMAT,
        "nodes": subgraphs.nodes,
        "adj": subgraphs.adj,
        "num_layers": subgraphs.num_layers,
        "max_degree": subgraphs.max_degree,
    }
    return torch_save_atomic(payload, path)


def load_subgraphs(path: str | Path) -> Subgraphs:
    """Read a file written by :func:`save_subgraphs`; a wrong or damaged file raises ``ValueError`` naming it."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as err:  # torch raises several types for a damaged archive
        raise ValueError(f"{path}: not a readable subgraphs file ({err})") from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{path}: not a subgraphs file (format {found!r}, expected {FORMAT!r})")
    try:
        stored: dict[str, Any] = {key: payload.get(key) for key in ("nodes", "adj", "num_layers", "max_degree")}
        return Subgraphs(**stored)  # Subgraphs checks every field, a missing (None) one included
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def trim_padding(nodes: Tensor, adj: Tensor) -> tuple[Tensor, Tensor]:
    """A batch of padded subgraphs (``nodes`` [B, S], -1 padding last in every row; ``adj`` [B, S, S]) cut to the
    columns some row uses (at least the root's). The models read padding as absent, so their outputs do not change;
    a sampler that pads to its largest possible width (SparseGNN's 1 + 20 + 200, HeterPoisson's 1 + D) then costs
    what the batch holds."""
    if nodes.dim() != 2 or adj.shape != (*nodes.shape, nodes.size(1)):
        raise ValueError(f"need nodes [B, S] and adj [B, S, S]; got {list(nodes.shape)} and {list(adj.shape)}")
    used = int((nodes >= 0).sum(1).max()) if nodes.numel() else 1
    used = max(used, 1)
    return nodes[:, :used], adj[:, :used, :used]
