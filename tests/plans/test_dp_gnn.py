"""DP-GNN's plan (``nodedp.plans.dp_gnn``): real runs, laid out as the workflow's, re-plan to their very ledger; copies
edited as a reviewer would forge them (the ledger's ε recomputed with the project's own Ledger API, metrics' ε and
δ matched) are refused by field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nodedp.cli import main
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.plans import PublicInputs
from nodedp.plans.dp_gnn import layer_names, plan_dp_gnn, stated_thresholds
from nodedp.verify import _diff, verify_run
from tests._runs import forge, lay_out_workspace

K = 5  # csbm-tiny's public in-degree bound (the registry's), which the workflow builds the artifact at
SMALL = {"epochs": 1, "batch_size": 32, "hidden_dim": 8}
# name -> (method, run name, ε, accountant, hyperparameters)
RUNS = {
    "dp-gcn": ("dp-gcn", "dp-gcn", "2", "auto", SMALL),
    "dp-sage": ("dp-sage", "dp-sage", "4", "rdp", {**SMALL, "clipping": "layerwise"}),
    "dp-gat@paper": ("dp-gat", "dp-gat@paper", "8", "rdp", {**SMALL, "accounting": "paper"}),
    "dp-gcn-percentile": ("dp-gcn", "dp-gcn", "4", "rdp", {**SMALL, "clipping": "layerwise", "clip_percentile": 75.0}),
}


def _out(name: str) -> str:
    return f"results/runs/csbm-tiny/{name}/seed~0"


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    """A workspace laid out as the workflow's: the graph, the seed's split, the in-degree artifact built at the
    public K (``bound-degree``, as the workflow's rule does) and the DP-GNN runs of ``RUNS``."""
    root = tmp_path_factory.mktemp("verify-dp-gnn")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    artifact = root / f"results/structure/csbm-tiny/transductive/in-degree~{K}/seed~0.pt"
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
                "in-degree",
                "--bound",
                str(K),
                "--seed",
                "0",
                "--out",
                str(artifact),
            ]
        )
        == 0
    )
    for name, (method, run_name, eps, accountant, hparams) in RUNS.items():
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
                    method,
                    "--name",
                    run_name,
                    "--epsilon",
                    eps,
                    "--seed",
                    "0",
                    "--accountant",
                    accountant,
                    "--hparams",
                    json.dumps(hparams),
                    "--no-progress",
                    "--out",
                    str(root / _out(name)),
                ]
            )
            == 0
        )
    return root


def _read(run: Path) -> tuple[dict, dict]:
    return json.loads((run / "ledger.json").read_text()), json.loads((run / "metrics.json").read_text())


def _forged(workspace: Path, tmp_path: Path, name: str, edit_ledger=None, edit_metrics=None) -> Path:
    """A copy of run ``name`` edited (``tests._runs.forge``)."""
    return forge(workspace / _out(name), tmp_path / "forged", edit_ledger, edit_metrics)


def _params(ledger: dict) -> dict:
    (record,) = ledger["mechanisms"]
    return record["params"]


@pytest.mark.parametrize("name", ["dp-gcn", "dp-sage", "dp-gat@paper"])
def test_a_real_run_re_plans_to_its_very_ledger(workspace, monkeypatch, name):
    monkeypatch.chdir(workspace)
    check = verify_run(Path(_out(name)))
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]
    ledger, _ = _read(Path(_out(name)))
    assert ledger["guarantee"]["degree_bound"] == {"kind": "in-degree", "bound": K, "identity_bound": K // 2}
    assert _params(ledger)["max_degree"] == K


def test_the_plan_is_the_runs_ledger_field_for_field(workspace, tiny_inputs):
    """The run's own ledger, not only one verify accepts: every field, floats exactly."""
    ledger, metrics = _read(workspace / _out("dp-sage"))
    info = get_method("dp-sage")
    public = PublicInputs.of(
        json.loads((workspace / "resources/graphs/csbm-tiny/meta.json").read_text()),
        num_train=int(tiny_inputs.split.train.numel()),
        setting="transductive",
    )
    spec = RunSpec(
        dataset="csbm-tiny",
        method="dp-sage",
        seed=0,
        target_epsilon=4.0,
        target_delta=metrics["target_delta"],
        accountant="rdp",
    )
    assert info.plan == "nodedp.plans.dp_gnn:plan_dp_sage"
    plan = plan_dp_gnn(public, spec, info.parse_hparams(metrics["hyperparameters"]), layer="sage")
    assert plan.ledger.to_dict() == ledger
    layer_clips = _params(ledger)["layer_clip_norms"]
    assert sorted(layer_clips) == sorted(layer_names("sage", 1)) == sorted(plan.parts["layer_names"])
    assert plan.parts["steps"] == _params(ledger)["steps"] == math.ceil(public.num_train / 32)


def test_layer_names_are_the_models_clip_groups():
    import torch

    from nodedp.models import GraphReadout, SubgraphGNN
    from nodedp.train import trainable_layer_names

    for layer in ("gcn", "sage", "gin", "gat"):
        for r in (1, 2):
            model = GraphReadout(
                SubgraphGNN(5, 8, 3, layer=layer, num_layers=r), torch.zeros(4, 5), torch.zeros(2, 0, dtype=torch.long)
            )
            assert tuple(trainable_layer_names(model)) == layer_names(layer, r)


def _scale_layers_to(total: float):
    def edit(ledger: dict) -> None:
        clips = _params(ledger)["layer_clip_norms"]
        for key in clips:
            clips[key] = total / math.sqrt(len(clips))  # they total √(Σ C_l²) = total; clip_norm stays

    return edit


def _batch(ledger: dict) -> None:
    _params(ledger)["batch_size"] //= 2  # the sampling rate m/N halved (more amplification), the step count kept


def _bound(ledger: dict) -> None:
    params = _params(ledger)
    params.update(max_degree=2, max_occurrences=3)  # N(K, 1) = K + 1
    ledger["guarantee"]["degree_bound"].update(bound=2, identity_bound=1)
    (record,) = ledger["mechanisms"]
    record["sensitivity"] = 2 * params["clip_norm"] * 3


FORGERIES = {
    # layer clip norms totalling √3 while the record's clip norm (its noise and sensitivity) says C = 1
    "layer_clip_norms": ("dp-sage", _scale_layers_to(math.sqrt(3)), None),
    "layer_clip_norms@paper": ("dp-gat@paper", _scale_layers_to(math.sqrt(3)), None),
    # half the subgraphs per step in the ledger: a smaller sampling rate m/N than the run's, so a smaller ε
    "batch_size": ("dp-gcn", _batch, None),
    # the metrics' hyperparameters say another batch size than the ledger was planned for
    "hyperparameters.batch_size": ("dp-gcn", None, lambda m: m["hyperparameters"].update(batch_size=64)),
    # a smaller in-degree bound (fewer occurrences, a smaller ε) than the public K the run's artifact was built at
    "degree_bound": ("dp-gcn", _bound, None),
    # the hyperparameters' K edited to match such a ledger: the plan at K = 2 calibrates other noise than the run's
    # (a forger who re-plans the whole run at K = 2 forges another run, which only the artifact on disk gainsays)
    "in_degree_bound": ("dp-gcn", _bound, lambda m: m["hyperparameters"].update(in_degree_bound=2)),
    # the claim's δ of reference mode
    "claim": ("dp-gat@paper", lambda d: d["claim"].update(delta=1e-3), None),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_every_forgery_of_a_real_run_is_refused_naming_the_field(workspace, tmp_path, monkeypatch, forgery):
    monkeypatch.chdir(workspace)
    name, edit_ledger, edit_metrics = FORGERIES[forgery]
    forged = _forged(workspace, tmp_path, name, edit_ledger, edit_metrics)
    check = verify_run(forged)
    assert check.refusals, f"the {forgery} forgery verified"
    fields = [r.field for r in check.refusals]
    expected = {
        "layer_clip_norms": "layer_clip_norms",
        "layer_clip_norms@paper": "layer_clip_norms",
        "batch_size": "batch_size",
        "hyperparameters.batch_size": "steps",
        "degree_bound": "degree_bound",
        "in_degree_bound": "noise_multiplier",
        "claim": "claim",
    }[forgery]
    assert any(expected in f for f in fields), [str(r) for r in check.refusals]


def test_an_untouched_copy_verifies(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(workspace)
    assert verify_run(_forged(workspace, tmp_path, "dp-gcn", lambda d: None)).refusals == ()


# --- clip_percentile > 0: thresholds read off the private data, the run's own input to the plan ------------------


def _replan_with_stated_thresholds(workspace: Path, run: Path, tiny_inputs) -> list:
    """What verify does once it passes a planner its ``run_supplied`` values read off the stated ledger."""
    ledger, metrics = _read(run)
    info = get_method(metrics["base_method"])
    public = PublicInputs.of(
        json.loads((workspace / "resources/graphs/csbm-tiny/meta.json").read_text()),
        num_train=int(tiny_inputs.split.train.numel()),
        setting="transductive",
    )
    spec = RunSpec(
        dataset="csbm-tiny",
        method=metrics["method"],
        seed=0,
        target_epsilon=metrics["target_epsilon"],
        target_delta=metrics["target_delta"],
        accountant=ledger["accountant"],
    )
    module, _, function = info.plan.partition(":")
    planner = getattr(__import__(module, fromlist=[function]), function)
    supplied = {key: read(ledger) for key, read in planner.run_supplied.items()}
    planned = planner(public, spec, info.parse_hparams(metrics["hyperparameters"]), **supplied)
    return list(_diff(ledger, planned.ledger.to_dict()))


def test_percentile_thresholds_are_the_runs_own_and_the_rest_re_plans(workspace, tmp_path, monkeypatch, tiny_inputs):
    monkeypatch.chdir(workspace)
    run = Path(_out("dp-gcn-percentile"))
    ledger, _ = _read(run)
    assert ledger["uncharged"] and ledger["guarantee"] != "unconditional"
    # verify reads the thresholds off the ledger (run_supplied) and re-derives the rest: the run verifies.
    check = verify_run(run)
    assert check.refusals == () and check.replanned, [str(r) for r in check.refusals]
    # Given the stated thresholds (the uncharged read), everything else is re-derived exactly ...
    assert _replan_with_stated_thresholds(workspace, run, tiny_inputs) == []
    thresholds = stated_thresholds(ledger)
    assert sorted(thresholds) == sorted(layer_names("gcn", 1))
    # ... so a clip norm that is not their total (noise and sensitivity matched to it) is refused.
    forged = _forged(workspace, tmp_path, "dp-gcn-percentile", _scale_layers_to(_params(ledger)["clip_norm"] * 2))
    assert any(
        "layer_clip_norms" in f or "clip_norm" in f
        for f, _, _ in _replan_with_stated_thresholds(workspace, forged, tiny_inputs)
    )
    assert any("clip_norm" in r.field for r in verify_run(forged).refusals), verify_run(forged).refusals
