"""DPAR's plans (``nodedp.plans.dpar``): real DP-APPR artifacts and runs verify (``nodedp verify`` re-plans them
from public inputs); copies of a real run, each edited as a reviewer would forge it (the ledger's ε recomputed
with the project's own Ledger API, metrics' ε and δ matched), are refused; a run refuses an artifact whose
ledger is not the one its plan gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nodedp.accounting.ledger import Ledger
from nodedp.cli import main
from nodedp.verify import verify_run
from tests._runs import forge, lay_out_workspace

# A tiny graph: sample half the training nodes, 20 sources, 2 epochs.
HPARAMS = {"epochs": 2, "batch_size": 16, "sample_rate": 0.5, "num_sources": 20, "k": 3, "max_rows": 2}
EPSILON = "4"
# run name -> (registered method, hyperparameters)
RUNS = {"dpar-em0": ("dpar-em0", HPARAMS), "dpar-em0@paper": ("dpar-em0", {**HPARAMS, "accounting": "paper"})}


def _run_dir(name: str) -> Path:
    return Path(f"results/runs/csbm-tiny/{name}/eps~{EPSILON}/seed~0")


def _artifact_path(name: str) -> Path:
    return Path(f"results/structure/csbm-tiny/transductive/seed~0/dp-appr/{name}/eps~{EPSILON}.pt")


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    """A workspace laid out as the workflow's, with a DP-APPR artifact and a run for dpar-em0 and its
    reference mode."""
    root = tmp_path_factory.mktemp("verify-dpar")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    for name, (method, hparams) in RUNS.items():
        artifact = root / _artifact_path(name)
        artifact.parent.mkdir(parents=True)
        common = [
            "--graph",
            str(graph),
            "--split",
            str(split),
            "--method",
            method,
            "--hparams",
            json.dumps(hparams),
            "--epsilon",
            EPSILON,
            "--seed",
            "0",
        ]
        assert main(["dp-appr", *common, "--out", str(artifact)]) == 0
        assert (
            main(
                [
                    "train",
                    *common,
                    "--name",
                    name,
                    "--no-progress",
                    "--structure",
                    str(artifact),
                    "--out",
                    str(root / _run_dir(name)),
                ]
            )
            == 0
        )
    return root


@pytest.mark.parametrize("name", sorted(RUNS))
def test_real_dpar_runs_verify_and_their_artifacts_hold_the_planned_ledger(workspace, monkeypatch, name):
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.data import load_split
    from nodedp.io import read_json
    from nodedp.plans import PublicInputs, planner_of
    from nodedp.plans.dpar import plan_dp_appr

    monkeypatch.chdir(workspace)
    check = verify_run(_run_dir(name))
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]
    # the artifact's ledger (the copy beside it) is plan_dp_appr's, and the run's starts with its records
    method, hparams = RUNS[name]
    info = get_method(method)
    assert planner_of(info).__module__ == "nodedp.plans.dpar"
    meta = read_json(Path("resources/graphs/csbm-tiny/meta.json"))
    split = load_split(Path("results/splits/csbm-tiny/transductive/seed~0.pt"), num_nodes=meta["num_nodes"])
    public = PublicInputs.of(meta, num_train=split.train.numel(), setting=split.setting)
    run_ledger = json.loads((_run_dir(name) / "ledger.json").read_text())
    spec = RunSpec(
        dataset="csbm-tiny",
        method=name,
        seed=0,
        target_epsilon=float(EPSILON),
        target_delta=run_ledger["target"]["delta"],
        accountant=run_ledger["accountant"],
    )
    planned = plan_dp_appr(public, spec, info.parse_hparams(hparams), method=method).ledger.to_dict()
    beside = json.loads(_artifact_path(name).with_suffix(".ledger.json").read_text())
    assert json.loads(json.dumps(planned)) == beside
    assert run_ledger["mechanisms"][: len(beside["mechanisms"])] == beside["mechanisms"]
    assert run_ledger["mechanisms"][-1]["name"] == f"dp-sgd:{name}"
    assert (run_ledger.get("claim") is not None) == name.endswith("@paper")
    assert main(["verify", str(_run_dir(name))]) == 0


def _forged(workspace: Path, tmp_path: Path, name: str, edit_ledger) -> Path:
    """A copy of a real run, its ledger edited (``tests._runs.forge``)."""
    return forge(workspace / _run_dir(name), tmp_path / "forged", edit_ledger)


def _appr(ledger: dict) -> dict:
    return ledger["mechanisms"][0]


def _sgd(ledger: dict) -> dict:
    return ledger["mechanisms"][-1]


def _appr_epsilon(ledger: dict, factor: float) -> None:
    """DP-APPR's ε share: another per-selection ε (Gumbel scale) than its ratio of ε_in gives."""
    params = _appr(ledger)["params"]
    params["epsilon"] *= factor
    params["gumbel_scale"] = params["clip"] / params["epsilon"]


def _sources(ledger: dict, m: int) -> None:
    """M, the number of DP-APPR rows (sources), and its selections M·K."""
    params = _appr(ledger)["params"]
    params.update(m=m, selections=m * params["k"])


def _sgd_rate(ledger: dict, factor: float) -> None:
    """DP-SGD's Poisson rate γ (its batch over q'·|train|)."""
    _sgd(ledger)["params"]["sampling_rate"] *= factor


FORGERIES = {
    "epsilon": lambda d: _appr_epsilon(d, 1 / 3),
    "m": lambda d: _sources(d, 5),
    "sampling_rate": lambda d: _sgd_rate(d, 0.25),
    "node_sample_rate": lambda d: d.update(node_sample_rate=d["node_sample_rate"] / 3),
}


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_every_forgery_of_a_real_dpar_run_is_refused_naming_the_field(workspace, tmp_path, monkeypatch, name, forgery):
    monkeypatch.chdir(workspace)
    forged = _forged(workspace, tmp_path, name, FORGERIES[forgery])
    assert json.loads((forged / "ledger.json").read_text()) != json.loads(
        (workspace / _run_dir(name) / "ledger.json").read_text()
    )
    check = verify_run(forged)
    assert check.refusals, f"the {forgery} forgery of {name} verified"
    assert any(r.field.endswith(f".{forgery}") for r in check.refusals), [str(r) for r in check.refusals]


def test_an_untouched_copy_of_a_dpar_run_verifies(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(workspace)
    assert verify_run(_forged(workspace, tmp_path, "dpar-em0", lambda d: None)).refusals == ()


def test_a_run_refuses_an_artifact_whose_ledger_is_not_its_plans(tiny_inputs):
    from nodedp.contract.base import RunInputs, RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.methods.dpar import build_dp_appr

    info = get_method("dpar-em0")
    hp = info.parse_hparams(HPARAMS)
    spec = RunSpec(dataset="csbm-tiny", method="dpar-em0", seed=0, target_epsilon=4.0, target_delta=1e-4)
    artifact = build_dp_appr(tiny_inputs.graph, tiny_inputs.split, spec, hp)
    ledger = json.loads(artifact["ledger"])
    _appr_epsilon(ledger, 3.0)
    artifact["ledger"] = json.dumps(Ledger.from_dict(ledger).to_dict())
    inputs = RunInputs(
        graph=tiny_inputs.graph,
        split=tiny_inputs.split,
        num_classes=tiny_inputs.num_classes,
        structure={"dp-appr": artifact},
    )
    with pytest.raises(ValueError, match="not the one its plan gives"):
        info.run(inputs, spec, hp)


def test_the_plans_read_public_inputs_only_and_match_the_reference_ledger():
    """The reference run's plan is ``reference_ledger`` at §4.1's δ (csbm-tiny is not in Table 1), from the
    training-set size alone; M = ⌈q'·|train|⌉ when num_sources is 0."""
    from nodedp.accounting.dpar import paper_delta
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.plans import PublicInputs
    from nodedp.plans.dpar import plan_dp_appr, plan_dpar_em0, reference_ledger

    public = PublicInputs(dataset="csbm-tiny", num_nodes=300, num_train=180, num_features=16, num_classes=3)
    hp = get_method("dpar-em0").parse_hparams({**HPARAMS, "accounting": "paper"})
    spec = RunSpec(dataset="csbm-tiny", method="dpar-em0@paper", seed=0, target_epsilon=4.0, target_delta=1e-4)
    plan = plan_dpar_em0(public, spec, hp)
    offline = reference_ledger(
        "dpar-em0",
        hp,
        num_train=180,
        target_epsilon=4.0,
        target_delta=1e-4,
        claimed_delta=paper_delta("csbm-tiny", num_train=180, sample_rate=0.5),
    )
    assert plan.ledger.to_dict() == offline.to_dict()
    suite = get_method("dpar-em0").parse_hparams({**HPARAMS, "num_sources": 0})
    appr = plan_dp_appr(
        public,
        RunSpec(dataset="csbm-tiny", method="dpar-em0", seed=0, target_epsilon=4.0, target_delta=1e-4),
        suite,
        method="dpar-em0",
    )
    assert appr.parts["num_rows"] == math.ceil(0.5 * 180) == appr.ledger.mechanisms[0].params["m"]
