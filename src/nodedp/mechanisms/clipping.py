"""ℓ2 clipping: the per-example factor of DP-SGD and row clipping of features."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _check_max_norm(max_norm: float) -> None:
    if not (math.isfinite(max_norm) and max_norm > 0):
        raise ValueError(f"max_norm must be finite and > 0, got {max_norm!r}")


def clip_factors(norms: Tensor, *, max_norm: float) -> Tensor:
    """min(1, C / norm) for each norm: scaling a vector of that norm by it gives norm ≤ C.

    Computed as 1 / max(1, norm / C), which is 1 at norm 0 without an epsilon.
    """
    _check_max_norm(max_norm)
    return norms.div(max_norm).clamp_(min=1.0).reciprocal_()


def clip_rows(x: Tensor, *, max_norm: float) -> Tensor:
    """Scale every row (last dimension) of ``x`` to ℓ2 norm at most ``max_norm``."""
    factors = clip_factors(torch.linalg.vector_norm(x, dim=-1), max_norm=max_norm)
    return x * factors.unsqueeze(-1)
