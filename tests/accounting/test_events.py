from __future__ import annotations

import json
import math
import subprocess
import sys

import dp_accounting as dpa
import pytest
from scipy import optimize, stats

from nodedp.accounting import (
    ACCOUNTANTS,
    RDP_ORDERS,
    compose,
    epsilon_of,
    event_from_dict,
    event_to_dict,
    gaussian_event,
    subsampled_gaussian_event,
)

DELTA = 1e-5


def test_accounting_does_not_import_torch():
    code = "import sys, nodedp.accounting; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_subsampled_gaussian_event_is_poisson_sampled_gaussian_self_composed():
    event = subsampled_gaussian_event(noise_multiplier=1.5, sampling_rate=0.02, steps=30)
    assert event == dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(1.5)), 30)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise_multiplier": 0.0, "sampling_rate": 0.1, "steps": 1},
        {"noise_multiplier": math.inf, "sampling_rate": 0.1, "steps": 1},
        {"noise_multiplier": 1.0, "sampling_rate": 0.0, "steps": 1},
        {"noise_multiplier": 1.0, "sampling_rate": 1.5, "steps": 1},
        {"noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 0},
        {"noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 2.5},
    ],
)
def test_subsampled_gaussian_event_rejects_bad_parameters(kwargs):
    name = next(k for k, v in kwargs.items() if v in (0.0, math.inf, 1.5, 0, 2.5))
    with pytest.raises(ValueError, match=name):
        subsampled_gaussian_event(**kwargs)


ROUND_TRIP_EVENTS = [
    dpa.GaussianDpEvent(2.0),
    dpa.LaplaceDpEvent(0.5),
    dpa.NoOpDpEvent(),
    dpa.NonPrivateDpEvent(),
    dpa.RandomizedResponseDpEvent(noise_parameter=0.3, num_buckets=4),
    dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)),
    dpa.SampledWithoutReplacementDpEvent(1000, 32, dpa.GaussianDpEvent(1.1)),
    subsampled_gaussian_event(noise_multiplier=0.9, sampling_rate=0.05, steps=200),
    compose(
        [
            gaussian_event(noise_multiplier=3.0),
            compose([dpa.LaplaceDpEvent(1.0), dpa.NoOpDpEvent()]),
            dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(4.0), 3),
        ]
    ),
    dpa.dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0, 2.0], [0.5, 0.3, 0.2]),
]


@pytest.mark.parametrize("event", ROUND_TRIP_EVENTS, ids=lambda e: type(e).__name__)
def test_event_dict_round_trips_through_strict_json(event):
    d = event_to_dict(event)
    assert d["type"] == type(event).__name__
    text = json.dumps(d, allow_nan=False)
    assert event_from_dict(json.loads(text)) == event


def test_event_from_dict_rejects_unknown_types_and_fields():
    with pytest.raises(ValueError, match="GaussianDpEvent"):  # names the known types
        event_from_dict({"type": "MadeUpDpEvent"})
    with pytest.raises(ValueError, match="noise_multiplier"):
        event_from_dict({"type": "GaussianDpEvent", "sigma": 1.0})
    with pytest.raises(ValueError, match="finite"):
        event_to_dict(dpa.GaussianDpEvent(math.nan))


def test_epsilon_of_validates_accountant_and_delta():
    event = gaussian_event(noise_multiplier=1.0)
    with pytest.raises(ValueError, match="rdp.*pld"):
        epsilon_of(event, delta=DELTA, accountant="gdp")
    for delta in (0.0, 1.0, -1e-5, 2.0):
        with pytest.raises(ValueError, match="delta"):
            epsilon_of(event, delta=delta)
    # Fixed-size sampling is a replace-one analysis: refused under add/remove, by name.
    wor = dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0))
    for accountant in ACCOUNTANTS:
        with pytest.raises(ValueError, match=accountant):
            epsilon_of(wor, delta=DELTA, accountant=accountant)


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_epsilon_of_trivial_events(accountant):
    assert epsilon_of(dpa.NoOpDpEvent(), delta=DELTA, accountant=accountant) == 0.0
    assert epsilon_of(dpa.NonPrivateDpEvent(), delta=DELTA, accountant=accountant) == math.inf
    mixed = compose([gaussian_event(noise_multiplier=1.0), dpa.NonPrivateDpEvent()])
    assert epsilon_of(mixed, delta=DELTA, accountant=accountant) == math.inf


def test_rdp_composes_gaussians_like_one_gaussian_with_summed_precision():
    # Gaussian RDP is α/(2σ²), additive: σ1 = 1, σ2 = 2 compose to 1/σ² = 1 + 1/4.
    both = compose([gaussian_event(noise_multiplier=1.0), gaussian_event(noise_multiplier=2.0)])
    single = gaussian_event(noise_multiplier=(1 / 1.25) ** 0.5)
    assert epsilon_of(both, delta=DELTA) == pytest.approx(epsilon_of(single, delta=DELTA), rel=1e-9)
    alone = epsilon_of(gaussian_event(noise_multiplier=1.0), delta=DELTA)
    assert epsilon_of(both, delta=DELTA) > alone


def test_self_composition_equals_explicit_composition():
    step = dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.2))
    explicit = compose([step] * 3)
    assert epsilon_of(dpa.SelfComposedDpEvent(step, 3), delta=DELTA) == pytest.approx(
        epsilon_of(explicit, delta=DELTA), rel=1e-12
    )


@pytest.mark.parametrize(("sigma", "q", "steps"), [(1.0, 0.01, 500), (2.0, 0.1, 10), (5.0, 0.1, 500), (0.8, 0.05, 100)])
def test_rdp_epsilon_matches_opacus(sigma, q, steps):
    # Opacus computes the subsampled-Gaussian RDP independently and converts it
    # with the same bound (Balle et al. 2020, Thm 21), so on the same orders
    # the two agree to numerical precision. Exception: where dp_accounting's
    # fractional-order series does not converge in 1000 terms (small σ, here
    # σ = 0.8 at α ≤ 1.3) it drops that order, so its ε can only be larger.
    rdp_analysis = pytest.importorskip("opacus.accountants.analysis.rdp")
    orders = list(RDP_ORDERS)
    rdp = rdp_analysis.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=orders)
    expected, _ = rdp_analysis.get_privacy_spent(orders=orders, rdp=rdp, delta=DELTA)
    ours = epsilon_of(subsampled_gaussian_event(noise_multiplier=sigma, sampling_rate=q, steps=steps), delta=DELTA)
    if sigma >= 1:
        assert ours == pytest.approx(expected, rel=1e-6)
    else:
        assert expected <= ours <= expected * 1.001


@pytest.mark.parametrize(
    "event",
    [
        gaussian_event(noise_multiplier=1.0),
        subsampled_gaussian_event(noise_multiplier=2.0, sampling_rate=0.1, steps=50),
        subsampled_gaussian_event(noise_multiplier=1.0, sampling_rate=0.01, steps=100),
    ],
    ids=["gaussian", "q=0.1", "q=0.01"],
)
def test_pld_is_at_least_as_tight_as_rdp(event):
    pld, rdp = (epsilon_of(event, delta=DELTA, accountant=a) for a in ("pld", "rdp"))
    assert 0 < pld <= rdp


def analytic_gaussian_epsilon(sigma: float, delta: float) -> float:
    """Balle & Wang (2018), Thm 8: the exact ε of N(0, σ²) noise on a sensitivity-1 query."""

    def delta_at(eps: float) -> float:
        return stats.norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * stats.norm.cdf(
            -1 / (2 * sigma) - eps * sigma
        )

    return optimize.brentq(lambda eps: delta_at(eps) - delta, 0.0, 100.0, xtol=1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 4.0])
def test_pld_gaussian_matches_the_analytic_gaussian_mechanism(sigma):
    exact = analytic_gaussian_epsilon(sigma, DELTA)
    pld = epsilon_of(gaussian_event(noise_multiplier=sigma), delta=DELTA, accountant="pld")
    rdp = epsilon_of(gaussian_event(noise_multiplier=sigma), delta=DELTA, accountant="rdp")
    assert pld == pytest.approx(exact, rel=0.01)
    assert rdp >= exact  # RDP is an upper bound on the exact curve


def test_only_dp_accountings_nonconvergence_notice_is_silenced(caplog):
    import logging

    import nodedp.accounting  # noqa: F401  (installs the filter)

    with caplog.at_level(logging.WARNING, logger="absl"):
        logging.getLogger("absl").warning("_compute_log_a_frac failed to converge after 1000 iterations")
        logging.getLogger("absl").warning("something else from absl")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["something else from absl"]


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_epsilon_of_remembers_each_event_by_all_its_parameters(accountant):
    from nodedp.accounting import epsilon_of
    from nodedp.accounting.events import _EPSILONS

    def event(sigma, steps=50):
        return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(sigma)), steps)

    def fresh(e):  # what the accountant says without the memo
        _EPSILONS.clear()
        return epsilon_of(e, delta=1e-5, accountant=accountant)

    events = [
        event(1.0),
        event(math.nextafter(1.0, 2.0)),
        event(1.0, steps=51),
        dpa.ComposedDpEvent([event(1.0), event(2.0)]),
    ]
    expected = [fresh(e) for e in events]
    _EPSILONS.clear()
    for _ in range(2):  # the second round comes from the memo
        assert [epsilon_of(e, delta=1e-5, accountant=accountant) for e in events] == expected
    assert epsilon_of(events[0], delta=1e-6, accountant=accountant) > expected[0]  # δ is part of the key
    assert expected[2] > expected[0] and len(set(expected)) == len(expected)
