from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from nodedp.data import registry
from nodedp.data.graph import load_graph
from nodedp.data.registry import (
    DATASETS,
    DatasetInfo,
    UnknownDatasetError,
    build_dataset,
    dataset_names,
    get_dataset,
    register_dataset,
)
from nodedp.data.synthetic import CSBMSpec, generate_csbm


@pytest.fixture
def restore_registry() -> Iterator[None]:
    saved = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def single_node() -> Data:
    return Data(x=torch.zeros(1, 1), y=torch.zeros(1, dtype=torch.long), edge_index=torch.zeros(2, 0, dtype=torch.long))


def info(name: str, **overrides: object) -> DatasetInfo:
    fields = dict(
        name=name,
        kind="synthetic",
        description="one node",
        build=single_node,
        out_degree_bound=1,
        in_degree_bound=1,
    )
    return DatasetInfo(**{**fields, **overrides})  # type: ignore[arg-type]


def test_builtin_datasets_are_registered_with_kebab_case_ids() -> None:
    assert {"csbm-homophilous", "csbm-heterophilous", "csbm-tiny"} <= set(dataset_names())
    assert dataset_names() == sorted(DATASETS)
    for name in dataset_names():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
        assert get_dataset(name).name == name


def test_unknown_dataset_error_lists_choices() -> None:
    with pytest.raises(UnknownDatasetError) as caught:
        get_dataset("cora-typo")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    assert str(caught.value) == f"unknown dataset 'cora-typo'; valid choices: {dataset_names()}"


def test_datasets_mapping_is_read_only() -> None:
    with pytest.raises(TypeError):
        DATASETS["x"] = info("x")  # type: ignore[index]


@pytest.mark.usefixtures("restore_registry")
def test_register_refuses_duplicates_unless_forced() -> None:
    register_dataset(info("one-node"))
    assert "one-node" in dataset_names()
    with pytest.raises(ValueError, match="'one-node' is already registered"):
        register_dataset(info("one-node", description="other"))
    assert get_dataset("one-node").description == "one node"
    register_dataset(info("one-node", description="other"), force=True)
    assert get_dataset("one-node").description == "other"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kind": "web"}, "unknown kind 'web'; valid choices"),
        ({"in_degree_bound": 0}, "in_degree_bound must be an integer >= 1"),
        ({"out_degree_bound": 2.5}, "out_degree_bound must be an integer >= 1"),
    ],
)
def test_dataset_info_validates_fields(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        info("bad", **overrides)


@pytest.mark.usefixtures("restore_registry")
def test_incomplete_dataset_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="'remote': a downloaded dataset needs files and a reader"):
        info("remote", kind="download", build=None)
    with pytest.raises(ValueError, match="'gen': a synthetic dataset needs build"):
        info("gen", kind="synthetic", build=None)
    with pytest.raises(ValueError, match="unknown preprocessing protocol 'nope'"):
        info("x", protocol="nope")


def test_downloaded_dataset_needs_its_download_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'cora' is downloaded: pass the download directory"):
        build_dataset("cora", tmp_path)
    assert not any(tmp_path.iterdir())


def test_build_dataset_writes_canonical_graph_with_source(tmp_path: Path) -> None:
    meta = build_dataset("csbm-tiny", tmp_path / "a")
    assert meta["name"] == "csbm-tiny" and meta["num_nodes"] == 300
    assert meta["source"]["kind"] == "synthetic" and meta["source"]["generator"] == "csbm"
    params = meta["source"]["params"]
    assert params["num_nodes"] == 300 and params["seed"] == 0
    graph = load_graph(tmp_path / "a")
    # The recorded params alone reproduce the graph.
    rebuilt = generate_csbm(CSBMSpec(**params))
    for key in ("x", "y", "edge_index"):
        assert torch.equal(rebuilt[key], graph[key])
    assert build_dataset("csbm-tiny", tmp_path / "b")["sha256"] == meta["sha256"]


@pytest.mark.parametrize(("name", "homophily"), [("csbm-homophilous", 0.75), ("csbm-heterophilous", 0.2)])
def test_presets_have_their_documented_structure(name: str, homophily: float, tmp_path: Path) -> None:
    meta = build_dataset(name, tmp_path)
    assert meta["num_nodes"] == 3000 and meta["num_classes"] == 5 and meta["num_features"] == 32
    assert abs(meta["edge_homophily"] - homophily) <= 0.02
    assert 10 <= meta["degree"]["in"]["mean"] <= 15
    assert meta["degree"]["in"]["max"] >= 5 * meta["degree"]["in"]["mean"]
    # The public bounds bite on the heavy tail.
    dataset = get_dataset(name)
    assert dataset.in_degree_bound < meta["degree"]["in"]["max"]
    assert dataset.out_degree_bound < meta["degree"]["out"]["max"]
