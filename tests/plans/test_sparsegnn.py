"""SparseGNN's plan (``nodedp.plans.sparsegnn``): calibrated by the structured PLD from public inputs, its reference
mode's claim re-derived independently, and real runs that `nodedp verify` re-plans, a forged noise refused."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nodedp.accounting import verify_ledger_dict
from nodedp.accounting.structured import structured_count_law, structured_epsilon_of_params
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.plans import PublicInputs
from nodedp.plans.sparsegnn import paper_delta, plan_sparsegnn
from nodedp.verify import verify_run
from tests._runs import forge, lay_out_workspace, train_run

PUBLIC = PublicInputs(
    dataset="csbm-homophilous", num_nodes=3000, num_train=2250, num_features=32, num_classes=5, num_edges=18000
)
SMALL = {"epochs": 2, "batch_size": 32, "hidden_dim": 8}


def _spec(method: str = "sparse-sage", epsilon: float = 2.0, accountant: str = "pld") -> RunSpec:
    return RunSpec(
        dataset=PUBLIC.dataset, method=method, seed=0, target_epsilon=epsilon, target_delta=1e-4, accountant=accountant
    )


def test_the_suite_plan_spends_its_target_within_one_percent_from_public_sizes_only():
    hp = get_method("sparse-sage").parse_hparams({"batch_size": 256, "epochs": 3, "radius": 2, "edge_keep": 0.5})
    plan = plan_sparsegnn(PUBLIC, _spec(), hp)
    (record,) = plan.ledger.mechanisms
    params = record.params
    assert params["sampling_rate"] == 256 / 2250 and params["steps"] == 3 * math.ceil(2250 / 256)
    assert params["union_factor"] == 2 and params["relation"] == "substitution" and params["radius"] == 2
    epsilon = plan.ledger.composed()[0]
    assert 0.99 * 2.0 <= epsilon <= 2.0
    # an independent re-derivation: the accountant alone on the record's raw parameters, and the stored ledger
    assert structured_epsilon_of_params(params, delta=1e-4) == pytest.approx(epsilon, rel=1e-9)
    assert verify_ledger_dict(plan.ledger.to_dict()) == pytest.approx(epsilon)
    # the sensitivity: 1 + χ(K_out + K_out²) roots at 2C each, the count law's support
    assert record.sensitivity == 2.0 * (1 + 2 * (5 + 25))
    assert (
        structured_count_law(
            **{k: params[k] for k in ("sampling_rate", "edge_keep", "radius")}, out_degree_bound=5, union_factor=2
        ).size
        == 1 + 1 + 2 * 30
    )
    assert plan.ledger.degree_bound is not None and plan.ledger.degree_bound.to_dict() == {
        "kind": "degree",
        "bound": 5,
        "identity_bound": 5,
    }
    assert plan.ledger.guarantee_class == "conditional"


def test_the_reference_plan_claims_chi_1_at_the_codes_delta_and_records_chi_2_at_that_noise():
    hp = get_method("sparse-sage").parse_hparams({"batch_size": 256, "epochs": 3, "accounting": "paper"})
    plan = plan_sparsegnn(PUBLIC, _spec("sparse-sage@paper"), hp)
    (record,) = plan.ledger.mechanisms
    claim = plan.ledger.claim
    assert claim is not None and claim.epsilon == 2.0 and claim.delta == pytest.approx(2250**-1.01)
    assert paper_delta(2250) == claim.delta
    chi_1 = {**record.params, "union_factor": 1}
    assert 0.99 * 2.0 <= structured_epsilon_of_params(chi_1, delta=claim.delta) <= 2.0  # the code's own figure
    assert record.params["union_factor"] == 2
    assert plan.ledger.actual_claim_epsilon() > 2.0  # χ = 2 at the same noise spends more than the claim
    assert plan.parts["in_degree_cap"] == 10
    assert plan.ledger.degree_bound is not None and plan.ledger.degree_bound.identity_bound == 5


def test_an_rdp_accountant_is_refused_by_name_before_any_work():
    hp = get_method("sparse-gin").parse_hparams({})
    with pytest.raises(ValueError, match="accounted by a PLD only"):
        plan_sparsegnn(PUBLIC, _spec("sparse-gin", accountant="rdp"), hp)
    with pytest.raises(ValueError, match="accounted by 'pld' only"):
        get_method("sparse-gin").resolve_accountant("rdp")
    assert get_method("sparse-gin").resolve_accountant("auto") == "pld"


@pytest.mark.parametrize(
    ("change", "message"),
    [({"radius": 3}, "radius"), ({"edge_keep": 0.0}, "edge_keep"), ({"out_degree_bound": 0}, "K_out")],
)
def test_bad_hyperparameters_are_refused_naming_them(change, message):
    with pytest.raises(ValueError, match=message):
        get_method("sparse-sage").parse_hparams(change)


def _out(name: str) -> str:
    return f"results/runs/csbm-tiny/{name}/seed~0"


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-sparsegnn")
    lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    train_run(root, method="sparse-sage", name="sparse-sage", epsilon="4", hparams=SMALL, out=_out("sparse-sage"))
    train_run(
        root,
        method="sparse-gin",
        name="sparse-gin@paper",
        epsilon="4",
        hparams={**SMALL, "accounting": "paper"},
        out=_out("sparse-gin@paper"),
    )
    return root


@pytest.mark.parametrize("name", ["sparse-sage", "sparse-gin@paper"])
def test_a_real_run_re_plans_to_its_ledger_and_a_forged_noise_multiplier_is_refused(
    workspace, tmp_path, monkeypatch, name
):
    monkeypatch.chdir(workspace)
    check = verify_run(Path(_out(name)))
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]

    def more_noise(ledger: dict) -> None:  # a larger σ stated than drawn: a smaller ε
        (record,) = ledger["mechanisms"]
        record["params"].update(noise_multiplier=record["params"]["noise_multiplier"] * 2)
        record["params"].update(noise_std=record["params"]["noise_multiplier"] * record["params"]["clip_norm"])

    forged = forge(workspace / _out(name), tmp_path / "forged", more_noise)
    refusals = verify_run(forged).refusals
    assert any("noise_multiplier" in str(r) for r in refusals), [str(r) for r in refusals]
