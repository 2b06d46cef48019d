"""RDP of one-shot Gumbel top-K selection (DPAR's DP-APPR-EM), as a ledger RDP curve.

``selections`` peeling exponential-mechanism steps at ε have RDP selections · min(α·ε²/2, 2ε) at order α
(why: docs/design/accounting.md). Torch-free and free of the ledger, which imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nodedp.accounting._checks import check_int, check_positive


def gumbel_topk_rdp(*, epsilon: float, selections: int, orders: Sequence[float]) -> np.ndarray:
    """RDP at ``orders`` of ``selections`` peeling steps of Gumbel(Δ/ε) selection (docs/design/accounting.md)."""
    check_positive(epsilon, "epsilon")
    check_int(selections, "selections", minimum=1)
    alphas = np.asarray(orders, dtype=float)
    if alphas.ndim != 1 or not np.all(alphas > 1):
        raise ValueError(f"orders must be a sequence of numbers > 1, got {orders!r}")
    return selections * np.minimum(alphas * epsilon**2 / 2, 2 * epsilon)


def gumbel_topk_rdp_of_params(params: Mapping[str, Any], orders: Sequence[float]) -> np.ndarray:
    """The curve of a ledger record of kind "gumbel_topk": params hold "epsilon" and "selections"."""
    missing = [key for key in ("epsilon", "selections") if key not in params]
    if missing:
        raise ValueError(f"gumbel_topk params lack {missing}; they need ['epsilon', 'selections']")
    return gumbel_topk_rdp(epsilon=params["epsilon"], selections=params["selections"], orders=orders)
