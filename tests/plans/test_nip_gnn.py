"""NIP-GNN's plan (``nodedp.plans.nip_gnn``): real runs re-planned from public inputs (and, where the ledger holds
values the plan cannot derive, from what the run released: NAP's budgets, D_p), and forgeries of them refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodedp.accounting.nip_bounds import worst_case_budget_ratio
from nodedp.cli import main
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import load_split
from nodedp.plans import PublicInputs
from nodedp.plans.nip_gnn import NipReleased, plan_nip_gnn, released_inputs
from nodedp.verify import _diff, verify_run
from tests._runs import forge, lay_out_workspace

D = 10  # csbm-tiny's public degree bound (the dataset's out_degree_bound)
SMALL = {"epochs": 1, "batch_size": 32, "hidden_dim": 8}
CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"
# name -> (hyperparameters, or None for the config's tuned variant, ε)
CELLS = {
    "nip-gnn": (SMALL, "4"),
    "nip-gnn-uniform": ({**SMALL, "budgets": "uniform"}, "4"),
    "nip-gnn-exact-labels": ({**SMALL, "exact": "labels"}, "4"),
    "nip-gnn-only-labels": ({**SMALL, "exact": "features,edges"}, "4"),
    "nip-gnn@paper": (None, "4"),
}


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    """A workspace laid out as the workflow's: the degree artifact at the public bound, one run per cell."""
    root = tmp_path_factory.mktemp("plans-nip")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    artifact = root / "results/structure/csbm-tiny/degree.pt"
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
                "degree",
                "--bound",
                str(D),
                "--seed",
                "0",
                "--out",
                str(artifact),
            ]
        )
        == 0
    )
    for name, (hparams, eps) in CELLS.items():
        source = ["--hparams", json.dumps(hparams)] if hparams is not None else ["--config", str(CONFIG)]
        assert (
            main(
                [
                    "train",
                    "--graph",
                    str(graph),
                    "--split",
                    str(split),
                    "--structure",
                    str(artifact),
                    "--method",
                    "nip-gnn" if hparams is not None else name,
                    "--name",
                    name,
                    "--epsilon",
                    eps,
                    "--seed",
                    "0",
                    *source,
                    "--no-progress",
                    "--out",
                    str(_run(root, name)),
                ]
            )
            == 0
        )
    return root


def _run(root: Path, name: str) -> Path:
    return root / f"results/runs/csbm-tiny/{name}/eps~{CELLS[name][1]}/seed~0"


def _replan(root: Path, run: Path) -> tuple[dict, PublicInputs, RunSpec, object]:
    """verify's re-plan inputs for a run: its metrics' method, hyperparameters and target, the public metadata."""
    metrics = json.loads((run / "metrics.json").read_text())
    ledger = json.loads((run / "ledger.json").read_text())
    meta = json.loads((root / "resources/graphs/csbm-tiny/meta.json").read_text())
    split = load_split(root / "results/splits/csbm-tiny/transductive/seed~0.pt", num_nodes=meta["num_nodes"])
    public = PublicInputs.of(meta, num_train=split.train.numel(), setting=split.setting)
    hp = get_method(metrics["base_method"]).parse_hparams(metrics["hyperparameters"])
    spec = RunSpec(
        dataset="csbm-tiny",
        method=metrics["method"],
        seed=int(metrics["seed"]),
        target_epsilon=float(metrics["target_epsilon"]),
        target_delta=float(metrics["target_delta"]),
        accountant=ledger["accountant"],
    )
    return ledger, public, spec, hp


def _planned_with_released(root: Path, run: Path) -> tuple[dict, dict]:
    ledger, public, spec, hp = _replan(root, run)
    planned = plan_nip_gnn(public, spec, hp, released=released_inputs(ledger, public, spec, hp))
    return ledger, planned.ledger.to_dict()


@pytest.mark.parametrize("name", ["nip-gnn-uniform", "nip-gnn-only-labels"])
def test_a_run_whose_plan_is_public_verifies(workspace, monkeypatch, name):
    """Uniform budgets (β = 1), or no NAP at all (`exact` features): every ledger field from public inputs."""
    monkeypatch.chdir(workspace)
    check = verify_run(_run(workspace, name).relative_to(workspace))
    assert check.replanned and check.refusals == (), [str(r) for r in check.refusals]


@pytest.mark.parametrize("name", sorted(CELLS))
def test_every_run_replans_exactly_from_public_inputs_and_its_released_budgets(workspace, name):
    stated, planned = _planned_with_released(workspace, _run(workspace, name))
    assert list(_diff(stated, planned)) == []
    nap = [r for r in stated["mechanisms"] if r["name"].startswith("nip-aggregation:")]
    assert all(len(r["params"]["largest_budget_weights"]) == D + 1 for r in nap)  # N = 300 > D


@pytest.mark.parametrize("name", ["nip-gnn", "nip-gnn-exact-labels", "nip-gnn@paper"])
def test_without_the_released_values_the_plan_says_what_it_needs(workspace, monkeypatch, name):
    """Capped budgets come from the edge release and D_p from the private graph: not public. verify, until it
    passes ``released_inputs``, refuses such a run at "plan" only, naming what is missing (no other field)."""
    _, public, spec, hp = _replan(workspace, _run(workspace, name))
    with pytest.raises(ValueError, match="released="):
        plan_nip_gnn(public, spec, hp)
    monkeypatch.chdir(workspace)
    check = verify_run(_run(workspace, name).relative_to(workspace))
    assert check.replanned
    assert all(r.field == "plan" and "released" in str(r) for r in check.refusals), [str(r) for r in check.refusals]


def test_the_exact_parts_are_uncharged_reads_in_the_plan(workspace):
    for name, parts in (("nip-gnn-exact-labels", ["labels"]), ("nip-gnn-only-labels", ["features", "edges"])):
        _, planned = _planned_with_released(workspace, _run(workspace, name))
        assert [u["name"] for u in planned["uncharged"]] == [f"exact-{p}:{name}" for p in parts]
        assert planned["guarantee"]["class"] == "conditional" and not planned["fully_accounted"]
    _, paper = _planned_with_released(workspace, _run(workspace, "nip-gnn@paper"))
    assert [u["name"].split(":")[0] for u in paper["uncharged"]] == ["max-degree", "resampling-degrees"]


# --- forgeries of the real runs ------------------------------------------------------------------------------------


def _forge(root: Path, name: str, tmp_path: Path, edit_ledger=None, edit_metrics=None) -> Path:
    """A copy of a run edited (``tests._runs.forge``), as a forger with the project's own Ledger API would."""
    return forge(_run(root, name), tmp_path / f"forged-{name.replace('@', '-')}", edit_ledger, edit_metrics)


def _nap(ledger: dict) -> dict:
    return next(r for r in ledger["mechanisms"] if r["name"].startswith("nip-aggregation:"))


def _fewer_budgets(keep: int):
    """The NAP record's budgets cut to ``keep`` (< D + 1): its worst-case ratio, and a reference run's ε, drop."""

    def edit(ledger: dict) -> None:
        params = _nap(ledger)["params"]
        weights = params["largest_budget_weights"][:keep]
        ratio = worst_case_budget_ratio(weights, max_degree=params["max_degree"])
        reference = params["budget_scheme"] == "paper" and ledger.get("claim") is not None
        before = ratio if reference else ratio * params["budget_scale"]
        params.update(largest_budget_weights=weights, charged_ratio=ratio, worst_case_ratio_before_scaling=before)
        if reference:
            _nap(ledger)["pure_epsilon"] = params["epsilon_a"] * ratio

    return edit


@pytest.mark.parametrize("name", ["nip-gnn-uniform", "nip-gnn", "nip-gnn@paper"])
def test_fewer_than_d_plus_one_budgets_are_refused(workspace, tmp_path, monkeypatch, name):
    monkeypatch.chdir(workspace)
    forged = _forge(workspace, name, tmp_path, _fewer_budgets(D // 2))
    stated = json.loads((forged / "ledger.json").read_text())
    assert len(_nap(stated)["params"]["largest_budget_weights"]) == D // 2
    check = verify_run(forged)
    assert check.refusals, f"the {name} forgery verified"
    if name == "nip-gnn-uniform":  # public budgets: the field itself differs from the plan's
        assert any("largest_budget_weights" in r.field for r in check.refusals), [str(r) for r in check.refusals]
    # and from its own released values, the plan refuses the short list
    ledger, public, spec, hp = _replan(workspace, forged)
    with pytest.raises(ValueError, match="uniform" if name == "nip-gnn-uniform" else "largest_budget_weights lists 5"):
        plan_nip_gnn(public, spec, hp, released=released_inputs(ledger, public, spec, hp))


@pytest.mark.parametrize("name", ["nip-gnn-only-labels", "nip-gnn-exact-labels"])
def test_an_emptied_uncharged_list_is_refused(workspace, tmp_path, monkeypatch, name):
    monkeypatch.chdir(workspace)
    forged = _forge(workspace, name, tmp_path, lambda d: d.update(uncharged=[]))
    assert json.loads((forged / "ledger.json").read_text())["uncharged"] == []
    check = verify_run(forged)
    assert check.refusals, f"the {name} forgery verified"
    ledger, public, spec, hp = _replan(workspace, forged)
    planned = plan_nip_gnn(public, spec, hp, released=released_inputs(ledger, public, spec, hp)).ledger.to_dict()
    fields = [field for field, _, _ in _diff(ledger, planned)]
    assert any(field.startswith("ledger.uncharged") for field in fields), fields


def test_a_larger_stated_d_p_or_other_shares_are_refused(workspace, tmp_path, monkeypatch):
    """Reference mode: D_p is taken from the ledger's ε_A·D/D_p, so the rest must follow from it; suite mode: the
    shares are the hyperparameters'."""

    def edit(ledger: dict) -> None:  # NAP's ε_A·D/D_p edited as if D_p were D/2 (the run's is D here)
        nap = _nap(ledger)
        assert nap["params"]["epsilon_a"] == 2.0  # ε_A = 0.5·4, D_p = D on this graph
        nap["params"]["epsilon_a"] = 4.0
        nap["params"]["laplace_scale_at_epsilon_a"] = nap["sensitivity"] / 4.0
        nap["pure_epsilon"] = 4.0 * nap["params"]["charged_ratio"]

    forged = _forge(workspace, "nip-gnn@paper", tmp_path, edit)
    ledger, public, spec, hp = _replan(workspace, forged)
    planned = plan_nip_gnn(public, spec, hp, released=released_inputs(ledger, public, spec, hp)).ledger.to_dict()
    assert list(_diff(ledger, planned)), "a reference ledger with another D_p in one record only verified"
    shares = _forge(
        workspace, "nip-gnn-uniform", tmp_path, None, lambda m: m["hyperparameters"].update(share_a=0.6, share_b=0.15)
    )
    monkeypatch.chdir(workspace)
    assert verify_run(shares).refusals


def test_released_budgets_that_contradict_uniform_ones_are_refused(workspace):
    _, public, spec, hp = _replan(workspace, _run(workspace, "nip-gnn-uniform"))
    with pytest.raises(ValueError, match="uniform"):
        plan_nip_gnn(
            public,
            spec,
            hp,
            released=NipReleased(
                largest_budget_weights=(1.5,) + (0.5,) * D, worst_case_ratio_before_scaling=1.0, budget_scale=1.0
            ),
        )
