from __future__ import annotations

import itertools
import json
import math
import random

import pytest

from nodedp.accounting.ledger import Claim, Ledger, MechanismRecord, PrivacyBudgetExceeded, verify_ledger_dict
from nodedp.accounting.nip import (
    nip_aggregation_record,
    nip_edge_record,
    nip_label_record,
    nip_paper_noise,
    nip_reference_epsilon,
)
from nodedp.accounting.nip_bounds import (
    aggregation_sensitivity,
    edge_randomization_epsilon,
    label_keep_probability,
    min_keep_parameter,
    split_budget,
    worst_case_budget_ratio,
)


def nip_records(epsilon: float, shares, *, max_degree: int = 10, num_classes: int = 7) -> tuple[MechanismRecord, ...]:
    epsilon_a, epsilon_b, epsilon_c = split_budget(epsilon, shares)
    return (
        nip_aggregation_record(
            epsilon_a=epsilon_a,
            max_degree=max_degree,
            budget_scheme="capped",
            largest_budget_weights=[1.0] * (max_degree + 1),
            worst_case_ratio_before_scaling=1.0,
            budget_scale=1.0,
        ),
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
    ledger = Ledger(
        level="node", target_epsilon=epsilon, target_delta=0.0, mechanisms=nip_records(epsilon, (0.1, 0.2, 0.7))
    )
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
    assert record.params["flip_probability"] == s_min / 2 and record.params["mechanism"] == "nip_edge_rr"
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


def aggregation_record(weights, *, before=None, scale=1.0, max_degree=3, scheme="capped", **kwargs):
    before = worst_case_budget_ratio(weights, max_degree=max_degree) * scale if before is None else before
    return nip_aggregation_record(
        epsilon_a=0.5,
        max_degree=max_degree,
        budget_scheme=scheme,
        largest_budget_weights=weights,
        worst_case_ratio_before_scaling=before,
        budget_scale=scale,
        **kwargs,
    )


def test_aggregation_record_states_its_sensitivity_and_the_worst_case_ratio_it_rests_on() -> None:
    weights = [1.4, 1.0, 0.9, 0.5]  # (3·1.4 + 1.0 + 0.9 + 0.5)/6 = 1.1 before scaling (by 1.25 here)
    scaled = [w / 1.25 for w in weights]
    record = aggregation_record(scaled, before=1.1, scale=1.25, max_degree=3, scheme="paper", caveat="on the bound")
    assert (record.kind, record.pure_epsilon, record.sensitivity) == ("laplace", 0.5, 6.0)
    assert aggregation_sensitivity(7) == 14.0
    assert record.touches == ("features", "edges")
    params = record.params
    assert params["laplace_scale_at_epsilon_a"] == 2 * 3 / 0.5
    assert params["budget_scheme"] == "paper" and params["largest_budget_weights"] == scaled
    assert params["charged_ratio"] == pytest.approx(1.1 / 1.25, rel=1e-15)
    assert params["charged_ratio"] == worst_case_budget_ratio(params["largest_budget_weights"], max_degree=3)
    assert params["mechanism"] == "nip_aggregation"
    assert (params["worst_case_ratio_before_scaling"], params["budget_scale"]) == (1.1, 1.25)
    assert "theorem3_ratio" not in params  # the released graph's own ratio is not a bound: never recorded
    assert record.caveat == "on the bound"
    assert MechanismRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    uniform = aggregation_record([1.0] * 4, scheme="uniform")
    assert uniform.params["charged_ratio"] == 1.0 and uniform.pure_epsilon == 0.5


def test_aggregation_record_refuses_budgets_that_overspend_on_some_graph() -> None:
    # Fine on the graph they came from is not enough: 1.4 as a star centre over 1.0, 0.9, 0.5 costs 1.1·ε_A.
    with pytest.raises(ValueError, match=r"worst-case Theorem 3 ratio = 1\.1 > 1"):
        aggregation_record([1.4, 1.0, 0.9, 0.5])
    # One ulp over: refused (the ratio is computed exactly and rounded up).
    with pytest.raises(ValueError, match="> 1"):
        aggregation_record([math.nextafter(1.0, 2.0)] + [1.0] * 3)
    with pytest.raises(ValueError, match="budget_scale = 1.0 is below"):
        aggregation_record([1.0] * 4, before=1.5, scale=1.0)
    with pytest.raises(ValueError, match="worst_case_ratio_before_scaling / budget_scale"):
        aggregation_record([1.0] * 4, before=1.5, scale=2.0)  # 1.5/2 ≠ 1: not these weights scaled
    with pytest.raises(ValueError, match="descending"):
        aggregation_record([0.5, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="descending"):
        aggregation_record([1.0] * 5)  # more than D_max + 1
    with pytest.raises(ValueError, match=r"largest_budget_weights\[1\] must be a finite number > 0"):
        aggregation_record([1.0, 0.0], before=1.0)
    with pytest.raises(ValueError, match=r"unknown budget_scheme 'greedy'; valid choices: \['paper', 'capped'"):
        aggregation_record([1.0] * 4, scheme="greedy")
    with pytest.raises(ValueError, match="max_degree must be an integer >= 1"):
        aggregation_record([1.0], max_degree=0)


def brute_force_worst_ratio(weights: list[float], max_degree: int) -> float:
    """max over every simple graph on len(weights) nodes with degrees ≤ D and every node k of
    (D_k·β_k + Σ_{i∈N(k)} β_i)/(2D), by enumeration."""
    n = len(weights)
    pairs = list(itertools.combinations(range(n), 2))
    best = 0.0
    for mask in range(1 << len(pairs)):
        neighbours: list[list[int]] = [[] for _ in range(n)]
        for bit, (u, v) in enumerate(pairs):
            if mask >> bit & 1:
                neighbours[u].append(v)
                neighbours[v].append(u)
        if max(map(len, neighbours)) > max_degree:
            continue
        for k in range(n):
            best = max(
                best, (len(neighbours[k]) * weights[k] + sum(weights[i] for i in neighbours[k])) / (2 * max_degree)
            )
    return best


@pytest.mark.parametrize(("num_nodes", "max_degree"), [(5, 1), (5, 2), (5, 3), (4, 4), (3, 5)])
def test_worst_case_ratio_is_the_maximum_over_every_bounded_graph(num_nodes: int, max_degree: int) -> None:
    """Exact for N > D (a star attains it), an upper bound for N ≤ D (k has at most N − 1 neighbours)."""
    rng = random.Random(num_nodes * 10 + max_degree)
    for _ in range(4):
        weights = [rng.choice([0.3, 1.0, 2.5]) * rng.uniform(0.5, 2) for _ in range(num_nodes)]
        worst = worst_case_budget_ratio(weights, max_degree=max_degree)
        enumerated = brute_force_worst_ratio(weights, max_degree)
        if num_nodes > max_degree:
            assert worst == pytest.approx(enumerated, rel=1e-12)
        else:
            assert worst >= enumerated
    # D·max + the D largest *including* the max would over-count by β_(1) − β_(D+1).
    assert worst_case_budget_ratio([3.0, 1.0, 1.0], max_degree=2) == (2 * 3 + 1 + 1) / 4


def test_worst_case_ratio_of_uniform_budgets_is_one_and_a_ratio_at_most_one_caps_all_but_d_budgets() -> None:
    for max_degree in (1, 2, 7, 50):
        assert worst_case_budget_ratio([1.0] * (max_degree + 1), max_degree=max_degree) == 1.0
        assert worst_case_budget_ratio([2.5] * (max_degree + 3), max_degree=max_degree) == 2.5  # homogeneous
    rng = random.Random(3)
    for _ in range(200):
        max_degree = rng.randint(1, 6)
        weights = [rng.expovariate(1.0) + 1e-3 for _ in range(rng.randint(max_degree + 1, 12))]
        ratio = worst_case_budget_ratio(weights, max_degree=max_degree)
        scaled = sorted((w / ratio for w in weights), reverse=True)
        assert scaled[max_degree] <= 1 + 1e-12 and scaled[0] < 2  # beyond the D largest: at most uniform


def test_label_record_keep_probability_is_eq13() -> None:
    record = nip_label_record(epsilon_c=1.5, num_classes=4)
    assert record.params["keep_probability"] == pytest.approx(math.exp(1.5) / (math.exp(1.5) + 3), rel=1e-14)
    assert (record.kind, record.pure_epsilon, record.touches) == ("randomized_response", 1.5, ("labels",))
    assert record.params["mechanism"] == "nip_label_rr"
    for epsilon_c in (0.01, 1.5, 25.0, 36.0, 40.0, 800.0):  # no overflow, and never a sampler that keeps every label
        keep = nip_label_record(epsilon_c=epsilon_c, num_classes=4).params["keep_probability"]
        assert keep < 1 and keep == label_keep_probability(epsilon_c, 4)
        assert math.log(keep * 3 / (1 - keep)) <= epsilon_c  # the float sampler costs at most the charge
        up = math.nextafter(keep, 1.0)  # rounded down by no more than needed
        assert up == 1 or math.log(up * 3 / (1 - up)) > epsilon_c
    assert label_keep_probability(800.0, 4) == math.nextafter(1.0, 0.0)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        nip_label_record(epsilon_c=1.0, num_classes=1)


# --- reference mode: the paper's noise, and what it costs -------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "max_degree", "num_classes"), [(4.0, 20, 7), (7.0, 168, 7), (12.0, 3, 2)])
def test_paper_noise_is_the_papers_formulas(epsilon: float, max_degree: int, num_classes: int) -> None:
    noise = nip_paper_noise(epsilon, (0.5, 0.25, 0.25), max_degree=max_degree, num_classes=num_classes)
    eps_a, eps_b, eps_c = epsilon / 2, epsilon / 4, epsilon / 4  # exact in binary
    assert (noise.epsilon_a, noise.epsilon_b, noise.epsilon_c, noise.max_degree) == (eps_a, eps_b, eps_c, max_degree)
    assert noise.laplace_scale_at_epsilon_a == pytest.approx(2 * max_degree / eps_a, rel=1e-15)  # Eq. 9, Lemma 1
    assert noise.s == pytest.approx(2 / (math.exp(eps_b / (2 * max_degree)) + 1), rel=1e-14)  # Theorem 4
    expected_keep = math.exp(eps_c) / (math.exp(eps_c) + num_classes - 1)  # Eq. 13
    assert noise.label_keep_probability == pytest.approx(expected_keep, rel=1e-14)


def test_reference_epsilon_charges_the_budgets_worst_case_and_the_bound_over_the_private_maximum() -> None:
    # Eq. 11 at D_p = 4 on a star of 4 leaves: the centre β = D_p = 4, the leaves 1 (their centre has D_k = D_p)
    weights = [4.0, 1.0, 1.0, 1.0, 1.0]
    claimed = 8.0
    same = nip_reference_epsilon(
        claimed, (0.5, 0.25, 0.25), paper_max_degree=4, enforced_bound=4, largest_budget_weights=weights
    )
    ratio = (4 * 4.0 + 4 * 1.0) / (2 * 4)  # the star itself: removing its centre costs 2.5·ε_A
    assert same.charged_ratio == ratio
    assert (same.nap, same.edges, same.labels) == (4.0 * ratio, 2.0, 2.0)
    assert same.total == 14.0 > claimed
    # noise sized at D_p = 4 on a graph bounded to D = 8: every part but the labels' grows by D/D_p = 2,
    # and the worst case at D = 8 takes the 9 largest (here all 5) budgets
    wider = nip_reference_epsilon(
        claimed, (0.5, 0.25, 0.25), paper_max_degree=4, enforced_bound=8, largest_budget_weights=list(reversed(weights))
    )
    ratio8 = (8 * 4.0 + 4 * 1.0) / (2 * 8)
    assert wider.charged_ratio == ratio8 and wider.epsilon_a_at_bound == 8.0
    assert (wider.nap, wider.edges, wider.labels) == (8.0 * ratio8, 4.0, 2.0)
    # uniform budgets at D_p = D (N > D): exactly the claim
    uniform = nip_reference_epsilon(
        claimed, (0.5, 0.25, 0.25), paper_max_degree=4, enforced_bound=4, largest_budget_weights=[1.0] * 5
    )
    assert (uniform.charged_ratio, uniform.total) == (1.0, claimed)
    # the edges' figure is Theorem 4's ε at the enforced bound for the s the paper sizes at D_p
    noise = nip_paper_noise(claimed, (0.5, 0.25, 0.25), max_degree=4, num_classes=3)
    assert edge_randomization_epsilon(noise.s, max_degree=8) == pytest.approx(wider.edges, rel=1e-12)
    with pytest.raises(ValueError, match="cannot exceed the enforced bound"):
        nip_reference_epsilon(claimed, (1, 1, 1), paper_max_degree=9, enforced_bound=8, largest_budget_weights=[1.0])


def test_a_reference_aggregation_record_charges_a_ratio_above_one_and_verifies() -> None:
    weights = [4.0, 1.0, 1.0, 1.0, 1.0]
    actual = nip_reference_epsilon(
        8.0, (0.5, 0.25, 0.25), paper_max_degree=2, enforced_bound=4, largest_budget_weights=weights
    )
    record = nip_aggregation_record(
        epsilon_a=actual.epsilon_a_at_bound,
        max_degree=4,
        budget_scheme="paper",
        largest_budget_weights=weights,
        worst_case_ratio_before_scaling=2.5,
        budget_scale=1.0,
        reference=True,
    )
    assert record.params["charged_ratio"] == 2.5 and record.pure_epsilon == actual.nap == 4.0 * 2 * 2.5
    assert record.params["laplace_scale_at_epsilon_a"] == pytest.approx(2 * 2 / 4.0, rel=1e-15)  # 2·D_p/ε_A
    edges = nip_edge_record(epsilon_b=actual.edges, s=min_keep_parameter(2.0, 2), max_degree=4)
    ledger = Ledger(
        level="node",
        target_epsilon=8.0,
        target_delta=0.0,
        claim=Claim(8.0, 0.0, "rule", "paper"),
        mechanisms=(record, edges, nip_label_record(epsilon_c=2.0, num_classes=3)),
    )
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(actual.total, rel=1e-12)
    assert actual.total > 8.0
    with pytest.raises(ValueError, match="> 1"):  # the same budgets outside reference mode: refused
        aggregation_record(weights, max_degree=4, scheme="paper")
    with pytest.raises(ValueError, match="unscaled"):
        aggregation_record([w / 2.5 for w in weights], before=2.5, scale=2.5, max_degree=4, reference=True)
