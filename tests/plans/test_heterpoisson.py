"""HeterPoisson's plan (``nodedp.plans.heterpoisson``): calibrated by the mixture's PLD at the public D, its
reference mode's σ re-derived by the public code's own search and its unbounded reads stated, and real runs that
`nodedp verify` re-plans, a forged noise refused."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nodedp.accounting import verify_ledger_dict
from nodedp.accounting.heter_poisson import heter_poisson_epsilon_of_params, paper_epsilon
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.plans import PublicInputs
from nodedp.plans.heterpoisson import paper_delta, plan_heterpoisson
from nodedp.verify import verify_run
from tests._runs import bound_degree_artifact, forge, lay_out_workspace, train_run

PUBLIC = PublicInputs(
    dataset="csbm-homophilous", num_nodes=3000, num_train=2250, num_features=32, num_classes=5, num_edges=18000
)
SMALL = {"epochs": 2, "batch_size": 32, "hidden_dim": 8}
D = 4  # csbm-tiny's public bound for the tests' runs (max_degree)


def _spec(method: str = "heterpoisson", epsilon: float = 2.0, accountant: str = "pld") -> RunSpec:
    return RunSpec(
        dataset=PUBLIC.dataset, method=method, seed=0, target_epsilon=epsilon, target_delta=1e-4, accountant=accountant
    )


def test_the_suite_plan_spends_its_target_within_one_percent_at_the_public_degree_bound():
    hp = get_method("heterpoisson").parse_hparams({"batch_size": 256, "neighbours": 2, "max_degree": 12})
    plan = plan_heterpoisson(PUBLIC, _spec(), hp)
    (record,) = plan.ledger.mechanisms
    params = record.params
    assert params["degree_bound"] == 12 and params["neighbours"] == 2 and params["sampling_rate"] == 256 / 2250
    assert params["steps"] == 9 * math.ceil(2250 / 256) and params["example_clip_norm"] == params["clip_norm"] / 2
    epsilon = plan.ledger.composed()[0]
    assert 0.99 * 2.0 <= epsilon <= 2.0
    assert heter_poisson_epsilon_of_params(params, delta=1e-4) == pytest.approx(epsilon, rel=1e-9)
    assert verify_ledger_dict(plan.ledger.to_dict()) == pytest.approx(epsilon)
    assert plan.ledger.degree_bound is not None and plan.ledger.degree_bound.bound == 12
    assert plan.parts["degree_bound"] == 12 and not plan.ledger.uncharged


def test_the_reference_plan_takes_the_public_codes_sigma_and_states_its_unbounded_reads():
    public = PublicInputs(dataset="tiny", num_nodes=160, num_train=120, num_features=8, num_classes=3)
    hp = get_method("heterpoisson").parse_hparams({"batch_size": 60, "epochs": 1, "accounting": "paper"})
    plan = plan_heterpoisson(public, _spec("heterpoisson@paper", epsilon=4.0), hp)
    (record,) = plan.ledger.mechanisms
    sigma, claim = record.params["noise_multiplier"], plan.ledger.claim
    assert claim is not None and claim.delta == pytest.approx(120**-1.1) and claim.delta == paper_delta(120)
    assert record.params["degree_bound"] == 120 and plan.parts["degree_bound"] is None
    args = {"sampling_rate": 0.5, "neighbours": 1, "degree_bound": 120, "degree": 120, "steps": 2, "delta": claim.delta}
    # the public code's bisection: σ within the claim, σ − 0.01 (its bracket width) above it, full evaluations
    assert paper_epsilon(noise_multiplier=sigma, **args) <= 4.0 < paper_epsilon(noise_multiplier=sigma - 0.01, **args)
    names = {read.name.split(":")[0] for read in plan.ledger.uncharged}
    assert names == {"private-degrees", "partial-root-removal"}
    assert plan.ledger.guarantee_class == "conditional" and plan.ledger.degree_bound is None


def test_an_rdp_accountant_is_refused_by_name():
    with pytest.raises(ValueError, match="accounted by a PLD only"):
        plan_heterpoisson(PUBLIC, _spec(accountant="rdp"), get_method("heterpoisson").parse_hparams({}))


def _out(name: str) -> str:
    return f"results/runs/csbm-tiny/{name}/seed~0"


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-heterpoisson")
    lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    artifact = bound_degree_artifact(root, kind="degree", bound=D)
    hparams = {**SMALL, "max_degree": D}
    train_run(
        root,
        method="heterpoisson",
        name="heterpoisson",
        epsilon="4",
        hparams=hparams,
        out=_out("heterpoisson"),
        structure=artifact,
    )
    return root


def test_a_real_run_re_plans_to_its_ledger_and_a_forged_noise_multiplier_is_refused(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(workspace)
    check = verify_run(Path(_out("heterpoisson")))
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]

    def more_noise(ledger: dict) -> None:
        (record,) = ledger["mechanisms"]
        record["params"].update(noise_multiplier=record["params"]["noise_multiplier"] * 2)
        record["params"].update(noise_std=record["params"]["noise_multiplier"] * record["params"]["clip_norm"])

    forged = forge(workspace / _out("heterpoisson"), tmp_path / "forged", more_noise)
    refusals = verify_run(forged).refusals
    assert any("noise_multiplier" in str(r) for r in refusals), [str(r) for r in refusals]
