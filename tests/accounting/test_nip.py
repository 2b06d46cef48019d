from __future__ import annotations

import json
import math
import random

import pytest

from nodedp.accounting.ledger import Ledger, MechanismRecord, PrivacyBudgetExceeded, verify_ledger_dict
from nodedp.accounting.nip import (
    aggregation_sensitivity,
    edge_randomization_epsilon,
    min_keep_parameter,
    nip_aggregation_record,
    nip_edge_record,
    nip_label_record,
    split_budget,
)


def nip_records(epsilon: float, shares, *, max_degree: int = 10, num_classes: int = 7) -> tuple[MechanismRecord, ...]:
    epsilon_a, epsilon_b, epsilon_c = split_budget(epsilon, shares)
    return (
        nip_aggregation_record(epsilon_a=epsilon_a, max_degree=max_degree, budget_scheme="capped", theorem3_ratio=1.0),
        nip_edge_record(epsilon_b=epsilon_b, s=min_keep_parameter(epsilon_b, max_degree), max_degree=max_degree),
        nip_label_record(epsilon_c=epsilon_c, num_classes=num_classes),
    )


AWKWARD = [0.1, 1 / 3, 0.7, 1.0, 2.0, 3.3, 8.0, 1e-3, 1e3, 2.0**-20, 6.02e23**0.1]


@pytest.mark.parametrize("epsilon", AWKWARD)
def test_split_adds_up_exactly_and_the_ledger_composes_to_the_target(epsilon: float) -> None:
    rng = random.Random(int(epsilon * 1e6))
    for shares in [(1, 1, 1), (0.1, 0.2, 0.7), (5, 1e-6, 3), (0.3, 0.3, 0.4)] + [
        tuple(rng.uniform(1e-3, 10) for _ in range(3)) for _ in range(200)
    ]:
        parts = split_budget(epsilon, shares)
        assert math.fsum(parts) == epsilon
        total = math.fsum(shares)
        assert list(parts) == pytest.approx([epsilon * w / total for w in shares], rel=1e-12)
    ledger = Ledger(level="node", target_epsilon=epsilon, target_delta=0.0,
                    mechanisms=nip_records(epsilon, (0.1, 0.2, 0.7)))
    ledger.check()
    assert ledger.composed() == (epsilon, 0.0)  # pure ε, exactly the target, δ = 0
    stored = json.loads(json.dumps(ledger.to_dict()))
    assert verify_ledger_dict(stored) == epsilon


def test_a_ledger_below_the_composed_budget_fails() -> None:
    records = nip_records(1.0, (1, 1, 2))
    with pytest.raises(PrivacyBudgetExceeded):
        Ledger(level="node", target_epsilon=0.999, target_delta=0.0, mechanisms=records).check()


@pytest.mark.parametrize("shares", [(1, 1), (1, 0, 1), (1, -1, 3), (1, 1, math.inf), "abc"])
def test_split_refuses_bad_shares(shares) -> None:
    with pytest.raises(ValueError, match="shares"):
        split_budget(1.0, shares)


@pytest.mark.parametrize(("epsilon_b", "max_degree"), [(1.0, 1), (0.5, 10), (8.0, 20), (100.0, 3)])
def test_min_keep_parameter_is_the_inverse_of_theorem4s_epsilon(epsilon_b: float, max_degree: int) -> None:
    s = min_keep_parameter(epsilon_b, max_degree)
    assert s == pytest.approx(2 / (math.exp(epsilon_b / (2 * max_degree)) + 1), rel=1e-13)
    assert edge_randomization_epsilon(s, max_degree=max_degree) == pytest.approx(epsilon_b, rel=1e-12)
    # More re-drawing costs less; a larger D_max needs more of it for the same ε_B.
    assert edge_randomization_epsilon(min(1 - 1e-9, 1.2 * s), max_degree=max_degree) < epsilon_b
    assert min_keep_parameter(epsilon_b, 2 * max_degree) > s


def test_edge_record_refuses_an_s_that_spends_more_than_epsilon_b() -> None:
    s_min = min_keep_parameter(2.0, 5)
    record = nip_edge_record(epsilon_b=2.0, s=s_min, max_degree=5)
    assert (record.kind, record.pure_epsilon, record.touches) == ("randomized_response", 2.0, ("edges",))
    assert record.params["flip_probability"] == s_min / 2
    assert record.params["epsilon_of_s"] == pytest.approx(2.0, rel=1e-12)
    assert record.sensitivity == 10.0 and "2·D_max" in record.sensitivity_reason
    assert "bound_undirected_degree" in record.sensitivity_reason
    looser = nip_edge_record(epsilon_b=2.0, s=0.99, max_degree=5)
    assert looser.params["epsilon_of_s"] < 2.0 and looser.pure_epsilon == 2.0
    # The s for D_max/ε (one direction per pair) would be too small for the paper's 2·D_max count.
    with pytest.raises(ValueError, match="below s_min"):
        nip_edge_record(epsilon_b=2.0, s=min_keep_parameter(4.0, 5), max_degree=5)
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\)"):
        nip_edge_record(epsilon_b=2.0, s=1.0, max_degree=5)


def test_aggregation_record_states_its_sensitivity_and_refuses_overspending_budgets() -> None:
    record = nip_aggregation_record(epsilon_a=0.5, max_degree=7, budget_scheme="paper", theorem3_ratio=0.9,
                                    caveat="budgets computed on the private graph")
    assert (record.kind, record.pure_epsilon, record.sensitivity) == ("laplace", 0.5, 14.0)
    assert aggregation_sensitivity(7) == 14.0
    assert record.touches == ("features", "edges")
    assert record.params["laplace_scale_at_epsilon_a"] == 28.0
    assert record.params["budget_scheme"] == "paper" and record.params["theorem3_ratio"] == 0.9
    assert record.caveat == "budgets computed on the private graph"
    assert MechanismRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert nip_aggregation_record(epsilon_a=0.5, max_degree=6, budget_scheme="uniform", theorem3_ratio=0).pure_epsilon == 0.5
    with pytest.raises(ValueError, match=r"theorem3_ratio = 3\.5 > 1"):
        nip_aggregation_record(epsilon_a=0.5, max_degree=6, budget_scheme="paper", theorem3_ratio=3.5)
    with pytest.raises(ValueError, match=r"unknown budget_scheme 'greedy'; valid choices: \['paper', 'capped'"):
        nip_aggregation_record(epsilon_a=0.5, max_degree=6, budget_scheme="greedy", theorem3_ratio=1.0)
    with pytest.raises(ValueError, match="max_degree must be an integer >= 1"):
        nip_aggregation_record(epsilon_a=0.5, max_degree=0, budget_scheme="uniform", theorem3_ratio=1.0)


def test_label_record_keep_probability_is_eq13() -> None:
    record = nip_label_record(epsilon_c=1.5, num_classes=4)
    assert record.params["keep_probability"] == pytest.approx(math.exp(1.5) / (math.exp(1.5) + 3), rel=1e-14)
    assert (record.kind, record.pure_epsilon, record.touches) == ("randomized_response", 1.5, ("labels",))
    assert nip_label_record(epsilon_c=800.0, num_classes=4).params["keep_probability"] == 1.0  # no overflow
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        nip_label_record(epsilon_c=1.0, num_classes=1)
