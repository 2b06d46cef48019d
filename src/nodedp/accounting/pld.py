"""The suite's one privacy loss distribution (PLD) grid: a DpEvent's PLD, and ε of composed PLDs.

PLDs compose only on equal grids, so every PLD of a ledger (a DpEvent's here, an occurrence mixture's in
``nodedp.accounting.mixture_pld``) is built at ``VALUE_DISCRETIZATION_INTERVAL``, pessimistically.
"""

from __future__ import annotations

from collections.abc import Sequence

from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import UnsupportedEventError

from nodedp.accounting._checks import check_delta, check_positive
from nodedp.accounting._dp_private import accountant_pld

__all__ = [
    "LOG_MASS_TRUNCATION_BOUND",
    "VALUE_DISCRETIZATION_INTERVAL",
    "epsilon_pld",
    "pld_of_event",
]

# One grid for every PLD of a ledger (PLDs compose only on equal grids). At
# 1e-3 one ε of T ≤ 1000 steps, d ≤ 30 takes ≤ 0.2 s, and connect-the-dots
# rounding raised ε by ≤ 1e-3 (absolute) over 1e-4 in the benchmark's cases.
VALUE_DISCRETIZATION_INTERVAL = 1e-3
# ln of the noise mass each Gaussian PLD may drop (moved to infinite loss).
LOG_MASS_TRUNCATION_BOUND = -50.0
# Convolution tails moved to the infinity mass (dp_accounting's default).
_TAIL_MASS_TRUNCATION = 1e-15


def _check_interval(value_discretization_interval: float) -> float:
    interval = check_positive(value_discretization_interval, "value_discretization_interval")
    if interval > 0.1:
        raise ValueError(f"value_discretization_interval = {interval} is too coarse to be useful (> 0.1)")
    return interval


def _infinite_loss_pld(interval: float) -> pld_lib.PrivacyLossDistribution:
    """All mass at infinite loss: dominates every pair (δ = 1 at every ε)."""
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability({}, 1.0, interval)


def pld_of_event(
    event: dp_event.DpEvent, *, value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL
) -> pld_lib.PrivacyLossDistribution:
    """The PLD dp_accounting's ``PLDAccountant`` builds for ``event`` (add/remove adjacency), on this grid.

    Reads the accountant's PLD (private in dp_accounting: ``nodedp.accounting._dp_private``; the public API
    returns only ε and δ). Non-private events give infinite loss.
    """
    interval = _check_interval(value_discretization_interval)
    accountant = PLDAccountant(value_discretization_interval=interval)
    try:
        accountant.compose(event)
    except UnsupportedEventError as err:
        raise ValueError(f"the 'pld' accountant cannot account {type(event).__name__}: {err}") from err
    pld = accountant_pld(accountant)
    return _infinite_loss_pld(interval) if pld is None else pld


def epsilon_pld(plds: Sequence[pld_lib.PrivacyLossDistribution], *, delta: float) -> float:
    """ε at ``delta`` of the composition of ``plds`` (all on one grid); max over remove and add."""
    check_delta(delta)
    plds = list(plds)
    if not plds:
        raise ValueError("epsilon_pld needs at least one PLD")
    composed = plds[0]
    for other in plds[1:]:
        composed = composed.compose(other, tail_mass_truncation=_TAIL_MASS_TRUNCATION)
    return float(composed.get_epsilon_for_delta(delta))
