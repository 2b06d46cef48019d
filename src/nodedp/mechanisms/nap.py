"""NAP, the normalized aggregation perturbation of GAP/ProGAP (ProGAP Eq. 7).

Rows normalised, summed over in-edges, clipped to R, then N(0, σ²) per entry with σ = z·Δ; node level
Δ = √(D + R²) with out-degrees bounded to D. Sensitivity arguments: docs/design/mechanisms.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from nodedp.accounting import LEVELS
from nodedp.mechanisms.clipping import clip_rows
from nodedp.mechanisms.edge_sum import neighbour_sum
from nodedp.mechanisms.noise import gaussian_noise_like
from nodedp.mechanisms.trace import new_source, note_draw

__all__ = ["NAP", "nap_aggregate", "nap_sensitivity"]


def _check_row_clip(row_clip: float, *, finite: bool = False) -> None:
    """R > 0; inf (no clipping) is allowed where R is not part of the sensitivity (edge level, non-private)."""
    if (
        isinstance(row_clip, bool)
        or not isinstance(row_clip, int | float)
        or math.isnan(row_clip)
        or not row_clip > 0
        or (finite and math.isinf(row_clip))
    ):
        kind = "a finite number" if finite else "a number (or inf: no clipping)"
        raise ValueError(f"row_clip must be {kind} > 0, got {row_clip!r}")


def nap_sensitivity(*, level: str, max_degree: int | None, row_clip: float, undirected: bool) -> float:
    """ℓ2 sensitivity of the aggregated matrix: √(D + R²) at node level, 1 or √2 (undirected) at edge level."""
    _check_row_clip(row_clip, finite=level == "node")
    if level == "node":
        if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
            raise ValueError(
                f"node-level NAP needs the out-degree bound max_degree, an integer >= 1, got {max_degree!r}"
            )
        return math.sqrt(max_degree + row_clip**2)
    if level == "edge":
        return math.sqrt(2.0) if undirected else 1.0
    raise ValueError(f"NAP sensitivity is defined for levels ['node', 'edge'], got {level!r}")


def nap_aggregate(x: Tensor, edge_index: Tensor, *, num_nodes: int, row_clip: float) -> Tensor:
    """S = clip_R(Σ_{j->i} x_j/‖x_j‖): the deterministic part of NAP, a sum over the edges (``neighbour_sum``)."""
    _check_row_clip(row_clip)
    if x.dim() != 2 or x.size(0) != num_nodes:
        raise ValueError(f"x must be [num_nodes={num_nodes}, F], got {list(x.shape)}")
    if edge_index.dtype != torch.int64 or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be int64 [2, E], got {edge_index.dtype} {list(edge_index.shape)}")
    src, dst = edge_index
    # normalize divides by max(‖x‖, 1e-12): zero rows stay zero, every norm ≤ 1.
    normalized = F.normalize(x, p=2.0, dim=-1)
    summed = neighbour_sum(normalized, src, dst)  # in chunks of edges on large graphs, the same sum
    return summed if math.isinf(row_clip) else clip_rows(summed, max_norm=row_clip)


@dataclass(eq=False)
class NAP:
    """One NAP mechanism; ``calls`` counts its noisy queries (each one is charged in the ledger).

    ``noise_multiplier`` z > 0 gives noise std z·Δ with Δ = ``nap_sensitivity``;
    only ``level="none"`` (non-private) takes z = 0 and adds no noise.
    ``max_degree`` is needed at node level only, ``undirected`` at edge level only.
    """

    level: str
    row_clip: float
    noise_multiplier: float
    max_degree: int | None = None
    undirected: bool = True
    sensitivity: float | None = field(init=False)
    calls: int = field(default=0, init=False)
    trace_source: int = field(default_factory=new_source, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The ledger's levels: "none" is the non-private twin.
        if self.level not in LEVELS:
            raise ValueError(f"unknown NAP level {self.level!r}; valid choices: {list(LEVELS)}")
        z = self.noise_multiplier
        if isinstance(z, bool) or not isinstance(z, int | float) or not math.isfinite(z):
            raise ValueError(f"noise_multiplier must be a finite number, got {z!r}")
        if self.level == "none":
            _check_row_clip(self.row_clip)
            if z != 0:
                raise ValueError(
                    f"a non-private NAP (level 'none') adds no noise: noise_multiplier must be 0, got {z!r}"
                )
            self.sensitivity = None
            return
        if not z > 0:
            raise ValueError(f"a {self.level}-level NAP needs noise_multiplier > 0, got {z!r}")
        self.sensitivity = nap_sensitivity(
            level=self.level, max_degree=self.max_degree, row_clip=self.row_clip, undirected=self.undirected
        )

    @property
    def noise_std(self) -> float:
        """σ = z·Δ, the std of the noise on every entry (0 only when non-private)."""
        return 0.0 if self.sensitivity is None else self.noise_multiplier * self.sensitivity

    def __call__(self, x: Tensor, edge_index: Tensor, *, generator: torch.Generator) -> Tensor:
        """The noisy aggregation nap_aggregate(x) + N(0, σ²); counts one query."""
        aggregated = nap_aggregate(x, edge_index, num_nodes=x.size(0), row_clip=self.row_clip)
        self.calls += 1
        if self.sensitivity is None:
            return aggregated
        std = self.noise_std
        note_draw(
            "nap", self.trace_source, std=std, level=self.level, row_clip=self.row_clip, max_degree=self.max_degree
        )
        return aggregated + gaussian_noise_like(aggregated, std=std, generator=generator)
