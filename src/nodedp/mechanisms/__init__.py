"""Pure tensor mechanisms: noise and clipping."""

from __future__ import annotations

from nodedp.mechanisms.clipping import clip_factors, clip_rows
from nodedp.mechanisms.noise import gaussian_noise_like, laplace_noise

__all__ = ["clip_factors", "clip_rows", "gaussian_noise_like", "laplace_noise"]
