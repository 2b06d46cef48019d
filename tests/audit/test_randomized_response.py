"""The white-box randomized-response audits (NIP-GNN's edges and labels, EdgeRand's adjacency): canaries that change
every bit the accountant charges for, a correct release never refuted, a flip or keep probability of ten times the
ε refuted (in the record or in the suite's sampler)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import nodedp.mechanisms.edge_rr
import nodedp.mechanisms.nip
from nodedp.accounting import Ledger, dp_appr_em_records, nip_aggregation_record, nip_edge_record, nip_label_record
from nodedp.accounting.nip_bounds import label_keep_probability, min_keep_parameter
from nodedp.audit.randomized_response import (
    edge_rr_release_scores,
    nip_edge_release_scores,
    nip_label_release_scores,
    randomized_response_records,
    randomized_response_release_scores,
)
from nodedp.audit.statistics import best_canary_count, clopper_pearson_epsilon, epsilon_one_run
from nodedp.contract.base import RunSpec
from nodedp.plans import PublicInputs
from nodedp.plans.edgerand import flip_probability, plan_edgerand

DEGREE = 3
CLASSES = 5
MECHANISMS = ["nip-edges", "nip-labels", "edgerand-unordered", "edgerand-ordered"]


def exact_epsilon(losses, probabilities, delta: float) -> float:
    """ε at δ of a release whose privacy loss ln(P_in/P_out) takes ``losses`` with ``probabilities`` under "in"
    (mirrored under "out", as for these symmetric mechanisms): the root of E_in[(1 − e^(ε − L))⁺] = δ."""
    losses, probabilities = np.asarray(losses, dtype=float), np.asarray(probabilities, dtype=float)
    if delta == 0:
        return float(losses[probabilities > 0].max())

    def excess(eps: float) -> float:
        return float(np.sum(probabilities * np.maximum(0.0, -np.expm1(eps - losses)))) - delta

    return 0.0 if excess(0.0) <= 0 else float(optimize.brentq(excess, 0.0, float(losses.max()), xtol=1e-12))


def release(mechanism: str, *, epsilon: float, m: int, seed: int):
    """(scores, included, loss values, their probabilities under "in") of a release whose true pure ε is
    ``epsilon``."""
    if mechanism == "nip-edges":
        s = min_keep_parameter(2 * epsilon, DEGREE)  # ε_B counts both directions: D pairs cost ε_B/2 = ε
        scores, included = nip_edge_release_scores(s=s, max_degree=DEGREE, m=m, seed=seed)
        per_pair, present = math.log((2 - s) / s), 1 - s / 2
        counts = np.arange(DEGREE + 1)
        return scores, included, (2 * counts - DEGREE) * per_pair, stats.binom.pmf(counts, DEGREE, present)
    if mechanism == "nip-labels":
        keep = label_keep_probability(epsilon, CLASSES)
        scores, included = nip_label_release_scores(keep_probability=keep, num_classes=CLASSES, m=m, seed=seed)
        loss = math.log(keep * (CLASSES - 1) / (1 - keep))
        other = (1 - keep) / (CLASSES - 1)
        return scores, included, [loss, -loss, 0.0], [keep, other, 1 - keep - other]
    p = flip_probability(epsilon)
    pairs = mechanism.removeprefix("edgerand-")
    scores, included = edge_rr_release_scores(flip_probability=p, pairs=pairs, m=m, seed=seed)
    loss = math.log((1 - p) / p)
    return scores, included, [loss, -loss], [1 - p, p]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_an_included_canary_has_every_charged_bit_set_and_an_excluded_one_none(mechanism):
    # Almost no flipping (ε = 30): every released bit is the true one, so an included canary scores the whole
    # pure ε (all D_max edges present, its own label, its entry present) and an excluded one minus it.
    scores, included, losses, _ = release(mechanism, epsilon=30.0, m=60, seed=2)
    top = max(losses)
    assert top == pytest.approx(30.0, rel=1e-3)
    assert 0 < int(included.sum()) < 60
    assert scores[included].tolist() == pytest.approx([top] * int(included.sum()), rel=1e-12)
    assert scores[~included].tolist() == pytest.approx([-top] * int((~included).sum()), rel=1e-12)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("epsilon", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_a_release_with_the_recorded_probability_is_never_refuted(mechanism, epsilon, delta):
    # Disjoint bits per canary: the scores are independent trials, so the threshold bound holds too.
    m = best_canary_count(delta)
    for seed in range(2):
        scores, included, losses, probabilities = release(mechanism, epsilon=epsilon, m=m, seed=seed)
        actual = exact_epsilon(losses, probabilities, delta)
        assert actual <= epsilon * (1 + 1e-12)
        s, bits = scores.numpy(), included.numpy()
        assert epsilon_one_run(s, bits, delta=delta, confidence=0.95, seed=seed).epsilon <= actual
        assert clopper_pearson_epsilon(s, bits, delta=delta).epsilon <= actual


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_a_probability_of_ten_times_the_claimed_epsilon_is_refuted(delta):
    # Each record claims ε = 1 (NIP's ε_B, ε_C; EdgeRand's ε) but draws with the probability of ε = 10.
    claimed, m = 1.0, best_canary_count(delta)
    releases = {
        "nip-edges": nip_edge_release_scores(
            s=min_keep_parameter(10 * claimed, DEGREE), max_degree=DEGREE, m=m, seed=0
        ),
        "nip-labels": nip_label_release_scores(
            keep_probability=label_keep_probability(10 * claimed, CLASSES), num_classes=CLASSES, m=m, seed=0
        ),
        "edgerand": edge_rr_release_scores(
            flip_probability=flip_probability(10 * claimed), pairs="unordered", m=m, seed=0
        ),
    }
    for name, (scores, included) in releases.items():
        assert epsilon_one_run(scores.numpy(), included.numpy(), delta=delta).epsilon > claimed, name


def test_the_suites_samplers_are_what_is_audited(monkeypatch):
    # Honest probabilities (ε = 1), samplers in the suite that flip or keep as if ε were ten times larger: the
    # audits draw through the suite's randomize_adjacency and randomize_labels, so all three catch it.
    honest_flip, honest_keep = nodedp.mechanisms.edge_rr.flip_probability, nodedp.mechanisms.nip.label_keep_probability
    monkeypatch.setattr(nodedp.mechanisms.edge_rr, "flip_probability", lambda eps: honest_flip(10 * eps))
    monkeypatch.setattr(nodedp.mechanisms.nip, "label_keep_probability", lambda eps, m: honest_keep(10 * eps, m))
    m = best_canary_count(1e-5)
    releases = [
        nip_edge_release_scores(s=min_keep_parameter(1.0, DEGREE), max_degree=DEGREE, m=m, seed=0),
        nip_label_release_scores(keep_probability=honest_keep(1.0, CLASSES), num_classes=CLASSES, m=m, seed=0),
        edge_rr_release_scores(flip_probability=honest_flip(1.0), pairs="unordered", m=m, seed=0),
    ]
    for scores, included in releases:
        assert epsilon_one_run(scores.numpy(), included.numpy(), delta=1e-5).epsilon > 1.0


def _nip_ledger() -> Ledger:
    edges = nip_edge_record(epsilon_b=2.0, s=min_keep_parameter(2.0, DEGREE), max_degree=DEGREE)
    nap = nip_aggregation_record(
        epsilon_a=1.0,
        max_degree=DEGREE,
        budget_scheme="uniform",
        largest_budget_weights=[1.0] * (DEGREE + 1),
        worst_case_ratio_before_scaling=1.0,
        budget_scale=1.0,
    )
    labels = nip_label_record(epsilon_c=1.5, num_classes=CLASSES)
    return Ledger(level="node", target_epsilon=4.5, target_delta=0.0, mechanisms=(edges, nap, labels))


def test_the_records_are_found_in_real_ledgers_and_reach_what_they_charge():
    nip = _nip_ledger()
    edges, _, labels = nip.mechanisms
    assert randomized_response_records(nip) == [edges, labels]
    public = PublicInputs(dataset="toy", num_nodes=50, num_train=10, num_features=4, num_classes=3)
    spec = RunSpec(dataset="toy", method="edgerand", seed=0, target_epsilon=2.0, target_delta=0.0)
    edgerand = plan_edgerand(public, spec, None).ledger
    (entry,) = randomized_response_records(edgerand)
    em1 = dp_appr_em_records(option="em1", epsilon=0.5, k=2, m=2, clip=0.1, epsilon_value=1.0)
    assert (
        randomized_response_records(Ledger(level="node", target_epsilon=9.0, target_delta=1e-5, mechanisms=em1)) == []
    )
    # What each canary can cost: D pairs = ε_B/2 (the record counts both directions), the label's ε_C, one entry's ε.
    for record, worst in ((edges, 1.0), (labels, 1.5), (entry, 2.0)):
        scores, included = randomized_response_release_scores(record, m=400, seed=0)
        assert float(scores.abs().max()) <= worst * (1 + 1e-12)
        assert float(scores[included].max()) == pytest.approx(worst, rel=1e-9)
    with pytest.raises(ValueError, match="nip-aggregation"):
        randomized_response_release_scores(nip.mechanisms[1], m=10, seed=0)


def test_bad_arguments_are_refused_naming_them():
    cases = [
        (
            nip_edge_release_scores,
            {"s": 0.5, "max_degree": 2, "m": 10},
            [("s", 0.0), ("s", 1.0), ("max_degree", 0), ("m", 1)],
        ),
        (
            nip_label_release_scores,
            {"keep_probability": 0.5, "num_classes": 4, "m": 10},
            [("keep_probability", 0.25), ("keep_probability", 1.0), ("num_classes", 1), ("m", True)],
        ),
        (
            edge_rr_release_scores,
            {"flip_probability": 0.1, "pairs": "unordered", "m": 10},
            [("flip_probability", 0.5), ("flip_probability", 0.0), ("pairs", "both"), ("m", 1)],
        ),
    ]
    for function, good, bad in cases:
        for name, value in bad:
            with pytest.raises(ValueError, match=rf"^{name}\b"):
                function(**{**good, name: value}, seed=0)
