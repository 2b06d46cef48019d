from __future__ import annotations

import math

import pytest

from nodedp.accounting import default_delta, resolve_delta


@pytest.mark.parametrize(
    ("n", "expected"), [(1, 1e-1), (9, 1e-1), (10, 1e-2), (99, 1e-2), (100, 1e-3), (2708, 1e-4), (169_343, 1e-6)]
)
def test_default_delta_values(n, expected):
    assert default_delta(n) == expected


def test_default_delta_is_the_largest_power_of_ten_strictly_below_one_over_n():
    for n in [*range(1, 2001), 9_999, 10_000, 10_001, 999_999, 1_000_000, 2_449_029]:
        delta = default_delta(n)
        assert delta < 1 / n <= 10 * delta * (1 + 1e-12), n
        assert math.log10(delta) == round(math.log10(delta))


def test_resolve_delta_defaults_and_accepts_a_small_enough_value():
    assert resolve_delta(None, num_private_units=500) == 1e-3
    assert resolve_delta("auto", num_private_units=500) == 1e-3
    assert resolve_delta(1e-5, num_private_units=500) == 1e-5
    assert resolve_delta(0.0019, num_private_units=500) == 0.0019


def test_resolve_delta_refuses_delta_at_or_above_one_over_n():
    with pytest.raises(ValueError, match=r"0\.002.*1/500.*outright"):
        resolve_delta(0.002, num_private_units=500)
    with pytest.raises(ValueError, match="1/500"):
        resolve_delta(0.01, num_private_units=500)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, math.nan, math.inf, "tiny", True])
def test_resolve_delta_refuses_values_outside_zero_one(delta):
    with pytest.raises(ValueError, match="delta"):
        resolve_delta(delta, num_private_units=10)


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_number_of_private_units_must_be_a_positive_integer(n):
    with pytest.raises(ValueError, match="num_private_units"):
        default_delta(n)
    with pytest.raises(ValueError, match="num_private_units"):
        resolve_delta(None, num_private_units=n)
