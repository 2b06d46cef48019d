"""The white-box NAP-release audit: canaries that reach Δ = √(D + R²), a correct release never refuted, the papers'
√D noise refuted where the own row matters (D = 1, R = 20)."""

from __future__ import annotations

import math

import pytest
from scipy import optimize, stats

from nodedp.audit.nap import nap_record, nap_release_scores
from nodedp.audit.statistics import attack_auc, best_canary_count, epsilon_one_run

DELTA = 1e-4


def gaussian_epsilon(mu: float, delta: float) -> float:
    """ε at δ of a Gaussian mechanism whose shift is μ standard deviations (Balle & Wang's analytic formula)."""

    def excess(eps: float) -> float:
        return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta

    return optimize.brentq(excess, 0.0, 500.0, xtol=1e-12)


@pytest.mark.parametrize(("max_degree", "row_clip"), [(1, 20.0), (4, 2.0), (20, math.sqrt(20))])
def test_an_included_canary_shifts_its_score_by_exactly_d_plus_r_squared(max_degree, row_clip):
    # With almost no noise the score is the shift itself: D receivers each reading e₁, the own row R·e₀ read × R.
    scores, included = nap_release_scores(noise_std=1e-9, row_clip=row_clip, max_degree=max_degree, m=40, seed=1)
    assert 0 < int(included.sum()) < 40
    expected = max_degree + row_clip**2
    assert scores[included].sub(expected).abs().max() < 1e-6 and scores[~included].abs().max() < 1e-6


def test_the_score_separates_the_two_cases_by_delta_over_sigma():
    # Δ/σ = 1: the scores of included and excluded canaries differ by one standard deviation of the score.
    d, r, m = 3, 4.0, 4000
    sensitivity = math.sqrt(d + r * r)
    scores, included = nap_release_scores(noise_std=sensitivity, row_clip=r, max_degree=d, m=m, seed=0)
    sd = float(scores[~included].std())
    shift = float(scores[included].mean() - scores[~included].mean())
    assert sd == pytest.approx(sensitivity * sensitivity, rel=0.05)  # σ·√(D + R²) with σ = Δ
    assert shift / sd == pytest.approx(1.0, abs=0.08)
    assert attack_auc(scores.numpy(), included.numpy()) == pytest.approx(stats.norm.cdf(1 / math.sqrt(2)), abs=0.03)


@pytest.mark.parametrize("seed", range(5))
def test_a_release_with_the_correct_noise_is_never_refuted(seed):
    # σ = z·Δ with z = 0.8: the release is (ε, δ)-DP with ε = gaussian_epsilon(1/z); the bound stays below it.
    d, r, z = 1, 20.0, 0.8
    m = best_canary_count(DELTA)
    scores, included = nap_release_scores(noise_std=z * math.sqrt(d + r * r), row_clip=r, max_degree=d, m=m, seed=seed)
    bound = epsilon_one_run(scores.numpy(), included.numpy(), delta=DELTA, seed=seed).epsilon
    assert bound <= gaussian_epsilon(1 / z, DELTA)


def test_the_papers_root_d_noise_is_refuted_where_the_own_row_matters():
    # The papers' std z·√D for z = 4 claims the ε of a Gaussian at μ = 1/4 (≈ 1.1 at δ = 1e-4); with D = 1 and
    # R = 20 the true shift is √401/4 ≈ 5 standard deviations, and the audit refutes the claim.
    d, r, z = 1, 20.0, 4.0
    claimed = gaussian_epsilon(1 / z, DELTA)
    scores, included = nap_release_scores(
        noise_std=z * math.sqrt(d), row_clip=r, max_degree=d, m=best_canary_count(DELTA), seed=0
    )
    assert epsilon_one_run(scores.numpy(), included.numpy(), delta=DELTA).epsilon > claimed


def test_the_ledger_nap_record_is_found_and_bad_settings_are_refused():
    class Record:
        def __init__(self, **params):
            self.params = params

    class Ledger:
        mechanisms = (
            Record(mechanism="dp_sgd"),
            Record(mechanism="nap", level="edge"),
            Record(mechanism="nap", level="node", noise_std=2.0),
        )

    assert nap_record(Ledger()).params["noise_std"] == 2.0
    with pytest.raises(ValueError, match="max_degree"):
        nap_release_scores(noise_std=1.0, row_clip=1.0, max_degree=0, m=10, seed=0)
    with pytest.raises(ValueError, match="row_clip"):
        nap_release_scores(noise_std=1.0, row_clip=math.inf, max_degree=1, m=10, seed=0)


@pytest.mark.parametrize("undirected", [False, True])
def test_an_edge_level_nap_release_is_bounded_by_its_gaussian_and_a_tenth_of_its_noise_is_caught(undirected):
    from nodedp.audit.nap import nap_edge_record, nap_edge_release_scores

    sensitivity = math.sqrt(2.0) if undirected else 1.0
    m = best_canary_count(DELTA)
    for z in (0.5, 1.0, 2.0):
        true = gaussian_epsilon(1 / z, DELTA)
        scores, included = nap_edge_release_scores(
            noise_std=z * sensitivity, row_clip=None, undirected=undirected, m=m, seed=3
        )
        assert epsilon_one_run(scores.numpy(), included.numpy(), delta=DELTA, seed=0).epsilon <= true
    z = 2.0  # the claim: gaussian_epsilon(0.5) ≈ 1.4; the release draws a tenth of its noise
    scores, included = nap_edge_release_scores(
        noise_std=z * sensitivity / 10, row_clip=1.0, undirected=undirected, m=m, seed=3
    )
    assert epsilon_one_run(scores.numpy(), included.numpy(), delta=DELTA, seed=0).epsilon > gaussian_epsilon(
        1 / z, DELTA
    )

    class Record:
        def __init__(self, **params):
            self.params = params

    class Ledger:
        mechanisms = (Record(mechanism="nap", level="node"), Record(mechanism="nap", level="edge"))

    assert nap_edge_record(Ledger()) is Ledger.mechanisms[1] and nap_record(Ledger()) is Ledger.mechanisms[0]
    with pytest.raises(ValueError, match="noise_std"):
        nap_edge_release_scores(noise_std=0.0, row_clip=None, undirected=False, m=10, seed=0)
