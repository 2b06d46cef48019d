from __future__ import annotations

import copy
import dataclasses
import json
import math

import pytest
from dp_accounting.dp_event import SelfComposedDpEvent

from nodedp.accounting import (
    MECHANISM_KINDS,
    Ledger,
    MechanismRecord,
    PrivacyBudgetExceeded,
    RecordMismatch,
    UnchargedRead,
    calibrate_dpsgd,
    compose,
    dp_appr_em_records,
    dp_appr_gm_record,
    epsilon_of,
    gaussian_event,
    hypergeometric_gaussian_epsilon,
    hypergeometric_gaussian_params,
    read_ledger,
    subsampled_gaussian_event,
    verify_ledger_dict,
    write_ledger,
)
from nodedp.accounting.nip_bounds import label_keep_probability

DELTA = 1e-4
Q, STEPS = 0.05, 100


def dpsgd_record(sigma: float) -> MechanismRecord:
    return MechanismRecord(
        name="dp-sgd:mlp",
        kind="subsampled_gaussian",
        touches=("features", "labels"),
        params={
            "noise_multiplier": sigma,
            "noise_std": sigma,
            "clip_norm": 1.0,
            "sampling": "poisson",
            "sampling_rate": Q,
            "num_examples": 2000,
            "expected_batch_size": Q * 2000,
            "steps": STEPS,
        },
        sensitivity=1.0,
        sensitivity_reason="one node is one example; its gradient is clipped to C",
        dp_event=subsampled_gaussian_event(noise_multiplier=sigma, sampling_rate=Q, steps=STEPS),
    )


def gaussian_record(sigma: float) -> MechanismRecord:
    return MechanismRecord(
        name="aggregation:hop1",
        kind="gaussian",
        touches=("features", "edges"),
        params={
            "mechanism": "nap",
            "level": "edge",
            "undirected": False,
            "noise_multiplier": sigma,
            "noise_std": sigma,
            "queries": 1,
        },
        sensitivity=1.0,
        sensitivity_reason="rows are normalised; a node changes at most its own aggregate by 1",
        dp_event=SelfComposedDpEvent(gaussian_event(noise_multiplier=sigma), 1),
        caveat="degree bound enforced by sampling",
    )


def laplace_record(epsilon: float) -> MechanismRecord:
    return MechanismRecord(
        name="labels:rr",
        kind="randomized_response",
        touches=("labels",),
        params={"mechanism": "nip_label_rr", "num_classes": 7, "keep_probability": label_keep_probability(epsilon, 7)},
        sensitivity=1.0,
        sensitivity_reason="one node owns one label",
        dp_event=None,
        pure_epsilon=epsilon,
    )


def dp_gnn_record(sigma: float, *, steps: int = STEPS) -> MechanismRecord:
    return MechanismRecord(
        name="dp-sgd:gcn",
        kind="hypergeometric_gaussian",
        touches=("features", "labels", "edges"),
        params=hypergeometric_gaussian_params(
            num_examples=2000,
            max_degree=5,
            num_layers=1,
            batch_size=100,
            noise_multiplier=sigma,
            clip_norm=1.0,
            steps=steps,
        ),
        sensitivity=2.0 * 6,
        sensitivity_reason="a node occurs in at most N(K,r) = 6 subgraphs, each clipped to C",
        dp_event=None,
    )


@pytest.fixture(scope="module")
def calibrated() -> Ledger:
    sigma = calibrate_dpsgd(target_epsilon=2.0, target_delta=DELTA, sampling_rate=Q, steps=STEPS)
    return Ledger(level="node", target_epsilon=2.0, target_delta=DELTA, mechanisms=(dpsgd_record(sigma),))


def test_calibrated_ledger_passes_check_and_spends_at_most_its_target(calibrated):
    calibrated.check()
    epsilon, delta = calibrated.composed()
    assert 0.99 * 2.0 <= epsilon <= 2.0 and delta == DELTA


def test_round_trip_through_strict_json(calibrated, tmp_path):
    mixed = Ledger(
        level="node",
        target_epsilon=50.0,
        target_delta=DELTA,
        mechanisms=(*calibrated.mechanisms, gaussian_record(3.0), laplace_record(0.5)),
        accountant="rdp",
    )
    for ledger in (calibrated, mixed, Ledger.non_private()):
        d = json.loads(json.dumps(ledger.to_dict(), allow_nan=False))
        assert Ledger.from_dict(d) == ledger
        path = write_ledger(ledger, tmp_path / "run" / "ledger.json")
        assert read_ledger(path) == ledger
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["ledger.json"]  # no temp files left


def test_a_written_ledger_has_an_ordinary_files_permissions(calibrated, tmp_path):
    """As every other JSON output (nodedp.io), not the 0600 of a temporary file."""
    import os

    umask = os.umask(0)
    os.umask(umask)
    path = write_ledger(calibrated, tmp_path / "ledger.json")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_to_dict_layout(calibrated):
    d = calibrated.to_dict()
    assert d["private"] is True and d["level"] == "node" and d["accountant"] == "rdp"
    assert d["target"] == {"epsilon": 2.0, "delta": DELTA}
    assert d["epsilon"] == calibrated.composed()[0] and d["delta"] == DELTA
    (m,) = d["mechanisms"]
    assert m["kind"] == "subsampled_gaussian" and m["touches"] == ["features", "labels"]
    assert m["dp_event"]["type"] == "SelfComposedDpEvent" and m["pure_epsilon"] is None


def test_over_budget_ledger_fails_check_naming_the_spend_and_the_target(calibrated):
    over = Ledger(level="node", target_epsilon=1.0, target_delta=DELTA, mechanisms=calibrated.mechanisms)
    spent = over.composed()[0]
    with pytest.raises(PrivacyBudgetExceeded, match=rf"{spent:.6g}.*target ε = 1\b"):
        over.check()
    with pytest.raises(PrivacyBudgetExceeded):
        verify_ledger_dict(over.to_dict())


def test_composition_costs_more_than_each_part_and_pure_epsilon_adds():
    a, b, pure = dpsgd_record(1.0), gaussian_record(4.0), laplace_record(0.25)

    def spent(*records: MechanismRecord) -> tuple[float, float]:
        return Ledger(level="node", target_epsilon=100.0, target_delta=DELTA, mechanisms=records).composed()

    both = spent(a, b)[0]
    assert both > spent(a)[0] and both > spent(b)[0]
    assert both == epsilon_of(compose([a.dp_event, b.dp_event]), delta=DELTA)
    assert spent(a, b, pure) == (pytest.approx(both + 0.25, rel=1e-12), DELTA)
    assert spent(pure, laplace_record(0.5)) == (0.75, 0.0)  # pure ε alone: δ = 0


def test_pld_ledger_accounts_with_pld():
    ledger = Ledger(
        level="edge", target_epsilon=5.0, target_delta=DELTA, mechanisms=(gaussian_record(2.0),), accountant="pld"
    )
    assert ledger.composed()[0] == epsilon_of(gaussian_event(noise_multiplier=2.0), delta=DELTA, accountant="pld")
    assert ledger.composed()[0] < dataclasses.replace(ledger, accountant="rdp").composed()[0]
    assert verify_ledger_dict(ledger.to_dict()) == ledger.composed()[0]


def test_non_private_ledger():
    ledger = Ledger.non_private()
    assert not ledger.private and ledger.composed() == (math.inf, 0.0)
    ledger.check()
    d = ledger.to_dict()
    assert d["epsilon"] == "inf" and d["target"]["epsilon"] == "inf" and d["mechanisms"] == [] and d["private"] is False
    assert verify_ledger_dict(d) == math.inf
    with pytest.raises(ValueError, match="non-private"):
        Ledger(level="none", target_epsilon=math.inf, target_delta=0.0, mechanisms=(gaussian_record(1.0),))


def test_private_ledger_without_mechanisms_is_refused():
    empty = Ledger(level="node", target_epsilon=1.0, target_delta=DELTA, mechanisms=())
    with pytest.raises(ValueError, match="at least one mechanism"):
        empty.check()
    with pytest.raises(ValueError, match="at least one mechanism"):
        verify_ledger_dict(empty.to_dict())


def test_verify_recomputes_and_catches_tampering(calibrated):
    d = calibrated.to_dict()
    assert verify_ledger_dict(d) == pytest.approx(calibrated.composed()[0], rel=1e-12)

    lowered = copy.deepcopy(d)
    lowered["epsilon"] = d["epsilon"] * 0.9
    with pytest.raises(PrivacyBudgetExceeded, match="does not match"):
        verify_ledger_dict(lowered)

    # Less noise recorded in the event than its params draw: the event is rebuilt from the params.
    less_noise = copy.deepcopy(d)
    less_noise["mechanisms"][0]["dp_event"]["event"]["event"]["noise_multiplier"] *= 0.99
    with pytest.raises(RecordMismatch, match="dp_event"):
        verify_ledger_dict(less_noise)

    wrong_flag = copy.deepcopy(d)
    wrong_flag["private"] = False
    with pytest.raises(ValueError, match="private"):
        verify_ledger_dict(wrong_flag)


def test_mechanism_record_validation():
    good = gaussian_record(1.0)
    with pytest.raises(ValueError, match="unknown mechanism kind 'wavelet'.*subsampled_gaussian"):
        dataclasses.replace(good, kind="wavelet")
    with pytest.raises(ValueError, match="touches"):
        dataclasses.replace(good, touches=("weights",))
    with pytest.raises(ValueError, match="exactly one"):
        dataclasses.replace(good, pure_epsilon=0.1)
    with pytest.raises(ValueError, match="exactly one"):
        dataclasses.replace(good, dp_event=None)
    with pytest.raises(ValueError, match="params"):
        dataclasses.replace(good, params={"scale": math.inf})
    with pytest.raises(ValueError, match="sensitivity_reason"):
        dataclasses.replace(good, sensitivity_reason="")
    assert "gaussian" in MECHANISM_KINDS


def test_ledger_validation():
    record = gaussian_record(1.0)
    with pytest.raises(ValueError, match="node.*edge.*none"):
        Ledger(level="graph", target_epsilon=1.0, target_delta=DELTA, mechanisms=(record,))
    with pytest.raises(ValueError, match="rdp.*pld"):
        Ledger(level="node", target_epsilon=1.0, target_delta=DELTA, mechanisms=(record,), accountant="gdp")
    with pytest.raises(ValueError, match="target_epsilon"):
        Ledger(level="node", target_epsilon=math.inf, target_delta=DELTA, mechanisms=(record,))
    with pytest.raises(ValueError, match="target_delta"):
        Ledger(level="node", target_epsilon=5.0, target_delta=0.0, mechanisms=(record,)).composed()


def test_hypergeometric_mechanism_composes_to_its_own_epsilon():
    record = dp_gnn_record(10.0)
    ledger = Ledger(level="node", target_epsilon=100.0, target_delta=DELTA, mechanisms=(record,))
    alone = hypergeometric_gaussian_epsilon(
        num_examples=2000, max_occurrences=6, batch_size=100, noise_multiplier=10.0, steps=STEPS, delta=DELTA
    )
    assert ledger.composed() == (alone, DELTA)
    # RDP adds across mechanisms: two records of T steps cost what one of 2T costs.
    twice = dataclasses.replace(ledger, mechanisms=(record, dataclasses.replace(record, name="again")))
    doubled = dataclasses.replace(ledger, mechanisms=(dp_gnn_record(10.0, steps=2 * STEPS),))
    assert twice.composed()[0] == pytest.approx(doubled.composed()[0], rel=1e-12)
    assert twice.composed()[0] > alone


def test_hypergeometric_with_dp_events_costs_more_than_each_and_pure_epsilon_adds():
    def spent(*records: MechanismRecord) -> float:
        return Ledger(level="node", target_epsilon=100.0, target_delta=DELTA, mechanisms=records).composed()[0]

    ours, dpsgd, gauss = dp_gnn_record(10.0), dpsgd_record(1.0), gaussian_record(4.0)
    mixed = spent(ours, dpsgd, gauss)
    assert mixed > spent(ours) and mixed > spent(dpsgd, gauss) and mixed > spent(dpsgd) and mixed > spent(gauss)
    # RDP composition beats adding the parts' ε.
    assert mixed < spent(ours) + spent(dpsgd, gauss)
    assert spent(ours, dpsgd, gauss, laplace_record(0.25)) == pytest.approx(mixed + 0.25, rel=1e-12)


def test_hypergeometric_ledger_round_trips_and_verifies(tmp_path):
    ledger = Ledger(
        level="node", target_epsilon=50.0, target_delta=DELTA, mechanisms=(dp_gnn_record(10.0), gaussian_record(3.0))
    )
    d = json.loads(json.dumps(ledger.to_dict(), allow_nan=False))
    assert Ledger.from_dict(d) == ledger
    assert d["mechanisms"][0]["dp_event"] is None and d["mechanisms"][0]["pure_epsilon"] is None
    assert read_ledger(write_ledger(ledger, tmp_path / "ledger.json")) == ledger
    assert verify_ledger_dict(d) == pytest.approx(ledger.composed()[0], rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("steps", 2 * STEPS, PrivacyBudgetExceeded),  # more steps than the stored ε was computed for
        ("batch_size", 200, PrivacyBudgetExceeded),
        ("max_degree", 2, ValueError),  # contradicts the recorded N(K,r)
        ("noise_multiplier", 20.0, ValueError),  # contradicts noise_std / clip_norm
        ("sampling", "poisson", ValueError),
    ],
)
def test_verify_catches_tampered_hypergeometric_params(field, value, error):
    ledger = Ledger(level="node", target_epsilon=50.0, target_delta=DELTA, mechanisms=(dp_gnn_record(10.0),))
    d = ledger.to_dict()
    d["mechanisms"][0]["params"][field] = value
    with pytest.raises(error):
        verify_ledger_dict(d)


def test_pld_composes_the_mixtures_and_refuses_curves_without_a_pld():
    def ledger(*records: MechanismRecord, accountant: str) -> Ledger:
        return Ledger(level="node", target_epsilon=50.0, target_delta=DELTA, mechanisms=records, accountant=accountant)

    records = (dp_gnn_record(10.0), dpsgd_record(1.0))
    pld, rdp = ledger(*records, accountant="pld").composed()[0], ledger(*records, accountant="rdp").composed()[0]
    assert 0 < pld < rdp  # the same pair, composed without the RDP conversion's slack
    assert verify_ledger_dict(ledger(*records, accountant="pld").to_dict()) == pytest.approx(pld)
    (select,) = dp_appr_em_records(option="em0", epsilon=0.1, k=2, m=70, clip=1e-3)
    with pytest.raises(ValueError, match="'gumbel_topk'.*no PLD.*use accountant 'rdp'"):
        ledger(select, accountant="pld").composed()


def test_rdp_curve_record_takes_no_other_cost():
    record = dp_gnn_record(10.0)
    with pytest.raises(ValueError, match="own RDP curve"):
        dataclasses.replace(record, pure_epsilon=0.1)
    with pytest.raises(ValueError, match="own RDP curve"):
        dataclasses.replace(record, dp_event=gaussian_event(noise_multiplier=1.0))
    with pytest.raises(ValueError, match="noise_std"):
        dataclasses.replace(record, params={**record.params, "noise_std": 1.0})


THRESHOLDS = UnchargedRead(
    name="clip-thresholds:dp-gcn",
    touches=("features", "labels", "edges"),
    reason="75th percentile of gradient norms at initialization, read without noise",
)


def test_uncharged_reads_round_trip_and_mark_the_ledger_not_fully_accounted(calibrated, tmp_path):
    assert calibrated.fully_accounted and calibrated.to_dict()["fully_accounted"] is True
    ledger = dataclasses.replace(calibrated, uncharged=(THRESHOLDS,))
    d = json.loads(json.dumps(ledger.to_dict(), allow_nan=False))
    assert d["fully_accounted"] is False and d["uncharged"] == [THRESHOLDS.to_dict()]
    assert Ledger.from_dict(d) == ledger
    assert read_ledger(write_ledger(ledger, tmp_path / "ledger.json")) == ledger
    # An uncharged read costs nothing in ε: the ledger only says it is not covered.
    assert verify_ledger_dict(d) == pytest.approx(calibrated.composed()[0], rel=1e-12)


def test_verify_refuses_a_tampered_fully_accounted_flag(calibrated):
    d = dataclasses.replace(calibrated, uncharged=(THRESHOLDS,)).to_dict()
    d["fully_accounted"] = True
    with pytest.raises(ValueError, match="fully_accounted = True but it records 1 uncharged read"):
        verify_ledger_dict(d)
    hidden = copy.deepcopy(d)
    hidden["uncharged"] = []  # dropping the read while keeping the flag false is caught too
    hidden["fully_accounted"] = False
    with pytest.raises(ValueError, match="fully_accounted = False"):
        verify_ledger_dict(hidden)


def test_a_ledger_written_before_uncharged_reads_still_verifies(calibrated):
    old = calibrated.to_dict()
    del old["uncharged"], old["fully_accounted"]
    assert Ledger.from_dict(old).fully_accounted
    assert verify_ledger_dict(old) == pytest.approx(calibrated.composed()[0], rel=1e-12)


def test_uncharged_read_validation():
    with pytest.raises(ValueError, match=r"touches must be a non-empty subset of \['features', 'labels', 'edges'\]"):
        UnchargedRead(name="x", touches=("weights",), reason="why")
    with pytest.raises(ValueError, match="needs a name and a reason"):
        UnchargedRead(name="x", touches=("labels",), reason="")
    with pytest.raises(ValueError, match="no uncharged reads"):
        dataclasses.replace(Ledger.non_private(), uncharged=(THRESHOLDS,))


def _gaussian_ledger(**kwargs) -> Ledger:
    record = dp_appr_gm_record(noise_multiplier=2.0, k=1, m=1, clip=1.0)
    return Ledger(level="node", target_epsilon=50.0, target_delta=1e-5, mechanisms=(record,), **kwargs)


def test_node_sampling_amplifies_the_composition_at_delta_over_q(tmp_path):
    whole = _gaussian_ledger()
    sampled = _gaussian_ledger(node_sample_rate=0.1)
    inner, inner_delta = sampled.composed_on_sample()
    # on the sample: the same mechanisms at δ/q
    assert inner_delta == pytest.approx(1e-4)
    assert inner == pytest.approx(epsilon_of(gaussian_event(noise_multiplier=2.0), delta=1e-4))
    epsilon, delta = sampled.composed()
    assert epsilon == pytest.approx(math.log1p(0.1 * math.expm1(inner)), rel=1e-12) and delta == 1e-5
    assert 0.1 * inner < epsilon < whole.composed()[0]  # never the understated q·ε
    assert whole.composed_on_sample() == whole.composed()
    path = write_ledger(sampled, tmp_path / "ledger.json")
    stored = json.loads(path.read_text())
    assert stored["node_sample_rate"] == 0.1
    assert verify_ledger_dict(stored) == pytest.approx(epsilon)
    stored["node_sample_rate"] = 0.2  # a larger rate amplifies less: the stored ε no longer matches
    with pytest.raises(PrivacyBudgetExceeded, match="does not match"):
        verify_ledger_dict(stored)


def test_amplification_is_stable_for_huge_epsilon():
    from nodedp.accounting import amplified

    assert amplified(1000.0, 0.0, rate=0.09)[0] == pytest.approx(1000 + math.log(0.09))
    assert amplified(20.0, 0.0, rate=0.09)[0] == pytest.approx(math.log1p(0.09 * math.expm1(20.0)))


@pytest.mark.parametrize("rate", [0.0, 1.5, True, 1e-6])
def test_node_sample_rate_validation(rate):
    with pytest.raises(ValueError, match="node_sample_rate"):
        _gaussian_ledger(node_sample_rate=rate)


# --- reference mode: a paper's claim beside the actual ε -------------------------------------------------------


def reference_ledger(sigma: float, *, claimed: float = 1.0, claim_delta: float = 1e-3) -> Ledger:
    from nodedp.accounting import Claim

    return Ledger(
        level="node",
        target_epsilon=claimed,
        target_delta=DELTA,
        mechanisms=(dpsgd_record(sigma),),
        claim=Claim(epsilon=claimed, delta=claim_delta, rule="a rule that under-counts", source="a test"),
    )


def test_a_reference_ledger_may_exceed_its_claim_and_states_both_epsilons() -> None:
    sigma = 0.6  # far less noise than ε = 1 needs
    ledger = reference_ledger(sigma)
    ledger.check()  # no PrivacyBudgetExceeded: the overrun is what reference mode reports
    actual = epsilon_of(
        subsampled_gaussian_event(noise_multiplier=sigma, sampling_rate=Q, steps=STEPS), delta=DELTA, accountant="rdp"
    )
    assert ledger.composed()[0] == pytest.approx(actual) and actual > 1.0
    at_claim = epsilon_of(
        subsampled_gaussian_event(noise_multiplier=sigma, sampling_rate=Q, steps=STEPS), delta=1e-3, accountant="rdp"
    )
    assert ledger.actual_claim_epsilon() == pytest.approx(at_claim) and at_claim < actual  # a larger δ
    d = ledger.to_dict()
    assert d["claim"]["epsilon"] == 1.0 and d["claim"]["actual_epsilon"] == pytest.approx(at_claim)
    assert verify_ledger_dict(json.loads(json.dumps(d))) == pytest.approx(actual)
    assert Ledger.from_dict(d) == ledger
    # Without the claim the same mechanisms overrun the target.
    with pytest.raises(PrivacyBudgetExceeded):
        dataclasses.replace(ledger, claim=None).check()


def test_the_verifier_recomputes_a_claims_actual_epsilon() -> None:
    d = reference_ledger(0.6).to_dict()
    d["claim"]["actual_epsilon"] *= 0.5
    with pytest.raises(PrivacyBudgetExceeded, match="claimed δ"):
        verify_ledger_dict(d)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(target_epsilon=2.0), "target is the claimed ε"),
        (dict(level="edge", degree_bound=None), None),
    ],
)
def test_a_claim_belongs_to_its_target(change: dict, match: str | None) -> None:
    ledger = reference_ledger(2.0)
    if match is None:  # another level is fine: the claim is about ε
        dataclasses.replace(ledger, **change).check()
        return
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(ledger, **change)


def test_a_claim_needs_a_valid_epsilon_delta_and_rule() -> None:
    from nodedp.accounting import Claim

    for bad in (dict(epsilon=0.0), dict(epsilon=math.inf), dict(delta=1.0), dict(delta=-1e-5), dict(rule="")):
        with pytest.raises(ValueError):
            Claim(**{**dict(epsilon=1.0, delta=1e-5, rule="r", source="s"), **bad})
    assert Claim(epsilon=1.0, delta=0.0, rule="pure", source="s").delta == 0.0  # pure-ε papers


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_a_remembered_composition_is_the_one_its_records_give(accountant):
    from nodedp.accounting.events import _EPSILONS
    from nodedp.accounting.ledger import _COMPOSED

    def ledger(*records, delta=DELTA):
        return Ledger(level="node", target_epsilon=1e9, target_delta=delta, mechanisms=records, accountant=accountant)

    ledgers = [
        ledger(dpsgd_record(1.0)),
        ledger(dpsgd_record(math.nextafter(1.0, 2.0))),
        ledger(dpsgd_record(1.0), gaussian_record(4.0)),
        ledger(dpsgd_record(1.0), delta=DELTA / 10),
    ]
    fresh = []
    for one in ledgers:  # each composed with nothing remembered
        _COMPOSED.clear()
        _EPSILONS.clear()
        fresh.append(one.composed())
    for _ in range(2):  # then from the memo, in one process: each record's every parameter is in the key
        assert [one.composed() for one in ledgers] == fresh
    assert len({eps for eps, _ in fresh}) == len(fresh)


def test_a_ledger_with_uncharged_reads_is_never_unconditional(calibrated):
    """Uncharged reads downgrade the class: the ε does not cover them, whatever the degree bound (none here)."""
    assert calibrated.degree_bound is None and calibrated.guarantee_class == "unconditional"
    ledger = dataclasses.replace(calibrated, uncharged=(THRESHOLDS,))
    assert ledger.guarantee_class == "conditional"
    assert THRESHOLDS.name in ledger.guarantee()["holds"] and "does not cover" in ledger.guarantee()["holds"]
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(calibrated.composed()[0], rel=1e-12)
    forged = ledger.to_dict()
    forged["guarantee"] = calibrated.guarantee()  # claiming the unconditional class back is refused
    with pytest.raises(ValueError, match="guarantee"):
        verify_ledger_dict(forged)


def test_the_guarantee_is_a_function_of_the_plan_and_states_what_is_public(calibrated):
    from nodedp.accounting import DegreeBound

    bound = DegreeBound(kind="out-degree", bound=4, identity_bound=4)
    ledger = dataclasses.replace(calibrated, degree_bound=bound)
    guarantee = ledger.guarantee()
    assert guarantee["class"] == "conditional" and guarantee["degree_bound"] == bound.to_dict()
    assert "out-degrees are all <= 4" in guarantee["holds"] and "same sampled edge" in guarantee["holds"]
    assert guarantee["relation"].startswith("add or remove one node")
    assert "the node count and the training-set size are public" in guarantee["relation"]
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert "nodes_over" not in json.dumps(ledger.to_dict())
    with pytest.raises(TypeError):
        DegreeBound(kind="out-degree", bound=4, identity_bound=4, nodes_over=0)  # no count of the input


def test_a_ledger_stating_a_count_of_its_input_is_refused_with_a_rerun_message(calibrated):
    from nodedp.accounting import DegreeBound

    old = dataclasses.replace(calibrated, degree_bound=DegreeBound(kind="degree", bound=3, identity_bound=3)).to_dict()
    old["guarantee"]["degree_bound"]["nodes_over"] = 0
    old["guarantee"]["class"] = "bounded-degree"
    assert Ledger.from_dict(old).guarantee_class == "conditional"  # readable: the count is not read
    with pytest.raises(ValueError, match="nodes_over.*rerun the cell"):
        verify_ledger_dict(old)


def test_every_private_guarantee_says_inference_and_evaluation_are_not_private_and_older_wording_verifies(calibrated):
    from nodedp.accounting.ledger import NOT_PRIVATE

    guarantee = calibrated.guarantee()
    assert guarantee["holds"].endswith(NOT_PRIVATE) and "inference and evaluation" in guarantee["holds"]
    assert "not private" not in Ledger.non_private().guarantee()["holds"]
    # A ledger (and its metrics.json) written before the sentence: the same numbers, so it still verifies.
    older = calibrated.to_dict()
    older["guarantee"] = {**guarantee, "holds": guarantee["holds"].removesuffix(NOT_PRIVATE)}
    assert verify_ledger_dict(older) == pytest.approx(calibrated.composed()[0], rel=1e-12)
    # but any other change of its words is refused
    older["guarantee"] = {**guarantee, "holds": guarantee["holds"].replace("node", "edge")}
    with pytest.raises(ValueError, match="guarantee"):
        verify_ledger_dict(older)
