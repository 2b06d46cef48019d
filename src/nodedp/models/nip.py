"""NIP-GNN's adaptive calibrated aggregation (ACA, Eq. 14-15); no privacy logic.

K hops over an already private graph and first aggregation, each mixing the propagated rows with the first
aggregation by a per-node residual γ_u; τ is a fixed multiple of a median (released data only), so the hops run
once and an MLP trains on their output. Details: docs/design/models.md.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["aca_propagate", "normalized_adjacency"]


def normalized_adjacency(edge_index: Tensor, *, num_nodes: int) -> tuple[Tensor, Tensor]:
    """(edge_index, weights) of D̂^{-1/2}(A + I)D̂^{-1/2}, self-loops added (existing ones dropped first)."""
    src, dst = edge_index
    keep = src != dst
    loops = torch.arange(num_nodes, device=edge_index.device)
    src, dst = torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])
    degree = torch.bincount(dst, minlength=num_nodes).to(torch.float32)
    weight = degree[src].rsqrt() * degree[dst].rsqrt()
    return torch.stack([src, dst]), weight


@torch.no_grad()
def aca_propagate(h0: Tensor, edge_index: Tensor, *, hops: int, tau: float, adaptive: bool = True) -> Tensor:
    """H^K of every node (docs/design/models.md)."""
    if hops < 0 or tau < 0:
        raise ValueError(f"hops and tau must be >= 0, got {hops} and {tau}")
    n = h0.size(0)
    (src, dst), weight = normalized_adjacency(edge_index, num_nodes=n)
    # Row u of Â·H sums over u's in-edges; a sparse product never materializes [E, F] (the "w/o D-s"
    # graph has ~N²/4 edges).
    adjacency = torch.sparse_coo_tensor(
        torch.stack([dst, src]), weight.to(h0.dtype), (n, n), check_invariants=True
    ).coalesce()
    h = h0
    for _ in range(hops):
        m = torch.sparse.mm(adjacency, h)
        if not adaptive:
            h = m
            continue
        distance = (m - h0).norm(dim=1, keepdim=True)
        threshold = tau * distance.median()
        gamma = (1 - threshold / distance.clamp(min=torch.finfo(h0.dtype).tiny)).clamp(min=0.0)
        h = (1 - gamma) * h0 + gamma * m
    return h
