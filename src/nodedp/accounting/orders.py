"""The Rényi orders at which every RDP curve of the suite is evaluated and converted to (ε, δ)."""

from __future__ import annotations

# dp_accounting's default grid (1.1..10.9, 11..63; opacus' lacks only 11)
# plus large orders up to 1024, denser below 256 where the subsampled
# Gaussian's RDP turns from ~q²α/σ² to ~α/2σ² and the optimum usually sits.
# Orders below 1.1 only matter for ε above ~100 (the RDP->DP conversion
# refuses α ≤ 1.01); orders above 1024 only tighten ε below ~0.05, yet the
# integer-order series costs O(α) per order and they would triple the cost
# of every calibration step.
RDP_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10 for x in range(1, 100)]
    + [float(a) for a in range(11, 64)]
    + [64.0, 72.0, 80.0, 88.0, 96.0, 112.0, 128.0, 144.0, 160.0, 192.0, 224.0, 256.0]
    + [320.0, 384.0, 448.0, 512.0, 640.0, 768.0, 1024.0]
)
