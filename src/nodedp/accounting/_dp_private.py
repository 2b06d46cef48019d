"""The private names of dp_accounting that the accounting reads, checked when this module loads.

dp_accounting's public API gives a PLD accountant's ε and δ but not its privacy loss distribution
(``nodedp.accounting.pld`` composes it with PLDs of its own), and no RDP curve of the Poisson-subsampled
Gaussian as a function (``nodedp.accounting.dpar``'s reference accountant). An installed dp-accounting without
one of them fails on import, naming the name, the installed version and the range pyproject.toml pins;
tests/accounting/test_dp_accounting_private.py checks what each name is relied on to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp import rdp_privacy_accountant

__all__ = [
    "DENSE_PMF_ATTRIBUTES",
    "PINNED",
    "PLD_ACCOUNTANT_ATTRIBUTES",
    "PLD_ATTRIBUTES",
    "PrivateNameMissing",
    "accountant_pld",
    "dense_parts",
    "installed_version",
    "pld_pmfs",
    "poisson_subsampled_gaussian_rdp",
    "private_function",
    "require_attributes",
]

# The range pyproject.toml pins (its dependency line says why).
PINNED = "dp-accounting>=0.4.4,<0.7"
# PLDAccountant's instance attributes read by ``accountant_pld``.
PLD_ACCOUNTANT_ATTRIBUTES: tuple[str, ...] = ("_pld", "_contains_non_dp_event")
# A PrivacyLossDistribution's attributes read by ``pld_pmfs``, and a DensePLDPmf's read by ``dense_parts``.
PLD_ATTRIBUTES: tuple[str, ...] = ("_pmf_remove", "_pmf_add", "_symmetric")
DENSE_PMF_ATTRIBUTES: tuple[str, ...] = (
    "_lower_loss", "_probs", "_infinity_mass", "_discretization", "_pessimistic_estimate"
)  # fmt: skip


class PrivateNameMissing(ImportError):
    """The installed dp_accounting lacks a private name the accounting reads."""


def installed_version() -> str:
    try:
        return metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def _missing(name: str) -> PrivateNameMissing:
    return PrivateNameMissing(
        f"nodedp.accounting reads dp_accounting's private {name}, which the installed dp-accounting "
        f"{installed_version()} does not have; nodedp needs {PINNED} (pyproject.toml)"
    )


def private_function(module: Any, name: str) -> Callable[..., Any]:
    """``module.name``, a function; ``PrivateNameMissing`` if the module has no such function."""
    value = getattr(module, name, None)
    if not callable(value):
        raise _missing(f"{module.__name__}.{name}")
    return value


def require_attributes(instance: Any, names: Iterable[str]) -> None:
    """Raise ``PrivateNameMissing`` unless ``instance`` has every attribute in ``names``."""
    for name in names:
        if not hasattr(instance, name):
            raise _missing(f"{type(instance).__name__}.{name}")


# The RDP of one Poisson-subsampled Gaussian step at each order: f(q, noise_multiplier, orders) -> array.
poisson_subsampled_gaussian_rdp = private_function(rdp_privacy_accountant, "_compute_rdp_poisson_subsampled_gaussian")
require_attributes(PLDAccountant(), PLD_ACCOUNTANT_ATTRIBUTES)
_IDENTITY = pld_lib.identity()
require_attributes(_IDENTITY, PLD_ATTRIBUTES)
require_attributes(_IDENTITY._pmf_remove.to_dense_pmf(), DENSE_PMF_ATTRIBUTES)


def accountant_pld(accountant: PLDAccountant) -> Any:
    """The privacy loss distribution ``accountant`` composed (its ``_pld``), or None where it holds a
    non-private event (``_contains_non_dp_event``: its PLD then leaves that event out)."""
    if accountant._contains_non_dp_event:
        return None
    return accountant._pld


def pld_pmfs(pld: pld_lib.PrivacyLossDistribution) -> tuple[pld_pmf.PLDPmf, pld_pmf.PLDPmf | None]:
    """A PLD's remove and add PMFs (its ``_pmf_remove``, ``_pmf_add``); the add one None where it is symmetric."""
    return pld._pmf_remove, None if pld._symmetric else pld._pmf_add


def dense_parts(pmf: pld_pmf.PLDPmf) -> tuple[int, Any, float, float, bool]:
    """(lower loss index, probabilities, infinity mass, discretization, pessimistic) of ``pmf`` made dense: the
    i-th probability is the mass at loss (lower + i)·discretization."""
    dense = pmf.to_dense_pmf()
    return dense._lower_loss, dense._probs, dense._infinity_mass, dense._discretization, dense._pessimistic_estimate
