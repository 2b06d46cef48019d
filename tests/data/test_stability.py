from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch
from torch import Tensor

from nodedp.accounting import max_occurrences
from nodedp.data.degree import bound_in_degree, bound_out_degree, bound_undirected_degree
from nodedp.data.splits import random_split
from nodedp.data.stability import bounding_instability, bounding_report, degree_excess
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.structure.subgraphs import sample_subgraphs


@cache
def heavy_graph(num_nodes: int, seed: int) -> Tensor:
    spec = CSBMSpec(
        num_nodes=num_nodes,
        num_classes=3,
        avg_degree=8.0,
        homophily=0.5,
        num_features=3,
        feature_signal=0.0,
        degree_exponent=2.1,
        class_weights=None,
        seed=seed,
    )
    return generate_csbm(spec).edge_index


def without(edges: Tensor, node: int) -> Tensor:
    return edges[:, (edges[0] != node) & (edges[1] != node)]


def in_sets(edges: Tensor, num_nodes: int) -> list[frozenset[int]]:
    sets: list[set[int]] = [set() for _ in range(num_nodes)]
    for s, d in edges.T.tolist():
        sets[d].add(s)
    return [frozenset(s) for s in sets]


def brute_out_rows(edges: Tensor, *, num_nodes: int, bound: int, seed: int) -> list[int]:
    full = in_sets(bound_out_degree(edges, num_nodes=num_nodes, max_degree=bound, seed=seed), num_nodes)
    counts = []
    for u in range(num_nodes):
        reduced = in_sets(
            bound_out_degree(without(edges, u), num_nodes=num_nodes, max_degree=bound, seed=seed), num_nodes
        )
        counts.append(1 + sum(full[z] != reduced[z] for z in range(num_nodes) if z != u))
    return counts


def dp_gnn_subgraphs(edges: Tensor, *, num_nodes: int, train: Tensor, bound: int, seed: int, layers: int):
    kept = bound_in_degree(edges, num_nodes=num_nodes, train_nodes=train, max_degree=bound, seed=seed)
    kept = bound_out_degree(kept, num_nodes=num_nodes, max_degree=bound, seed=seed)
    return sample_subgraphs(kept, roots=train, num_nodes=num_nodes, num_layers=layers, max_degree=bound)


def brute_subgraphs(edges: Tensor, *, num_nodes: int, train: Tensor, bound: int, seed: int, layers: int) -> list[int]:
    args = {"num_nodes": num_nodes, "train": train, "bound": bound, "seed": seed, "layers": layers}
    full = dp_gnn_subgraphs(edges, **args)
    counts = []
    for u in range(num_nodes):
        reduced = dp_gnn_subgraphs(without(edges, u), **args)
        changed = (full.nodes != reduced.nodes).any(1) | (full.adj != reduced.adj).flatten(1).any(1)
        changed |= train == u  # the removed node's own example
        counts.append(int(changed.sum()))
    return counts


def pairs(edges: Tensor) -> set[tuple[int, int]]:
    return {(s, d) for s, d in edges.T.tolist() if s < d}


def brute_pairs(edges: Tensor, *, num_nodes: int, bound: int, seed: int) -> list[int]:
    full = pairs(bound_undirected_degree(edges, num_nodes=num_nodes, max_degree=bound, seed=seed))
    return [
        len(full ^ pairs(bound_undirected_degree(without(edges, u), num_nodes=num_nodes, max_degree=bound, seed=seed)))
        for u in range(num_nodes)
    ]


def check_against(report: dict, unit: str, counts: list[int]) -> None:
    assert report[unit]["max"] == max(counts)
    assert report[unit]["mean"] == pytest.approx(float(np.mean(counts)))
    assert counts[report[unit]["argmax_node"]] == max(counts)


NUM_NODES = 120


@pytest.mark.parametrize("seed", [0, 1])
def test_out_degree_rows_match_brute_force(seed: int) -> None:
    edges = heavy_graph(NUM_NODES, seed)
    report = bounding_instability(edges, num_nodes=NUM_NODES, kind="out-degree", bound=3, seed=seed, sample=None)
    counts = brute_out_rows(edges, num_nodes=NUM_NODES, bound=3, seed=seed)
    check_against(report, "rows", counts)
    assert report["rows"]["accountant"] == 4
    assert report["l2"]["accountant"] == pytest.approx(6**0.5)  # √(D + R²), R = √D
    assert max(counts) > 4  # the default bounding exceeds the accountant's D + 1 rows here


@pytest.mark.parametrize("layers", [1, 2])
def test_in_degree_subgraphs_match_brute_force(layers: int) -> None:
    edges, seed = heavy_graph(NUM_NODES, 2), 3
    train = random_split(NUM_NODES, seed=0).train
    report = bounding_instability(
        edges,
        num_nodes=NUM_NODES,
        kind="in-degree",
        bound=2,
        seed=seed,
        sample=None,
        train_nodes=train,
        num_layers=(layers,),
    )
    counts = brute_subgraphs(edges, num_nodes=NUM_NODES, train=train, bound=2, seed=seed, layers=layers)
    check_against(report, f"subgraphs_r{layers}", counts)
    assert report[f"subgraphs_r{layers}"]["accountant"] == max_occurrences(max_degree=2, num_layers=layers)
    assert max(counts) > max_occurrences(max_degree=2, num_layers=layers)


def test_undirected_pairs_match_brute_force() -> None:
    edges, seed = heavy_graph(NUM_NODES, 1), 5
    report = bounding_instability(edges, num_nodes=NUM_NODES, kind="degree", bound=3, seed=seed, sample=None)
    counts = brute_pairs(edges, num_nodes=NUM_NODES, bound=3, seed=seed)
    check_against(report, "pairs", counts)
    assert report["l1"]["max"] == 2 * max(counts) and report["l1"]["accountant"] == 6
    assert max(counts) > 3


def cycle(num_nodes: int) -> Tensor:
    ring = torch.arange(num_nodes)
    forward = torch.stack([ring, (ring + 1) % num_nodes])
    return torch.cat([forward, forward.flip(0)], dim=1)


def test_graph_within_the_bound_moves_only_the_accountants_units() -> None:
    """Degrees 2 everywhere: with D = 2 and K = 4 (|RE_v| ≤ K/2, so Algorithm 1 keeps every edge)
    the bounding is the identity and no removal moves more than the accountant counts."""
    edges, n = cycle(30), 30
    train = torch.arange(0, n, 2)
    report = bounding_report(
        edges, num_nodes=n, train_nodes=train, bounds={"in-degree": 4, "out-degree": 2}, sample=None, hubs=0
    )
    assert set(report) == {"out-degree", "in-degree", "degree"}
    for kind in report.values():
        assert kind["frac_over_bound"] == 0.0
        assert kind["kept_edge_fraction"] == pytest.approx(1.0) or kind["kind"] == "in-degree"
        for unit in ("rows", "l2", "pairs", "l1", "subgraphs_r1", "subgraphs_r2"):
            if unit in kind:
                assert 0 < kind[unit]["max"] <= kind[unit]["accountant"] + 1e-9
                assert kind[unit]["frac_over_accountant"] == 0.0
    assert report["out-degree"]["rows"]["max"] == 3  # u's own row and its 2 out-neighbours'
    assert report["degree"]["pairs"]["max"] == 2
    assert report["in-degree"]["frac_sampled"] == 0.0


def test_bounding_report_leaves_out_the_undirected_kind_on_directed_graphs() -> None:
    edges = torch.tensor([[0, 1, 2], [1, 2, 0]])
    report = bounding_report(
        edges, num_nodes=3, train_nodes=torch.tensor([0, 1]), bounds={"in-degree": 1, "out-degree": 1}, sample=None
    )
    assert set(report) == {"out-degree", "in-degree"}
    with pytest.raises(ValueError, match=r"missing \['in-degree'\], unknown \['in_degree'\]"):
        bounding_report(edges, num_nodes=3, train_nodes=torch.tensor([0, 1]), bounds={"in_degree": 1, "out-degree": 1})


def test_degree_excess_counts_nodes_over_the_bound() -> None:
    # Star: hub 0 with 5 leaves, both directions.
    star = torch.tensor([[0] * 5 + list(range(1, 6)), list(range(1, 6)) + [0] * 5])
    assert degree_excess(star, num_nodes=6, kind="out-degree", bound=4) == {"frac_over_bound": pytest.approx(1 / 6)}
    assert degree_excess(star, num_nodes=6, kind="degree", bound=5) == {"frac_over_bound": 0.0}
    excess = degree_excess(star, num_nodes=6, kind="in-degree", bound=2, train_nodes=torch.tensor([1, 2, 3]))
    assert excess == {
        "frac_over_bound": pytest.approx(1 / 6),
        "frac_sampled": pytest.approx(1 / 6),
        "frac_out_over_bound": 0.0,
    }


def test_hubs_and_explicit_nodes() -> None:
    edges = heavy_graph(NUM_NODES, 0)
    hub = int(torch.bincount(edges[0], minlength=NUM_NODES).argmax())
    only = bounding_instability(edges, num_nodes=NUM_NODES, kind="degree", bound=3, seed=0, nodes=torch.tensor([hub]))
    assert only["sample"] == 1 and only["pairs"]["argmax_node"] == hub
    with_hubs = bounding_instability(edges, num_nodes=NUM_NODES, kind="degree", bound=3, seed=0, sample=5, hubs=3)
    assert with_hubs["sample"] == 5 and 0 < with_hubs["hubs"] <= 3
    assert with_hubs["pairs"]["max"] >= only["pairs"]["max"]  # the top hub is among the removed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "edges"}, "Could not resolve kind"),
        ({"bound": 0}, "bound must be an integer"),
        ({"kind": "in-degree"}, "needs train_nodes"),
        ({"sample": 0}, "sample must be"),
        ({"nodes": torch.tensor([7])}, "nodes must be"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict, message: str) -> None:
    args = {"edge_index": cycle(5), "num_nodes": 5, "kind": "out-degree", "bound": 1, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        bounding_instability(**args)
