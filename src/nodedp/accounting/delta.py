"""The δ policy: δ must be well below 1/N, N the number of private units.

A mechanism that releases one unit's data outright, chosen uniformly at
random, is (0, 1/N)-DP; δ ≥ 1/N therefore allows exactly that failure.
"""

from __future__ import annotations

import math


def _check_units(num_private_units: int) -> None:
    if isinstance(num_private_units, bool) or not isinstance(num_private_units, int) or num_private_units < 1:
        raise ValueError(f"num_private_units must be an integer >= 1, got {num_private_units!r}")


def default_delta(num_private_units: int) -> float:
    """The largest power of ten strictly below 1/N: 10^-ceil(log10(N + 1))."""
    _check_units(num_private_units)
    # ceil(log10(N + 1)) is the number of decimal digits of N; exact in integers.
    return 10.0 ** -len(str(num_private_units))


def resolve_delta(delta: float | str | None, *, num_private_units: int) -> float:
    """``None`` or ``"auto"`` -> ``default_delta(N)``; a number must lie in (0, 1/N)."""
    _check_units(num_private_units)
    if delta is None or delta == "auto":
        return default_delta(num_private_units)
    if isinstance(delta, str | bool) or not isinstance(delta, int | float):
        raise ValueError(f"delta must be None, 'auto' or a number in (0, 1), got {delta!r}")
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not delta < 1 / num_private_units:
        raise ValueError(
            f"delta = {delta:g} is not below 1/N = 1/{num_private_units}: with δ ≥ 1/N a mechanism may "
            f"release one of the N private units' data outright; use 'auto' ({default_delta(num_private_units):g}) "
            f"or a smaller δ"
        )
    return float(delta)
