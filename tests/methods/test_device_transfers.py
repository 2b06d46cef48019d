"""No method moves a graph-sized tensor between host and device per training step.

On a GPU every `.to`, `.cpu`, `.cuda`, `.numpy` or `.tolist` of a graph-sized tensor inside the training loop
is a transfer of the graph per step. On CPU they are no-ops, but the calls are the same: counted during the
training stage (``nodedp.train.stages``) of one method at 1 and at 3 epochs, their number must not grow with
the steps (moving the graph once, before training, is fine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from nodedp.cli import main
from nodedp.config.variants import resolve_method
from nodedp.data.graph import save_graph
from nodedp.data.splits import random_split, save_split
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.train import stages

ROOT = Path(__file__).resolve().parents[2]
NODES, FEATURES = 1200, 16
# Larger than any batch's tensors here (batch 16: at most 16 × 11 nodes × 16 features), smaller than x or the edges.
GRAPH_SIZED = NODES * FEATURES // 2
METHODS = ["dp-mlp", "gap", "progap", "dp-gcn", "dpar-em0", "nip-gnn", "dpdgc-fast", "sparse-sage", "heterpoisson"]


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    root = tmp_path_factory.mktemp("transfers")
    spec = CSBMSpec(
        num_nodes=NODES,
        num_classes=4,
        avg_degree=8.0,
        homophily=0.7,
        num_features=FEATURES,
        feature_signal=2.0,
        degree_exponent=2.5,
        class_weights=None,
        seed=3,
    )
    save_graph(generate_csbm(spec), root / "graph", name="csbm-homophilous", source={"kind": "synthetic"})
    save_split(random_split(NODES, seed=0), root / "split.pt")
    return root


def _large_calls_in_training(monkeypatch) -> list[int]:
    count = [0]
    for name in ("to", "cpu", "cuda", "numpy", "tolist"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, **kwargs):
            recorder = stages._RECORDER
            if recorder is not None and recorder._current == "training" and self.numel() >= GRAPH_SIZED:
                count[0] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return count


def _train(cell: Path, method: str, epochs: int, out: Path) -> None:
    """One cell of ``method`` (config.yaml's hyperparameters, every ``*epochs`` set to ``epochs``) through the CLI."""
    import dataclasses

    from nodedp.contract.registry import get_method

    base, hparams = resolve_method(yaml.safe_load((ROOT / "config.yaml").read_text()), method)
    info = get_method(base)
    fields = {f.name for f in dataclasses.fields(info.hparams)}
    hparams = {**hparams, **{k: epochs for k in fields if k.endswith("epochs")}}
    if "batch_size" in fields:
        hparams["batch_size"] = 16
    # Each artifact at the bound the plan takes: the hyperparameters', else the dataset's public one.
    from nodedp.contract.structure import structure_bounds
    from nodedp.data import get_dataset

    dataset = json.loads((cell / "graph" / "meta.json").read_text())["name"]
    bounds = structure_bounds(get_dataset(dataset), dataclasses.asdict(info.parse_hparams(hparams)))
    structure = []
    for kind in info.needs:
        path = out.parent / f"{method}-{epochs}-{kind}.pt"
        if kind == "dp-appr":
            args = ["dp-appr", "--method", base, "--hparams", json.dumps(hparams), "--epsilon", "8"]
        else:
            args = ["bound-degree", "--kind", kind, "--bound", str(bounds[kind])]
        assert (
            main(
                [
                    *args,
                    "--graph",
                    str(cell / "graph"),
                    "--split",
                    str(cell / "split.pt"),
                    "--seed",
                    "0",
                    "--out",
                    str(path),
                ]
            )
            == 0
        )
        structure.append(str(path))
    assert (
        main(
            [
                "train",
                "--method",
                base,
                "--name",
                method,
                "--hparams",
                json.dumps(hparams),
                "--graph",
                str(cell / "graph"),
                "--split",
                str(cell / "split.pt"),
                "--epsilon",
                "8",
                "--seed",
                "0",
                "--out",
                str(out),
                "--stage-timings",
                str(out.parent / f"{method}-{epochs}.json"),
                *(["--structure", *structure] if structure else []),
            ]
        )
        == 0
    )


@pytest.mark.parametrize("method", METHODS)
def test_training_moves_no_graph_sized_tensor_per_step(cell, tmp_path, monkeypatch, method):
    count = _large_calls_in_training(monkeypatch)
    counts = []
    for epochs in (1, 3):
        count[0] = 0
        _train(cell, method, epochs, tmp_path / f"run-{epochs}")
        counts.append(count[0])
    assert counts[0] == counts[1], f"{method}: {counts} graph-sized transfers in training at 1 and 3 epochs"
