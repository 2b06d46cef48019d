from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from nodedp.data.graph import (
    FORMAT_VERSION,
    GraphValidationError,
    graph_stats,
    load_graph,
    load_graph_meta,
    load_graph_tensors,
    save_graph,
    validate_graph,
)
from nodedp.io import read_json, sha256_file, write_json


def path_graph() -> Data:
    """0 - 1 - 2 - 3 (both directions), labels 0 0 1 1."""
    pairs = torch.tensor([[0, 1], [1, 2], [2, 3]])
    edge_index = torch.cat([pairs.T, pairs.T.flip(0)], dim=1)
    return Data(x=torch.randn(4, 3), y=torch.tensor([0, 0, 1, 1]), edge_index=edge_index)


def test_graph_stats_on_hand_computed_graph() -> None:
    stats = graph_stats(path_graph())
    assert stats["num_nodes"] == 4 and stats["num_edges"] == 6
    assert stats["num_features"] == 3 and stats["num_classes"] == 2
    assert stats["is_undirected"] is True and stats["self_loops"] == 0
    # degrees 1, 2, 2, 1
    assert stats["degree"]["in"]["min"] == 1 and stats["degree"]["in"]["max"] == 2
    assert stats["degree"]["in"]["mean"] == 1.5 and stats["degree"]["in"]["median"] == 1.5
    assert stats["degree"]["out"] == stats["degree"]["in"]
    assert stats["class_counts"] == [2, 2]
    assert stats["class_balance"] == {"shares": [0.5, 0.5], "max_over_min": 1.0}
    # 0-1 and 2-3 are intra-class, 1-2 is not: 4 of 6 directed edges.
    assert stats["edge_homophily"] == pytest.approx(4 / 6)


def test_graph_stats_directed_graph_with_self_loop() -> None:
    data = Data(
        x=torch.zeros(3, 1),
        y=torch.tensor([0, 1, 1]),
        edge_index=torch.tensor([[0, 2, 1], [1, 2, 2]]),
    )
    stats = graph_stats(data)
    assert stats["is_undirected"] is False
    assert stats["self_loops"] == 1
    assert stats["degree"]["out"]["max"] == 1 and stats["degree"]["in"]["max"] == 2
    assert stats["class_balance"]["max_over_min"] == 2.0


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    data = path_graph()
    source = {"kind": "synthetic", "generator": "hand", "params": {"n": 4}}
    meta = save_graph(data, tmp_path / "g", name="path", source=source)
    assert read_json(tmp_path / "g" / "meta.json") == meta
    assert meta["name"] == "path" and meta["source"] == source
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["sha256"] == sha256_file(tmp_path / "g" / "graph.pt")
    assert load_graph_meta(tmp_path / "g") == meta
    loaded = load_graph(tmp_path / "g")
    tensors = load_graph_tensors(tmp_path / "g")  # the same checked tensors, without torch_geometric's Data
    assert isinstance(loaded, Data) and set(tensors) == {"x", "y", "edge_index"}
    for key in ("x", "y", "edge_index"):
        assert torch.equal(loaded[key], data[key]) and torch.equal(tensors[key], data[key])
    # graph.pt is a plain dict of tensors.
    raw = torch.load(tmp_path / "g" / "graph.pt", weights_only=True)
    assert set(raw) == {"x", "y", "edge_index"}


def test_save_graph_refuses_invalid_graph_and_writes_nothing(tmp_path: Path) -> None:
    data = path_graph()
    data.y = torch.tensor([0, 0, 1, -1])
    with pytest.raises(GraphValidationError, match="graph 'bad'.*labels out of range"):
        save_graph(data, tmp_path / "g", name="bad", source={})
    assert not (tmp_path / "g").exists()


def corrupt(data: Data, how: str) -> Data:
    if how == "x dtype":
        data.x = data.x.double()
    elif how == "y dtype":
        data.y = data.y.int()
    elif how == "edge shape":
        data.edge_index = data.edge_index[:1]
    elif how == "length mismatch":
        data.y = data.y[:3]
    elif how == "nan":
        data.x[1, 2] = float("nan")
    elif how == "inf":
        data.x[0, 0] = float("inf")
    elif how == "negative label":
        data.y[0] = -1
    elif how == "negative edge":
        data.edge_index[0, 0] = -1
    elif how == "edge out of range":
        data.edge_index[1, 0] = 4
    elif how == "duplicate":
        data.edge_index = torch.cat([data.edge_index, data.edge_index[:, :1]], dim=1)
    elif how == "missing y":
        del data.y
    return data


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("x dtype", "x must be float32"),
        ("y dtype", "y must be int64"),
        ("edge shape", "edge_index must be int64 \\[2, E\\]"),
        ("length mismatch", "x has 4 rows but y has 3"),
        ("nan", "NaN or inf"),
        ("inf", "NaN or inf"),
        ("negative label", "labels out of range"),
        ("negative edge", "negative node id"),
        ("edge out of range", "node id 4 >= num_nodes 4"),
        ("duplicate", "1 duplicate edges"),
        ("missing y", "missing tensor 'y'"),
    ],
)
def test_validate_graph_names_place_and_problem(how: str, message: str) -> None:
    validate_graph(path_graph(), where="ok")
    with pytest.raises(GraphValidationError, match=f"^here: .*{message}"):
        validate_graph(corrupt(path_graph(), how), where="here")


def test_validate_graph_checks_label_range_against_num_classes() -> None:
    validate_graph(path_graph(), where="g", num_classes=2)
    with pytest.raises(GraphValidationError, match="max label 1 >= num_classes 1"):
        validate_graph(path_graph(), where="g", num_classes=1)


@pytest.mark.parametrize("load", [load_graph, load_graph_tensors])
def test_load_graph_detects_checksum_mismatch(tmp_path: Path, load) -> None:
    save_graph(path_graph(), tmp_path, name="path", source={})
    other = path_graph()
    torch.save({k: other[k] for k in ("x", "y", "edge_index")}, tmp_path / "graph.pt")
    with pytest.raises(GraphValidationError, match="graph.pt: checksum mismatch"):
        load(tmp_path)


@pytest.mark.parametrize("load", [load_graph, load_graph_tensors])
def test_load_graph_validates_content_even_with_matching_checksum(tmp_path: Path, load) -> None:
    meta = save_graph(path_graph(), tmp_path, name="path", source={})
    bad = corrupt(path_graph(), "edge out of range")
    torch.save({k: bad[k] for k in ("x", "y", "edge_index")}, tmp_path / "graph.pt")
    write_json(tmp_path / "meta.json", {**meta, "sha256": sha256_file(tmp_path / "graph.pt")})
    with pytest.raises(GraphValidationError, match="graph.pt: edge index out of range"):
        load(tmp_path)


@pytest.mark.parametrize("missing", ["graph.pt", "meta.json"])
def test_load_graph_names_missing_file(tmp_path: Path, missing: str) -> None:
    save_graph(path_graph(), tmp_path, name="path", source={})
    (tmp_path / missing).unlink()
    with pytest.raises(GraphValidationError, match=f"{missing}: missing file"):
        load_graph(tmp_path)


def test_load_graph_meta_refuses_other_format_version(tmp_path: Path) -> None:
    meta = save_graph(path_graph(), tmp_path, name="path", source={})
    write_json(tmp_path / "meta.json", {**meta, "format_version": FORMAT_VERSION + 1})
    with pytest.raises(GraphValidationError, match="format_version"):
        load_graph(tmp_path)


def test_a_directed_cycle_is_not_undirected_though_its_degrees_balance() -> None:
    from torch_geometric.data import Data

    from nodedp.data import graph_stats

    cycle = Data(
        x=torch.zeros(3, 1), y=torch.zeros(3, dtype=torch.long), edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]])
    )
    assert graph_stats(cycle)["is_undirected"] is False
    both = Data(
        x=torch.zeros(3, 1),
        y=torch.zeros(3, dtype=torch.long),
        edge_index=torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]]),
    )
    assert graph_stats(both)["is_undirected"] is True


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text[: len(text) // 2], "meta.json: not valid JSON"),
        (lambda text: "[1, 2]", "meta.json: expected a JSON object, got list"),
        (lambda text: text.replace('"num_classes"', '"classes"'), r"meta.json: missing field\(s\) \['num_classes'\]"),
    ],
)
def test_a_damaged_meta_json_is_named_with_its_problem(tmp_path: Path, damage, message: str) -> None:
    save_graph(path_graph(), tmp_path, name="path", source={})
    meta = tmp_path / "meta.json"
    meta.write_text(damage(meta.read_text()))
    with pytest.raises(ValueError, match=f"^{re.escape(str(tmp_path))}/{message}") as err:
        load_graph(tmp_path)
    assert "\n" not in str(err.value)


def test_an_unreadable_graph_file_is_named_in_one_line(tmp_path: Path) -> None:
    meta = save_graph(path_graph(), tmp_path, name="path", source={})
    graph = tmp_path / "graph.pt"
    graph.write_bytes(graph.read_bytes()[:200])  # truncated, with a checksum that matches it
    write_json(tmp_path / "meta.json", {**meta, "sha256": sha256_file(graph)})
    with pytest.raises(GraphValidationError, match=f"^{re.escape(str(graph))}: not a readable graph file") as err:
        load_graph(tmp_path)
    assert "\n" not in str(err.value)
