"""Randomized response on the adjacency matrix (EdgeRand, Wu et al. 2022 "LinkTeller").

Every pair's entry flips with probability 1/(1 + e^ε): ε-edge-DP for that pair, O(N²) time.
Details: docs/design/mechanisms.md.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["flip_probability", "randomize_adjacency"]

_ROWS_PER_BLOCK = 512


def flip_probability(epsilon: float) -> float:
    """p = 1/(1 + e^ε), the per-entry flip probability of ε-DP randomized response."""
    if isinstance(epsilon, bool) or not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"randomized response needs a finite ε > 0, got {epsilon!r}")
    return 1.0 / (1.0 + math.exp(epsilon))


def randomize_adjacency(
    edge_index: Tensor, *, num_nodes: int, epsilon: float, undirected: bool, generator: torch.Generator
) -> Tensor:
    """The edge_index [2, E'] of the adjacency with every pair's entry flipped w.p. 1/(1 + e^ε).

    Self-loops are neither read nor produced. With ``undirected`` the input
    must store both directions of every edge and so does the output.
    """
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be ≥ 1, got {num_nodes}")
    p = flip_probability(epsilon)
    src, dst = edge_index[0].cpu(), edge_index[1].cpu()
    keep = src != dst
    if undirected:
        keep &= src < dst  # one entry per unordered pair
    existing = torch.unique(src[keep] * num_nodes + dst[keep])

    flips = []
    gen_device = generator.device
    columns = torch.arange(num_nodes, device=gen_device)
    for start in range(0, num_nodes, _ROWS_PER_BLOCK):
        rows = torch.arange(start, min(start + _ROWS_PER_BLOCK, num_nodes), device=gen_device)
        draw = torch.rand((rows.numel(), num_nodes), generator=generator, device=gen_device) < p
        # Pairs that exist: upper triangle (undirected) or off-diagonal (directed).
        valid = columns.unsqueeze(0) > rows.unsqueeze(1) if undirected else columns.unsqueeze(0) != rows.unsqueeze(1)
        r, c = torch.nonzero(draw & valid, as_tuple=True)
        flips.append(((rows[r] * num_nodes) + c).cpu())
    flipped = torch.cat(flips) if flips else torch.empty(0, dtype=torch.long)
    # Output = existing XOR flipped.
    survivors = existing[~torch.isin(existing, flipped)]
    added = flipped[~torch.isin(flipped, existing)]
    keys = torch.cat([survivors, added])
    out_src, out_dst = keys // num_nodes, keys % num_nodes
    if undirected:
        out_src, out_dst = torch.cat([out_src, out_dst]), torch.cat([out_dst, out_src])
    return torch.stack([out_src, out_dst]).to(edge_index.device)
