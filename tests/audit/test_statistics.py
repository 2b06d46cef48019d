from __future__ import annotations

import dataclasses
import itertools
import math

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, stats

from nodedp.audit import (
    OneRunBound,
    ThresholdBound,
    attack_auc,
    clopper_pearson_epsilon,
    default_guess_grid,
    epsilon_from_counts,
    epsilon_one_run,
    one_run_p_value,
    tpr_at_fpr,
)

DELTA = 1e-5


# ----------------------------------------------------------------------------- helpers


def _brute_pure_epsilon(v: int, r: int, beta: float) -> float:
    """Largest ε with P[Binomial(r, e^ε/(1+e^ε)) ≥ v] ≤ β, by plain bisection on binom.sf."""

    def tail(eps: float) -> float:
        return stats.binom.sf(v - 1, r, math.exp(eps) / (1 + math.exp(eps)))

    if tail(0.0) > beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while tail(hi) <= beta:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) <= beta else (lo, mid)
    return lo


def _brute_p_value(v: int, r: int, m: int, eps: float, delta: float) -> float:
    """f(v) + 2mδ·max_i (f(v − i) − f(v))/i with f from binom.sf, one i at a time."""
    q = math.exp(eps) / (1 + math.exp(eps))

    def f(k: int) -> float:
        return float(stats.binom.sf(k - 1, r, q))

    alpha = max(((f(v - i) - f(v)) / i for i in range(1, v + 1)), default=0.0)
    return min(f(v) + 2 * m * delta * alpha, 1.0)


def _randomized_response(eps: float, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each canary's score reports its inclusion truthfully with prob e^ε/(1+e^ε): exactly ε-DP per canary."""
    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    truthful = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
    report = np.where(truthful, included, ~included)
    return report + 1e-6 * rng.standard_normal(m), included


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """ε of the Gaussian mechanism with sensitivity/σ = μ at δ (Balle & Wang's analytic formula)."""

    def excess(eps: float) -> float:
        return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta

    return optimize.brentq(excess, 0.0, 200.0, xtol=1e-12)


# ------------------------------------------------------------------ the core (r, v) bound


@pytest.mark.parametrize(
    ("v", "r", "beta"),
    [(75, 100, 0.05), (10, 10, 0.05), (3, 3, 0.3), (600, 1000, 0.01), (990, 1000, 0.001), (60, 100, 0.2)],
)
def test_pure_bound_matches_a_brute_bisection(v, r, beta) -> None:
    expected = _brute_pure_epsilon(v, r, beta)
    assert expected > 0
    assert epsilon_from_counts(v, r, delta=0, beta=beta) == pytest.approx(expected, abs=1e-6)
    assert epsilon_from_counts(v, r, delta=0.0, beta=beta, m=5 * r) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("v", "r", "m", "eps", "delta"),
    [(75, 100, 1000, 0.5, 1e-4), (75, 100, 1000, 1.2, 1e-4), (480, 500, 5000, 2.5, 1e-5), (3, 4, 10, 0.1, 0.01)],
)
def test_p_value_with_delta_matches_a_brute_sum(v, r, m, eps, delta) -> None:
    assert one_run_p_value(v, r, m=m, epsilon=eps, delta=delta) == pytest.approx(
        _brute_p_value(v, r, m, eps, delta), rel=1e-9, abs=1e-15
    )


@pytest.mark.parametrize(
    ("v", "r", "m", "delta", "beta"), [(75, 100, 1000, 1e-4, 0.05), (1439, 1510, 100_000, 1e-5, 0.05)]
)
def test_delta_bound_is_a_rejected_epsilon_at_the_edge(v, r, m, delta, beta) -> None:
    eps = epsilon_from_counts(v, r, delta=delta, beta=beta, m=m)
    assert 0 < eps < epsilon_from_counts(v, r, delta=0, beta=beta)
    assert _brute_p_value(v, r, m, eps, delta) <= beta  # the claim (ε, δ) is rejected...
    assert _brute_p_value(v, r, m, eps + 1e-4, delta) > beta  # ...and a slightly larger ε is not


def test_reproduces_the_worked_examples_of_the_paper() -> None:
    # arXiv:2305.08846v1: Appendix D's example (m=1000, r=100, v=75, δ=1e-4, 95%) → 0.673,
    # and §7's (m=1e5, r=1510, v=1439, δ=1e-5, 95%) → 2.675.
    assert epsilon_from_counts(75, 100, delta=1e-4, beta=0.05, m=1000) == pytest.approx(0.673, abs=1e-3)
    assert epsilon_from_counts(1439, 1510, delta=1e-5, beta=0.05, m=100_000) == pytest.approx(2.675, abs=2e-3)


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_no_evidence_gives_zero(delta) -> None:
    for v, r in [(0, 0), (0, 10), (50, 100), (45, 100), (52, 100), (5, 10), (1, 2)]:
        assert epsilon_from_counts(v, r, delta=delta, beta=0.05, m=1000) == 0.0


def test_bound_grows_with_correct_guesses() -> None:
    bounds = [epsilon_from_counts(v, 200, delta=DELTA, beta=0.05, m=1000) for v in range(100, 201, 10)]
    assert all(b2 >= b1 for b1, b2 in itertools.pairwise(bounds))
    assert bounds[0] == 0 and bounds[-1] > bounds[-2] > bounds[-3] > 0


def test_bound_shrinks_with_delta() -> None:
    bounds = [epsilon_from_counts(180, 200, delta=d, beta=0.05, m=1000) for d in (0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)]
    assert all(b2 <= b1 for b1, b2 in itertools.pairwise(bounds))
    assert bounds[0] > bounds[3] > bounds[-1] >= 0


def test_bound_shrinks_as_confidence_rises() -> None:
    for delta in (0.0, DELTA):
        bounds = [epsilon_from_counts(180, 200, delta=delta, beta=b, m=1000) for b in (0.3, 0.1, 0.05, 0.01, 1e-4)]
        assert all(b2 < b1 for b1, b2 in itertools.pairwise(bounds))


# ------------------------------------------------------------------------ one-run audit


def test_default_grid_is_valid_and_spans_the_splits() -> None:
    for m in (1, 7, 10, 1000, 5000):
        grid = default_guess_grid(m)
        assert len(set(grid)) == len(grid)
        assert all(k_plus >= 0 and k_minus >= 0 and 1 <= k_plus + k_minus <= m for k_plus, k_minus in grid)
        assert {(m, 0), (0, m)} <= set(grid)
    grid = default_guess_grid(1000)
    assert (500, 500) in grid and (707, 0) in grid and (0, 707) in grid and (177, 0) in grid
    assert 10 <= min(k_plus + k_minus for k_plus, k_minus in grid) < 15
    assert default_guess_grid(7) == [(7, 0), (5, 2), (4, 3), (2, 5), (0, 7)]


def test_one_run_on_a_single_grid_point_is_the_counted_bound() -> None:
    scores, included = _randomized_response(2.0, 400, seed=3)
    order = np.argsort(-scores)
    k_plus, k_minus = 120, 80
    v = int(included[order[:k_plus]].sum() + (~included[order[len(order) - k_minus :]]).sum())
    bound = epsilon_one_run(scores, included, delta=DELTA, confidence=0.9, guesses=[(k_plus, k_minus)])
    assert isinstance(bound, OneRunBound)
    assert (bound.k_plus, bound.k_minus, bound.guesses, bound.correct) == (k_plus, k_minus, 200, v)
    assert (bound.m, bound.grid_size, bound.delta, bound.confidence) == (400, 1, DELTA, 0.9)
    assert bound.epsilon == pytest.approx(epsilon_from_counts(v, 200, delta=DELTA, beta=0.1, m=400), abs=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bound.epsilon = 0.0  # type: ignore[misc]


def test_grid_confidence_is_split_by_bonferroni() -> None:
    scores, included = _randomized_response(2.0, 1000, seed=0)
    bound = epsilon_one_run(scores, included, delta=DELTA, confidence=0.95)
    assert bound.grid_size == len(default_guess_grid(1000))
    beta = 0.05 / bound.grid_size
    assert bound.epsilon == pytest.approx(
        epsilon_from_counts(bound.correct, bound.guesses, delta=DELTA, beta=beta, m=1000), abs=1e-12
    )
    # The best point beats every other point of the grid at the same per-point level.
    order = np.argsort(-scores)
    for k_plus, k_minus in default_guess_grid(1000)[::7]:
        v = int(included[order[:k_plus]].sum() + (~included[order[1000 - k_minus :]]).sum())
        assert epsilon_from_counts(v, k_plus + k_minus, delta=DELTA, beta=beta, m=1000) <= bound.epsilon + 1e-12


def test_ties_are_not_broken_by_canary_order() -> None:
    included = np.arange(400) < 200  # the included canaries come first
    bound = epsilon_one_run(np.zeros(400), included, delta=DELTA)
    assert bound.epsilon < 0.5  # an index tie-break would "guess" all 400 right


def test_randomized_response_eps1_is_not_overstated() -> None:
    bounds = [epsilon_one_run(*_randomized_response(1.0, 1000, seed), delta=DELTA).epsilon for seed in range(20)]
    assert sum(b <= 1.0 for b in bounds) >= 19
    assert max(bounds) > 0.3  # and the audit sees a good part of it


def test_randomized_response_eps4_refutes_a_claim_of_eps1() -> None:
    for seed in range(2):
        bound = epsilon_one_run(*_randomized_response(4.0, 5000, seed), delta=DELTA)
        assert 1.0 < bound.epsilon <= 4.0


@pytest.mark.parametrize("mu", [1.0, 2.0])
def test_gaussian_mechanism_bound_stays_below_its_epsilon(mu) -> None:
    true_epsilon = _gaussian_epsilon(mu, DELTA)
    assert true_epsilon == pytest.approx(dp_accounting.get_epsilon_gaussian(1 / mu, DELTA), rel=1e-4)
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        included = rng.random(2000) < 0.5
        scores = included * mu + rng.standard_normal(2000)
        bound = epsilon_one_run(scores, included, delta=DELTA)
        assert 0 < bound.epsilon <= true_epsilon
        # The canaries' scores are independent here, so the Clopper–Pearson bound is valid too.
        assert clopper_pearson_epsilon(scores, included, delta=DELTA).epsilon <= true_epsilon


# --------------------------------------------------------------------- Clopper–Pearson


def test_clopper_pearson_perfect_separation_is_limited_by_sample_size() -> None:
    def perfect(m: int) -> ThresholdBound:
        included = np.arange(m) < m // 2
        return clopper_pearson_epsilon(included + np.linspace(0, 0.5, m), included, delta=DELTA)

    bound = perfect(200)
    assert (bound.tpr, bound.fpr, bound.n_thresholds) == (1.0, 0.0, 200)
    # 100 of 100 in, 0 of 100 out, level 0.05/(2·200): TPR_lo = a = level^(1/100), FPR_hi = 1 − a.
    a = (0.05 / 400) ** (1 / 100)
    assert bound.tpr_lower == pytest.approx(a, rel=1e-9)
    assert bound.fpr_upper == pytest.approx(1 - a, rel=1e-9)
    assert bound.epsilon == pytest.approx(math.log((a - DELTA) / (1 - a)), rel=1e-9)
    assert 0 < bound.epsilon < math.log(100)
    assert perfect(400).epsilon > bound.epsilon


def test_clopper_pearson_random_scores_give_about_zero() -> None:
    for seed in range(5):
        rng = np.random.default_rng(seed)
        bound = clopper_pearson_epsilon(rng.standard_normal(500), rng.random(500) < 0.5, delta=DELTA)
        assert bound.epsilon < 0.1


def test_clopper_pearson_negative_side_catches_confident_outs() -> None:
    # Only "out" canaries are recognisable (lowest scores): the (1 − FPR)/(1 − TPR) side gives the bound.
    rng = np.random.default_rng(0)
    included = rng.random(600) < 0.5
    scores = np.where(included, rng.random(600), np.where(rng.random(600) < 0.6, -1 - rng.random(600), rng.random(600)))
    bound = clopper_pearson_epsilon(scores, included, delta=DELTA)
    assert bound.side == "negative" and bound.epsilon > 0.3


# ------------------------------------------------------------------------ attack metrics


def test_auc_matches_a_pair_count_with_ties() -> None:
    for seed in range(3):
        rng = np.random.default_rng(seed)
        included = rng.random(150) < 0.4
        scores = rng.integers(0, 6, 150) + included * rng.integers(0, 2, 150)
        ins, outs = scores[included], scores[~included]
        brute = sum((a > b) + 0.5 * (a == b) for a in ins for b in outs) / (ins.size * outs.size)
        assert attack_auc(scores, included) == pytest.approx(brute, abs=1e-12)
    assert attack_auc([3, 2, 1, 0], [1, 1, 0, 0]) == 1.0
    assert attack_auc([0, 1, 2, 3], [1, 1, 0, 0]) == 0.0
    assert attack_auc([1, 1, 1, 1], [1, 0, 1, 0]) == 0.5


def test_tpr_at_fpr_on_a_hand_example() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    included = [True, False, True, True, False, False]
    assert tpr_at_fpr(scores, included) == pytest.approx(1 / 3)  # fpr=0.01: only "≥ 0.9" has no false positive
    assert tpr_at_fpr(scores, included, fpr=0.0) == pytest.approx(1 / 3)
    assert tpr_at_fpr(scores, included, fpr=1 / 3) == 1.0  # "≥ 0.6": 3/3 in, 1/3 out
    assert tpr_at_fpr(scores, included, fpr=1.0) == 1.0
    # A tie between an in and an out canary at the top: no threshold with FPR 0 keeps the in one.
    assert tpr_at_fpr([1.0, 1.0, 0.0, 0.0], [True, False, True, False], fpr=0.0) == 0.0


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call",
    [
        lambda: epsilon_one_run([0.1, 0.2, 0.3], [True, False], delta=DELTA),
        lambda: clopper_pearson_epsilon([0.1, 0.2], [True, True], delta=DELTA),
        lambda: attack_auc([0.1, 0.2], [False, False]),
        lambda: tpr_at_fpr([0.1, 0.2], [True], fpr=0.1),
        lambda: epsilon_one_run([0.1, 0.2], [True, False], delta=1.0),
        lambda: epsilon_one_run([0.1, 0.2], [True, False], delta=-1e-6),
        lambda: clopper_pearson_epsilon([0.1, 0.2], [True, False], delta=DELTA, confidence=1.0),
        lambda: epsilon_one_run([0.1, 0.2], [True, False], delta=DELTA, confidence=0.0),
        lambda: epsilon_one_run([0.1, float("nan")], [True, False], delta=DELTA),
        lambda: epsilon_one_run([0.1, 0.2], [2, 0], delta=DELTA),
        lambda: epsilon_one_run([0.1, 0.2], [True, False], delta=DELTA, guesses=[(2, 1)]),
        lambda: epsilon_one_run([0.1, 0.2], [True, False], delta=DELTA, guesses=[]),
        lambda: tpr_at_fpr([0.1, 0.2], [True, False], fpr=1.5),
        lambda: epsilon_from_counts(11, 10, delta=0, beta=0.05),
        lambda: epsilon_from_counts(5, 10, delta=DELTA, beta=0.05),  # δ > 0 needs m
        lambda: epsilon_from_counts(5, 10, delta=DELTA, beta=0.05, m=9),
        lambda: epsilon_from_counts(5, 10, delta=0, beta=1.0),
        lambda: epsilon_from_counts(5, 10, delta=1.0, beta=0.05, m=100),
    ],
)
def test_bad_input_raises_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_error_messages_name_the_problem() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        epsilon_one_run([0.1, 0.2, 0.3], [True, False], delta=DELTA)
    with pytest.raises(ValueError, match="no canary is included"):
        epsilon_one_run([0.1, 0.2], [False, False], delta=DELTA)
    with pytest.raises(ValueError, match="every canary is included"):
        epsilon_one_run([0.1, 0.2], [True, True], delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        clopper_pearson_epsilon([0.1, 0.2], [True, False], delta=1.5)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson_epsilon([0.1, 0.2], [True, False], delta=DELTA, confidence=1.2)


def test_the_best_canary_count_is_the_perfect_attacks_strongest_at_delta():
    from nodedp.audit.statistics import CANARY_COUNTS, best_canary_count

    for delta in (1e-4, 1e-5):
        ceilings = {}
        for m in CANARY_COUNTS:
            included = np.arange(m) % 2 == 0
            ceilings[m] = epsilon_one_run(included.astype(float), included, delta=delta).epsilon
        assert best_canary_count(delta) == max(ceilings, key=ceilings.get)
    # The 2·m·δ term: the larger δ, the fewer canaries pay.
    assert best_canary_count(1e-4) < best_canary_count(1e-5) < best_canary_count(1e-6)
