"""Degree bounding by edge sampling, with per-edge reproducible randomness.

Every edge (src, dst) gets its random draw from a counter-based hash of
(seed, purpose, src, dst) (splitmix64, vectorised in numpy uint64), the
stateless analogue of ``fold_in(rng, node)``: the result does not depend on
the order in which edges are listed, and removing a node leaves the draw of
every other edge unchanged, which is what neighbouring-graph arguments need.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["bound_in_degree", "bound_out_degree"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
# Distinct streams so the two samplers never share draws under one seed.
_IN_DEGREE_STREAM = 1
_OUT_DEGREE_STREAM = 2


def _splitmix64(z: np.ndarray) -> np.ndarray:
    # uint64 array arithmetic wraps modulo 2**64, as splitmix64 requires.
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _edge_hashes(src: np.ndarray, dst: np.ndarray, *, seed: int, stream: int) -> np.ndarray:
    """A uint64 hash per edge, a pure function of (seed, stream, src, dst)."""
    base = _splitmix64(np.array([seed], dtype=np.uint64) ^ np.uint64(stream))
    return _splitmix64(_splitmix64(base ^ src.astype(np.uint64)) ^ dst.astype(np.uint64))


def _edge_uniforms(src: np.ndarray, dst: np.ndarray, *, seed: int, stream: int) -> np.ndarray:
    """Uniform [0, 1) per edge from the top 53 bits of its hash."""
    hashes = _edge_hashes(src, dst, seed=seed, stream=stream)
    return (hashes >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _check_inputs(edge_index: Tensor, *, num_nodes: int, max_degree: int, seed: int) -> None:
    if edge_index.dtype != torch.int64 or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be int64 [2, E], got {edge_index.dtype} {list(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, num_nodes={num_nodes})")
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must lie in [0, 2**64), got {seed}")


def bound_in_degree(
    edge_index: Tensor, *, num_nodes: int, train_nodes: Tensor, max_degree: int, seed: int
) -> Tensor:
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
    """
    _check_inputs(edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    train_ids = train_nodes.cpu().numpy()
    if train_ids.size and (train_ids.min() < 0 or train_ids.max() >= num_nodes):
        raise ValueError(f"train_nodes has node ids outside [0, num_nodes={num_nodes})")
    src, dst = edge_index.cpu().numpy()
    is_train = np.zeros(num_nodes, dtype=bool)
    is_train[train_ids] = True

    candidate = is_train[src]
    incoming = np.bincount(dst[candidate], minlength=num_nodes)
    keep_prob = np.minimum(1.0, max_degree / (2.0 * np.maximum(incoming, 1)))
    keep = candidate & (_edge_uniforms(src, dst, seed=seed, stream=_IN_DEGREE_STREAM) < keep_prob[dst])
    overfull = np.bincount(dst[keep], minlength=num_nodes) > max_degree
    keep &= ~overfull[dst]
    return edge_index[:, torch.from_numpy(keep).to(edge_index.device)]


def bound_out_degree(edge_index: Tensor, *, num_nodes: int, max_degree: int, seed: int) -> Tensor:
    """GAP/ProGAP degree bounding: every node keeps at most D outgoing edges.

    The D kept edges of a source are those with the smallest per-edge hashes, a
    uniformly random D-subset of its out-edges (all of them if it has <= D).
    Returns the kept columns of ``edge_index`` in their original order.
    """
    _check_inputs(edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    src, dst = edge_index.cpu().numpy()
    hashes = _edge_hashes(src, dst, seed=seed, stream=_OUT_DEGREE_STREAM)
    # For a fixed src the hash is a bijection of dst (splitmix64 is one), so
    # there are no ties and the order does not depend on the column order.
    order = np.lexsort((hashes, src))
    sorted_src = src[order]
    out_degree = np.bincount(src, minlength=num_nodes)
    group_start = np.cumsum(out_degree) - out_degree
    rank = np.arange(src.size) - group_start[sorted_src]
    keep = np.zeros(src.size, dtype=bool)
    keep[order] = rank < max_degree
    return edge_index[:, torch.from_numpy(keep).to(edge_index.device)]
