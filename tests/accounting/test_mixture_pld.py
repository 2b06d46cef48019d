"""PLD accounting of the mixture mechanisms: sound (never above the RDP curve), exact where it should be."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.integrate import trapezoid
from scipy.stats import binom, norm

from nodedp.accounting import mixture_pld
from nodedp.accounting.events import subsampled_gaussian_event
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_params,
    hypergeometric_gaussian_rdp_of_params,
    poisson_occurrence_gaussian_params,
    poisson_occurrence_gaussian_rdp_of_params,
)
from nodedp.accounting.mixture_pld import (
    calibrate_mixture_pld,
    hypergeometric_step_pld,
    mixture_epsilon_of_params,
    mixture_pld_of_params,
    poisson_occurrence_step_pld,
    revealed_gaussian_mixture_pld,
)
from nodedp.accounting.orders import RDP_ORDERS
from nodedp.accounting.pld import VALUE_DISCRETIZATION_INTERVAL, epsilon_pld, pld_of_event

POISSON = "poisson_occurrence_gaussian"
HYPER = "hypergeometric_gaussian"


def _poisson(d: int, gamma: float, z: float, steps: int) -> dict:
    return poisson_occurrence_gaussian_params(
        sampling_rate=gamma,
        max_rows=d - 1,
        noise_multiplier=z,
        clip_norm=1.5,
        steps=steps,
        occurrence_rule="own_plus_rows",
    )


def _rdp_epsilon(curve, params, delta: float) -> float:
    return float(compute_epsilon(list(RDP_ORDERS), list(curve(params, RDP_ORDERS)), delta)[0])


@pytest.mark.parametrize(
    ("d", "gamma", "z", "steps", "delta"),
    [
        (1, 0.1, 5.0, 100, 1e-5),
        (3, 0.3, 20.0, 200, 1e-4),
        (6, 0.05, 8.0, 50, 1e-6),
        (12, 0.2, 40.0, 300, 1e-5),
        (25, 0.02, 15.0, 500, 1e-4),
        (4, 1.0, 30.0, 20, 1e-5),
    ],
)
def test_poisson_pld_never_above_the_rdp_curve(d, gamma, z, steps, delta):
    params = _poisson(d, gamma, z, steps)
    pld = mixture_epsilon_of_params(POISSON, params, delta=delta)
    rdp = _rdp_epsilon(poisson_occurrence_gaussian_rdp_of_params, params, delta)
    assert 0 < pld <= rdp


@pytest.mark.parametrize(
    ("n", "m", "k", "r", "z", "steps", "delta"),
    [(100, 10, 2, 1, 10.0, 100, 1e-5), (500, 50, 3, 2, 30.0, 200, 1e-4), (60, 30, 1, 3, 12.0, 40, 1e-6)],
)
def test_hypergeometric_pld_never_above_the_rdp_curve(n, m, k, r, z, steps, delta):
    params = hypergeometric_gaussian_params(
        num_examples=n, max_degree=k, num_layers=r, batch_size=m, noise_multiplier=z, clip_norm=1.0, steps=steps
    )
    pld = mixture_epsilon_of_params(HYPER, params, delta=delta)
    rdp = _rdp_epsilon(hypergeometric_gaussian_rdp_of_params, params, delta)
    assert 0 < pld <= rdp


def test_revealed_pair_is_the_rdp_curves_pair_under_pld():
    # The RDP curve is the Rényi divergence of (ρ, N(2ρ/z)) vs (ρ, N(0)); the same pair under PLD
    # cannot be looser (up to rounding), and the hybrid (own coin hidden, own example at C) is tighter still.
    d, gamma, z, steps, delta = 5, 0.2, 12.0, 150, 1e-5
    rho = np.arange(d + 1)
    revealed = revealed_gaussian_mixture_pld(
        shifts=2.0 * rho / z,
        weights=binom.pmf(rho, d, gamma),
        value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL,
    )
    eps_revealed = revealed.self_compose(steps).get_epsilon_for_delta(delta)
    params = _poisson(d, gamma, z, steps)
    eps_rdp = _rdp_epsilon(poisson_occurrence_gaussian_rdp_of_params, params, delta)
    eps_hybrid = mixture_epsilon_of_params(POISSON, params, delta=delta)
    assert eps_hybrid < eps_revealed < eps_rdp
    assert eps_revealed > 0.8 * eps_rdp  # revealing ρ is what both pay for: no large gap


@pytest.mark.parametrize(("gamma", "z", "steps"), [(0.114, 5.0, 176), (0.3, 2.0, 50), (0.01, 1.5, 300)])
def test_d1_is_poisson_dpsgd_at_sensitivity_c(gamma, z, steps):
    # d = 1: the node's own example only, removed: its coin stays hidden and it moves the sum by C,
    # so the step IS PoissonSampled(γ, Gaussian(z)) (sensitivity C). (The RDP curve charges 2C.)
    params = _poisson(1, gamma, z, steps)
    ours = mixture_epsilon_of_params(POISSON, params, delta=1e-5, value_discretization_interval=1e-4)
    reference = pld_of_event(
        subsampled_gaussian_event(noise_multiplier=z, sampling_rate=gamma, steps=steps),
        value_discretization_interval=1e-4,
    )
    expected = epsilon_pld([reference], delta=1e-5)
    assert ours == pytest.approx(expected, rel=1e-6)
    # And it is not the 2C (z/2) subsampled Gaussian, which spends more.
    twice = pld_of_event(
        subsampled_gaussian_event(noise_multiplier=z / 2, sampling_rate=gamma, steps=steps),
        value_discretization_interval=1e-4,
    )
    assert epsilon_pld([twice], delta=1e-5) > 1.2 * ours


def test_coarse_grid_stays_above_and_close_to_a_fine_one():
    params = _poisson(6, 0.296, 55.0, 800)
    coarse = mixture_epsilon_of_params(POISSON, params, delta=1e-4)
    fine = mixture_epsilon_of_params(POISSON, params, delta=1e-4, value_discretization_interval=1e-4)
    assert fine <= coarse <= fine + 5e-3


@pytest.mark.parametrize(("kind", "target"), [(POISSON, 1.0), (POISSON, 8.0), (HYPER, 4.0)])
def test_calibrate_then_account_lands_within_one_percent_below_target(kind, target):
    if kind == POISSON:
        params = _poisson(6, 0.296, 1.0, 200)
    else:
        params = hypergeometric_gaussian_params(
            num_examples=400, max_degree=2, num_layers=2, batch_size=40, noise_multiplier=1.0, clip_norm=2.0, steps=150
        )
    z = calibrate_mixture_pld(kind, params, target_epsilon=target, target_delta=1e-5)
    accounted = dict(params, noise_multiplier=z, noise_std=z * params["clip_norm"])
    epsilon = epsilon_pld([mixture_pld_of_params(kind, accounted)], delta=1e-5)
    assert 0.99 * target <= epsilon <= target


def test_calibration_composes_the_other_mechanisms():
    params = _poisson(3, 0.1, 1.0, 100)
    other = pld_of_event(dp_event.GaussianDpEvent(3.0))
    alone = calibrate_mixture_pld(POISSON, params, target_epsilon=2.0, target_delta=1e-5)
    shared = calibrate_mixture_pld(POISSON, params, target_epsilon=2.0, target_delta=1e-5, other_plds=[other])
    assert shared > alone
    accounted = dict(params, noise_multiplier=shared, noise_std=shared * params["clip_norm"])
    assert epsilon_pld([mixture_pld_of_params(POISSON, accounted), other], delta=1e-5) <= 2.0


def _pmf(pmf):
    dense = pmf.to_dense_pmf()
    losses = (np.arange(dense.size) + dense._lower_loss) * dense._discretization
    return losses, dense._probs, dense._infinity_mass


def test_step_pld_has_the_mass_and_mean_of_the_pair():
    # Exact check: the hybrid step's remove-PLD is Σ_k P(k)·(component PLD); its mass is 1 and its mean,
    # E_P[loss] = KL(P‖Q), is Σ P(k)·[(1−γ)·(2k/z)²/2 + γ·((2k+1)/z)²/2] for k ≥ 1 plus P(0)·KL of the
    # subsampled Gaussian (computed here by quadrature). Pessimistic rounding moves the mean up by < interval.
    d, gamma, z = 4, 0.3, 3.0
    pld = poisson_occurrence_step_pld(
        sampling_rate=gamma, max_occurrences=d, noise_multiplier=z, value_discretization_interval=1e-4
    )
    losses, probs, inf_mass = _pmf(pld._pmf_remove)
    assert inf_mass < 1e-12
    # Connect-the-dots masses sum to 1 up to ~1e-8 of rounding (dp_accounting's own Gaussian PLD too).
    assert probs.sum() + inf_mass == pytest.approx(1.0, abs=1e-7)
    x = np.linspace(-12, 12 + 1 / z, 200001)
    p = (1 - gamma) * norm.pdf(x) + gamma * norm.pdf(x, loc=1 / z)
    kl_sub = trapezoid(p * np.log(p / norm.pdf(x)), x)
    pk = binom.pmf(np.arange(d), d - 1, gamma)
    k = np.arange(1, d)
    kl = pk[0] * kl_sub + np.sum(pk[1:] * ((1 - gamma) * (2 * k / z) ** 2 / 2 + gamma * ((2 * k + 1) / z) ** 2 / 2))
    mean = float(np.sum(losses * probs))
    assert kl - 1e-6 <= mean <= kl + 1e-4


def test_step_pld_matches_monte_carlo_of_the_hypergeometric_pair():
    # Sample the revealed pair directly: ρ ~ Hypergeometric, x ~ N(2ρ/z, 1), loss = (2ρ/z)·x − (2ρ/z)²/2;
    # compare δ at a few ε with the PLD's.
    n, d, m, z = 50, 5, 10, 4.0
    pld = hypergeometric_step_pld(
        num_examples=n, max_occurrences=d, batch_size=m, noise_multiplier=z, value_discretization_interval=1e-4
    )
    rng = np.random.default_rng(0)
    rho = rng.hypergeometric(d, n - d, m, size=2_000_000)
    mu = 2.0 * rho / z
    loss = mu * rng.normal(mu, 1.0) - mu**2 / 2
    for epsilon in (0.1, 0.5, 1.0):
        mc = float(np.mean(np.maximum(0.0, 1.0 - np.exp(epsilon - loss))))
        assert pld.get_delta_for_epsilon(epsilon) == pytest.approx(mc, rel=0.02)
        assert pld.get_delta_for_epsilon(epsilon) >= mc * 0.99  # pessimistic, up to sampling error


def test_revealed_gaussian_matches_dp_accounting_gaussian():
    ours = revealed_gaussian_mixture_pld(shifts=[0.7], weights=[1.0], value_discretization_interval=1e-4)
    reference = pld_lib.from_gaussian_mechanism(1.0, sensitivity=0.7, value_discretization_interval=1e-4)
    for steps in (1, 50):
        assert ours.self_compose(steps).get_epsilon_for_delta(1e-6) == pytest.approx(
            reference.self_compose(steps).get_epsilon_for_delta(1e-6), rel=1e-8
        )


def test_refuses_bad_params():
    params = _poisson(3, 0.1, 2.0, 10)
    with pytest.raises(ValueError, match="noise_std"):
        mixture_pld_of_params(POISSON, dict(params, noise_std=1.0))
    with pytest.raises(ValueError, match="no mixture PLD"):
        mixture_pld_of_params("gaussian", params)
    with pytest.raises(ValueError, match="sampling"):
        mixture_pld_of_params(POISSON, dict(params, sampling="fixed_size_without_replacement"))
    with pytest.raises(ValueError, match="weights"):
        revealed_gaussian_mixture_pld(shifts=[0.0, 1.0], weights=[0.5, 0.6], value_discretization_interval=1e-3)
    with pytest.raises(ValueError, match="value_discretization_interval"):
        mixture_pld_of_params(POISSON, params, value_discretization_interval=0.5)
    assert math.isinf(epsilon_pld([pld_of_event(dp_event.NonPrivateDpEvent())], delta=1e-5))


def test_a_negligible_component_is_never_built(monkeypatch):
    """DPDGC's encoder at Reddit size (d = 401): Binomial(400, γ) puts < 1e-18 on most k, and those components, the
    widest grids (shift 2k/z), are charged as infinite loss without being built; building them first took minutes
    per evaluation and, at a trial σ far below the answer, more memory than the machine had."""
    gamma, d, z = 256 / 153431, 401, 76.6
    built: list[float] = []
    gaussian = mixture_pld._gaussian_pld

    def counted(shift, interval):
        built.append(shift)
        return gaussian(shift, interval)

    monkeypatch.setattr(mixture_pld, "_gaussian_pld", counted)
    lazy = mixture_pld.poisson_occurrence_step_pld(sampling_rate=gamma, max_occurrences=d, noise_multiplier=z)
    k = np.arange(1, d)
    weights = np.concatenate([binom.pmf(k, d - 1, gamma) * (1 - gamma), binom.pmf(k, d - 1, gamma) * gamma])
    counted_weights = int((weights >= mixture_pld._NEGLIGIBLE).sum())
    assert len(built) == counted_weights < 40 < len(weights), (len(built), counted_weights, len(weights))
    assert max(built) < 2.0 * 30 / z  # only small k: the heavy end of the binomial
    # what was dropped is charged: the infinity mass holds the negligible weights
    dropped = float(weights[weights < mixture_pld._NEGLIGIBLE].sum())
    assert lazy.get_delta_for_epsilon(math.inf) >= dropped > 0


def test_a_component_below_rounding_of_the_total_is_still_charged():
    """Weight 1e-17 counts (above the negligible 1e-18) but vanishes against 1 in floating point: mixing by the
    ratio of running totals dropped it, and with it the δ of its large shift. Accumulated exactly, it stays."""
    pld = revealed_gaussian_mixture_pld(
        shifts=[0.1, 60.0], weights=[1.0 - 1e-17, 1e-17], value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL
    )
    # N(60, 1) against N(0, 1) has δ(ε = 20) ≈ 1; N(0.1, 1)'s is 0 there: the mixture's is its weight.
    assert pld.get_delta_for_epsilon(20.0) >= 0.99e-17
