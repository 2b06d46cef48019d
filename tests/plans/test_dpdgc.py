"""DPDGC's plan (``nodedp.plans.dpdgc``): a real run verifies from public inputs, forgeries of it are refused, and
the run refuses an artifact bounded to another D than the plan's public one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodedp.cli import main
from nodedp.verify import verify_run
from tests._runs import forge, lay_out_workspace

D = 10  # csbm-tiny's public out-degree bound
SMALL = {"epochs": 1, "encoder_epochs": 1, "batch_size": 32, "hidden_dim": 8}
CELLS = {"dpdgc": "4", "dpdgc-nodp": "inf"}


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("plans-dpdgc")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    for bound in (D, 4):
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
                    str(_artifact(root, bound)),
                ]
            )
            == 0
        )
    for method, eps in CELLS.items():
        assert _train(root, method, eps, _artifact(root, D), _run(root, method)) == 0
    return root


def _artifact(root: Path, bound: int) -> Path:
    return root / f"results/structure/csbm-tiny/out-degree~{bound}.pt"


def _run(root: Path, method: str) -> Path:
    return root / f"results/runs/csbm-tiny/{method}/eps~{CELLS[method]}/seed~0"


def _train(root: Path, method: str, eps: str, artifact: Path, out: Path) -> int:
    return main(
        [
            "train",
            "--graph",
            str(root / "resources/graphs/csbm-tiny"),
            "--split",
            str(root / "results/splits/csbm-tiny/transductive/seed~0.pt"),
            "--structure",
            str(artifact),
            "--method",
            method,
            "--epsilon",
            eps,
            "--seed",
            "0",
            "--hparams",
            json.dumps(SMALL),
            "--no-progress",
            "--out",
            str(out),
        ]
    )


def test_real_runs_verify_from_public_inputs(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    for method in CELLS:
        check = verify_run(_run(workspace, method).relative_to(workspace))
        assert check.replanned and check.refusals == (), [str(r) for r in check.refusals]
    ledger = json.loads((_run(workspace, "dpdgc") / "ledger.json").read_text())
    assert ledger["guarantee"]["degree_bound"] == {"kind": "out-degree", "bound": D, "identity_bound": D}


def test_an_artifact_bounded_to_another_d_is_refused_by_the_run(workspace, tmp_path, capsys):
    assert _train(workspace, "dpdgc", "4", _artifact(workspace, 4), tmp_path / "run") == 2
    assert f"bounded to 4, the plan's public bound is {D}" in capsys.readouterr().err
    assert not (tmp_path / "run" / "ledger.json").exists()


def _forge(root: Path, tmp_path: Path, edit_ledger=None, edit_metrics=None) -> Path:
    """A copy of the DPDGC run edited (``tests._runs.forge``)."""
    return forge(_run(root, "dpdgc"), tmp_path / "forged", edit_ledger, edit_metrics)


def _scale_noise(record: dict, factor: float) -> None:
    """Every noise figure of a record (params and its DP event) times ``factor``: a consistent forgery."""

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("noise_multiplier", "noise_std") and isinstance(value, float):
                    node[key] = value * factor
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(record["params"])
    walk(record.get("dp_event"))


def _record(ledger: dict, prefix: str) -> dict:
    return next(r for r in ledger["mechanisms"] if r["name"].startswith(prefix))


FORGERIES = {
    # DP-Emb's noise stated 10× larger than drawn: a smaller ε
    "emb_noise": (lambda d: _scale_noise(_record(d, "dp-emb:"), 10.0), None, "noise_multiplier"),
    # the encoder's DP-SGD noise stated 3× larger
    "encoder_noise": (lambda d: _scale_noise(_record(d, "dp-sgd:dpdgc:encoder"), 3.0), None, "noise_multiplier"),
    # the classifier's
    "classifier_noise": (lambda d: _scale_noise(_record(d, "dp-sgd:dpdgc:classifier"), 2.0), None, "noise_multiplier"),
    # metrics stating other shares than the ledger was planned for
    "encoder_share": (None, lambda m: m["hyperparameters"].update(encoder_share=0.5), "noise_multiplier"),
    "emb_share": (None, lambda m: m["hyperparameters"].update(emb_share=0.3), "noise_multiplier"),
    # the encoder's occurrence count D + 1 cut to 1 (single-record amplification, as the public code counts)
    "max_rows": (
        lambda d: (
            _record(d, "dp-sgd:dpdgc:encoder")["params"].update(max_rows=0, max_occurrences=1),
            _record(d, "dp-sgd:dpdgc:encoder").update(sensitivity=2.0),
        ),
        None,
        "max_rows",
    ),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_every_forgery_of_a_real_run_is_refused(workspace, tmp_path, monkeypatch, name):
    monkeypatch.chdir(workspace)
    edit_ledger, edit_metrics, field = FORGERIES[name]
    forged = _forge(workspace, tmp_path, edit_ledger, edit_metrics)
    check = verify_run(forged)
    assert check.refusals, f"the {name} forgery verified"
    assert any(field in str(r) for r in check.refusals), [str(r) for r in check.refusals]
