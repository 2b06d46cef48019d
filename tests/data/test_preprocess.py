from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected as pyg_to_undirected

from nodedp.data.graph import validate_graph
from nodedp.data.preprocess import (
    PROTOCOLS,
    Protocol,
    SplitProtocol,
    UnknownProtocolError,
    apply_protocol,
    filter_classes_by_count,
    get_protocol,
    induced_subgraph,
    keep_top_k_classes,
    protocol_names,
    remove_isolated_nodes,
    remove_self_loops,
    remove_unlabeled_nodes,
    to_undirected,
)

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


def graph(edges: list[tuple[int, int]], y: list[int], **extra: torch.Tensor) -> Data:
    """Node i has feature row [i, 10 * i], so reindexing is visible in x."""
    num_nodes = len(y)
    x = torch.tensor([[float(i), 10.0 * i] for i in range(num_nodes)])
    edge_index = torch.tensor(edges, dtype=torch.int64).reshape(-1, 2).t().contiguous()
    return Data(x=x, y=torch.tensor(y, dtype=torch.int64), edge_index=edge_index, **extra)


def edge_list(data: Data) -> list[tuple[int, int]]:
    return [tuple(pair) for pair in data.edge_index.t().tolist()]


def snapshot(data: Data) -> dict[str, torch.Tensor]:
    return {key: value.clone() for key, value in data}


def assert_unchanged(data: Data, before: dict[str, torch.Tensor]) -> None:
    assert {key for key, _ in data} == set(before)
    for key, value in data:
        assert torch.equal(value, before[key]), key


# --------------------------------------------------------------------------- steps


def test_remove_self_loops_drops_exactly_the_loops_and_keeps_the_input() -> None:
    data = graph([(0, 0), (0, 1), (1, 1), (1, 2), (2, 0)], [0, 1, 0])
    before = snapshot(data)
    out, info = remove_self_loops(data)
    assert edge_list(out) == [(0, 1), (1, 2), (2, 0)]
    assert info == {"self_loops_removed": 2}
    assert torch.equal(out.x, data.x) and torch.equal(out.y, data.y)
    assert_unchanged(data, before)


def test_to_undirected_symmetrises_dedupes_and_sorts() -> None:
    data = graph([(2, 0), (0, 1), (0, 1), (1, 0), (3, 3)], [0, 0, 1, 1])
    before = snapshot(data)
    out, info = to_undirected(data)
    assert edge_list(out) == [(0, 1), (0, 2), (1, 0), (2, 0), (3, 3)]
    # Unique input edges: (2,0), (0,1), (1,0), (3,3); one repeat; only (0,2) was missing.
    assert info == {"duplicates_removed": 1, "reverse_edges_added": 1}
    assert_unchanged(data, before)


def test_to_undirected_matches_pyg_on_a_random_multigraph() -> None:
    generator = torch.Generator().manual_seed(0)
    num_nodes = 50
    edge_index = torch.randint(0, num_nodes, (2, 400), generator=generator)
    data = Data(x=torch.zeros(num_nodes, 1), y=torch.zeros(num_nodes, dtype=torch.int64), edge_index=edge_index)
    out, info = to_undirected(data)
    expected = pyg_to_undirected(edge_index, num_nodes=num_nodes)
    assert torch.equal(out.edge_index, expected)
    assert info["reverse_edges_added"] - info["duplicates_removed"] == expected.size(1) - 400


def test_remove_unlabeled_nodes_reindexes_nodes_edges_and_masks() -> None:
    mask = torch.tensor([True, False, True, True])
    data = graph([(0, 1), (1, 2), (2, 3), (3, 0), (3, 2)], [2, -1, 0, -1], train_mask=mask)
    before = snapshot(data)
    out, info = remove_unlabeled_nodes(data)
    # Nodes 0 and 2 survive as 0 and 1; only the edges among them remain.
    assert out.x.tolist() == [[0.0, 0.0], [2.0, 20.0]]
    assert out.y.tolist() == [2, 0]
    assert out.edge_index.size(1) == 0
    assert out.train_mask.tolist() == [True, True]
    assert info == {"nodes_removed": 2, "edges_removed": 5}
    assert_unchanged(data, before)


def test_remove_isolated_nodes_keeps_every_endpoint_including_self_loops() -> None:
    data = graph([(1, 3), (3, 1), (4, 4)], [0, 1, 2, 3, 4])
    out, info = remove_isolated_nodes(data)
    assert out.y.tolist() == [1, 3, 4]
    assert edge_list(out) == [(0, 1), (1, 0), (2, 2)]
    assert info == {"nodes_removed": 2, "edges_removed": 0}


def test_induced_subgraph_ids_in_any_order_equal_the_mask() -> None:
    data = graph([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)], [0, 1, 2, 3, 4])
    by_mask, info = induced_subgraph(data, torch.tensor([True, False, True, True, True]))
    by_ids, _ = induced_subgraph(data, torch.tensor([4, 0, 3, 2]))
    for out in (by_mask, by_ids):
        assert out.y.tolist() == [0, 2, 3, 4]
        assert edge_list(out) == [(1, 2), (2, 3), (3, 0)]
    assert info == {"nodes_removed": 1, "edges_removed": 2}


def test_induced_subgraph_keeping_everything_is_a_new_equal_graph() -> None:
    data = graph([(0, 1), (1, 0)], [0, 1])
    out, info = induced_subgraph(data, torch.tensor([True, True]))
    assert out is not data and info == {"nodes_removed": 0, "edges_removed": 0}
    out.y = torch.tensor([5, 5])
    assert data.y.tolist() == [0, 1]


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (torch.tensor([0, 0]), "duplicates"),
        (torch.tensor([3]), "outside \\[0, num_nodes=3\\)"),
        (torch.tensor([True, False]), "bool \\[N=3\\]"),
        (torch.tensor([0.0]), "bool mask or int64 ids"),
    ],
)
def test_induced_subgraph_refuses_bad_node_sets(nodes: torch.Tensor, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        induced_subgraph(graph([(0, 1)], [0, 0, 0]), nodes)


def test_steps_refuse_edge_attributes_and_dangling_edges() -> None:
    with pytest.raises(ValueError, match="edge attributes \\['edge_weight'\\]"):
        remove_self_loops(graph([(0, 1)], [0, 0], edge_weight=torch.ones(1)))
    with pytest.raises(ValueError, match="outside \\[0, num_nodes=2\\)"):
        to_undirected(graph([(0, 2)], [0, 0]))


# --------------------------------------------------------------------------- class filters


def test_filter_classes_by_count_drops_exactly_the_small_classes() -> None:
    # Counts: class 0 -> 3, class 1 -> 1, class 2 -> 2 (== min_count: kept), class 3 -> 3; one unlabeled.
    y = [0, 3, 1, 0, 2, 3, 0, 2, 3, -1]
    data = graph([(0, 2), (2, 1), (1, 4), (4, 9), (9, 3), (5, 7)], y)
    before = snapshot(data)
    out, info = filter_classes_by_count(data, min_count=2)
    kept_old_ids = [0, 1, 3, 4, 5, 6, 7, 8]
    assert out.x[:, 0].tolist() == [float(i) for i in kept_old_ids]
    # Old labels 0, 2, 3 become 0, 1, 2 in order.
    assert out.y.tolist() == [0, 2, 0, 1, 2, 0, 1, 2]
    assert edge_list(out) == [(1, 3), (4, 6)]
    assert info == {
        "min_count": 2,
        "kept_classes": [0, 2, 3],
        "dropped_classes": [1],
        "nodes_removed": 2,
        "edges_removed": 4,
    }
    assert_unchanged(data, before)


def test_filter_classes_by_count_labels_are_contiguous_and_counts_hold() -> None:
    generator = torch.Generator().manual_seed(1)
    y = torch.randint(0, 12, (300,), generator=generator)
    data = Data(x=torch.zeros(300, 1), y=y, edge_index=torch.randint(0, 300, (2, 900), generator=generator))
    out, info = filter_classes_by_count(data, min_count=25)
    counts = torch.bincount(y, minlength=12)
    assert info["kept_classes"] == [c for c in range(12) if counts[c] >= 25]
    assert torch.equal(torch.bincount(out.y), counts[info["kept_classes"]])
    assert int(out.edge_index.max()) < out.num_nodes


def test_filter_classes_by_count_refuses_bad_thresholds() -> None:
    data = graph([(0, 1)], [0, 1, 1])
    with pytest.raises(ValueError, match="no class has >= 3 nodes \\(the largest has 2\\)"):
        filter_classes_by_count(data, min_count=3)
    with pytest.raises(ValueError, match="min_count must be an integer >= 1, got 0"):
        filter_classes_by_count(data, min_count=0)


def test_keep_top_k_classes_breaks_ties_by_smaller_label() -> None:
    # Counts: class 0 -> 2, class 1 -> 3, class 2 -> 3, class 3 -> 1.
    y = [1, 2, 0, 1, 2, 3, 0, 1, 2]
    data = graph([(0, 5), (5, 1), (1, 2), (3, 4)], y)
    top2, info = keep_top_k_classes(data, k=2)
    assert info == {"k": 2, "kept_classes": [1, 2], "dropped_classes": [0, 3], "nodes_removed": 3, "edges_removed": 3}
    assert top2.y.tolist() == [0, 1, 0, 1, 0, 1]
    assert edge_list(top2) == [(2, 3)]
    top1, info = keep_top_k_classes(data, k=1)
    assert info["kept_classes"] == [1] and top1.y.tolist() == [0, 0, 0]
    top3, info = keep_top_k_classes(data, k=3)
    assert info["kept_classes"] == [0, 1, 2] and top3.num_nodes == 8


def test_keep_top_k_classes_refuses_k_beyond_the_classes_present() -> None:
    with pytest.raises(ValueError, match="k=3 exceeds the 2 classes present"):
        keep_top_k_classes(graph([], [0, 2, 2]), k=3)


# --------------------------------------------------------------------------- protocols


def test_registry_holds_the_papers_protocols() -> None:
    thresholds = {
        name: dict(PROTOCOLS[name].steps)["filter_classes_by_count"]["min_count"]
        for name in ("gap-facebook", "gap-reddit", "gap-amazon", "gap-fb100", "dpar-reddit")
    }
    assert thresholds == {
        "gap-facebook": 1_000,
        "gap-reddit": 10_000,
        "gap-amazon": 100_000,
        "gap-fb100": 100_000,
        "dpar-reddit": 10_000,
    }
    assert dict(PROTOCOLS["nip-gnn-top10"].steps)["keep_top_k_classes"] == {"k": 10}
    assert PROTOCOLS["dpar"].split == SplitProtocol(kind="random", setting="inductive", train=0.8, val=0.0, test=0.2)
    assert PROTOCOLS["dp-gnn"].split == SplitProtocol(kind="official", setting="transductive")
    assert PROTOCOLS["dp-gnn-disjoint"].split == SplitProtocol(kind="official", setting="inductive")
    for name in ("nip-gnn", "planetoid", "gap-facebook"):
        assert PROTOCOLS[name].split == SplitProtocol(
            kind="random", setting="transductive", train=0.75, val=0.10, test=0.15
        )
    for protocol in PROTOCOLS.values():
        steps = [step for step, _ in protocol.steps]
        assert steps[:3] == ["remove_unlabeled_nodes", "remove_self_loops", "to_undirected"], protocol.name
    assert "q'" in PROTOCOLS["dpar"].description
    assert protocol_names() == sorted(PROTOCOLS)


def test_get_protocol_error_lists_the_valid_choices() -> None:
    with pytest.raises(UnknownProtocolError, match="unknown preprocessing protocol 'gap'; valid choices: \\[") as err:
        get_protocol("gap")
    assert "'gap-facebook'" in str(err.value) and "'planetoid'" in str(err.value)
    with pytest.raises(UnknownProtocolError, match="'nope'"):
        apply_protocol(graph([], [0]), "nope")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "stratified", "setting": "transductive"}, "unknown split kind 'stratified'"),
        ({"kind": "official", "setting": "semi"}, "unknown split setting 'semi'"),
        ({"kind": "official", "setting": "inductive", "test": 0.2}, "official split takes no fractions"),
        ({"kind": "random", "setting": "inductive", "train": 0.8, "test": 0.2}, "val=None must lie in"),
        ({"kind": "random", "setting": "inductive", "train": 0.8, "val": 0.1, "test": 0.2}, "must sum to 1"),
    ],
)
def test_split_protocol_refuses_bad_specs(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SplitProtocol(**kwargs)


def test_protocol_refuses_unknown_steps_and_wrong_parameters() -> None:
    split = PROTOCOLS["planetoid"].split
    with pytest.raises(ValueError, match="unknown step 'normalize'; valid choices"):
        Protocol(name="p", description="", steps=(("normalize", {}),), split=split)
    with pytest.raises(ValueError, match="step 'keep_top_k_classes' takes \\['k'\\], got \\['top'\\]"):
        Protocol(name="p", description="", steps=(("keep_top_k_classes", {"top": 3}),), split=split)


def school_like_graph() -> Data:
    """Three class sizes around gap-school's threshold of 100, plus noise the protocol removes."""
    y = [0] * 120 + [1] * 100 + [2] * 99 + [-1] * 5 + [0]
    num_nodes = len(y)
    ring = [(i, (i + 1) % (num_nodes - 1)) for i in range(num_nodes - 1)]  # the last node is isolated
    edges = [*ring, (0, 1), (7, 7), (200, 0)]  # one duplicate, one self-loop, one chord
    return graph(edges, y)


def test_apply_protocol_report_counts_every_step() -> None:
    raw = school_like_graph()
    before = snapshot(raw)
    out, report = apply_protocol(raw, "gap-school")
    assert report["protocol"] == "gap-school"
    assert report["input"] == {"num_nodes": 325, "num_edges": 327, "num_classes": 3, "num_unlabeled": 5}
    rows = [
        (s["step"], s["before"]["num_nodes"], s["after"]["num_nodes"], s["after"]["num_edges"]) for s in report["steps"]
    ]
    assert rows == [
        ("remove_unlabeled_nodes", 325, 320, 321),  # nodes 319..323 and the 6 ring edges touching them
        ("remove_self_loops", 320, 320, 320),
        ("to_undirected", 320, 320, 638),  # path 0..318 (318 pairs) + chord (200, 0), duplicate (0, 1) merged
        ("filter_classes_by_count", 320, 221, 440),  # class 2 (99 < 100 nodes: 220..318) goes
        ("remove_isolated_nodes", 221, 220, 440),  # the last node, outside the ring
    ]
    filter_step = report["steps"][3]
    assert filter_step["params"] == {"min_count": 100}
    assert filter_step["kept_classes"] == [0, 1] and filter_step["dropped_classes"] == [2]
    assert report["output"] == {"num_nodes": 220, "num_edges": 440, "num_classes": 2, "num_unlabeled": 0}
    assert report["output"]["num_nodes"] == out.num_nodes and report["output"]["num_edges"] == out.edge_index.size(1)
    assert report["split"] == {"kind": "random", "setting": "transductive", "train": 0.75, "val": 0.1, "test": 0.15}
    validate_graph(out, where="test", num_classes=2)
    json.dumps(report)
    assert_unchanged(raw, before)


def test_apply_protocol_is_deterministic() -> None:
    first, first_report = apply_protocol(school_like_graph(), "gap-school")
    second, second_report = apply_protocol(school_like_graph(), "gap-school")
    assert first_report == second_report
    for key in ("x", "y", "edge_index"):
        assert torch.equal(getattr(first, key), getattr(second, key))


def test_apply_protocol_names_the_protocol_and_step_that_fail() -> None:
    with pytest.raises(
        ValueError, match="protocol 'gap-facebook', step 3: filter_classes_by_count: no class has >= 1000"
    ):
        apply_protocol(school_like_graph(), "gap-facebook")


def test_apply_protocol_refuses_an_output_that_breaks_the_canonical_format() -> None:
    raw = graph([(0, 1)], [0, 1])
    raw.x = raw.x.double()
    with pytest.raises(ValueError, match="protocol 'planetoid' output: x must be float32"):
        apply_protocol(raw, "planetoid")


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_dpar_transductive_splits_the_nodes_of_dpar_but_keeps_the_cross_edges(seed: int, tmp_path: Path) -> None:
    from nodedp.data.graph import save_graph
    from nodedp.data.registry import make_split
    from nodedp.data.splits import remove_cross_split_edges

    # 53 nodes: a ring (both directions), a few chords and a self-loop; labels 0..2.
    edges = [(i, (i + 1) % 53) for i in range(53)] + [(i, (i + 17) % 53) for i in range(0, 53, 5)] + [(4, 4)]
    raw = graph(edges, [i % 3 for i in range(53)])
    splits, graphs = {}, {}
    for name in ("dpar", "dpar-transductive"):
        data, report = apply_protocol(raw, name)
        save_graph(data, tmp_path / name, name=name, source={"kind": "download", "protocol": name})
        splits[name], graphs[name] = make_split(tmp_path / name, seed=seed), data
        assert report["steps"] == apply_protocol(raw, "dpar")[1]["steps"]  # the same preprocessing
    dpar, transductive = splits["dpar"], splits["dpar-transductive"]
    assert torch.equal(graphs["dpar"].edge_index, graphs["dpar-transductive"].edge_index)
    assert (dpar.setting, transductive.setting) == ("inductive", "transductive")
    assert torch.equal(dpar.train, transductive.train) and torch.equal(dpar.test, transductive.test)
    assert transductive.val.numel() == 0 and (transductive.train.numel(), transductive.test.numel()) == (42, 11)
    # The ablation's point: edges between train and test exist (the inductive view drops them).
    assert remove_cross_split_edges(graphs["dpar"].edge_index, dpar).size(1) < graphs["dpar"].edge_index.size(1)


def test_dpar_transductive_is_dpar_with_the_transductive_setting_and_says_it_is_an_ablation() -> None:
    dpar, ablation = PROTOCOLS["dpar"], PROTOCOLS["dpar-transductive"]
    assert ablation.steps == dpar.steps
    assert ablation.split == SplitProtocol(kind="random", setting="transductive", train=0.8, val=0.0, test=0.2)
    assert "Ablation, not DPAR's protocol" in ablation.description and "GAP" in ablation.description


# --------------------------------------------------------------------------- real files (../shared)


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.is_file():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    return path


@pytest.mark.shared
def test_cora_under_nip_gnn_matches_the_paper_table() -> None:
    from torch_geometric.io import read_planetoid_data

    folder = shared_file("github.com/kimiyoung/planetoid/raw/master/data/ind.cora.graph").parent
    raw = read_planetoid_data(str(folder), "cora")
    _, report = apply_protocol(Data(x=raw.x, y=raw.y, edge_index=raw.edge_index), "nip-gnn")
    # NIP-GNN Table 5: 2,708 nodes, 5,278 (undirected) edges, 1,433 features; 7 classes.
    assert report["output"] == {"num_nodes": 2708, "num_edges": 2 * 5278, "num_classes": 7, "num_unlabeled": 0}


@pytest.mark.shared
def test_cora_ml_under_dpar_keeps_every_node() -> None:
    from torch_geometric.io import read_npz

    raw = read_npz(
        str(shared_file("github.com/abojchevski/graph2gauss/raw/master/data/cora_ml.npz")), to_undirected=False
    )
    _, report = apply_protocol(Data(x=raw.x.float(), y=raw.y, edge_index=raw.edge_index), "dpar")
    # DPAR Table 2: 2,995 nodes, 7 classes, 8,416 edges = the file's directed citations;
    # symmetrised they are 8,158 pairs.
    assert report["input"]["num_edges"] == 8416
    assert report["output"] == {"num_nodes": 2995, "num_edges": 2 * 8158, "num_classes": 7, "num_unlabeled": 0}
