"""DP-GNN's paper accountant's conventions: its RDP orders, its δ and the least ε it can state (plain math).

The paper's accountant as its public code runs it (Theorem 1's RDP, converted by dp_accounting's
``compute_epsilon``) is ``nodedp.plans.dp_gnn.paper_epsilon``; what it fixes without any accountant lives here,
so that checking a grid (``nodedp.config``, which refuses a claim below the floor) imports no dp_accounting.
"""

from __future__ import annotations

import math

__all__ = ["PAPER_DELTA_DIVISOR", "PAPER_ORDERS", "paper_delta", "paper_epsilon_floor"]

# The paper's accountant as its public code runs it (differentially_private_gnns/privacy_accountants.py,
# multiterm_dpsgd_privacy_accountant): Theorem 1's RDP at the orders 1.1, 1.2, ..., 9.9 only, converted
# to (ε, δ) by dp_accounting's compute_epsilon at δ = 1/(10·N). The paper itself states no δ.
PAPER_ORDERS: tuple[float, ...] = tuple(round(1 + 0.1 * i, 1) for i in range(1, 90))
PAPER_DELTA_DIVISOR = 10  # δ = 1/(PAPER_DELTA_DIVISOR · N), N training nodes (public code)


def paper_delta(num_examples: int) -> float:
    """The paper's δ: 1/(10·N) for N training nodes (the public code's accountant; the paper states none)."""
    if isinstance(num_examples, bool) or not isinstance(num_examples, int) or num_examples < 1:
        raise ValueError(f"num_examples must be an integer >= 1, got {num_examples!r}")
    return 1.0 / (PAPER_DELTA_DIVISOR * num_examples)


def paper_epsilon_floor(num_examples: int) -> float:
    """The least ε the paper's accountant states for any noise whose RDP is not negligible (above δ²).

    At the orders ≤ 9.9 the conversion alone costs min_α [ln(1 − 1/α) + ln(1/(δα))/(α − 1)]; below it, only
    noise so large that the RDP falls under δ² (where the conversion answers ε = 0) would do.
    """
    delta = paper_delta(num_examples)
    return min(math.log1p(-1 / a) - math.log(delta * a) / (a - 1) for a in PAPER_ORDERS)
