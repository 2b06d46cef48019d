"""DP-APPR: DPAR's differentially private top-K APPR rows (Algorithms 1 and 3) and their post-processing.

``dp_appr_em`` (exponential mechanism by Gumbel noise, options em0/em1) and ``dp_appr_gm`` (Gaussian) release K
entries per row of non-negative APPR vectors; ``cap_row_occurrences`` and ``clip_columns_l1`` post-process the
release. Sensitivities: ``nodedp.accounting.dpar``; details: docs/design/appr.md.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nodedp.accounting.dpar import check_em_option, gm_sensitivity
from nodedp.mechanisms.clipping import clip_factors, clip_rows
from nodedp.mechanisms.noise import gaussian_noise_like, laplace_noise

__all__ = [
    "cap_row_occurrences",
    "clip_appr_entries",
    "clip_appr_rows",
    "clip_columns_l1",
    "dp_appr_em",
    "dp_appr_gm",
]


def _check_positive(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _check_rows(rows: Tensor, name: str) -> None:
    if rows.dim() != 2 or not rows.is_floating_point():
        raise ValueError(f"{name} must be a floating-point [M, N] tensor, got {rows.dim()}-d {rows.dtype}")


def _check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"k must be an integer in [1, {n}] (the number of columns), got {k!r}")


def clip_appr_entries(appr: Tensor, *, clip: float) -> Tensor:
    """Algorithm 1 line 6: every entry into [0, C2] (for p ≥ 0, p/max(1, p/C2) = min(p, C2))."""
    _check_rows(appr, "appr")
    _check_positive(clip, "clip")
    return appr.clamp(min=0.0, max=clip)


def clip_appr_rows(appr: Tensor, *, clip: float) -> Tensor:
    """Algorithm 3 line 6: non-negative rows scaled to ℓ2 norm ≤ C1."""
    _check_rows(appr, "appr")
    _check_positive(clip, "clip")
    return clip_rows(appr.clamp(min=0.0), max_norm=clip)


def _gumbel_like(t: Tensor, *, scale: float, generator: torch.Generator) -> Tensor:
    """Gumbel(0, scale) noise in float64 (−scale·ln E, E ~ Exp(1)); float32 draws hit E = 0 too often."""
    e = torch.empty(t.shape, device=generator.device, dtype=torch.float64).exponential_(1.0, generator=generator)
    return e.clamp_(min=torch.finfo(torch.float64).tiny).log_().mul_(-scale).to(t.device)


def dp_appr_em(
    appr: Tensor,
    *,
    k: int,
    epsilon: float,
    clip: float,
    option: str,
    generator: torch.Generator,
    epsilon_value: float | None = None,
) -> Tensor:
    """DP-APPR-EM (Algorithm 1): K noisy-top indices per row, values 1/K (em0) or noisy clipped values (em1).

    ``epsilon`` is Corollary 1's per-selection ε: the noise is Gumbel(C2/ε) and
    the K selections of one row cost 2Kε (pure) or Corollary 1's ε' at δ.
    ``epsilon_value`` is option II's per-row ε2 (Laplace scale K·C2/ε2); em0
    takes none. ``nodedp.accounting.dpar.dp_appr_em_records`` charges both.
    """
    check_em_option(option, epsilon_value)
    _check_positive(epsilon, "epsilon")
    scores = clip_appr_entries(appr, clip=clip)
    _check_k(k, scores.shape[1])
    noisy = scores.double() + _gumbel_like(scores, scale=clip / epsilon, generator=generator)
    index = noisy.topk(k, dim=1).indices
    if option == "em0":
        values = torch.full(index.shape, 1.0 / k, dtype=scores.dtype, device=scores.device)
    else:
        scale = k * clip / epsilon_value  # type: ignore[operator]
        noise = laplace_noise(index.shape, scale=scale, generator=generator, device=scores.device, dtype=scores.dtype)
        values = scores.gather(1, index) + noise
    return torch.zeros_like(scores).scatter_(1, index, values)


def dp_appr_gm(appr: Tensor, *, k: int, noise_multiplier: float, clip: float, generator: torch.Generator) -> Tensor:
    """DP-APPR-GM (Algorithm 3): ℓ2-clip rows to C1, add N(0, (z·√2·C1)²), keep the K largest noisy entries."""
    _check_positive(noise_multiplier, "noise_multiplier")
    rows = clip_appr_rows(appr, clip=clip)
    _check_k(k, rows.shape[1])
    noisy = rows + gaussian_noise_like(rows, std=noise_multiplier * gm_sensitivity(clip=clip), generator=generator)
    index = noisy.topk(k, dim=1).indices
    return torch.zeros_like(rows).scatter_(1, index, noisy.gather(1, index))


def cap_row_occurrences(rows: Tensor, *, max_rows: int, generator: torch.Generator) -> Tensor:
    """Zero entries so that every column is non-zero in at most ``max_rows`` rows.

    A column over the cap keeps a uniformly random ``max_rows`` of its non-zero
    rows. On a released DP-APPR matrix this is post-processing; it makes the
    number of training rows one node's features enter a public bound.
    """
    _check_rows(rows, "rows")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be an integer >= 1, got {max_rows!r}")
    nonzero = rows != 0
    # Random priorities in [0, 1), zeros pushed to the back; a column keeps its max_rows first.
    priority = torch.rand(rows.shape, generator=generator, device=generator.device).to(rows.device)
    priority = priority.masked_fill_(~nonzero, 2.0)
    rank = priority.argsort(dim=0).argsort(dim=0)
    return rows * (nonzero & (rank < max_rows))


def clip_columns_l1(columns: Tensor, values: Tensor, *, num_columns: int, tau: float) -> Tensor:
    """Algorithm 2 line 3: scale every column to ℓ1 norm ≤ τ (Π_{:,j} / max(1, ‖Π_{:,j}‖₁/τ)).

    Π is given row-wise: row i holds ``values[i, k]`` in column ``columns[i, k]``
    (both [R, K]; a column may repeat within a row only with value 0, as padding).
    Returns the scaled values.
    """
    if columns.shape != values.shape or columns.dim() != 2 or not values.is_floating_point():
        raise ValueError(
            f"columns and values must be [R, K] (values floating-point), got "
            f"{tuple(columns.shape)} and {tuple(values.shape)}"
        )
    _check_positive(tau, "tau")
    column_l1 = torch.zeros(num_columns, dtype=values.dtype, device=values.device)
    column_l1.index_add_(0, columns.flatten(), values.abs().flatten())
    return values * clip_factors(column_l1, max_norm=tau)[columns]
