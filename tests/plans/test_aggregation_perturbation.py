"""GAP/ProGAP and EdgeRand planned from public inputs: every method of the family (node level, edge level, the
papers' reference mode) trains one tiny cell that `nodedp verify` re-plans and accepts; forgeries of a real GAP run
(its ε recomputed with the project's own Ledger API, so that the ledger agrees with itself) are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nodedp.cli import main
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.contract.structure import structure_bounds
from nodedp.data import get_dataset
from nodedp.plans import PublicInputs, planner_of
from nodedp.verify import verify_run
from tests._runs import forge, lay_out_workspace

# (run name, method, ε, hyperparameters); the node-level ones read the out-degree artifact.
CELLS = (
    ("gap", "gap", "2", {"epochs": 1, "encoder_epochs": 1, "batch_size": 32}),
    ("gap@paper", "gap", "2", {"epochs": 1, "encoder_epochs": 1, "batch_size": 32, "accounting": "paper"}),
    ("gap-edge", "gap-edge", "2", {"epochs": 1, "encoder_epochs": 1}),
    ("progap", "progap", "2", {"epochs": 1, "batch_size": 32, "row_clip": 1.5}),
    ("progap@paper", "progap", "4", {"epochs": 1, "batch_size": 32, "accounting": "paper"}),
    ("progap-edge", "progap-edge", "1", {"epochs": 1}),
    ("edgerand", "edgerand", "2", {"epochs": 1}),
)
FAMILY = ("gap", "gap-edge", "progap", "progap-edge", "edgerand")


def _run_dir(name: str, eps: str) -> Path:
    return Path(f"results/runs/csbm-tiny/{name}/eps~{eps}/seed~0")


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    """A workspace laid out as the workflow's: the graph, the seed's split, the out-degree artifact at the public
    bound the plan reads (``bound-degree``, as the workflow's rule builds it) and one run of every cell."""
    root = tmp_path_factory.mktemp("plans-ap")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    bound = structure_bounds(get_dataset("csbm-tiny"), {})["out-degree"]
    artifact = root / "results/structure/csbm-tiny/out-degree.pt"
    artifact.parent.mkdir(parents=True)
    assert (
        main(
            [
                "bound-degree",
                "--graph",
                str(graph),
                "--split",
                str(split),
                "--kind",
                "out-degree",
                "--bound",
                str(bound),
                "--seed",
                "0",
                "--out",
                str(artifact),
            ]
        )
        == 0
    )
    for name, method, eps, hparams in CELLS:
        args = [
            "train",
            "--graph",
            str(graph),
            "--split",
            str(split),
            "--method",
            method,
            "--name",
            name,
            "--epsilon",
            eps,
            "--seed",
            "0",
            "--hparams",
            json.dumps(hparams),
            "--no-progress",
            "--out",
            str(root / _run_dir(name, eps)),
        ]
        if get_method(method).level == "node":
            args += ["--structure", str(artifact)]
        assert main(args) == 0, name
    return root


def test_every_method_of_the_family_has_a_planner():
    for method in FAMILY:
        info = get_method(method)
        assert info.private and info.plan and info.plan.startswith("nodedp.plans."), method
        assert planner_of(info) is not None
    for method in ("gap-nodp", "progap-nodp"):
        assert get_method(method).plan is None  # non-private: the empty ledger


@pytest.mark.parametrize("name,eps", [(c[0], c[2]) for c in CELLS])
def test_a_real_run_of_every_method_is_replanned_and_verifies(workspace, monkeypatch, name, eps):
    monkeypatch.chdir(workspace)
    check = verify_run(_run_dir(name, eps))
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]


def test_the_workspace_verifies_through_the_cli(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    assert main(["verify", "results/runs"]) == 0


def test_the_reference_mode_plan_carries_the_papers_claim(workspace):
    ledger = json.loads((workspace / _run_dir("gap@paper", "2") / "ledger.json").read_text())
    assert ledger["claim"] is not None and ledger["claim"]["epsilon"] == 2.0
    assert ledger["epsilon"] > ledger["claim"]["epsilon"]  # the actual ε at Δ = √(D + R²), above the claim


def test_the_plan_reads_public_inputs_only():
    """The same public inputs give the same ledger; D is the dataset's (or the hyperparameters'), the identity bound
    D, and the sizes are the public ones."""
    public = PublicInputs(
        dataset="csbm-tiny",
        num_nodes=300,
        num_train=225,
        num_features=8,
        num_classes=3,
        num_edges=2316,
        is_undirected=True,
    )
    spec = RunSpec(dataset="csbm-tiny", method="gap", seed=0, target_epsilon=2.0, target_delta=1e-3)
    info = get_method("gap")
    hp = info.parse_hparams({"epochs": 1, "encoder_epochs": 1, "batch_size": 32})
    plan = planner_of(info)(public, spec, hp)
    assert plan.ledger.to_dict() == planner_of(info)(public, spec, hp).ledger.to_dict()
    d = structure_bounds(get_dataset("csbm-tiny"), {})["out-degree"]
    assert plan.ledger.degree_bound.to_dict() == {"kind": "out-degree", "bound": d, "identity_bound": d}
    nap, *stages = plan.ledger.mechanisms
    assert nap.params["max_degree"] == d and nap.sensitivity == pytest.approx(math.sqrt(2 * d))
    assert [s.params["num_examples"] for s in stages] == [225, 225]
    own = planner_of(info)(public, spec, info.parse_hparams({"batch_size": 32, "out_degree_bound": 3}))
    assert own.ledger.degree_bound.bound == 3 and own.parts["max_degree"] == 3
    edge = planner_of(get_method("edgerand"))(public, spec, get_method("edgerand").parse_hparams({}))
    assert edge.ledger.mechanisms[0].params["num_nodes"] == 300


@pytest.mark.parametrize("method", ["gap", "progap"])
def test_a_run_refuses_an_artifact_bounded_to_another_d_than_the_plans(tiny_inputs, method):
    from tests.methods._structure import with_bound

    d = structure_bounds(get_dataset("csbm-tiny"), {})["out-degree"]
    info = get_method(method)
    spec = RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=2.0, target_delta=1e-3)
    hp = info.parse_hparams({"epochs": 1, "batch_size": 32, "hops": 1})
    with pytest.raises(ValueError, match=f"the dataset's out-degree bound is D={d} .* bounded to D={d - 1}"):
        info.run(with_bound(tiny_inputs, "out-degree", d - 1), spec, hp)


def _nap(ledger: dict) -> dict:
    (record,) = [r for r in ledger["mechanisms"] if r["params"].get("mechanism") == "nap"]
    return record


def _no_degree_bound(ledger: dict) -> None:
    ledger["guarantee"]["degree_bound"] = None


def _max_degree_zero(ledger: dict) -> None:
    """D = 0 in the NAP record: Δ = R, its multiplier (and event) for the same noise std raised to match."""
    record = _nap(ledger)
    params = record["params"]
    params["max_degree"] = 0
    record["sensitivity"] = params["row_clip"]
    params["noise_multiplier"] = params["noise_std"] / params["row_clip"]
    record["dp_event"]["event"]["noise_multiplier"] = params["noise_multiplier"]


def _edge_level(ledger: dict) -> None:
    ledger["level"] = "edge"
    _no_degree_bound(ledger)  # an edge-level ledger carries no degree bound


# name: (edit of the GAP run's ledger, a field a refusal names)
FORGERIES = {
    "nap_deleted": (lambda d: d["mechanisms"].remove(_nap(d)), "mechanisms"),
    "max_degree_zero": (_max_degree_zero, "max_degree"),
    "level_edge": (_edge_level, "level"),
    "degree_bound_null": (_no_degree_bound, "degree_bound"),
}


def _forged(workspace: Path, tmp_path: Path, edit) -> Path:
    """A copy of the GAP run edited (``tests._runs.forge``): only the plan can tell."""
    return forge(workspace / _run_dir("gap", "2"), tmp_path / "forged", edit)


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_every_forgery_of_a_real_gap_run_is_refused_naming_the_field(workspace, tmp_path, monkeypatch, name):
    monkeypatch.chdir(workspace)
    edit, field = FORGERIES[name]
    forged = _forged(workspace, tmp_path, edit)
    assert json.loads((forged / "ledger.json").read_text()) != json.loads(
        (workspace / _run_dir("gap", "2") / "ledger.json").read_text()
    )
    check = verify_run(forged)
    assert check.refusals, f"the {name} forgery verified"
    # the re-plan names it (the edge-level forgery is also refused for its δ ≥ 1/N of edges)
    assert any(r.field.startswith("ledger") and field in r.field for r in check.refusals), [
        str(r) for r in check.refusals
    ]


def test_an_untouched_copy_of_the_gap_run_verifies(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(workspace)
    assert verify_run(_forged(workspace, tmp_path, lambda d: None)).refusals == ()
