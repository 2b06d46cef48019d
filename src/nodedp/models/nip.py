"""NIP-GNN's adaptive calibrated aggregation (ACA, Eq. 14-15); no privacy logic.

Inputs are already private: H̄⁰ (NAP's noisy first aggregation) and a released
graph, normalized as Â = D̂^{-1/2}(Ā + I)D̂^{-1/2}. Each of K hops computes
M = Â·H^{k−1} and, per node, γ_u = max(1 − τ_k/‖M_u − H̄⁰_u‖₂, 0), then
H^k = (1 − γ)·H̄⁰ + γ·M. ``adaptive=False`` drops the residual (H^k = M, the
"w/o A-r" ablation).

τ. The paper learns τ; that needs the whole-graph propagation in every
training step, which is out of reach for the dense graph of its own "w/o D-s"
ablation (≈ N²/4 edges). Here τ_k = ``tau`` × the median of ‖M_u − H̄⁰_u‖₂ at
hop k (scale-free, and a function of released data only), so H^K is computed
once and the classifier (an MLP) trains on its rows.
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
    """H^K of every node (module docstring)."""
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
