"""DPDGC's models (Chien et al. 2023): the adjacency encoder MLP_A and the LINKX-style classifier.

No privacy logic here (``nodedp.methods.dpdgc`` has it). ``AdjacencyEncoder`` embeds a node's adjacency row through
a table with unit-norm columns, the row sum clipped; ``LinkxClassifier`` combines features and the released
embedding. Shapes and the corrections to the public code: docs/design/models.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.mechanisms.clipping import clip_rows
from nodedp.models.gap import StageMLP

__all__ = ["AdjacencyEncoder", "AdjacencyRows", "LinkxClassifier"]


@dataclass(frozen=True)
class AdjacencyRows:
    """A batch's adjacency rows A[nodes] [B, N] kept on the columns they touch: ``counts`` [B, C] is
    A[nodes][:, columns], every other entry is zero. Dense rows would make each step cost B·N."""

    columns: Tensor  # [C] distinct node ids, ascending
    counts: Tensor  # [B, C] float: number of edges columns[c] -> nodes[b]


class _Table(nn.Module):
    """Ŵ as a weight [h, N], column j node j's embedding; applied to a batch it reads only the batch's columns."""

    def __init__(self, num_nodes: int, hidden_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden_dim, num_nodes))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # nn.Linear(N, h)'s initialisation

    def forward(self, rows: AdjacencyRows) -> Tensor:
        """a_u Ŵ for each row [B, h]."""
        return F.linear(rows.counts, self.weight.index_select(1, rows.columns))


class _Bias(nn.Module):
    """A learned shift added after the clipped aggregation (so that the clip sees only a_u Ŵ)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(width))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.bias


class AdjacencyEncoder(nn.Module):
    """MLP_A: adjacency rows (``AdjacencyRows``) -> logits [B, K] through a learned, column-normalized
    embedding table."""

    def __init__(
        self,
        num_nodes: int,
        num_classes: int,
        *,
        hidden_dim: int,
        row_clip: float,
        dropout: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if min(num_nodes, num_classes, hidden_dim) < 1:
            raise ValueError(
                f"num_nodes, num_classes and hidden_dim must be ≥ 1, got {num_nodes}, {num_classes}, {hidden_dim}"
            )
        if num_classes > hidden_dim:
            raise ValueError(
                f"the frozen orthogonal head needs num_classes ≤ hidden_dim, got {num_classes} > {hidden_dim}"
            )
        if not row_clip > 0:
            raise ValueError(f"row_clip must be > 0, got {row_clip}")
        self.row_clip = float(row_clip)
        self.table = _Table(num_nodes, hidden_dim)
        self.shift = _Bias(hidden_dim)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(hidden_dim, num_classes, bias=False)
        with torch.no_grad():
            q, _ = torch.linalg.qr(torch.randn(hidden_dim, hidden_dim, generator=generator))
            self.head.weight.copy_(q[:num_classes] * math.sqrt(6.0 / hidden_dim))
        self.head.weight.requires_grad_(False)
        self.normalize_()

    @torch.no_grad()
    def normalize_(self) -> None:
        """Project each node's embedding (a weight column) onto the unit sphere, in place.

        ``F.normalize(weight, dim=0)``'s values without its copy of the table (N·h, after every step)."""
        weight = self.table.weight
        weight.div_(torch.linalg.vector_norm(weight, dim=0, keepdim=True).clamp_min_(1e-12))

    def embedding_table(self) -> Tensor:
        """Ŵ [N, h]: row j is node j's embedding (detached)."""
        return self.table.weight.detach().t()

    def shifted(self, aggregated: Tensor) -> Tensor:
        """z = clip_R(a_u Ŵ) + b from the table's output a_u Ŵ."""
        return self.shift(clip_rows(aggregated, max_norm=self.row_clip))

    def logits(self, shifted: Tensor) -> Tensor:
        """The frozen head's logits from z (``shifted``)."""
        return self.head(F.selu(self.dropout(shifted)))

    def forward(self, rows: AdjacencyRows) -> Tensor:
        return self.logits(self.shifted(self.table(rows)))


class LinkxClassifier(nn.Module):
    """(x [B, F], x̃_A [B, h]) -> logits [B, K], LINKX's combination with a residual."""

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        hidden_dim: int,
        base_layers: int = 2,
        mix_layers: int = 2,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        common: dict[str, Any] = {"hidden_dim": hidden_dim, "normalization": "none", "dropout": dropout}
        self.features = StageMLP(in_features, hidden_dim, num_layers=base_layers, **common)
        self.mix = StageMLP(2 * hidden_dim, hidden_dim, num_layers=mix_layers, **common)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(hidden_dim, num_classes)
        self.hidden_dim = hidden_dim

    def forward(self, inputs: tuple[Tensor, Tensor]) -> Tensor:
        if isinstance(inputs, Tensor) or len(inputs) != 2:
            raise ValueError("LinkxClassifier takes (features [B, F], released embedding [B, h])")
        x, xa = inputs
        if xa.size(-1) != self.hidden_dim:
            raise ValueError(
                f"the released embedding must have width hidden_dim = {self.hidden_dim}, got {xa.size(-1)}"
            )
        xx = self.features(x)
        h = self.mix(F.selu(self.dropout(torch.cat([xx, xa], dim=-1)))) + xx + xa
        return self.head(F.selu(self.dropout(h)))
