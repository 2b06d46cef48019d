"""The ledger kinds accounted by a PLD of their own (SparseGNN's "structured_gaussian", HeterPoisson's
"heter_poisson_gaussian"): composed as their accountant computes, refused under RDP, rebuilt by the verifier."""

from __future__ import annotations

import pytest
from dp_accounting import dp_event

from nodedp.accounting import (
    Ledger,
    MechanismRecord,
    heter_poisson_epsilon_of_params,
    structured_epsilon_of_params,
    verify_ledger_dict,
)
from nodedp.accounting.rebuild import RecordMismatch, check_record

# The implementation spec's test vectors (§1.8, §2.5): SparseGNN SG-latest ε ≈ 2.618, HeterPoisson PLD ε ≈ 5.766.
STRUCTURED = {
    "sampling_rate": 0.01,
    "edge_keep": 0.1,
    "radius": 1,
    "out_degree_bound": 5,
    "union_factor": 2,
    "noise_multiplier": 2.0,
    "noise_std": 2.0,
    "clip_norm": 1.0,
    "steps": 1000,
    "relation": "substitution",
}
HETER = {
    "sampling_rate": 0.2,
    "neighbours": 1,
    "degree_bound": 20000,
    "noise_multiplier": 1.65,
    "noise_std": 1.65,
    "clip_norm": 1.0,
    "steps": 45,
}


def structured_record(**changes) -> MechanismRecord:
    return MechanismRecord(
        name="dp-sgd:sparsegnn",
        kind="structured_gaussian",
        touches=("features", "labels", "edges"),
        params={**STRUCTURED, **changes},
        sensitivity=2.0 * (1 + 2 * 5),
        sensitivity_reason="a substitution moves each of ≤ 1 + χ·K_out affected roots by ≤ 2C",
        dp_event=None,
    )


def heter_record(**changes) -> MechanismRecord:
    return MechanismRecord(
        name="dp-sgd:heterpoisson",
        kind="heter_poisson_gaussian",
        touches=("features", "labels", "edges"),
        params={**HETER, **changes},
        sensitivity=1.0 * 20000,
        sensitivity_reason="a removed node moves each of the ≤ D subgraphs listing it by ≤ C",
        dp_event=None,
    )


@pytest.mark.parametrize(
    ("record", "delta", "expected", "alone"),
    [
        (structured_record, 1e-5, 2.618, structured_epsilon_of_params),
        (heter_record, 1e-5, 5.766, heter_poisson_epsilon_of_params),
    ],
)
def test_a_ledger_composes_a_pld_kind_as_its_accountant_computes_it(record, delta, expected, alone):
    ledger = Ledger(level="node", target_epsilon=10.0, target_delta=delta, mechanisms=(record(),), accountant="pld")
    epsilon, _ = ledger.composed()
    assert epsilon == pytest.approx(alone(ledger.mechanisms[0].params, delta=delta), rel=1e-9)
    assert epsilon == pytest.approx(expected, abs=0.02)
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(epsilon)  # the stored ledger re-derives


@pytest.mark.parametrize("record", [structured_record, heter_record])
def test_a_pld_kind_is_refused_under_the_rdp_accountant_by_name(record):
    ledger = Ledger(level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(record(),), accountant="rdp")
    with pytest.raises(ValueError, match=r"accounted by their own PLD only .*use accountant 'pld'"):
        ledger.composed()


@pytest.mark.parametrize("record", [structured_record, heter_record])
def test_the_verifier_refuses_a_forged_noise_multiplier(record):
    check_record(record())
    with pytest.raises(RecordMismatch, match="noise_multiplier"):
        check_record(record(noise_multiplier=4.0))  # claims twice the noise the std gives


def test_the_structured_record_states_the_substitution_relation_and_its_worst_case_sensitivity():
    with pytest.raises(RecordMismatch, match="substitution"):
        check_record(structured_record(relation="add/remove"))
    with pytest.raises(RecordMismatch, match="sensitivity"):
        check_record(structured_record(union_factor=1))  # the stored 2C·(1 + 2·5) no longer follows


def test_a_pld_kind_takes_no_event_and_valid_params_only():
    with pytest.raises(ValueError, match="own PLD of params"):
        MechanismRecord(
            name="x",
            kind="structured_gaussian",
            touches=("features",),
            params=STRUCTURED,
            sensitivity=22.0,
            sensitivity_reason="r",
            dp_event=dp_event.GaussianDpEvent(1.0),
        )
    with pytest.raises(ValueError, match="edge_keep"):
        structured_record(edge_keep=0.0)
    with pytest.raises(ValueError, match="neighbours"):
        heter_record(neighbours=0)


def test_a_ledger_states_the_relation_its_records_are_accounted_under():
    from nodedp.accounting.ledger import SUBSTITUTION_RELATION

    substitution = Ledger(
        level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(structured_record(),), accountant="pld"
    )
    assert substitution.relation == "substitution"
    stated = substitution.to_dict()["guarantee"]["relation"]
    assert stated == SUBSTITUTION_RELATION and "adding or removing one node" in stated
    add_remove = Ledger(
        level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(heter_record(),), accountant="pld"
    )
    assert add_remove.relation == "add/remove"
    assert add_remove.to_dict()["guarantee"]["relation"].startswith("add or remove one node")
    assert Ledger.from_dict(substitution.to_dict()).relation == "substitution"  # read back from the stored record
