"""The private names of dp_accounting that nodedp.accounting reads (``nodedp.accounting._dp_private``), and
what each is relied on to do. An upgrade of dp-accounting that drops or changes one fails here, naming the name,
the installed version and the range pyproject.toml pins."""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp import RdpAccountant, rdp_privacy_accountant
from packaging.specifiers import SpecifierSet

from nodedp.accounting import _dp_private
from nodedp.accounting._dp_private import (
    PINNED,
    PLD_ACCOUNTANT_ATTRIBUTES,
    PrivateNameMissing,
    installed_version,
    private_function,
    require_attributes,
)
from nodedp.accounting.orders import RDP_ORDERS
from nodedp.accounting.pld import VALUE_DISCRETIZATION_INTERVAL, pld_of_event

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
RDP_FUNCTION = "_compute_rdp_poisson_subsampled_gaussian"


@contextmanager
def relied_on(name: str):
    """Turn any failure inside into one that names the private name, the installed version and the pin."""
    try:
        yield
    except Exception as err:
        pytest.fail(
            f"dp_accounting's private {name} no longer does what nodedp.accounting relies on "
            f"(nodedp.accounting._dp_private; installed dp-accounting {installed_version()}, pyproject.toml pins "
            f"{PINNED}): {type(err).__name__}: {err}"
        )


def test_the_pin_named_in_errors_is_pyproject_toml_s_and_the_installed_version_is_inside_it():
    pins = re.findall(r'"(dp-accounting[^"]*)"', PYPROJECT.read_text(encoding="utf-8"))
    assert pins == [PINNED]
    assert installed_version() in SpecifierSet(PINNED.removeprefix("dp-accounting")), (
        f"dp-accounting {installed_version()} is installed, outside the pinned {PINNED}"
    )


def test_the_poisson_subsampled_gaussian_rdp_function():
    """``dpar.reference_dpsgd_epsilon`` calls it as f(q, noise_multiplier, orders) -> the RDP of one step."""
    with relied_on(f"rdp_privacy_accountant.{RDP_FUNCTION}"):
        function = getattr(rdp_privacy_accountant, RDP_FUNCTION)
        assert _dp_private.poisson_subsampled_gaussian_rdp is function
        orders = np.array([1.5, 2.0, 8.0, 32.0])
        assert np.array_equal(np.asarray(function(1.0, 2.0, orders)), orders / (2 * 2.0**2))  # q = 1: a Gaussian
        assert np.array_equal(np.asarray(function(0.0, 2.0, orders)), np.zeros(4))
        accountant = RdpAccountant(orders=list(RDP_ORDERS))
        accountant.compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.3)))
        assert np.array_equal(np.asarray(function(0.01, 1.3, list(RDP_ORDERS))), np.asarray(accountant.rdp))


@pytest.mark.parametrize("attribute", PLD_ACCOUNTANT_ATTRIBUTES)
def test_a_fresh_pld_accountant_has_the_attributes(attribute):
    with relied_on(f"PLDAccountant.{attribute}"):
        assert hasattr(PLDAccountant(), attribute)


def test_the_pld_accountant_s_pld_is_the_one_its_epsilon_comes_from():
    """``pld.pld_of_event`` reads ``_pld`` after ``compose`` and composes it with other PLDs on the same grid."""
    event = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(1.1)), 20),
            dp_event.GaussianDpEvent(4.0),
        ]
    )
    with relied_on("PLDAccountant._pld"):
        accountant = PLDAccountant(value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL)
        accountant.compose(event)
        pld = accountant._pld
        assert isinstance(pld, pld_lib.PrivacyLossDistribution)
        for delta in (1e-3, 1e-5, 1e-7):
            assert pld.get_epsilon_for_delta(delta) == accountant.get_epsilon(delta)
        # The grid is the one asked for: composing with a PLD built on it works.
        own = pld_lib.from_gaussian_mechanism(
            2.0, value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL, pessimistic_estimate=True
        )
        assert pld.compose(own).get_epsilon_for_delta(1e-5) > pld.get_epsilon_for_delta(1e-5)
        assert pld_of_event(event) is not pld and pld_of_event(event).get_epsilon_for_delta(1e-5) == (
            accountant.get_epsilon(1e-5)
        )


def test_the_pld_accountant_flags_a_non_private_event():
    """``_contains_non_dp_event``: set by a non-private event (whose PLD is then left out of ``_pld``)."""
    with relied_on("PLDAccountant._contains_non_dp_event"):
        private = PLDAccountant()
        private.compose(dp_event.GaussianDpEvent(1.0))
        assert private._contains_non_dp_event is False
        mixed = PLDAccountant()
        mixed.compose(dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.NonPrivateDpEvent()]))
        assert mixed._contains_non_dp_event is True and mixed.get_epsilon(1e-5) == math.inf
    assert pld_of_event(dp_event.NonPrivateDpEvent()).get_epsilon_for_delta(0.5) == math.inf


def test_a_missing_private_name_fails_naming_it_the_installed_version_and_the_pin():
    with pytest.raises(PrivateNameMissing) as missing_function:
        private_function(rdp_privacy_accountant, "_no_such_function")
    with pytest.raises(PrivateNameMissing) as missing_attribute:
        require_attributes(object(), ["_pld"])
    for err, name in (
        (missing_function, "dp_accounting.rdp.rdp_privacy_accountant._no_such_function"),
        (missing_attribute, "object._pld"),
    ):
        message = str(err.value)
        assert name in message and f"dp-accounting {installed_version()}" in message and PINNED in message
    assert isinstance(missing_function.value, ImportError)  # an import of the module that reads it fails


@pytest.mark.parametrize("attribute", _dp_private.PLD_ATTRIBUTES)
def test_a_pld_has_the_attributes(attribute):
    with relied_on(f"PrivacyLossDistribution.{attribute}"):
        assert hasattr(pld_lib.identity(), attribute)


def test_a_pld_s_pmfs_and_a_dense_pmf_s_parts_are_its_masses():
    """``mixture_pld._mix`` reads each component's remove and add PMFs and their masses by loss, and builds the
    mixture from them: rebuilt from its parts, a PLD gives the same δ(ε)."""
    with relied_on("PrivacyLossDistribution._pmf_remove/_pmf_add/_symmetric and DensePLDPmf's masses"):
        gaussian = pld_lib.from_gaussian_mechanism(1.3, value_discretization_interval=1e-3)
        remove, add = _dp_private.pld_pmfs(gaussian)
        assert add is None  # symmetric
        subsampled = pld_lib.from_gaussian_mechanism(1.3, sampling_prob=0.1, value_discretization_interval=1e-3)
        remove, add = _dp_private.pld_pmfs(subsampled)
        assert add is not None
        rebuilt = []
        for pmf in (remove, add):
            lower, probs, infinity, discretization, pessimistic = _dp_private.dense_parts(pmf)
            assert discretization == 1e-3 and pessimistic and infinity >= 0
            assert math.isclose(float(np.sum(probs)) + infinity, 1.0, rel_tol=1e-9)
            rebuilt.append(pld_pmf.DensePLDPmf(discretization, lower, probs, infinity, True))
        again = pld_lib.PrivacyLossDistribution(*rebuilt)
        for eps in (0.0, 0.5, 2.0):
            assert again.get_delta_for_epsilon(eps) == subsampled.get_delta_for_epsilon(eps)
