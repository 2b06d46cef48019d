"""Degree bounding by edge sampling, with per-edge reproducible randomness.

Every edge draws from a counter-based hash of (seed, purpose, src, dst) (splitmix64 in numpy uint64), so the
result does not depend on edge order and removing a node leaves every other edge's draw unchanged. The
bounding still re-runs on the private graph: removing a node can change other nodes' kept edges (each
function's docstring says how), and no bounding that keeps every edge within the bound can avoid it in the
worst case (a theorem, proved in docs/design/data.md); ``nodedp.data.stability`` measures it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
# Distinct streams so the two samplers never share draws under one seed.
_IN_DEGREE_STREAM = 1
_OUT_DEGREE_STREAM = 2
_UNDIRECTED_STREAM = 3
# Edges per chunk: per-edge temporaries stay ~100 MiB on graphs of any size.
_CHUNK = 1 << 22


def _splitmix64_(z: np.ndarray) -> np.ndarray:
    """splitmix64 of a uint64 array, in place (one temporary at a time); returns it."""
    # uint64 array arithmetic wraps modulo 2**64, as splitmix64 requires.
    z += _GOLDEN
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def _node_hashes(num_nodes: int, *, seed: int, stream: int) -> np.ndarray:
    """splitmix64(base ^ v) per node v: the source half of every edge hash, computed once."""
    base = _splitmix64_(np.array([seed], dtype=np.uint64) ^ np.uint64(stream))
    return _splitmix64_(np.arange(num_nodes, dtype=np.uint64) ^ base)


def _edge_hashes(node_hashes: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """splitmix64(splitmix64(base ^ src) ^ dst) per edge: a pure function of (seed, stream, src, dst)."""
    hashes = node_hashes[src]
    hashes ^= dst.astype(np.uint64)
    return _splitmix64_(hashes)


def _chunks(size: int) -> range:
    return range(0, size, _CHUNK)


def _check_inputs(edge_index: Tensor, *, num_nodes: int, max_degree: int, seed: int) -> None:
    if edge_index.dtype != torch.int64 or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be int64 [2, E], got {edge_index.dtype} {list(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, num_nodes={num_nodes})")
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must lie in [0, 2**64), got {seed}")


def bound_in_degree(edge_index: Tensor, *, num_nodes: int, train_nodes: Tensor, max_degree: int, seed: int) -> Tensor:
    """SAMPLE-EDGELISTS (Algorithm 1 of DP-GNN, Daigavane et al.): the training edge set.

    For every node v, RE_v = {u : (u, v) ∈ E, u ∈ V_tr} are its incoming edges
    from training nodes; each is kept independently with probability
    min(1, K / (2 |RE_v|)), and a node whose sampled in-degree still exceeds K
    loses all its incoming edges. Edges from non-training nodes are not part of
    any training subgraph and are dropped. Returns the kept columns of
    ``edge_index`` in their original order; every in-degree is then <= K, so
    every node occurs in at most K sampled edge lists (Lemma 1).

    Duplicate columns share one draw and count with multiplicity, so the bound
    holds for them too (the canonical format has none).

    Removing node u lowers |RE_v| at each of u's out-neighbours v, which raises
    every keep probability there: v may keep more of its other in-edges (or
    lose all of them, once overfull, or regain them), and each gained or lost
    (y, v) changes the subgraph of root y and of y's ancestors. The change is
    bounded by no public quantity; only graphs with every |RE_v| ≤ K/2 are
    left unchanged (every keep probability is 1 there).
    """
    _check_inputs(edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    train_ids = train_nodes.cpu().numpy()
    if train_ids.size and (train_ids.min() < 0 or train_ids.max() >= num_nodes):
        raise ValueError(f"train_nodes has node ids outside [0, num_nodes={num_nodes})")
    src, dst = edge_index.cpu().numpy()
    is_train = np.zeros(num_nodes, dtype=bool)
    is_train[train_ids] = True
    node_hashes = _node_hashes(num_nodes, seed=seed, stream=_IN_DEGREE_STREAM)

    incoming = np.zeros(num_nodes, dtype=np.int64)
    for start in _chunks(src.size):
        part = slice(start, start + _CHUNK)
        incoming += np.bincount(dst[part][is_train[src[part]]], minlength=num_nodes)
    keep_prob = np.minimum(1.0, max_degree / (2.0 * np.maximum(incoming, 1)))
    keep = np.empty(src.size, dtype=bool)
    kept_in = np.zeros(num_nodes, dtype=np.int64)
    for start in _chunks(src.size):
        part = slice(start, start + _CHUNK)
        s, d = src[part], dst[part]
        # Uniform [0, 1) from the top 53 bits of the edge's hash.
        uniform = (_edge_hashes(node_hashes, s, d) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        keep[part] = is_train[s] & (uniform < keep_prob[d])
        kept_in += np.bincount(d[keep[part]], minlength=num_nodes)
    overfull = kept_in > max_degree
    for start in _chunks(src.size):
        part = slice(start, start + _CHUNK)
        keep[part] &= ~overfull[dst[part]]
    return edge_index[:, torch.from_numpy(keep).to(edge_index.device)]


def bound_out_degree(edge_index: Tensor, *, num_nodes: int, max_degree: int, seed: int) -> Tensor:
    """GAP/ProGAP degree bounding: every node keeps at most D outgoing edges.

    The D kept edges of a source are those with the smallest per-edge hashes, a
    uniformly random D-subset of its out-edges (all of them if it has <= D).
    Returns the kept columns of ``edge_index`` in their original order.

    Removing node u: u's kept out-edges go, and every source w with more than
    D out-edges that kept (w, u) keeps its (D+1)-th edge (w, z) instead, so
    row z of A·X changes too: D + 1 + (u's kept in-degree from such sources)
    rows in all, which no public bound limits (module docstring: no
    bounding that keeps light sources whole can do better).
    """
    _check_inputs(edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    src, dst = edge_index.cpu().numpy()
    node_hashes = _node_hashes(num_nodes, seed=seed, stream=_OUT_DEGREE_STREAM)
    out_degree = np.bincount(src, minlength=num_nodes)
    heavy = out_degree > max_degree
    if not heavy.any():  # nothing to drop (also: no edges at all, where the sort below has no keys)
        return edge_index.clone()
    # The D-th smallest hash of each heavy source, found with one in-place
    # sort of uint64 keys (source id in the high bits, the hash's top bits
    # below it): a plain sort is ~30x faster than lexsort on (src, hash).
    # The truncated hash can tie; the ties at each threshold are settled on
    # the full hashes below.
    node_bits = max(1, (num_nodes - 1).bit_length())
    hash_shift = np.uint64(node_bits)
    parts = []
    for start in _chunks(src.size):
        part = slice(start, start + _CHUNK)
        s, d = src[part], dst[part]
        is_heavy = heavy[s]
        top = _edge_hashes(node_hashes, s[is_heavy], d[is_heavy]) >> hash_shift
        parts.append(top | (s[is_heavy].astype(np.uint64) << np.uint64(64 - node_bits)))
    keys = np.concatenate(parts)
    del parts
    keys.sort()
    heavy_nodes = np.flatnonzero(heavy)
    group_start = np.cumsum(out_degree[heavy_nodes]) - out_degree[heavy_nodes]
    threshold = np.zeros(num_nodes, dtype=np.uint64)
    threshold[heavy_nodes] = keys[group_start + max_degree - 1] & np.uint64(2 ** (64 - node_bits) - 1)
    del keys

    # Below its source's threshold an edge is kept, above it dropped; at it
    # (at least the D-th edge of each heavy source) the full hash decides.
    keep = np.empty(src.size, dtype=bool)
    below = np.zeros(num_nodes, dtype=np.int64)
    column_parts: list[np.ndarray] = []
    src_parts: list[np.ndarray] = []
    hash_parts: list[np.ndarray] = []
    for start in _chunks(src.size):
        part = slice(start, start + _CHUNK)
        s, d = src[part], dst[part]
        hashes = _edge_hashes(node_hashes, s, d)
        top, limit = hashes >> hash_shift, threshold[s]
        is_heavy = heavy[s]
        keep[part] = ~is_heavy | (top < limit)
        below += np.bincount(s[is_heavy & (top < limit)], minlength=num_nodes)
        at = np.flatnonzero(is_heavy & (top == limit))
        column_parts.append(at + start)
        src_parts.append(s[at])
        hash_parts.append(hashes[at])
    tie_columns, tie_src, tie_hashes = (np.concatenate(p) for p in (column_parts, src_parts, hash_parts))
    # Stable: duplicate columns (equal hashes) keep their column order, as
    # a full lexsort would.
    order = np.lexsort((tie_hashes, tie_src))
    sorted_src = tie_src[order]
    ties = np.bincount(tie_src, minlength=num_nodes)
    rank = np.arange(order.size) - (np.cumsum(ties) - ties)[sorted_src]
    keep[tie_columns[order[rank < max_degree - below[sorted_src]]]] = True
    return edge_index[:, torch.from_numpy(keep).to(edge_index.device)]


def bound_undirected_degree(edge_index: Tensor, *, num_nodes: int, max_degree: int, seed: int) -> Tensor:
    """An undirected subgraph in which every node has at most D = ``max_degree`` incident edges.

    ``edge_index`` stores both directions of every undirected edge {u, v}
    (no duplicate columns; self-loops are dropped). Each edge gets one draw
    h({u, v}), the hash of (seed, stream, min(u, v), max(u, v)), so both
    endpoints see the same number. Every node ranks its incident edges by h
    (its top 64 − ⌈log2 N⌉ bits, equal values in a fixed order of the pairs)
    and *proposes* its D lowest (all of them if it has ≤ D); an edge is kept
    iff both endpoints propose it. A kept edge is among the ≤ D proposals of
    each endpoint, so every degree is ≤ D. Returns the kept columns of
    ``edge_index`` (both directions of each kept edge) in their original order.

    Removing node v (all its edges) changes the result only near v: v loses
    all its kept edges; every other node's incident edges can only lose
    {u, v}, so the rank of its other edges can only drop and no kept edge
    away from v is lost; a neighbour u of v that had proposed {u, v} proposes
    at most one new edge instead, so the kept edges added are at most one per
    such u, each incident to a neighbour of v. Hence the kept sets differ by
    at most D + deg(v) edges (deg(v) in the input graph), all within one hop
    of v — not by v's D edges alone, so analyses that compare neighbouring
    graphs on the same kept edge set (as the papers do) rest on that.
    """
    _check_inputs(edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    src, dst = edge_index.cpu().numpy()
    proper = src != dst
    keys = np.sort(src[proper] * np.int64(num_nodes) + dst[proper])
    duplicates = np.count_nonzero(keys[1:] == keys[:-1])
    if duplicates:
        raise ValueError(f"edge_index has {duplicates} duplicate columns; store each direction once")
    if not np.array_equal(keys, np.sort(dst[proper] * np.int64(num_nodes) + src[proper])):
        raise ValueError("edge_index must store both directions of every edge (an undirected graph)")

    # One entry per unordered pair (lo < hi, in key order), and its shared draw. Graph-sized intermediates
    # are dropped as soon as they are used: at ogbn-products size each is ~1 GB.
    pair_keys = keys[keys // num_nodes < keys % num_nodes]
    del keys
    lo, hi = pair_keys // num_nodes, pair_keys % num_nodes
    hashes = _edge_hashes(_node_hashes(num_nodes, seed=seed, stream=_UNDIRECTED_STREAM), lo, hi)
    # Each pair seen from both endpoints, ranked among the node's incident pairs by one stable sort of
    # uint64 keys (node id in the high bits, the hash's top bits below it; equal truncated hashes keep
    # their pair-key order): a fixed order of each node's pairs that other nodes' edges do not affect.
    node = np.concatenate([lo, hi])
    del lo, hi
    node_bits = max(1, (num_nodes - 1).bit_length())
    sort_keys = np.tile(hashes >> np.uint64(node_bits), 2)
    del hashes
    sort_keys |= node.astype(np.uint64) << np.uint64(64 - node_bits)
    order = np.argsort(sort_keys, kind="stable")
    del sort_keys
    degree = np.bincount(node, minlength=num_nodes)
    rank = np.arange(order.size) - (np.cumsum(degree) - degree)[node[order]]
    del node
    proposed = order[rank < max_degree] % max(pair_keys.size, 1)  # entries i and i + P are pair i
    del order, rank
    kept_keys = pair_keys[np.bincount(proposed, minlength=pair_keys.size) == 2]
    del pair_keys, proposed

    column_pair = np.minimum(src, dst) * np.int64(num_nodes) + np.maximum(src, dst)
    slot = np.minimum(np.searchsorted(kept_keys, column_pair), max(kept_keys.size - 1, 0))
    keep = proper & (kept_keys[slot] == column_pair) if kept_keys.size else np.zeros(src.size, dtype=bool)
    return edge_index[:, torch.from_numpy(keep).to(edge_index.device)]


# --- one entry point per bounding kind, the degrees each bounding caps, and the structure artifact ---------------

BOUND_KINDS: tuple[str, ...] = ("in-degree", "out-degree", "degree")


def _check_kind(kind: str) -> None:
    if kind not in BOUND_KINDS:
        raise ValueError(f"unknown degree bound kind {kind!r}; valid choices: {list(BOUND_KINDS)}")


def bound_degree(
    edge_index: Tensor, *, kind: str, num_nodes: int, max_degree: int, seed: int, train_nodes: Tensor | None = None
) -> Tensor:
    """The ``kind`` bounding ("in-degree": Algorithm 1, which needs ``train_nodes``; "out-degree"; "degree")."""
    _check_kind(kind)
    common = {"num_nodes": num_nodes, "max_degree": max_degree, "seed": seed}
    if kind == "in-degree":
        if train_nodes is None:
            raise ValueError("kind 'in-degree' needs train_nodes (Algorithm 1 keeps edges from training nodes only)")
        return bound_in_degree(edge_index, train_nodes=train_nodes, **common)
    return (bound_out_degree if kind == "out-degree" else bound_undirected_degree)(edge_index, **common)


def capped_degrees(edge_index: Tensor, *, kind: str, num_nodes: int, train_nodes: Tensor | None = None) -> Tensor:
    """[N] the degree the ``kind`` bounding caps: out-degree, undirected degree (self-loops aside), or for
    Algorithm 1 the in-degree from training nodes |RE_v|."""
    _check_kind(kind)
    src, dst = edge_index.cpu()
    if kind == "out-degree":
        return torch.bincount(src, minlength=num_nodes)
    if kind == "degree":
        return torch.bincount(src[src != dst], minlength=num_nodes)
    if train_nodes is None:
        raise ValueError("kind 'in-degree' needs train_nodes (Algorithm 1 keeps edges from training nodes only)")
    is_train = torch.zeros(num_nodes, dtype=torch.bool)
    is_train[train_nodes.cpu()] = True
    return torch.bincount(dst[is_train[src]], minlength=num_nodes)


def identity_bound(kind: str, bound: int) -> int:
    """The degree within which the ``kind`` bounding at ``bound`` keeps every edge: D for out-degree and
    undirected bounding; ⌊K/2⌋ for Algorithm 1, which keeps an in-edge with probability min(1, K/(2|RE_v|))."""
    _check_kind(kind)
    return bound // 2 if kind == "in-degree" else bound


def degree_artifact(
    edge_index: Tensor, *, kind: str, bound: int, seed: int, num_nodes: int, train_nodes: Tensor
) -> dict:
    """The structure artifact of ``kind`` at public ``bound``: the sampled edges, and for the ledger's guarantee
    the identity bound (public: a function of ``kind`` and ``bound``). No count of the input joins it: how many
    nodes exceed a bound is analysis of the dataset (``nodedp.data.stability``), never part of a run."""
    kept = bound_degree(
        edge_index, kind=kind, num_nodes=num_nodes, max_degree=bound, seed=seed, train_nodes=train_nodes
    )
    return {
        "kind": kind,
        "bound": bound,
        "seed": seed,
        "edge_index": kept.to(torch.long),
        "identity_bound": identity_bound(kind, bound),
    }
