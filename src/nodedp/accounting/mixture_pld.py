"""PLD accounting of the mixture mechanisms ("hypergeometric_gaussian", "poisson_occurrence_gaussian").

Both are DP-SGD steps in which one node changes up to d training examples. ``nodedp.accounting.hypergeometric``
accounts them by an RDP curve; this module builds privacy loss distributions of dominating pairs instead, on the
grid of ``nodedp.accounting.pld``, so that composed with the ledger's other PLDs they give ε at δ without the RDP
-> (ε, δ) conversion's slack. The dominating-pair arguments (facts F1-F5, revealed ρ for DP-GNN, the hybrid pair
with the own coin hidden for DPAR and DPDGC, the connect-the-dots grid) are in docs/design/accounting.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.special import log_ndtr, ndtr
from scipy.stats import binom, hypergeom

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting._dp_private import dense_parts, pld_pmfs
from nodedp.accounting.calibration import calibrate
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_rdp_of_params,
    poisson_occurrence_gaussian_rdp_of_params,
)
from nodedp.accounting.orders import RDP_ORDERS
from nodedp.accounting.pld import (
    _TAIL_MASS_TRUNCATION,
    LOG_MASS_TRUNCATION_BOUND,
    VALUE_DISCRETIZATION_INTERVAL,
    _check_interval,
    epsilon_pld,
)

__all__ = [
    "MIXTURE_PLD_KINDS",
    "calibrate_mixture_pld",
    "hypergeometric_step_pld",
    "mixture_epsilon_of_params",
    "mixture_pld_of_params",
    "poisson_occurrence_step_pld",
    "revealed_gaussian_mixture_pld",
]

# Mixture components lighter than this are charged as infinite loss (δ += weight
# per step): far below any δ a run asks for, and it skips their wide grids.
_NEGLIGIBLE = 1e-18
# Half-width of a Gaussian PLD's grid, in stds of its loss.
_TAIL_SDS = 10.0

MIXTURE_PLD_KINDS: tuple[str, ...] = ("hypergeometric_gaussian", "poisson_occurrence_gaussian")


class _Weighted:
    """Σ_l w_l·PMF_l on one grid, accumulated exactly: each weight multiplies its component's masses (never the
    ratio of running totals, which rounds a component of weight below ~1e-16 of the total to nothing)."""

    def __init__(self, interval: float) -> None:
        self.lower = 0
        self.probs: np.ndarray | None = None
        self.infinity = 0.0
        self.discretization = interval

    def add(self, weight: float, pmf: pld_pmf.PLDPmf) -> None:
        lower, probs, infinity, discretization, pessimistic = dense_parts(pmf)
        if not pessimistic or discretization != self.discretization:
            raise ValueError(
                f"a mixture's components must be pessimistic PMFs on its grid ({self.discretization}), got "
                f"pessimistic = {pessimistic} on {discretization}"
            )
        self.infinity += weight * infinity
        if self.probs is None:
            self.lower, self.probs = lower, weight * np.asarray(probs, dtype=np.float64)
            return
        start, end = min(self.lower, lower), max(self.lower + self.probs.size, lower + len(probs))
        if (start, end) != (self.lower, self.lower + self.probs.size):
            grown = np.zeros(end - start)
            grown[self.lower - start : self.lower - start + self.probs.size] = self.probs
            self.lower, self.probs = start, grown
        self.probs[lower - self.lower : lower - self.lower + len(probs)] += weight * np.asarray(probs)

    def copy(self) -> _Weighted:
        twin = _Weighted(self.discretization)
        twin.lower, twin.infinity = self.lower, self.infinity
        twin.probs = None if self.probs is None else self.probs.copy()
        return twin

    def pmf(self, total: float, dropped: float) -> pld_pmf.DensePLDPmf:
        """The mixture normalized by ``total``, ``dropped`` (weight left out) at infinite loss, and whatever the
        floating-point sums lost added there too: its masses sum to ≥ 1 (pessimistic)."""
        assert self.probs is not None
        probs = self.probs / total
        infinity = (self.infinity + dropped) / total
        infinity += max(0.0, 1.0 - (math.fsum(probs) + infinity))
        return pld_pmf.DensePLDPmf(self.discretization, self.lower, probs, infinity, True)


def _mix(
    components: Iterable[tuple[float, Callable[[], pld_lib.PrivacyLossDistribution]]], interval: float
) -> pld_lib.PrivacyLossDistribution:
    """Σ_l π_l·PLD_l (F2); components with π_l < ``_NEGLIGIBLE`` become infinite loss (pessimistic).

    Each component comes as its weight and a function that builds its PLD, called only for a weight that counts:
    a negligible component is often the widest (the largest shift), and building it first cost minutes and, at a
    trial σ far below the answer, more memory than a machine has (DPDGC's encoder at Reddit size)."""
    remove, add = _Weighted(interval), None  # add: None while every component is symmetric (then it is remove)
    total = dropped = 0.0
    for weight, build in components:
        total += weight
        if weight < _NEGLIGIBLE:
            dropped += weight
            continue
        pmf_remove, pmf_add = pld_pmfs(build())
        if pmf_add is not None and add is None:
            add = remove.copy()
        remove.add(weight, pmf_remove)
        if add is not None:
            add.add(weight, pmf_add if pmf_add is not None else pmf_remove)
    if remove.probs is None:
        raise ValueError("every mixture component is negligible")
    if not total > 0:
        raise ValueError(f"a mixture's weights must sum to > 0, got {total!r}")
    return pld_lib.PrivacyLossDistribution(remove.pmf(total, dropped), None if add is None else add.pmf(total, dropped))


def _gaussian_pld(shift: float, interval: float) -> pld_lib.PrivacyLossDistribution:
    """N(shift, 1) vs N(0, 1) (symmetric): identity at shift 0, else the pessimistic connect-the-dots PLD.

    The same construction as dp_accounting's ``from_gaussian_mechanism``
    (Doroshenko et al. 2022, Algorithm 1: the PMF on the grid whose hockey-stick
    curve interpolates the exact one, which is convex in e^ε, so it dominates),
    with the Gaussian's closed-form δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ)
    evaluated on the whole grid at once instead of point by point (which made
    a mixture of 40 Gaussians cost a second). Losses above the grid go to the
    infinity mass and below it to its lowest point: both pessimistic.
    """
    if shift == 0:
        return pld_lib.identity(value_discretization_interval=interval)
    mu = float(shift)
    # The loss is N(±μ²/2, μ²) under either distribution: ±_TAIL_SDS std covers all but ~1e-23.
    lower = math.floor((-mu * mu / 2 - _TAIL_SDS * mu) / interval)
    upper = math.ceil((mu * mu / 2 + _TAIL_SDS * mu) / interval)
    eps = np.arange(lower, upper + 1) * interval
    deltas = ndtr(mu / 2 - eps / mu) - np.exp(eps + log_ndtr(-mu / 2 - eps / mu))
    # δ(ε) is non-increasing; rounding may break that by ~1e-17: raise earlier values (pessimistic).
    deltas = np.maximum.accumulate(np.clip(deltas, 0.0, 1.0)[::-1])[::-1]
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(interval, lower, upper, deltas)
    return pld_lib.PrivacyLossDistribution(pmf)


def _gaussian_builder(shift: float, interval: float) -> Callable[[], pld_lib.PrivacyLossDistribution]:
    """``_gaussian_pld(shift, interval)``, built when called."""
    return lambda: _gaussian_pld(shift, interval)


def revealed_gaussian_mixture_pld(
    *,
    shifts: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray,
    value_discretization_interval: float,
) -> pld_lib.PrivacyLossDistribution:
    """PLD of one step of the revealed pair (l, N(shift_l, 1)) vs (l, N(0, 1)), l ~ weights (F2, F3).

    ``shifts`` are in units of the noise std (sensitivity / σ); ``weights`` a
    probability vector. Symmetric (remove = add).
    """
    interval = _check_interval(value_discretization_interval)
    s = np.asarray(shifts, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if s.ndim != 1 or s.shape != w.shape or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("shifts must be finite numbers >= 0, one per weight")
    if np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(f"weights must be a probability vector, sum to {float(w.sum())!r}")
    return _mix(((float(wi), _gaussian_builder(float(si), interval)) for si, wi in zip(s, w)), interval)


def hypergeometric_step_pld(
    *,
    num_examples: int,
    max_occurrences: int,
    batch_size: int,
    noise_multiplier: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> pld_lib.PrivacyLossDistribution:
    """One DP-GNN step: Σ_ρ P(ρ)·PLD_Gauss(2ρ/z), ρ ~ Hypergeometric(N, d, m) (docs/design/accounting.md).

    Arguments as ``hypergeometric_gaussian_rdp``: ``noise_multiplier`` is σ/C.
    """
    n = check_int(num_examples, "num_examples", minimum=1)
    d = min(check_int(max_occurrences, "max_occurrences", minimum=1), n)  # as the RDP curve caps it
    m = check_int(batch_size, "batch_size", minimum=1)
    if m > n:
        raise ValueError(f"batch_size = {m} exceeds num_examples = {n} (the batch is drawn without replacement)")
    z = check_positive(noise_multiplier, "noise_multiplier")
    rho = np.arange(max(0, m + d - n), min(m, d) + 1)
    probs = hypergeom.pmf(rho, n, d, m)
    return revealed_gaussian_mixture_pld(
        shifts=2.0 * rho / z, weights=probs / probs.sum(), value_discretization_interval=value_discretization_interval
    )


def poisson_occurrence_step_pld(
    *,
    sampling_rate: float,
    max_occurrences: int,
    noise_multiplier: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> pld_lib.PrivacyLossDistribution:
    """One Poisson step where a node removes its own example and modifies ≤ d − 1 others (docs/design/accounting.md).

    k ~ Binomial(d − 1, γ) other examples in the batch; k = 0: the subsampled
    Gaussian at sensitivity C (own coin hidden); k ≥ 1: (1 − γ)·PLD_Gauss(2k/z)
    + γ·PLD_Gauss((2k + 1)/z). Remove and add PLDs differ (the k = 0 part).
    """
    if isinstance(sampling_rate, bool) or not isinstance(sampling_rate, int | float) or not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be a number in (0, 1], got {sampling_rate!r}")
    gamma = float(sampling_rate)
    d = check_int(max_occurrences, "max_occurrences", minimum=1)
    z = check_positive(noise_multiplier, "noise_multiplier")
    interval = _check_interval(value_discretization_interval)
    own_hidden = pld_lib.from_gaussian_mechanism(
        standard_deviation=z, sensitivity=1.0, pessimistic_estimate=True, value_discretization_interval=interval,
        log_mass_truncation_bound=LOG_MASS_TRUNCATION_BOUND, sampling_prob=gamma,
    )  # fmt: skip
    k = np.arange(d)
    pk = binom.pmf(k, d - 1, gamma)

    def components() -> Iterable[tuple[float, Callable[[], pld_lib.PrivacyLossDistribution]]]:
        yield float(pk[0]), lambda: own_hidden
        for kk in k[1:]:
            yield float(pk[kk] * (1 - gamma)), _gaussian_builder(2.0 * kk / z, interval)
            if gamma > 0:
                yield float(pk[kk] * gamma), _gaussian_builder((2.0 * kk + 1) / z, interval)

    return _mix(components(), interval)


def _read_params(kind: str, params: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """The step's arguments and T from a ledger record's params, validated by the kind's RDP curve."""
    if kind == "hypergeometric_gaussian":
        hypergeometric_gaussian_rdp_of_params(params, (2.0,))  # refuses params that contradict each other
        step = {key: params[key] for key in ("num_examples", "max_occurrences", "batch_size", "noise_multiplier")}
    elif kind == "poisson_occurrence_gaussian":
        poisson_occurrence_gaussian_rdp_of_params(params, (2.0,))
        step = {key: params[key] for key in ("sampling_rate", "max_occurrences", "noise_multiplier")}
    else:
        raise ValueError(f"no mixture PLD for kind {kind!r}; kinds: {list(MIXTURE_PLD_KINDS)}")
    return step, check_int(params["steps"], "steps", minimum=1)


_STEP_PLD: dict[str, Callable[..., pld_lib.PrivacyLossDistribution]] = {
    "hypergeometric_gaussian": hypergeometric_step_pld,
    "poisson_occurrence_gaussian": poisson_occurrence_step_pld,
}


def mixture_pld_of_params(
    kind: str, params: Mapping[str, Any], *, value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL
) -> pld_lib.PrivacyLossDistribution:
    """The T-step PLD of a "hypergeometric_gaussian" or "poisson_occurrence_gaussian" record's params (F5).

    Reads the same params as the kind's RDP curve (``*_rdp_of_params``), which
    validates them; composable with other PLDs on the same grid
    (``epsilon_pld``).
    """
    step, steps = _read_params(kind, params)
    one = _STEP_PLD[kind](value_discretization_interval=value_discretization_interval, **step)
    return one.self_compose(steps, tail_mass_truncation=_TAIL_MASS_TRUNCATION)


def mixture_epsilon_of_params(
    kind: str,
    params: Mapping[str, Any],
    *,
    delta: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """ε at ``delta`` of one mixture record alone under its PLD."""
    pld = mixture_pld_of_params(kind, params, value_discretization_interval=value_discretization_interval)
    return epsilon_pld([pld], delta=delta)


def _with_noise(params: Mapping[str, Any], noise_multiplier: float) -> dict[str, Any]:
    out = dict(params)
    out["noise_multiplier"] = float(noise_multiplier)
    out["noise_std"] = float(noise_multiplier) * float(params["clip_norm"])
    return out


def calibrate_mixture_pld(
    kind: str,
    params: Mapping[str, Any],
    *,
    target_epsilon: float,
    target_delta: float,
    other_plds: Sequence[pld_lib.PrivacyLossDistribution] = (),
    tolerance: float = 0.005,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """The smallest z = σ/C with ε(record ⊕ ``other_plds``) ≤ ``target_epsilon`` at ``target_delta``.

    ``params`` is the record's params with any noise (its "noise_multiplier"
    and "noise_std" are replaced by each trial z and z·clip_norm); the other
    mechanisms of the ledger, already built as PLDs on the same grid, are
    composed in. Uses ``nodedp.accounting.calibration.calibrate``, so
    (1 − tolerance)·target ≤ ε(z) ≤ target under the very function
    ``mixture_pld_of_params`` + ``epsilon_pld`` that accounts the run.
    """
    check_delta(target_delta, "target_delta")
    _read_params(kind, params)  # validates the schedule before the search
    # The search starts at z = 1 × its unit; a PLD at small z has wide grids (losses ~ 2d/z) and
    # costs seconds, so the unit is the RDP curve's z for this record alone (milliseconds, within
    # ~15% of the answer), and the search runs on s = z / unit.
    unit = _rdp_noise_multiplier(kind, params, target_epsilon=target_epsilon, target_delta=target_delta)

    def epsilon_of_scale(scale: float) -> float:
        pld = mixture_pld_of_params(
            kind, _with_noise(params, unit * scale), value_discretization_interval=value_discretization_interval
        )
        return epsilon_pld([pld, *other_plds], delta=target_delta)

    return unit * calibrate(target_epsilon=target_epsilon, epsilon_of_sigma=epsilon_of_scale, tolerance=tolerance)


def _rdp_noise_multiplier(kind: str, params: Mapping[str, Any], *, target_epsilon: float, target_delta: float) -> float:
    """z calibrated under the kind's RDP curve (a starting point only)."""
    curve = {
        "hypergeometric_gaussian": hypergeometric_gaussian_rdp_of_params,
        "poisson_occurrence_gaussian": poisson_occurrence_gaussian_rdp_of_params,
    }[kind]

    def epsilon(z: float) -> float:
        rdp = curve(_with_noise(params, z), RDP_ORDERS)
        return float(compute_epsilon(list(RDP_ORDERS), list(rdp), target_delta)[0])

    return calibrate(target_epsilon=target_epsilon, epsilon_of_sigma=epsilon, tolerance=0.05)
