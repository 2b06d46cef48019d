"""Argument checks shared by the accounting modules (clear errors that name the argument), δ included."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# A cost (ε, δ) recomputed from a ledger's raw parameters agrees with the one it states to this relative tolerance
# (ledger, metrics.json and verify's re-plan alike); raw parameters themselves are compared more tightly.
VERIFY_RTOL = 1e-6


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """``value`` as an int ≥ ``minimum`` (numpy integers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_positive(value: Any, name: str) -> float:
    """``value`` as a finite float > 0 (numpy numbers accepted, bools refused)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.number)
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_delta(delta: float, name: str = "delta") -> None:
    """Refuse a δ outside (0, 1) (δ = 0 makes every Gaussian ε infinite)."""
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0 < delta < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}")
