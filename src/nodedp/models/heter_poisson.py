"""HeterPoisson's G_net (Xiang, Wang, Wang, S&P 2024; the implementation spec's §2.4) on padded dense subgraphs.

K blocks, each: the mean of the subgraph's rows, ELU, standardised over its entries, ELU, a linear map W (F -> H)
broadcast to every row and added to a residual (the rows zero-padded to H where H > F, else W applied to each
row), ELU; then the matrix standardised over its entries and a linear classifier on row 0 (the root). The input
is the samplers' (x_local [B, S, F], adj [B, S, S], mask [B, S]); adj is not read (a 1-hop star: every member
is the root's neighbour). Unlike the public code, padding rows stay zero and every statistic is taken over the
real rows only, so a root's output does not depend on how its batch was padded (docs/design/models.md).
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["GNet", "GNetBlock"]

_EPS = 1e-6  # the public code's standardisation offset


def _standardise(values: Tensor, mask: Tensor) -> Tensor:
    """(v − mean) / (sd + 1e-6) over each example's entries where ``mask`` holds (sd unbiased, as torch.std);
    ``values`` [B, ...], ``mask`` broadcastable to it; masked-out entries come back 0."""
    mask = mask.to(values.dtype).expand_as(values)  # cast the small mask, then broadcast
    dims = tuple(range(1, values.dim()))
    count = mask.sum(dim=dims, keepdim=True)
    mean = (values * mask).sum(dim=dims, keepdim=True) / count
    var = (((values - mean) * mask) ** 2).sum(dim=dims, keepdim=True) / (count - 1).clamp(min=1)
    return (values - mean) / (var.sqrt() + _EPS) * mask


class GNetBlock(nn.Module):
    """One G_net block: [B, S, F] rows -> [B, S, H] rows (padding rows zero)."""

    def __init__(self, in_dim: int, hidden_dim: int) -> None:
        super().__init__()
        if min(in_dim, hidden_dim) < 1:
            raise ValueError(f"in_dim and hidden_dim must be >= 1, got {in_dim} and {hidden_dim}")
        self.in_dim, self.hidden_dim = in_dim, hidden_dim
        self.post_process = nn.Linear(in_dim, hidden_dim)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        rows = mask[..., None].to(x.dtype)  # [B, S, 1]
        mean = (x * rows).sum(dim=1) / rows.sum(dim=1).clamp(min=1)  # [B, F]
        a = F.elu(_standardise(F.elu(mean), torch.ones_like(mean, dtype=torch.bool)))
        a = self.post_process(a)  # [B, H]
        if self.hidden_dim > self.in_dim:
            residual = F.pad(x, (0, self.hidden_dim - self.in_dim))
        else:
            residual = self.post_process(x)  # the same W on every row
        return F.elu(a[:, None, :] + residual) * rows


class GNet(nn.Module):
    """``num_blocks`` G_net blocks, the matrix standardised over its real rows, a linear classifier on the root.

    ``forward((x_local, adj, mask))`` -> logits [B, num_classes]: one tuple, the training loop's batch input."""

    def __init__(self, in_dim: int, hidden_dim: int, num_classes: int, *, num_blocks: int = 1) -> None:
        super().__init__()
        if num_blocks < 1 or num_classes < 2:
            raise ValueError(f"num_blocks must be >= 1 and num_classes >= 2, got {num_blocks} and {num_classes}")
        dims = [in_dim] + [hidden_dim] * num_blocks
        self.blocks = nn.ModuleList(GNetBlock(a, b) for a, b in itertools.pairwise(dims))
        self.classifier = nn.Linear(hidden_dim, num_classes)

    def forward(self, inputs: tuple[Tensor, Tensor, Tensor]) -> Tensor:
        x_local, _, mask = inputs  # adj unread: a 1-hop star, the block reads every member
        h = x_local * mask[..., None].to(x_local.dtype)
        for block in self.blocks:
            h = block(h, mask)
        h = _standardise(h, mask[..., None])
        return self.classifier(h[:, 0])
