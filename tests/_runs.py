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
