"""PLD accounting of the mixture mechanisms ("hypergeometric_gaussian", "poisson_occurrence_gaussian").

Both kinds are DP-SGD steps in which one node changes up to d training
examples: each step adds N(0, σ²I) to the sum of a random batch's clipped
gradients (clip norm C, z = σ/C). ``nodedp.accounting.hypergeometric``
accounts them by an RDP curve, 1/(α − 1)·ln E_ρ[exp(α(α − 1)·2ρ²/z²)], which
is exactly the Rényi divergence of the pair in which ρ is revealed. This
module builds privacy loss distributions (dp_accounting's
``PrivacyLossDistribution``) of dominating pairs instead: composed with PLD
arithmetic they give ε at δ without the RDP -> (ε, δ) conversion's slack.

Facts the arguments use (hockey-stick divergence H_ε(P‖Q) = sup_S P(S) − e^ε Q(S)):

(F1) Post-processing: a mechanism whose output is a function of another's
     output is dominated by it (H_ε can only shrink), in both directions.
(F2) Revealed labels: if a label L has the same law π under both datasets and
     does not depend on the data, the pair ((L, X) ~ P_L, (L, X) ~ Q_L) has
     H_ε = Σ_l π(l)·H_ε(P_l‖Q_l), so it is dominated by (L, A_l) vs (L, B_l)
     whenever each (A_l, B_l) dominates (P_l, Q_l); its privacy loss at (l, x)
     is component l's, so its PLD is the π-mixture of the components' PLDs
     (``PrivacyLossDistribution.compute_mixture``), separately for the remove
     (P over Q) and add (Q over P) directions.
(F3) Gaussian shifts: N(u, σ²I) vs N(0, σ²I) with ‖u‖ ≤ s is dominated by the
     1-D N(s, σ²) vs N(0, σ²) (rotate, then scale u down by the kernel
     y ↦ (‖u‖/s)·y + N(0, σ²(1 − ‖u‖²/s²))), symmetric in the two directions.
(F4) Poisson-subsampled Gaussian: (1 − γ)N(u, σ²I) + γN(u + w, σ²I) vs N(u, σ²I)
     with ‖w‖ ≤ c is dominated, remove and add, by dp_accounting's subsampled
     Gaussian PLD at sensitivity c (shift by −u, rotate, F3 for ‖w‖ < c; the
     Poisson-subsampling dominating pairs of Zhu, Dong & Wang 2022, "Optimal
     accounting of differential privacy via characteristic function", which
     dp_accounting implements for ``PoissonSampledDpEvent``).
(F5) Adaptive composition: if every step is dominated by a fixed pair whatever
     the earlier outputs, T steps are dominated by the T-fold product, whose PLD
     is the T-fold convolution (Zhu et al. 2022); ``self_compose``.

Conditioned on the batch B, a step's output is N(Σ_{i∈B} g_i, σ²I) under one
dataset and N(Σ_{i∈B} g'_i, σ²I) under the other. B's law is the same under
both datasets (Poisson: each example's coin is independent of the data, the
removed node's own coin exists in one dataset only; fixed-size: the
hypothesis of Daigavane et al.'s Theorem 1 that the RDP curve already uses).

"hypergeometric_gaussian" (DP-GNN; ``hypergeometric_step_pld``): revealed ρ.
    Reveal B (F1). Given B, the means differ by ≤ 2Cρ(B), ρ(B) the number of
    the node's ≤ d = N(K, r) subgraphs in B, ρ ~ Hypergeometric(N, d, m). By
    F3 and F2 the step is dominated by the revealed pair (ρ, N(2ρ/z, 1)) vs
    (ρ, N(0, 1)): its PLD is Σ_ρ P(ρ)·PLD_Gauss(2ρ/z), symmetric. This is the
    very pair whose Rényi divergence the RDP curve is, so its ε is never above
    the RDP curve's ε (PLD conversion is exact for a pair, up to the
    pessimistic discretisation, which adds at most T·interval).

"poisson_occurrence_gaussian" (DPAR, DPDGC; ``poisson_occurrence_step_pld``):
    hybrid, own coin hidden only where it is the whole difference. The ledger's
    d counts the node's OWN example, present only in the dataset that holds
    the node (removed by the removal, clipped gradient g_0 with ‖g_0‖ ≤ C),
    plus at most d − 1 OTHER examples present in both datasets with different
    content (each ‖g_i − g'_i‖ ≤ 2C). Reveal every coin but the own one (F1):
    k ~ Binomial(d − 1, γ) of the others are in B, and after subtracting the
    known Σ_{i∈B, i≠0} g'_i (and the untouched examples), the remove pair is
        P = (1 − γ)·N(u, σ²I) + γ·N(u + g_0, σ²I)   vs   Q = N(0, σ²I),
    ‖u‖ ≤ 2kC; the add pair is (Q, P). Label the outcome by k (F2):
      * k = 0: u = 0 and (P, Q) is the Poisson-subsampled Gaussian at
        sensitivity C, dominated remove and add by its PLD (F4). This is the
        amplification the RDP curve misses: at d = 1 the step IS DP-SGD at
        sensitivity C (``PoissonSampledDpEvent(γ, GaussianDpEvent(z))``).
      * k ≥ 1: reveal the own coin b_0 too (F1); given it the means differ by
        ‖u + b_0 g_0‖ ≤ (2k + b_0)C, so by F3 and F2 the component is
        (1 − γ)·PLD_Gauss(2k/z) + γ·PLD_Gauss((2k + 1)/z).
    A node without an own example (the data holds none for it) fits too: its
    k = 0 pair is N(0) vs N(0) and its k ≥ 1 components shift by ≤ 2k. The
    hypothesis needed is exactly: a removal removes at most one example (the
    node's own, moving the sum by ≤ C) and modifies at most d − 1 others (each
    by ≤ 2C). It is tighter than the RDP curve's pair (which charges 2C to the
    own example and reveals its coin), which dominates it by F1.
    NOT claimed: hiding the other examples' coins as well (the mixture of
    Gaussians Σ_ρ P(ρ)·N(2ρC) vs N(0) of dp_accounting's
    ``MixtureOfGaussiansDpEvent``, Choquette-Choo et al. 2023). That theorem is
    about one record's contributions (removal); with modified examples the
    true pair is a mixture against a mixture, and for k ≥ 1 the means u and
    u + g_0 need not be aligned, so neither the hidden mixture nor the aligned
    1-D mixture (1 − γ)N(2k) + γN(2k + 1) vs N(0) is proven to dominate here.

Discretisation (speed with soundness). Every PLD here is built with
``pessimistic_estimate=True`` (connect-the-dots, losses rounded up), tails
beyond ``LOG_MASS_TRUNCATION_BOUND`` and convolution tails are moved to the
infinity mass, and components lighter than ``_NEGLIGIBLE`` are charged as
infinite loss: every approximation can only raise ε. The grid interval is
``VALUE_DISCRETIZATION_INTERVAL``, fixed so that a ledger's ε is reproducible
from its params (the verifier must use the same interval); rounding each
step's loss up by < interval makes T steps overstate ε by at most
T·interval in the worst case; measured, far less (connect-the-dots).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import UnsupportedEventError
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.special import log_ndtr, ndtr
from scipy.stats import binom, hypergeom

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.calibration import calibrate
from nodedp.accounting.events import RDP_ORDERS, check_delta
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_rdp_of_params,
    poisson_occurrence_gaussian_rdp_of_params,
)

__all__ = [
    "LOG_MASS_TRUNCATION_BOUND",
    "MIXTURE_PLD_KINDS",
    "VALUE_DISCRETIZATION_INTERVAL",
    "calibrate_mixture_pld",
    "epsilon_pld",
    "hypergeometric_step_pld",
    "mixture_epsilon_of_params",
    "mixture_pld_of_params",
    "pld_of_event",
    "poisson_occurrence_step_pld",
    "revealed_gaussian_mixture_pld",
]

# One grid for every PLD of a ledger (PLDs compose only on equal grids). At
# 1e-3 one ε of T ≤ 1000 steps, d ≤ 30 takes ≤ 0.2 s, and connect-the-dots
# rounding raised ε by ≤ 1e-3 (absolute) over 1e-4 in the benchmark's cases.
VALUE_DISCRETIZATION_INTERVAL = 1e-3
# ln of the noise mass each Gaussian PLD may drop (moved to infinite loss).
LOG_MASS_TRUNCATION_BOUND = -50.0
# Mixture components lighter than this are charged as infinite loss (δ += weight
# per step): far below any δ a run asks for, and it skips their wide grids.
_NEGLIGIBLE = 1e-18
# Half-width of a Gaussian PLD's grid, in stds of its loss.
_TAIL_SDS = 10.0
# Convolution tails moved to the infinity mass (dp_accounting's default).
_TAIL_MASS_TRUNCATION = 1e-15

MIXTURE_PLD_KINDS: tuple[str, ...] = ("hypergeometric_gaussian", "poisson_occurrence_gaussian")


def _check_interval(value_discretization_interval: float) -> float:
    interval = check_positive(value_discretization_interval, "value_discretization_interval")
    if interval > 0.1:
        raise ValueError(f"value_discretization_interval = {interval} is too coarse to be useful (> 0.1)")
    return interval


def _infinite_loss_pld(interval: float) -> pld_lib.PrivacyLossDistribution:
    """All mass at infinite loss: dominates every pair (δ = 1 at every ε)."""
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability({}, 1.0, interval)


def _mix(
    components: Iterable[tuple[float, pld_lib.PrivacyLossDistribution]], interval: float
) -> pld_lib.PrivacyLossDistribution:
    """Σ_l π_l·PLD_l (F2); components with π_l < ``_NEGLIGIBLE`` become infinite loss (pessimistic)."""
    mixture: pld_lib.PrivacyLossDistribution | None = None
    total = 0.0
    dropped = 0.0
    for weight, pld in components:
        if weight < _NEGLIGIBLE:
            dropped += weight
            continue
        if mixture is None:
            mixture, total = pld, weight
            continue
        total += weight
        mixture = mixture.compute_mixture(pld, (total - weight) / total)
    if mixture is None:
        raise ValueError("every mixture component is negligible")
    if dropped > 0:
        total += dropped
        mixture = mixture.compute_mixture(_infinite_loss_pld(interval), (total - dropped) / total)
    return mixture


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


def revealed_gaussian_mixture_pld(
    *, shifts: Sequence[float], weights: Sequence[float], value_discretization_interval: float
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
    return _mix(((float(wi), _gaussian_pld(float(si), interval)) for si, wi in zip(s, w)), interval)


def hypergeometric_step_pld(
    *,
    num_examples: int,
    max_occurrences: int,
    batch_size: int,
    noise_multiplier: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> pld_lib.PrivacyLossDistribution:
    """One DP-GNN step: Σ_ρ P(ρ)·PLD_Gauss(2ρ/z), ρ ~ Hypergeometric(N, d, m) (module docstring).

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
    """One Poisson step where a node removes its own example and modifies ≤ d − 1 others (module docstring).

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

    def components() -> Iterable[tuple[float, pld_lib.PrivacyLossDistribution]]:
        yield float(pk[0]), own_hidden
        for kk in k[1:]:
            yield float(pk[kk] * (1 - gamma)), _gaussian_pld(2.0 * kk / z, interval)
            if gamma > 0:
                yield float(pk[kk] * gamma), _gaussian_pld((2.0 * kk + 1) / z, interval)

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


_STEP_PLD = {
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


def pld_of_event(
    event: dp_event.DpEvent, *, value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL
) -> pld_lib.PrivacyLossDistribution:
    """The PLD dp_accounting's ``PLDAccountant`` builds for ``event`` (add/remove adjacency), on this grid.

    Reads the accountant's PLD (a private attribute of dp_accounting 0.6's
    ``PLDAccountant``: the public API returns only ε and δ). Non-private events
    give infinite loss.
    """
    interval = _check_interval(value_discretization_interval)
    accountant = PLDAccountant(value_discretization_interval=interval)
    try:
        accountant.compose(event)
    except UnsupportedEventError as err:
        raise ValueError(f"the 'pld' accountant cannot account {type(event).__name__}: {err}") from err
    if accountant._contains_non_dp_event:
        return _infinite_loss_pld(interval)
    return accountant._pld


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
