from __future__ import annotations

import itertools
import math

import pytest

from nodedp.accounting import (
    calibrate,
    calibrate_dp_gnn,
    calibrate_dpsgd,
    calibrate_noise_multiplier,
    compose,
    epsilon_of,
    gaussian_event,
    hypergeometric_gaussian_epsilon,
    max_occurrences,
    subsampled_gaussian_event,
)

DELTA = 1e-5


@pytest.mark.parametrize("steps", [10, 500])
@pytest.mark.parametrize("q", [0.01, 0.1])
@pytest.mark.parametrize("target", [0.5, 1.0, 4.0, 16.0])
def test_calibrated_dpsgd_lands_just_below_the_target(target, q, steps):
    sigma = calibrate_dpsgd(target_epsilon=target, target_delta=DELTA, sampling_rate=q, steps=steps)
    spent = epsilon_of(subsampled_gaussian_event(noise_multiplier=sigma, sampling_rate=q, steps=steps), delta=DELTA)
    assert 0.99 * target <= spent <= target


def test_epsilon_falls_strictly_as_noise_grows():
    sigmas = [0.6, 1.0, 2.0, 4.0, 16.0]
    spent = [
        epsilon_of(subsampled_gaussian_event(noise_multiplier=s, sampling_rate=0.05, steps=100), delta=DELTA)
        for s in sigmas
    ]
    assert all(a > b for a, b in itertools.pairwise(spent))


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_calibrating_a_plain_gaussian(accountant):
    sigma = calibrate_noise_multiplier(
        target_epsilon=1.0,
        target_delta=DELTA,
        make_event=lambda s: gaussian_event(noise_multiplier=s),
        accountant=accountant,
    )
    assert 0.99 <= epsilon_of(gaussian_event(noise_multiplier=sigma), delta=DELTA, accountant=accountant) <= 1.0


def test_the_tighter_pld_accountant_needs_less_noise():
    def make_event(s: float):
        return subsampled_gaussian_event(noise_multiplier=s, sampling_rate=0.1, steps=5)

    sigmas = {
        accountant: calibrate_noise_multiplier(
            target_epsilon=0.5, target_delta=DELTA, make_event=make_event, accountant=accountant
        )
        for accountant in ("rdp", "pld")
    }
    assert 0.99 * 0.5 <= epsilon_of(make_event(sigmas["pld"]), delta=DELTA, accountant="pld") <= 0.5
    assert sigmas["pld"] < sigmas["rdp"]


def test_tolerance_sets_how_close_below_the_target_it_lands():
    sigma = calibrate_noise_multiplier(
        target_epsilon=3.0,
        target_delta=DELTA,
        make_event=lambda s: compose([gaussian_event(noise_multiplier=s), gaussian_event(noise_multiplier=2 * s)]),
        tolerance=1e-4,
    )
    spent = epsilon_of(
        compose([gaussian_event(noise_multiplier=sigma), gaussian_event(noise_multiplier=2 * sigma)]), delta=DELTA
    )
    assert 3.0 * (1 - 1e-4) <= spent <= 3.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"target_epsilon": 0.0, "target_delta": DELTA}, "target_epsilon"),
        ({"target_epsilon": -1.0, "target_delta": DELTA}, "target_epsilon"),
        ({"target_epsilon": math.inf, "target_delta": DELTA}, "target_epsilon"),
        ({"target_epsilon": math.nan, "target_delta": DELTA}, "target_epsilon"),
        ({"target_epsilon": 1.0, "target_delta": 0.0}, "target_delta"),
        ({"target_epsilon": 1.0, "target_delta": 1.0}, "target_delta"),
        ({"target_epsilon": 1.0, "target_delta": DELTA, "accountant": "gdp"}, "rdp"),
        ({"target_epsilon": 1.0, "target_delta": DELTA, "tolerance": 0.0}, "tolerance"),
    ],
)
def test_bad_targets_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        calibrate_noise_multiplier(make_event=lambda s: gaussian_event(noise_multiplier=s), **kwargs)


def test_bad_dpsgd_schedule_is_refused_before_searching():
    with pytest.raises(ValueError, match="sampling_rate"):
        calibrate_dpsgd(target_epsilon=1.0, target_delta=DELTA, sampling_rate=0.0, steps=10)
    with pytest.raises(ValueError, match="steps"):
        calibrate_dpsgd(target_epsilon=1.0, target_delta=DELTA, sampling_rate=0.1, steps=0)


def test_unreachable_target_is_a_clear_error():
    # A fixed, un-calibrated mechanism puts a floor under ε whatever σ is.
    fixed = gaussian_event(noise_multiplier=0.5)
    floor = epsilon_of(fixed, delta=DELTA)
    with pytest.raises(ValueError, match="unreachable"):
        calibrate_noise_multiplier(
            target_epsilon=floor / 2,
            target_delta=DELTA,
            make_event=lambda s: compose([gaussian_event(noise_multiplier=s), fixed]),
        )


def test_target_that_constrains_nothing_is_a_clear_error():
    # ε does not depend on σ and is already below the target.
    with pytest.raises(ValueError, match="does not constrain"):
        calibrate_noise_multiplier(
            target_epsilon=4.0, target_delta=DELTA, make_event=lambda s: gaussian_event(noise_multiplier=10.0)
        )


@pytest.mark.parametrize("target", [0.5, 2.0, 10.0])
@pytest.mark.parametrize(
    ("n", "k", "r", "m", "steps"), [(2000, 5, 1, 100, 50), (500, 3, 2, 100, 300), (90_000, 10, 1, 10_000, 100)]
)
def test_calibrated_dp_gnn_lands_just_below_the_target(target, n, k, r, m, steps):
    schedule = {"num_examples": n, "max_occurrences": max_occurrences(max_degree=k, num_layers=r), "batch_size": m}
    sigma = calibrate_dp_gnn(target_epsilon=target, target_delta=1 / n, steps=steps, **schedule)
    spent = hypergeometric_gaussian_epsilon(noise_multiplier=sigma, steps=steps, delta=1 / n, **schedule)
    assert 0.99 * target <= spent <= target


def test_calibrate_searches_any_decreasing_epsilon():
    sigma = calibrate(target_epsilon=2.0, epsilon_of_sigma=lambda s: 7.0 / s**1.5, tolerance=1e-3)
    assert 2.0 * (1 - 1e-3) <= 7.0 / sigma**1.5 <= 2.0


def test_bad_dp_gnn_schedule_is_refused_before_searching():
    with pytest.raises(ValueError, match="batch_size"):
        calibrate_dp_gnn(
            target_epsilon=1.0, target_delta=DELTA, num_examples=10, max_occurrences=3, batch_size=11, steps=5
        )
    with pytest.raises(ValueError, match="target_delta"):
        calibrate_dp_gnn(
            target_epsilon=1.0, target_delta=0.0, num_examples=10, max_occurrences=3, batch_size=5, steps=5
        )
