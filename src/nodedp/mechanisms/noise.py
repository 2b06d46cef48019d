"""Additive noise for the Gaussian and Laplace mechanisms.

Samples come from an explicit ``torch.Generator`` so that a run is reproducible
from its seed and no mechanism reads the global RNG.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _check_scale(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")


def gaussian_noise_like(t: Tensor, *, std: float, generator: torch.Generator) -> Tensor:
    """N(0, std²) i.i.d. noise with the shape, dtype and device of ``t``.

    Drawn on the generator's device and moved to ``t``'s, so a CPU generator can
    still noise a CUDA tensor (reproducibly, at the cost of a copy).
    """
    noise = torch.empty(t.shape, device=generator.device, dtype=t.dtype)
    return gaussian_noise_(noise, std=std, generator=generator).to(t.device)


def gaussian_noise_(t: Tensor, *, std: float, generator: torch.Generator) -> Tensor:
    """Overwrite ``t`` with N(0, std²) i.i.d. noise, the values ``gaussian_noise_like(t)`` would return.

    Drawn straight into ``t`` when it is contiguous on the generator's device
    (no allocation: DP-SGD noises a buffer of the model's size every step),
    else drawn there and copied in. Returns ``t``.
    """
    _check_scale("std", std)
    if t.device == generator.device and t.is_contiguous():
        return t.normal_(0.0, std, generator=generator)
    noise = torch.empty(t.shape, device=generator.device, dtype=t.dtype)
    return t.copy_(noise.normal_(0.0, std, generator=generator))


def laplace_noise(
    shape: tuple[int, ...] | torch.Size,
    *,
    scale: float,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """i.i.d. Laplace(0, scale) noise (density exp(-|x|/scale) / 2·scale)."""
    _check_scale("scale", scale)
    # The difference of two Exp(1) variables is Laplace(0, 1); torch has no
    # generator-aware Laplace sampler, but exponential_ takes a generator.
    both = torch.empty((2, *shape), device=generator.device, dtype=dtype)
    both.exponential_(1.0, generator=generator)
    return (both[0] - both[1]).mul_(scale).to(device)
