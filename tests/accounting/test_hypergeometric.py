from __future__ import annotations

import decimal
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from nodedp.accounting import (
    RDP_ORDERS,
    hypergeometric_gaussian_epsilon,
    hypergeometric_gaussian_params,
    hypergeometric_gaussian_rdp,
    max_occurrences,
)
from nodedp.accounting.hypergeometric import hypergeometric_gaussian_rdp_of_params

DELTA = 1e-5


def theorem_1(*, alpha: float, n: int, d: int, m: int, z: float) -> float:
    """γ(α) straight from the statement: exact pmf, 80-digit exp and ln."""
    ctx = decimal.Context(prec=80, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    a, z2 = decimal.Decimal(alpha), decimal.Decimal(z) ** 2
    total = decimal.Decimal(0)
    for rho in range(min(m, d) + 1):
        pmf = Fraction(math.comb(d, rho) * math.comb(n - d, m - rho), math.comb(n, m))
        if pmf == 0:
            continue
        weight = ctx.divide(decimal.Decimal(pmf.numerator), decimal.Decimal(pmf.denominator))
        total = ctx.add(total, ctx.multiply(weight, ctx.exp(ctx.divide(a * (a - 1) * 2 * rho**2, z2))))
    return float(ctx.divide(ctx.ln(total), a - 1))


def standard_rdp(event: dp_event.DpEvent) -> np.ndarray:
    return RdpAccountant(orders=list(RDP_ORDERS)).compose(event).rdp


@pytest.mark.parametrize(
    ("k", "r", "expected"), [(0, 1, 1), (5, 0, 1), (1, 1, 2), (1, 3, 4), (10, 1, 11), (3, 2, 13), (7, 2, 57)]
)
def test_max_occurrences_is_the_geometric_sum(k, r, expected):
    assert max_occurrences(max_degree=k, num_layers=r) == expected
    if k >= 2:
        assert expected == (k ** (r + 1) - 1) // (k - 1)


@pytest.mark.parametrize(
    ("n", "k", "r", "m", "z"),
    [
        (50, 3, 1, 10, 1.5),  # N(K,r) = 4
        (200, 2, 2, 40, 4.0),  # 7
        (30, 10, 1, 25, 8.0),  # 11, with m + N(K,r) > N: ρ ≥ 6
        (1000, 1, 1, 7, 0.8),  # 2
        (5000, 4, 1, 50, 60.0),  # 5: γ ~ 1e-7, where naive log-sum-exp loses its digits
    ],
)
def test_equals_a_direct_high_precision_evaluation_of_theorem_1(n, k, r, m, z):
    d = max_occurrences(max_degree=k, num_layers=r)
    orders = [1.5, 2.0, 3.7, 10.0, 64.0, 256.0]
    ours = hypergeometric_gaussian_rdp(
        orders=orders, num_examples=n, max_occurrences=d, batch_size=m, noise_multiplier=z
    )
    direct = [theorem_1(alpha=a, n=n, d=d, m=m, z=z) for a in orders]
    np.testing.assert_allclose(ours, direct, rtol=1e-10)


@pytest.mark.parametrize("z", [0.5, 1.0, 2.0, 5.0, 20.0])
@pytest.mark.parametrize(("n", "m"), [(1000, 10), (1000, 100), (1000, 500), (64, 64)])
def test_at_one_occurrence_it_bounds_poisson_dpsgd_at_the_same_rate(n, m, z):
    # With N(K,r) = 1, Theorem 1 is Lemma 5's mixture bound for the Gaussian at
    # sensitivity 2C; the same bound at sensitivity C already dominates the exact
    # Poisson-subsampled Gaussian (joint convexity of exp((α−1)D_α)), and the
    # mixture bound grows with the sensitivity. So ours ≥ standard at every order.
    # Integer orders only: there dp_accounting sums a finite series, while its
    # fractional-order series may fail to converge and report +inf.
    orders = [a for a in RDP_ORDERS if a == int(a)]
    ours = hypergeometric_gaussian_rdp(
        orders=orders, num_examples=n, max_occurrences=1, batch_size=m, noise_multiplier=z
    )
    poisson = dp_event.PoissonSampledDpEvent(m / n, dp_event.GaussianDpEvent(z))
    standard = RdpAccountant(orders=orders).compose(poisson).rdp
    assert np.all(np.isfinite(standard)) and np.all(ours >= standard)
    steps = 100
    assert compute_epsilon(orders, steps * ours, DELTA)[0] >= compute_epsilon(orders, steps * standard, DELTA)[0]


@pytest.mark.parametrize(("d", "z"), [(1, 1.0), (11, 30.0), (57, 200.0)])
def test_full_batch_is_the_gaussian_at_sensitivity_2c_times_occurrences(d, z):
    # m = N puts every subgraph of the node in the batch: ρ = N(K,r) surely.
    ours = hypergeometric_gaussian_rdp(
        orders=RDP_ORDERS, num_examples=100, max_occurrences=d, batch_size=100, noise_multiplier=z
    )
    np.testing.assert_allclose(ours, standard_rdp(dp_event.GaussianDpEvent(z / (2 * d))), rtol=1e-9)


def test_occurrences_beyond_the_training_set_count_as_all_of_it():
    kwargs = {"orders": RDP_ORDERS, "num_examples": 20, "batch_size": 8, "noise_multiplier": 30.0}
    capped = hypergeometric_gaussian_rdp(max_occurrences=31, **kwargs)
    np.testing.assert_array_equal(capped, hypergeometric_gaussian_rdp(max_occurrences=20, **kwargs))
    np.testing.assert_allclose(capped, standard_rdp(dp_event.GaussianDpEvent(30.0 / (2 * 8))), rtol=1e-9)


BASE = {"num_examples": 2000, "max_degree": 5, "num_layers": 1, "batch_size": 200, "noise_multiplier": 8.0, "steps": 50}


def dp_gnn_epsilon(**changes: float) -> float:
    p = {**BASE, **changes}
    return hypergeometric_gaussian_epsilon(
        num_examples=p["num_examples"],
        max_occurrences=max_occurrences(max_degree=p["max_degree"], num_layers=p["num_layers"]),
        batch_size=p["batch_size"],
        noise_multiplier=p["noise_multiplier"],
        steps=p["steps"],
        delta=DELTA,
    )


@pytest.mark.parametrize(
    ("name", "grid", "rises"),
    [
        ("steps", [1, 10, 50, 200, 1000], True),
        ("batch_size", [10, 50, 200, 800, 2000], True),
        ("max_degree", [0, 1, 3, 5, 10], True),
        ("num_layers", [0, 1, 2, 3], True),
        ("noise_multiplier", [4.0, 8.0, 16.0, 64.0, 256.0], False),
    ],
)
def test_epsilon_is_monotone_in_each_parameter(name, grid, rises):
    spent = [dp_gnn_epsilon(**{name: value}) for value in grid]
    assert all(0 < e < math.inf for e in spent)
    pairs = list(itertools.pairwise(spent))
    assert all(a < b for a, b in pairs) if rises else all(a > b for a, b in pairs)


def test_overflow_is_infinite_not_nan():
    rdp = hypergeometric_gaussian_rdp(
        orders=RDP_ORDERS, num_examples=100, max_occurrences=3, batch_size=10, noise_multiplier=1e-160
    )
    assert np.all(rdp == np.inf)
    epsilon = hypergeometric_gaussian_epsilon(
        num_examples=100, max_occurrences=3, batch_size=10, noise_multiplier=1e-160, steps=1, delta=DELTA
    )
    assert epsilon == math.inf


def test_params_carry_everything_and_their_curve_is_t_times_gamma():
    params = hypergeometric_gaussian_params(
        num_examples=500, max_degree=3, num_layers=2, batch_size=50, noise_multiplier=6.0, clip_norm=0.5, steps=40
    )
    assert params["max_occurrences"] == 13 and params["noise_std"] == 3.0
    assert params["sampling"] == "fixed_size_without_replacement"
    gamma = hypergeometric_gaussian_rdp(
        orders=RDP_ORDERS, num_examples=500, max_occurrences=13, batch_size=50, noise_multiplier=6.0
    )
    np.testing.assert_array_equal(hypergeometric_gaussian_rdp_of_params(params, RDP_ORDERS), 40 * gamma)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"max_occurrences": 4}, "N\\(K, r\\) = 13"),
        ({"max_degree": 2}, "N\\(K, r\\) = 7"),
        ({"noise_multiplier": 5.0}, "noise_std"),
        ({"sampling": "poisson"}, "fixed_size_without_replacement"),
        ({"steps": 0}, "steps"),
        ({"batch_size": 501}, "batch_size = 501 exceeds num_examples = 500"),
    ],
)
def test_contradictory_params_are_refused_by_name(change, match):
    params = hypergeometric_gaussian_params(
        num_examples=500, max_degree=3, num_layers=2, batch_size=50, noise_multiplier=6.0, clip_norm=0.5, steps=40
    )
    with pytest.raises(ValueError, match=match):
        hypergeometric_gaussian_rdp_of_params({**params, **change}, RDP_ORDERS)
    missing = {key: value for key, value in params.items() if key != "clip_norm"}
    with pytest.raises(ValueError, match="lack \\['clip_norm'\\]"):
        hypergeometric_gaussian_rdp_of_params(missing, RDP_ORDERS)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"orders": [1.0, 2.0]}, "orders"),
        ({"noise_multiplier": 0.0}, "noise_multiplier"),
        ({"max_occurrences": 0}, "max_occurrences"),
        ({"num_examples": 2.5}, "num_examples"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, match):
    good = {"orders": RDP_ORDERS, "num_examples": 100, "max_occurrences": 3, "batch_size": 10, "noise_multiplier": 1.0}
    with pytest.raises(ValueError, match=match):
        hypergeometric_gaussian_rdp(**{**good, **kwargs})
    with pytest.raises(ValueError, match="max_degree"):
        max_occurrences(max_degree=-1, num_layers=1)


def test_poisson_occurrence_curve_is_the_binomial_mixture_of_gaussians() -> None:
    from scipy.stats import binom

    from nodedp.accounting import poisson_occurrence_gaussian_rdp

    orders, gamma, d, z = [1.5, 2.0, 8.0], 0.3, 3, 4.0
    curve = poisson_occurrence_gaussian_rdp(orders=orders, sampling_rate=gamma, max_occurrences=d, noise_multiplier=z)
    for alpha, value in zip(orders, curve, strict=True):
        literal = sum(binom.pmf(r, d, gamma) * math.exp(alpha * (alpha - 1) * 2 * r**2 / z**2) for r in range(d + 1))
        assert value == pytest.approx(math.log(literal) / (alpha - 1), rel=1e-10)
    # γ = 1: every row is in the batch, so it is the Gaussian at sensitivity 2dC
    full = poisson_occurrence_gaussian_rdp(orders=orders, sampling_rate=1.0, max_occurrences=d, noise_multiplier=z)
    assert full == pytest.approx([alpha * (2 * d) ** 2 / (2 * z**2) for alpha in orders])


def test_poisson_occurrence_curve_grows_with_rate_and_occurrences_and_falls_with_noise() -> None:
    from nodedp.accounting import poisson_occurrence_gaussian_rdp

    def rdp(gamma: float = 0.2, d: int = 3, z: float = 5.0):
        return poisson_occurrence_gaussian_rdp(
            orders=RDP_ORDERS, sampling_rate=gamma, max_occurrences=d, noise_multiplier=z
        )

    assert np.all(rdp(gamma=0.1) < rdp(gamma=0.2)) and np.all(rdp(d=2) < rdp(d=3))
    assert np.all(rdp(z=10.0) < rdp(z=5.0))


def test_poisson_occurrence_params_refuse_contradictions() -> None:
    from nodedp.accounting import poisson_occurrence_gaussian_params
    from nodedp.accounting.hypergeometric import poisson_occurrence_gaussian_rdp_of_params

    params = poisson_occurrence_gaussian_params(
        sampling_rate=0.2, max_rows=2, noise_multiplier=3.0, clip_norm=1.0, steps=10, occurrence_rule="own_plus_rows"
    )
    assert params["max_occurrences"] == 3 and params["occurrence_rule"] == "own_plus_rows"
    for key, value, match in [
        ("max_occurrences", 2, "max_rows"),
        ("sampling", "fixed_size_without_replacement", "Poisson"),
        ("noise_std", 1.0, "noise_std"),
        ("occurrence_rule", "ranked_sources", "d = 4"),
        ("occurrence_rule", "own", "valid choices"),
    ]:
        with pytest.raises(ValueError, match=match):
            poisson_occurrence_gaussian_rdp_of_params({**params, key: value}, (2.0,))
    without_rule = {key: value for key, value in params.items() if key != "occurrence_rule"}
    with pytest.raises(ValueError, match="occurrence_rule"):
        poisson_occurrence_gaussian_rdp_of_params(without_rule, (2.0,))


def test_dpar_rule_charges_the_node_that_takes_a_source_row() -> None:
    """d = max_rows + 2 under "ranked_sources" (``nodedp.methods.dpar``), and the curve follows d."""
    from nodedp.accounting import dpar_occurrences, poisson_occurrence_gaussian_params
    from nodedp.accounting.hypergeometric import (
        RANKED_SOURCES,
        occurrence_bound,
        poisson_occurrence_gaussian_rdp,
        poisson_occurrence_gaussian_rdp_of_params,
    )

    assert dpar_occurrences(max_rows=2) == occurrence_bound(rule=RANKED_SOURCES, max_rows=2) == 4
    assert occurrence_bound(rule="own_plus_rows", max_rows=2) == 3
    with pytest.raises(ValueError, match="valid choices"):
        occurrence_bound(rule="ranked", max_rows=2)
    params = poisson_occurrence_gaussian_params(
        sampling_rate=0.2, max_rows=2, noise_multiplier=3.0, clip_norm=1.0, steps=10, occurrence_rule=RANKED_SOURCES
    )
    assert params["max_occurrences"] == 4 and params["max_rows"] == 2
    curve = poisson_occurrence_gaussian_rdp_of_params(params, RDP_ORDERS)
    assert curve == pytest.approx(
        10
        * poisson_occurrence_gaussian_rdp(
            orders=RDP_ORDERS, sampling_rate=0.2, max_occurrences=4, noise_multiplier=3.0
        ),
        rel=1e-12,
    )
    assert np.all(
        curve
        > poisson_occurrence_gaussian_rdp_of_params(
            {**params, "max_occurrences": 3, "occurrence_rule": "own_plus_rows"}, RDP_ORDERS
        )
    )
    with pytest.raises(ValueError, match="max_occurrences"):
        poisson_occurrence_gaussian_rdp_of_params({**params, "max_occurrences": 3}, (2.0,))


def test_self_only_rule_charges_one_example_and_needs_no_rows() -> None:
    """DPAR's Features baseline: every example is its node alone, so d = 1 and max_rows must be 0."""
    from nodedp.accounting.hypergeometric import (
        OWN_PLUS_ROWS,
        SELF_ONLY,
        occurrence_bound,
        poisson_occurrence_gaussian_params,
        poisson_occurrence_gaussian_rdp,
        poisson_occurrence_gaussian_rdp_of_params,
    )

    assert occurrence_bound(rule=SELF_ONLY, max_rows=0) == 1
    with pytest.raises(ValueError, match="max_rows must be 0"):
        occurrence_bound(rule=SELF_ONLY, max_rows=2)
    params = poisson_occurrence_gaussian_params(
        sampling_rate=0.2, max_rows=0, noise_multiplier=3.0, clip_norm=1.0, steps=10, occurrence_rule=SELF_ONLY
    )
    assert params["max_occurrences"] == 1 and params["occurrence_rule"] == "self_only"
    curve = poisson_occurrence_gaussian_rdp_of_params(params, RDP_ORDERS)
    assert curve == pytest.approx(
        10
        * poisson_occurrence_gaussian_rdp(
            orders=RDP_ORDERS, sampling_rate=0.2, max_occurrences=1, noise_multiplier=3.0
        ),
        rel=1e-12,
    )
    # the same d as own_plus_rows with no rows, but a record cannot claim self_only with rows
    assert curve == pytest.approx(
        poisson_occurrence_gaussian_rdp_of_params({**params, "occurrence_rule": OWN_PLUS_ROWS}, RDP_ORDERS), rel=1e-12
    )
    for change, match in [
        ({"max_rows": 2}, "max_rows must be 0"),
        ({"max_rows": 2, "max_occurrences": 3}, "max_rows must be 0"),
        ({"max_occurrences": 2}, "d = 1"),
    ]:
        with pytest.raises(ValueError, match=match):
            poisson_occurrence_gaussian_rdp_of_params({**params, **change}, (2.0,))
