"""HeterPoisson's accountant: the spec's test vectors, an independent hockey-stick check, the worst case d = D."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.privacy_loss_mechanism import MixtureGaussianPrivacyLoss
from scipy.integrate import trapezoid
from scipy.stats import binom, norm

from nodedp.accounting._dp_private import dense_parts, pld_pmfs
from nodedp.accounting.heter_poisson import (
    calibrate_heter_poisson,
    heter_poisson_epsilon_of_params,
    heter_poisson_mixture,
    heter_poisson_rdp,
    heter_poisson_step_pld,
    paper_epsilon,
    paper_noise_multiplier,
    paper_worst_degree,
)
from nodedp.accounting.pld import LOG_MASS_TRUNCATION_BOUND, VALUE_DISCRETIZATION_INTERVAL

# Spec §2.5's example (the public code's own): q = 0.2, M = 1, d = 20000, σ = 1.65, T = 45, δ = 1e-5.
EXAMPLE: dict[str, Any] = {
    "sampling_rate": 0.2,
    "neighbours": 1,
    "degree_bound": 20000,
    "noise_multiplier": 1.65,
    "steps": 45,
}
# Spec §2.5's facebook-like setting: N_train = 17,976, B = 4096, T = 9 epochs × 5 steps, δ = N^−1.1, d = N.
FACEBOOK_N = 17976
FACEBOOK: dict[str, Any] = {"sampling_rate": 4096 / FACEBOOK_N, "degree_bound": FACEBOOK_N, "steps": 45}


def _spec_mixture(q: float, m: int, d: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """Spec §2.5's weights, written out here: shift ½ w.p. q, n = 0..d w.p. (1 − q)·Bin(n; d, q·min(1, M/D))."""
    c = q * min(1.0, m / bound)
    n = np.arange(d + 1)
    shifts = np.concatenate(([0.0, 0.5], n[1:].astype(float)))
    weights = np.concatenate(([(1 - q) * (1 - c) ** d, q], (1 - q) * binom.pmf(n[1:], d, c)))
    return shifts, weights


def test_pld_reproduces_the_spec_example() -> None:
    assert heter_poisson_epsilon_of_params(EXAMPLE, delta=1e-5) == pytest.approx(5.766, abs=0.02)


@pytest.mark.parametrize(("grid", "expected", "tolerance"), [("wide", 7.687, 0.01), ("quantile", 6.788, 0.02)])
def test_rdp_reproduces_the_spec_example(grid: Any, expected: float, tolerance: float) -> None:
    # The scan picks d = D here (the RDP grows with d: test_the_papers_scan_picks_the_largest_degree).
    epsilon = paper_epsilon(**EXAMPLE, delta=1e-5, degree=EXAMPLE["degree_bound"], grid=grid)
    assert epsilon == pytest.approx(expected, abs=tolerance)


@pytest.mark.parametrize(("degree", "expected"), [(1, 0.05276), (20, 0.05859), (20000, 0.05904)])
def test_one_step_rdp_at_order_1_3_matches_the_spec(degree: int, expected: float) -> None:
    rdp = heter_poisson_rdp(
        sampling_rate=0.2, neighbours=1, degree=degree, noise_multiplier=1.0, orders=(1.3,), grid="wide"
    )
    assert rdp[0] == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize(
    ("neighbours", "sigma", "rdp_epsilon", "pld_epsilon"), [(1, 2.0, 5.61, 4.72), (3, 4.0, 5.46, 4.98)]
)
def test_facebook_like_cells_match_the_spec(
    neighbours: int, sigma: float, rdp_epsilon: float, pld_epsilon: float
) -> None:
    params = {**FACEBOOK, "neighbours": neighbours, "noise_multiplier": sigma}
    delta = FACEBOOK_N**-1.1
    assert heter_poisson_epsilon_of_params(params, delta=delta) == pytest.approx(pld_epsilon, abs=0.01)
    rdp = paper_epsilon(**params, delta=delta, degree=FACEBOOK_N, grid="wide")
    assert rdp == pytest.approx(rdp_epsilon, abs=0.01)


def test_mixture_is_the_spec_mixture() -> None:
    shifts, weights = heter_poisson_mixture(sampling_rate=0.3, neighbours=2, degree=7, degree_bound=9)
    spec_shifts, spec_weights = _spec_mixture(0.3, 2, 7, 9)
    assert shifts == pytest.approx(spec_shifts)
    assert weights == pytest.approx(spec_weights, rel=1e-12)
    assert math.fsum(weights) == pytest.approx(1.0, abs=1e-12)


def test_step_pld_equals_dp_accountings_mixture_of_gaussians() -> None:
    # The vectorised inverse must not change the library's PLD: same mixture, from_mixture_gaussian_mechanism
    # (on a coarse grid: the library's own inverse takes ~0.2 ms per grid point).
    q, m, d, sigma, interval = 0.3, 2, 6, 1.5, 1e-2
    ours = heter_poisson_step_pld(
        sampling_rate=q, neighbours=m, degree_bound=d, noise_multiplier=sigma, value_discretization_interval=interval
    )
    shifts, weights = _spec_mixture(q, m, d, d)
    theirs = pld_lib.from_mixture_gaussian_mechanism(
        standard_deviation=sigma,
        sensitivities=shifts,
        sampling_probs=weights / weights.sum(),
        value_discretization_interval=interval,
        pessimistic_estimate=True,
        log_mass_truncation_bound=LOG_MASS_TRUNCATION_BOUND,
    )
    epsilons = np.linspace(-0.5, 4.0, 91)
    for mine, library in zip(pld_pmfs(ours), pld_pmfs(theirs), strict=True):
        assert mine is not None and library is not None
        assert mine.get_delta_for_epsilon(epsilons) == pytest.approx(library.get_delta_for_epsilon(epsilons), abs=1e-9)


def test_the_overridden_inverse_still_exists_in_dp_accounting() -> None:
    # heter_poisson vectorises this private method; renamed, the library's own search (~0.2 ms a grid point) runs.
    assert callable(getattr(MixtureGaussianPrivacyLoss, "_inverse_privacy_losses_with_range", None))


def _hockey_stick(upper: np.ndarray, lower: np.ndarray, x: np.ndarray, epsilon: float) -> float:
    return float(trapezoid(np.maximum(upper - math.exp(epsilon) * lower, 0.0), x))


def test_pld_bounds_the_hockey_stick_of_both_orientations() -> None:
    # δ(ε) = ∫ (P − e^ε Q)₊ (removal) and ∫ (Q − e^ε P)₊ (insertion), integrated directly on a fine grid.
    q, m, bound, sigma = 0.25, 3, 40, 1.2
    pld = heter_poisson_step_pld(sampling_rate=q, neighbours=m, degree_bound=bound, noise_multiplier=sigma)
    remove, add = pld_pmfs(pld)
    assert add is not None
    shifts, weights = _spec_mixture(q, m, bound, bound)
    x = np.linspace(-15 * sigma, 25 + 15 * sigma, 400_001)
    p = (weights[:, None] * norm.pdf(x[None, :], loc=shifts[:, None], scale=sigma)).sum(axis=0)
    q_density = norm.pdf(x, scale=sigma)
    step, slack = VALUE_DISCRETIZATION_INTERVAL, 1e-9  # the trapezoid rule's error here is ~2e-10
    for epsilon in (0.0, 0.1, 0.25, 0.5, 1.0, 1.7, 2.5, 0.3333):
        for pmf, upper, lower in ((remove, p, q_density), (add, q_density, p)):
            exact = _hockey_stick(upper, lower, x, epsilon)
            ours = pmf.get_delta_for_epsilon(epsilon)
            # Pessimistic, and no looser than the exact curve one grid step earlier (connect-the-dots).
            assert ours >= exact - slack
            assert ours <= _hockey_stick(upper, lower, x, epsilon - step) + slack
    assert pld.get_delta_for_epsilon(0.5) > 0.01  # the check is not vacuous


def test_dropped_components_are_charged_as_infinite_loss() -> None:
    q, m, bound, sigma = 0.2, 1, 200, 2.0
    _, weights = _spec_mixture(q, m, bound, bound)
    negligible = math.fsum(weights[weights < 1e-18])
    assert negligible > 0
    pld = heter_poisson_step_pld(sampling_rate=q, neighbours=m, degree_bound=bound, noise_multiplier=sigma)
    for pmf in pld_pmfs(pld):
        assert pmf is not None
        assert dense_parts(pmf)[2] >= negligible * (1 - 1e-9)


def _step_deltas(*, degree: int, bound: int, sigma: float, epsilons: np.ndarray) -> np.ndarray:
    pld = heter_poisson_step_pld(
        sampling_rate=0.2, neighbours=3, degree_bound=bound, degree=degree, noise_multiplier=sigma
    )
    return np.asarray(pld.get_delta_for_epsilon(epsilons))


@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_public_degree_bound_makes_d_equal_d_max_the_worst_case(sigma: float) -> None:
    # With keep probability M/D, a node listed by d ≤ D roots appears Bin(d, qM/D) times: δ(ε) grows with d.
    epsilons = np.arange(0, 3001, 100) * VALUE_DISCRETIZATION_INTERVAL  # grid points: δ there is exact
    deltas = [_step_deltas(degree=d, bound=60, sigma=sigma, epsilons=epsilons) for d in (1, 2, 5, 15, 60)]
    for smaller, larger in itertools.pairwise(deltas):
        assert np.all(larger >= smaller - 1e-9)
    assert deltas[-1][0] > 2 * deltas[0][0]  # not vacuous: δ(0) (total variation) doubles at least


def test_public_codes_mixture_also_grows_with_d() -> None:
    # Keep probability M/d (the public code's mixture at d): the one-step PLD ε still grows with d.
    epsilons = [
        heter_poisson_step_pld(
            sampling_rate=0.2, neighbours=3, degree_bound=d, noise_multiplier=1.5
        ).get_epsilon_for_delta(1e-3)
        for d in (1, 2, 3, 5, 10, 30, 100)
    ]
    assert all(b >= a for a, b in itertools.pairwise(epsilons))


def test_the_papers_scan_picks_the_largest_degree() -> None:
    assert paper_worst_degree(sampling_rate=0.2, neighbours=3, degree_bound=12) == 12
    rdp = [
        heter_poisson_rdp(
            sampling_rate=0.2, neighbours=3, degree=d, noise_multiplier=1.0, orders=(1.3,), grid="quantile"
        )[0]
        for d in range(1, 13)
    ]
    assert int(np.argmax(rdp)) + 1 == 12


def test_calibration_lands_just_below_the_target() -> None:
    params = {"sampling_rate": 0.2, "neighbours": 2, "degree_bound": 50, "noise_multiplier": 1.0, "steps": 30}
    sigma = calibrate_heter_poisson(params, target_epsilon=3.0, target_delta=1e-5)
    spent = heter_poisson_epsilon_of_params({**params, "noise_multiplier": sigma}, delta=1e-5)
    assert 0.99 * 3.0 <= spent <= 3.0


def test_epsilon_decreases_as_noise_grows() -> None:
    params = {"sampling_rate": 0.1, "neighbours": 2, "degree_bound": 30, "steps": 20}
    spent = [heter_poisson_epsilon_of_params({**params, "noise_multiplier": s}, delta=1e-5) for s in (1, 1.5, 2, 3)]
    assert all(b < a for a, b in itertools.pairwise(spent))


def test_paper_noise_multiplier_is_the_upper_end_of_a_001_bracket() -> None:
    args: dict[str, Any] = {
        "sampling_rate": 0.2,
        "neighbours": 1,
        "degree_bound": 500,
        "steps": 45,
        "degree": 500,
        "grid": "wide",
    }
    sigma = paper_noise_multiplier(**args, target_epsilon=4.0, target_delta=1e-5)
    assert paper_epsilon(**args, noise_multiplier=sigma, delta=1e-5) <= 4.0
    assert paper_epsilon(**args, noise_multiplier=sigma - 0.01, delta=1e-5) > 4.0


_GOOD = {"sampling_rate": 0.2, "neighbours": 1, "degree_bound": 10, "noise_multiplier": 1.0, "steps": 5}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.5}, "sampling_rate"),
        ({"sampling_rate": True}, "sampling_rate"),
        ({"sampling_rate": "0.2"}, "sampling_rate"),
        ({"neighbours": 0}, "neighbours"),
        ({"neighbours": 1.5}, "neighbours"),
        ({"degree_bound": 0}, "degree_bound"),
        ({"noise_multiplier": 0.0}, "noise_multiplier"),
        ({"noise_multiplier": math.nan}, "noise_multiplier"),
        ({"steps": 0}, "steps"),
        ({"steps": None}, "steps"),
    ],
)
def test_bad_params_are_refused_by_name(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        heter_poisson_epsilon_of_params({**_GOOD, **changes}, delta=1e-5)


def test_other_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="lack"):
        heter_poisson_epsilon_of_params({k: v for k, v in _GOOD.items() if k != "steps"}, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        heter_poisson_epsilon_of_params(_GOOD, delta=0.0)
    with pytest.raises(ValueError, match="degree must be <= degree_bound"):
        heter_poisson_mixture(sampling_rate=0.2, neighbours=1, degree=11, degree_bound=10)
    with pytest.raises(ValueError, match="degree"):
        heter_poisson_step_pld(sampling_rate=0.2, neighbours=1, degree_bound=10, degree=0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="orders"):
        heter_poisson_rdp(sampling_rate=0.2, neighbours=1, degree=3, noise_multiplier=1.0, orders=(1.0, 2.0))
    with pytest.raises(ValueError, match="grid"):
        bad_grid: Any = "fine"
        heter_poisson_rdp(sampling_rate=0.2, neighbours=1, degree=3, noise_multiplier=1.0, orders=(2.0,), grid=bad_grid)
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_heter_poisson(_GOOD, target_epsilon=-1.0, target_delta=1e-5)
    with pytest.raises(ValueError, match="unreachable"):
        paper_noise_multiplier(
            sampling_rate=0.9,
            neighbours=5,
            degree_bound=10,
            steps=10_000,
            target_epsilon=1e-3,
            target_delta=1e-5,
            degree=10,
            grid="wide",
        )
