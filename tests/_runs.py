"""Real runs laid out as the workflow lays them out, and forgeries of them, for the verification tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nodedp.accounting.ledger import Ledger


def lay_out_workspace(
    root: Path,
    graph_dir: Path,
    split_path: Path,
    *,
    dataset: str = "csbm-tiny",
    setting: str = "transductive",
    seed: int = 0,
) -> tuple[Path, Path]:
    """Copy a built graph and its split where the workflow keeps them under ``root``: (graph folder, split file)."""
    graph = root / "resources/graphs" / dataset
    shutil.copytree(graph_dir, graph)
    split = root / "results/splits" / dataset / setting / f"seed~{seed}.pt"
    split.parent.mkdir(parents=True)
    shutil.copy(split_path, split)
    return graph, split


def forge(run: Path, into: Path, edit_ledger=None, edit_metrics=None) -> Path:
    """A copy of ``run`` in ``into``, its ledger edited and its derived fields (ε, δ, guarantee) recomputed with the
    project's own Ledger API, so that it agrees with itself, and metrics.json's ε, δ, target δ, level, guarantee and
    claim matched to it (what ``collect`` compares); then ``edit_metrics``."""
    ledger = json.loads((run / "ledger.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    if edit_ledger:
        edit_ledger(ledger)
        ledger = Ledger.from_dict(ledger).to_dict()
        metrics.update(
            epsilon=ledger["epsilon"],
            delta=ledger["delta"],
            target_delta=ledger["target"]["delta"],
            level=ledger["level"],
            guarantee=ledger["guarantee"],
            claim=ledger["claim"],
        )
    if edit_metrics:
        edit_metrics(metrics)
    into.mkdir(parents=True)
    (into / "ledger.json").write_text(json.dumps(ledger))
    (into / "metrics.json").write_text(json.dumps(metrics))
    return into


def train_run(
    root: Path,
    *,
    method: str,
    name: str,
    epsilon: str,
    hparams: dict,
    out: str,
    structure: Path | None = None,
    accountant: str = "auto",
    dataset: str = "csbm-tiny",
) -> Path:
    """``nodedp train`` of run ``name`` (method ``method``) into ``root/out``, on the graph and split
    ``lay_out_workspace`` put under ``root``; asserts it succeeded and returns the run's folder."""
    from nodedp.cli import main

    run = root / out
    args = [
        "train",
        "--graph",
        str(root / "resources/graphs" / dataset),
        "--split",
        str(root / "results/splits" / dataset / "transductive/seed~0.pt"),
        "--method",
        method,
        "--name",
        name,
        "--epsilon",
        epsilon,
        "--seed",
        "0",
        "--accountant",
        accountant,
        "--hparams",
        json.dumps(hparams),
        "--no-progress",
        "--out",
        str(run),
    ]
    if structure is not None:
        args += ["--structure", str(structure)]
    assert main(args) == 0
    return run


def bound_degree_artifact(root: Path, *, kind: str, bound: int, dataset: str = "csbm-tiny") -> Path:
    """``nodedp bound-degree`` of ``kind`` at ``bound`` on ``lay_out_workspace``'s graph and split, where the
    workflow keeps it; returns its path."""
    from nodedp.cli import main

    artifact = root / f"results/structure/{dataset}/transductive/{kind}~{bound}/seed~0.pt"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    split = root / "results/splits" / dataset / "transductive/seed~0.pt"
    graph = root / "resources/graphs" / dataset
    assert (
        main(
            [
                "bound-degree",
                *("--graph", str(graph), "--split", str(split), "--kind", kind, "--bound", str(bound)),
                *("--seed", "0", "--out", str(artifact)),
            ]
        )
        == 0
    )
    return artifact
