"""Shared fixtures: tiny synthetic graphs built through the real data stage."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nodedp.data import build_dataset

    directory = tmp_path_factory.mktemp("graphs") / "csbm-tiny"
    build_dataset("csbm-tiny", directory)
    return directory


@pytest.fixture(scope="session")
def tiny_split_path(tiny_graph_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nodedp.data import random_split, save_split
    from nodedp.io import read_json

    meta = read_json(tiny_graph_dir / "meta.json")
    path = tmp_path_factory.mktemp("splits") / "seed~0.pt"
    save_split(random_split(meta["num_nodes"], seed=0), path)
    return path


@pytest.fixture(scope="session")
def tiny_inputs(tiny_graph_dir: Path, tiny_split_path: Path):
    from nodedp.contract.base import RunInputs
    from nodedp.data import load_graph, load_split
    from nodedp.io import read_json

    graph = load_graph(tiny_graph_dir)
    meta = read_json(tiny_graph_dir / "meta.json")
    split = load_split(tiny_split_path, num_nodes=graph.num_nodes)
    return RunInputs(graph=graph, split=split, num_classes=meta["num_classes"])


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    # Tiny models: thread fan-out costs more than it saves on a shared 2-core machine.
    import torch

    torch.set_num_threads(1)
