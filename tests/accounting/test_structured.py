"""SparseGNN's structured-subsampling accountant: the spec's test vector, exact where it can be checked, sound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy.integrate import quad, simpson
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import binom, norm

from nodedp.accounting.structured import (
    calibrate_structured,
    structured_count_law,
    structured_epsilon_of_params,
    structured_pld_of_params,
    structured_step_pld,
)

# The spec's SG-latest test vector (§1.8): ε = 2.618 at these parameters.
SPEC = {
    "sampling_rate": 0.01,
    "edge_keep": 0.1,
    "radius": 1,
    "out_degree_bound": 5,
    "union_factor": 2,
    "noise_multiplier": 2.0,
    "steps": 1000,
}
SPEC_DELTA = 1e-5
SPEC_EPSILON = 2.618


def _law(params: dict) -> np.ndarray:
    keys = ("sampling_rate", "edge_keep", "radius", "out_degree_bound", "union_factor")
    return structured_count_law(**{key: params[key] for key in keys})


def _log_densities(x: np.ndarray, law: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """log P(x), log Q(x) of P = Σ π_k N(−k, σ²), Q = Σ π_k N(k, σ²), every component kept."""
    k = np.flatnonzero(law > 0)
    log_w = np.log(law[k])
    xx = np.asarray(x, dtype=np.float64)[..., None]
    log_p = logsumexp(log_w + norm.logpdf(xx, loc=-k, scale=sigma), axis=-1)
    log_q = logsumexp(log_w + norm.logpdf(xx, loc=k, scale=sigma), axis=-1)
    return log_p, log_q


def _loss(x: np.ndarray, law: np.ndarray, sigma: float) -> np.ndarray:
    log_p, log_q = _log_densities(x, law, sigma)
    return log_p - log_q


def _delta_by_quadrature(law: np.ndarray, sigma: float, epsilon: float) -> float:
    """∫ max(0, P(x) − e^ε Q(x)) dx: x* where the loss crosses ε (brentq), then quad of P − e^ε Q below it."""
    x_star = brentq(lambda x: float(_loss(np.array(x), law, sigma)) - epsilon, -200.0, 200.0, xtol=1e-14)

    k_max = law.size - 1
    k = np.arange(law.size)
    scale = 1 / (sigma * math.sqrt(2 * math.pi))

    def integrand(x: float) -> float:
        p = law @ np.exp(-0.5 * ((x + k) / sigma) ** 2)
        q = law @ np.exp(-0.5 * ((x - k) / sigma) ** 2)
        return scale * (p - math.exp(epsilon) * q)

    start = -k_max - 40 * sigma
    points = [x for x in np.arange(-k_max, 1.0) if start < x < x_star]
    value, _ = quad(integrand, start, x_star, points=points or None, epsabs=0, epsrel=1e-12, limit=500)
    return value


def _delta_one_step_everywhere(law: np.ndarray, sigma: float, epsilons: np.ndarray) -> np.ndarray:
    """δ_1(ε) for an array of ε: x* by vectorized bisection, then F_P(x*) − e^ε F_Q(x*) (mixture CDFs)."""
    k = np.arange(law.size)
    lo, hi = np.full(epsilons.shape, -400.0), np.full(epsilons.shape, 400.0)
    for _ in range(64):
        mid = (lo + hi) / 2
        above = _loss(mid, law, sigma) > epsilons
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    x = ((lo + hi) / 2)[..., None]
    f_p = np.sum(law * norm.cdf((x + k) / sigma), axis=-1)
    f_q = np.sum(law * norm.cdf((x - k) / sigma), axis=-1)
    return np.clip(f_p - np.exp(epsilons) * f_q, 0.0, 1.0)


def _renyi(law: np.ndarray, sigma: float, alphas: tuple[float, ...]) -> list[float]:
    """H_α(P‖Q) for each α by Simpson quadrature in logs (α = 1: KL), on one grid wide enough for the largest α:
    P^α Q^{1−α} peaks near x = −α·k_max."""
    k_max = law.size - 1
    x = np.linspace(-(max(alphas) + 1) * k_max - 30 * sigma, 30 * sigma, 60_001)
    log_p, log_q = _log_densities(x, law, sigma)
    out = []
    for alpha in alphas:
        if alpha == 1:
            out.append(float(simpson(np.exp(log_p) * (log_p - log_q), x=x)))
            continue
        log_f = alpha * log_p + (1 - alpha) * log_q
        peak = log_f.max()
        out.append(float((peak + math.log(simpson(np.exp(log_f - peak), x=x))) / (alpha - 1)))
    return out


def test_spec_test_vector():
    epsilon = structured_epsilon_of_params(SPEC, delta=SPEC_DELTA)
    assert epsilon == pytest.approx(SPEC_EPSILON, abs=0.01)
    fine = structured_epsilon_of_params(SPEC, delta=SPEC_DELTA, value_discretization_interval=1e-4)
    assert fine == pytest.approx(SPEC_EPSILON, abs=0.01)
    assert fine <= epsilon + 1e-9  # a finer connect-the-dots grid is never looser here


@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_one_step_delta_is_the_hockey_stick_from_above(sigma):
    law = _law(SPEC)
    dropped = math.fsum(law[law < 1e-14])  # charged at infinite loss: δ may exceed the exact value by this
    pld = structured_step_pld(count_law=law, noise_multiplier=sigma)
    for epsilon in (-0.4, 0.0, 0.123, 0.5, 1.0, 2.0):
        exact = _delta_by_quadrature(law, sigma, epsilon)
        got = pld.get_delta_for_epsilon(epsilon)
        assert exact > 1e-10
        assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-4) + 2 * dropped, epsilon


def test_two_steps_match_the_convolved_privacy_loss():
    # δ_2(ε) = E_{x~P}[δ_1(ε − L(x))]: one exact step composed with another, by quadrature over x.
    law, sigma = _law(SPEC), 1.0
    k_max = law.size - 1
    x = np.linspace(-k_max - 12 * sigma, 12 * sigma, 2001)
    log_p, log_q = _log_densities(x, law, sigma)
    pld = structured_step_pld(count_law=law, noise_multiplier=sigma).self_compose(2)
    for epsilon in (0.05, 0.5, 1.5, 3.0):
        exact = float(simpson(np.exp(log_p) * _delta_one_step_everywhere(law, sigma, epsilon - (log_p - log_q)), x=x))
        got = pld.get_delta_for_epsilon(epsilon)
        assert got >= exact * (1 - 1e-6)
        assert got <= exact * (1 + 1e-3)


@pytest.mark.parametrize(("p1", "sigma"), [(0.05, 0.8), (0.3, 2.0), (1.0, 1.5)])
def test_radius_zero_is_the_substitution_subsampled_gaussian(p1, sigma):
    law = structured_count_law(sampling_rate=p1, edge_keep=0.5, radius=0, out_degree_bound=3, union_factor=2)
    np.testing.assert_allclose(law, [1 - p1, p1])
    pld = structured_step_pld(count_law=law, noise_multiplier=sigma)
    for epsilon in (0.0, 0.2, 0.7, 1.5):

        def integrand(x: float, eps: float = epsilon) -> float:
            p = (1 - p1) * norm.pdf(x, 0, sigma) + p1 * norm.pdf(x, -1, sigma)
            q = (1 - p1) * norm.pdf(x, 0, sigma) + p1 * norm.pdf(x, 1, sigma)
            return max(0.0, p - math.exp(eps) * q)

        exact, _ = quad(integrand, -1 - 40 * sigma, 40 * sigma, points=[-1.0, 0.0], epsabs=0, epsrel=1e-11, limit=500)
        got = pld.get_delta_for_epsilon(epsilon)
        assert exact * (1 - 1e-7) <= got <= exact * (1 + 1e-3) + 1e-12


def test_full_batch_radius_zero_is_the_gaussian_of_sensitivity_two():
    sigma, steps = 1.7, 30
    params = {**SPEC, "sampling_rate": 1.0, "radius": 0, "noise_multiplier": sigma, "steps": steps}
    gaussian = pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=2.0, value_discretization_interval=1e-3
    ).self_compose(steps)
    ours = structured_epsilon_of_params(params, delta=1e-6)
    assert ours == pytest.approx(gaussian.get_epsilon_for_delta(1e-6), abs=2e-3)


@pytest.mark.parametrize(("p1", "radius", "k_out", "chi"), [(0.01, 1, 5, 2), (0.2, 2, 3, 1), (0.05, 3, 4, 2)])
def test_no_thinning_is_the_group_privacy_binomial(p1, radius, k_out, chi):
    law = structured_count_law(sampling_rate=p1, edge_keep=1.0, radius=radius, out_degree_bound=k_out, union_factor=chi)
    n = 1 + chi * sum(k_out**hop for hop in range(1, radius + 1))
    np.testing.assert_allclose(law, binom.pmf(np.arange(n + 1), n, p1), rtol=1e-9, atol=0)


def test_count_law_is_the_sum_of_its_bernoullis():
    p1, p2, radius, k_out, chi = 0.1, 0.4, 2, 3, 2
    law = structured_count_law(sampling_rate=p1, edge_keep=p2, radius=radius, out_degree_bound=k_out, union_factor=chi)
    coins = [p1]
    for hop in range(1, radius + 1):
        odds = p1 / (1 - p1) * p2**hop  # b_ℓ is p1 with its odds scaled by the path survival p2^ℓ
        coins += [odds / (1 + odds)] * (chi * k_out**hop)
    expected = np.array([1.0])
    for b in coins:
        expected = np.convolve(expected, [1 - b, b])
    np.testing.assert_allclose(law, expected, rtol=1e-9, atol=1e-300)
    assert math.fsum(law) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("p1", "p2", "sigma"), [(0.01, 0.1, 2.0), (0.05, 0.5, 1.0), (0.2, 0.3, 3.0)])
def test_star_accounted_pair_dominates_the_true_pair_in_renyi(p1, p2, sigma):
    # Star s -> v_1..v_K, in-expansion, r = 1: the roots whose subgraph holds s are s (p1) and each v_i
    # that is sampled and keeps its arc from s (p1·p2): Bern(p1) * Bin(K, p1·p2).
    k_out = 5
    true_law = np.convolve([1 - p1, p1], binom.pmf(np.arange(k_out + 1), k_out, p1 * p2))
    for chi in (1, 2):
        accounted = structured_count_law(
            sampling_rate=p1, edge_keep=p2, radius=1, out_degree_bound=k_out, union_factor=chi
        )
        alphas = (1, 1.5, 2, 5, 20)
        for alpha, true, bound in zip(alphas, _renyi(true_law, sigma, alphas), _renyi(accounted, sigma, alphas)):
            assert 0 < true <= bound * (1 + 1e-9), alpha


def test_calibration_lands_just_below_the_target_and_epsilon_falls_with_sigma():
    params = {**SPEC, "steps": 500}
    sigma = calibrate_structured(params, target_epsilon=2.0, target_delta=1e-5)
    epsilon = structured_epsilon_of_params({**params, "noise_multiplier": sigma}, delta=1e-5)
    assert 0.99 * 2.0 <= epsilon <= 2.0
    epsilons = [
        structured_epsilon_of_params({**params, "noise_multiplier": s}, delta=1e-5) for s in (1.0, 1.5, 2.0, 3.0, 5.0)
    ]
    assert all(a > b for a, b in itertools.pairwise(epsilons))


def test_pld_of_params_composes_the_step():
    params = {**SPEC, "steps": 7}
    one = structured_step_pld(count_law=_law(params), noise_multiplier=params["noise_multiplier"])
    direct = structured_pld_of_params(params).get_delta_for_epsilon(1.0)
    assert direct == pytest.approx(one.self_compose(7).get_delta_for_epsilon(1.0), rel=1e-9)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.2}, "sampling_rate"),
        ({"edge_keep": 1.5}, "edge_keep"),
        ({"edge_keep": 0}, "edge_keep"),
        ({"union_factor": 3}, "union_factor"),
        ({"union_factor": True}, "union_factor"),
        ({"union_factor": 2.0}, "union_factor"),
        ({"radius": -1}, "radius"),
        ({"radius": 1.0}, "radius"),
        ({"out_degree_bound": 0}, "out_degree_bound"),
        ({"noise_multiplier": 0.0}, "noise_multiplier"),
        ({"steps": 0}, "steps"),
    ],
)
def test_bad_params_are_refused_by_name(change, name):
    with pytest.raises(ValueError, match=name):
        structured_epsilon_of_params({**SPEC, **change}, delta=1e-5)


def test_missing_param_key_is_named():
    params = {key: value for key, value in SPEC.items() if key != "edge_keep"}
    with pytest.raises(ValueError, match="edge_keep"):
        structured_epsilon_of_params(params, delta=1e-5)
    with pytest.raises(ValueError, match="edge_keep"):
        calibrate_structured(params, target_epsilon=1.0, target_delta=1e-5)


def test_bad_count_law_is_refused():
    with pytest.raises(ValueError, match="count_law"):
        structured_step_pld(count_law=np.array([0.5, 0.6]), noise_multiplier=1.0)
    with pytest.raises(ValueError, match="count_law"):
        structured_step_pld(count_law=np.array([1.0, 0.0]), noise_multiplier=1.0)


def test_a_stalled_newton_falls_back_to_bisection_with_the_same_pld(monkeypatch):
    """Where Newton cannot finish (its budget spent: here none at all), the brackets it keeps are bisected to the
    same tolerance: the PLD is the same to the grid's resolution (it once raised instead, on a 100,000-node graph)."""
    import nodedp.accounting.structured as structured

    law = structured.structured_count_law(
        sampling_rate=0.01, edge_keep=0.1, radius=1, out_degree_bound=5, union_factor=2
    )
    reference = structured.structured_step_pld(count_law=law, noise_multiplier=0.8).self_compose(50)
    monkeypatch.setattr(structured, "_MAX_NEWTON", 0)
    bisected = structured.structured_step_pld(count_law=law, noise_multiplier=0.8).self_compose(50)
    for eps in (0.5, 2.0, 4.0):
        assert bisected.get_delta_for_epsilon(eps) == pytest.approx(reference.get_delta_for_epsilon(eps), rel=1e-6)
