"""The verifier rebuilds every record's cost from its raw params: forged ledgers are refused, naming the field."""

from __future__ import annotations

import copy
import math

import pytest
from dp_accounting import dp_event

from nodedp.accounting import (
    Ledger,
    MechanismRecord,
    RecordMismatch,
    check_record,
    dp_appr_em_records,
    dp_appr_gm_record,
    hypergeometric_gaussian_params,
    nap_event,
    nip_aggregation_record,
    nip_edge_record,
    nip_label_record,
    subsampled_gaussian_event,
    verify_ledger_dict,
)

DELTA = 1e-5


def _ledger(*records: MechanismRecord, epsilon: float = 1e6) -> dict:
    ledger = Ledger(level="node", target_epsilon=epsilon, target_delta=DELTA, mechanisms=records)
    ledger.check()
    return ledger.to_dict()


def _refused(d: dict, match: str, **params) -> None:
    """A copy of ledger dict ``d`` with its first record's ``params`` updated must fail verification naming ``match``."""
    forged = copy.deepcopy(d)
    forged["mechanisms"][0]["params"].update(params)
    with pytest.raises(RecordMismatch, match=match):
        verify_ledger_dict(forged)


def _nap(*, z: float, max_degree: int = 99, row_clip: float = 1.0) -> MechanismRecord:
    sensitivity = math.sqrt(max_degree + row_clip**2)
    return MechanismRecord(
        name="nap:gap",
        kind="gaussian",
        touches=("features", "edges"),
        params={
            "mechanism": "nap",
            "level": "node",
            "noise_multiplier": z,
            "noise_std": z * sensitivity,
            "queries": 2,
            "row_clip": row_clip,
            "max_degree": max_degree,
            "undirected": False,
        },
        sensitivity=sensitivity,
        sensitivity_reason="√(D + R²)",
        dp_event=nap_event(noise_multiplier=z, hops=2),
    )


def _dpsgd(*, z: float, q: float, steps: int, n: int = 1000) -> MechanismRecord:
    return MechanismRecord(
        name="dp-sgd:mlp",
        kind="subsampled_gaussian",
        touches=("features", "labels"),
        params={
            "noise_multiplier": z,
            "noise_std": z * 1.0,
            "clip_norm": 1.0,
            "sampling": "poisson",
            "sampling_rate": q,
            "num_examples": n,
            "expected_batch_size": q * n,
            "steps": steps,
        },
        sensitivity=1.0,
        sensitivity_reason="one example per node",
        dp_event=subsampled_gaussian_event(noise_multiplier=z, sampling_rate=q, steps=steps),
    )


def _edge_rr(*, p: float, epsilon: float) -> MechanismRecord:
    return MechanismRecord(
        name="edge-rr:edgerand",
        kind="randomized_response",
        touches=("edges",),
        params={"mechanism": "edge_rr", "flip_probability": p, "num_nodes": 10, "pairs": "unordered"},
        sensitivity=1.0,
        sensitivity_reason="one entry",
        dp_event=None,
        pure_epsilon=epsilon,
    )


def test_genuine_records_of_every_builder_verify():
    em0 = dp_appr_em_records(option="em0", epsilon=0.1, k=2, m=70, clip=1e-3)
    em1 = dp_appr_em_records(option="em1", epsilon=0.1, k=2, m=70, clip=1e-3, epsilon_value=0.5)
    records = [
        _nap(z=3.0),
        _dpsgd(z=1.1, q=0.01, steps=100),
        _edge_rr(p=1 / (1 + math.e), epsilon=1.0),
        dp_appr_gm_record(noise_multiplier=2.0, k=2, m=70, clip=0.01),
        *em0,
        *em1,
        nip_edge_record(epsilon_b=2.0, s=0.9999, max_degree=20),
        nip_label_record(epsilon_c=1.0, num_classes=7),
    ]
    for record in records:
        check_record(record)
    assert verify_ledger_dict(_ledger(*records)) > 0


def test_nap_noise_std_must_match_its_multiplier_and_event():
    d = _ledger(_nap(z=50.0))
    forged = copy.deepcopy(d)
    forged["mechanisms"][0]["params"]["noise_std"] = 0.01  # Δ = 10: z would be 0.001, the event says 50
    with pytest.raises(RecordMismatch, match="noise_multiplier"):
        verify_ledger_dict(forged)
    forged["mechanisms"][0]["params"]["noise_multiplier"] = 0.001  # consistent params, still the event says 50
    with pytest.raises(RecordMismatch, match="dp_event"):
        verify_ledger_dict(forged)


def test_nap_sensitivity_is_rebuilt_from_degree_and_row_clip():
    forged = _ledger(_nap(z=3.0))
    forged["mechanisms"][0]["sensitivity"] = 1.0  # the public code's count would be √D; ours √(D + R²) = 10
    with pytest.raises(RecordMismatch, match="sensitivity"):
        verify_ledger_dict(forged)
    forged = _ledger(_nap(z=3.0))
    forged["mechanisms"][0]["params"]["max_degree"] = 3  # the params no longer give the stored Δ
    with pytest.raises(RecordMismatch, match="sensitivity"):
        verify_ledger_dict(forged)


def test_dpsgd_event_must_be_the_one_its_sampling_rate_and_steps_give():
    d = _ledger(_dpsgd(z=1.0, q=0.001, steps=10))
    _refused(d, "dp_event", sampling_rate=1.0, expected_batch_size=1000, steps=100_000)
    _refused(d, "sampling_rate", expected_batch_size=500)  # q ≠ batch / examples
    _refused(d, "sampling", sampling="shuffle")


def test_laplace_scale_must_pay_for_the_charged_epsilon():
    (_, values) = dp_appr_em_records(option="em1", epsilon=0.1, k=2, m=70, clip=1e-3, epsilon_value=0.5)
    forged = _ledger(values)
    forged["mechanisms"][0]["params"]["laplace_scale"] = 1e-9
    with pytest.raises(RecordMismatch, match="epsilon_value"):
        verify_ledger_dict(forged)


def test_nip_aggregation_cost_is_rebuilt_from_its_scale_and_budgets():
    weights = [1.5, *[1.0] * 3]  # D = 3: (3·1.5 + 3)/6 = 1.25 > 1
    scaled = [w / 1.25 for w in weights]
    record = nip_aggregation_record(
        epsilon_a=0.1,
        max_degree=3,
        budget_scheme="capped",
        largest_budget_weights=scaled,
        worst_case_ratio_before_scaling=1.25,
        budget_scale=1.25,
    )
    d = _ledger(record)
    _refused(d, "pure_epsilon", laplace_scale_at_epsilon_a=1e-9, epsilon_a=6e9)
    _refused(d, "charged_ratio", largest_budget_weights=weights)  # the unscaled budgets cost 1.25·ε_A
    _refused(d, "pure_epsilon", largest_budget_weights=weights, charged_ratio=1.25)


def test_nip_edge_rr_cost_is_rebuilt_from_s():
    d = _ledger(nip_edge_record(epsilon_b=4.0, s=0.96, max_degree=20))
    forged = copy.deepcopy(d)
    params = forged["mechanisms"][0]["params"]
    params.update(s=0.1, flip_probability=0.05)  # 2·20·ln(19) = 117.8, charged 4
    assert 2 * 20 * math.log(1.9 / 0.1) == pytest.approx(117.8, abs=0.05)
    with pytest.raises(RecordMismatch, match="pure_epsilon.*117.7"):
        verify_ledger_dict(forged)


def test_edgerand_flip_probability_sets_its_epsilon():
    forged = _ledger(_edge_rr(p=1 / (1 + math.e), epsilon=1.0))
    forged["mechanisms"][0]["params"]["flip_probability"] = 0.001  # ln(999) = 6.9 charged as 1
    with pytest.raises(RecordMismatch, match="pure_epsilon.*6.90"):
        verify_ledger_dict(forged)


def test_label_rr_keep_probability_sets_its_epsilon():
    forged = _ledger(nip_label_record(epsilon_c=1.0, num_classes=7))
    forged["mechanisms"][0]["params"]["keep_probability"] = 0.99
    with pytest.raises(RecordMismatch, match="pure_epsilon"):
        verify_ledger_dict(forged)


def test_gumbel_selections_must_be_m_times_k():
    (select,) = dp_appr_em_records(option="em0", epsilon=0.1, k=2, m=70, clip=1e-3)
    forged = _ledger(select)
    forged["mechanisms"][0]["params"]["selections"] = 2
    with pytest.raises(RecordMismatch, match="selections.*140"):
        verify_ledger_dict(forged)
    forged = _ledger(select)
    forged["mechanisms"][0]["params"]["gumbel_scale"] = 1.0  # would make ε = C2 / scale = 0.001, not 0.1
    with pytest.raises(RecordMismatch, match="gumbel_scale"):
        verify_ledger_dict(forged)


def test_dp_gnn_occurrences_are_rebuilt_from_k_and_r():
    params = hypergeometric_gaussian_params(
        num_examples=500, max_degree=3, num_layers=2, batch_size=50, noise_multiplier=2.0, clip_norm=1.0, steps=20
    )
    record = MechanismRecord(
        name="dp-sgd:dp-gcn",
        kind="hypergeometric_gaussian",
        touches=("features", "labels", "edges"),
        params=params,
        sensitivity=2.0 * 13,
        sensitivity_reason="N(3, 2) = 13",
        dp_event=None,
    )
    forged = _ledger(record)
    forged["mechanisms"][0]["params"]["max_occurrences"] = 1
    with pytest.raises(ValueError, match="max_occurrences"):
        verify_ledger_dict(forged)
    forged = _ledger(record)
    forged["mechanisms"][0]["sensitivity"] = 2.0
    with pytest.raises(RecordMismatch, match="sensitivity"):
        verify_ledger_dict(forged)


def test_a_record_no_rule_can_rebuild_is_refused():
    record = MechanismRecord(
        name="mystery",
        kind="gaussian",
        touches=("features",),
        params={"noise_multiplier": 5.0},
        sensitivity=1.0,
        sensitivity_reason="trust me",
        dp_event=dp_event.GaussianDpEvent(5.0),
    )
    with pytest.raises(RecordMismatch, match="no rule"):
        Ledger(level="node", target_epsilon=10.0, target_delta=DELTA, mechanisms=(record,)).check()
    wrong_kind = dict(_edge_rr(p=0.2, epsilon=2.0).params)
    with pytest.raises(RecordMismatch, match="kind"):
        check_record(
            MechanismRecord(
                name="x",
                kind="laplace",
                touches=("edges",),
                params=wrong_kind,
                sensitivity=1.0,
                sensitivity_reason="-",
                dp_event=None,
                pure_epsilon=2.0,
            )
        )


def test_dp_appr_gm_noise_is_rebuilt_from_its_row_clip():
    d = _ledger(dp_appr_gm_record(noise_multiplier=2.0, k=2, m=70, clip=0.01))
    _refused(d, "noise_multiplier", noise_std=2.0 * 0.01)  # std sized for C1, not the √2·C1 two rows differ by
    _refused(d, "dp_event", m=7)  # ten times fewer rows than the event composes


def test_poisson_occurrence_d_is_rebuilt_from_its_rule():
    from nodedp.accounting import poisson_occurrence_gaussian_params

    params = poisson_occurrence_gaussian_params(
        sampling_rate=0.3, max_rows=2, noise_multiplier=30.0, clip_norm=1.0, steps=100, occurrence_rule="ranked_sources"
    )
    record = MechanismRecord(
        name="dp-sgd:dpar-em0",
        kind="poisson_occurrence_gaussian",
        touches=("features",),
        params=params,
        sensitivity=2.0 * 4,
        sensitivity_reason="d = max_rows + 2",
        dp_event=None,
    )
    d = _ledger(record)
    forged = copy.deepcopy(d)
    forged["mechanisms"][0]["params"].update(max_occurrences=3)  # d = 3: too small for this rule
    with pytest.raises(ValueError, match="max_occurrences"):
        verify_ledger_dict(forged)
    # With the rule changed too, d = 3 is consistent (the rule is a raw parameter a reader audits), but
    # Δ = 2·C·d must follow d, and the stored ε was spent at d = 4.
    forged["mechanisms"][0]["params"].update(occurrence_rule="own_plus_rows")
    with pytest.raises(RecordMismatch, match="sensitivity"):
        verify_ledger_dict(forged)
    forged["mechanisms"][0]["sensitivity"] = 6.0
    with pytest.raises(ValueError, match="does not match"):
        verify_ledger_dict(forged)
