"""PPRGo's model as DPAR uses it: an MLP on node features, predictions aggregated with PPR weights.

Training (Bojchevski et al. 2020, Eq. 1; DPAR Algorithm 2): the logits of a
training row i are Σ_k w_ik · f(x_{j_ik}), the MLP f applied to the features
of the row's (at most K) nodes j_ik and summed with its (DP-)APPR weights.
Inference (PPRGo §3.3, DPAR §4): H = f(X) for every node of the inference
graph, then P steps of power iteration Q ← (1 − α)·D⁻¹A·Q + α·H from Q = H;
the logits are Q. An isolated node keeps α·H, whose argmax is H's.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nodedp.mechanisms.edge_sum import neighbour_sum
from nodedp.models.mlp import MLP

__all__ = ["PPRGo", "power_iteration"]


class PPRGo(nn.Module):
    """f = a ``num_layers``-layer MLP (hidden ``hidden_dim``, ReLU, dropout); forward takes (x, w).

    ``x``: [B, K, F] features of each row's nodes; ``w``: [B, K] their weights
    (0 for padding). Returns [B, C] = Σ_k w[:, k] · f(x[:, k]).
    """

    def __init__(
        self, in_dim: int, hidden_dim: int, num_classes: int, *, num_layers: int = 2, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.mlp = MLP(in_dim, hidden_dim, num_classes, num_layers=num_layers, dropout=dropout)

    def forward(self, inputs: tuple[Tensor, Tensor]) -> Tensor:
        x, w = inputs
        if x.dim() != 3 or w.shape != x.shape[:2]:
            raise ValueError(f"PPRGo takes x [B, K, F] and w [B, K], got {tuple(x.shape)} and {tuple(w.shape)}")
        return (self.mlp(x) * w.unsqueeze(-1)).sum(dim=1)

    @torch.no_grad()
    def propagate(self, x: Tensor, edge_index: Tensor, *, alpha: float, steps: int) -> Tensor:
        """Logits of every node by ``power_iteration`` of f(x) over ``edge_index``."""
        return power_iteration(self.mlp(x), edge_index, alpha=alpha, steps=steps)


def power_iteration(h: Tensor, edge_index: Tensor, *, alpha: float, steps: int) -> Tensor:
    """Q ← (1 − α)·D⁻¹A·Q + α·H, ``steps`` times from Q = H; A from ``edge_index`` (src → dst), D its out-degrees.

    Row i of D⁻¹A·Q is the mean of Q over i's neighbours (edges i → j); pass
    both directions of an undirected graph.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha (teleport probability) must be in (0, 1], got {alpha}")
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    src, dst = edge_index.to(h.device)
    degree = torch.bincount(src, minlength=h.size(0)).clamp(min=1).to(h.dtype)
    q = h
    for _ in range(steps):  # the [E, C] messages in chunks of edges (neighbour_sum): 23 GB at once on products
        q = (1 - alpha) * (neighbour_sum(q, dst, src) / degree.unsqueeze(-1)) + alpha * h
    return q
