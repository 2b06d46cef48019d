from __future__ import annotations

from functools import cache

import pytest
import torch
from scipy.stats import binom
from torch import Tensor

from nodedp.data.degree import bound_in_degree, bound_out_degree, bound_undirected_degree
from nodedp.data.splits import random_split
from nodedp.data.synthetic import CSBMSpec, generate_csbm

NUM_NODES = 1500


@cache
def heavy_graph(seed: int) -> Tensor:
    spec = CSBMSpec(
        num_nodes=NUM_NODES,
        num_classes=3,
        avg_degree=10.0,
        homophily=0.5,
        num_features=3,
        feature_signal=0.0,
        degree_exponent=2.1,
        class_weights=None,
        seed=seed,
    )
    return generate_csbm(spec).edge_index


def train_nodes(seed: int) -> Tensor:
    return random_split(NUM_NODES, seed=seed).train


def keys(edge_index: Tensor) -> Tensor:
    return edge_index[0] * NUM_NODES + edge_index[1]


def positions_in(edge_index: Tensor, original: Tensor) -> Tensor:
    """Column of each kept edge in ``original`` (fails if an edge is not there)."""
    lookup = {int(k): i for i, k in enumerate(keys(original))}
    return torch.tensor([lookup[int(k)] for k in keys(edge_index)], dtype=torch.long)


def degrees(index: Tensor) -> Tensor:
    return torch.bincount(index, minlength=NUM_NODES)


@pytest.mark.parametrize("graph_seed", [0, 1, 2])
@pytest.mark.parametrize("max_degree", [1, 3, 10])
def test_bound_in_degree_invariants(graph_seed: int, max_degree: int) -> None:
    edges, train = heavy_graph(graph_seed), train_nodes(graph_seed)
    assert int(degrees(edges[1]).max()) > 5 * max_degree  # the tail really is heavy
    kept = bound_in_degree(edges, num_nodes=NUM_NODES, train_nodes=train, max_degree=max_degree, seed=7)
    assert int(degrees(kept[1]).max()) <= max_degree
    position = positions_in(kept, edges)  # kept ⊆ original
    assert bool((position[1:] > position[:-1]).all())  # original column order
    is_train = torch.zeros(NUM_NODES, dtype=torch.bool)
    is_train[train] = True
    assert bool(is_train[kept[0]].all())  # only edges from training nodes
    # A node with |RE_v| <= K/2 has keep probability 1 and keeps every such edge.
    from_train = edges[:, is_train[edges[0]]]
    incoming = degrees(from_train[1])
    small = (incoming > 0) & (2 * incoming <= max_degree)
    assert torch.equal(degrees(kept[1])[small], incoming[small])
    assert kept.size(1) > 0


@pytest.mark.parametrize("graph_seed", [0, 1, 2])
@pytest.mark.parametrize("max_degree", [1, 5, 20])
def test_bound_out_degree_invariants(graph_seed: int, max_degree: int) -> None:
    edges = heavy_graph(graph_seed)
    kept = bound_out_degree(edges, num_nodes=NUM_NODES, max_degree=max_degree, seed=7)
    position = positions_in(kept, edges)
    assert bool((position[1:] > position[:-1]).all())
    before, after = degrees(edges[0]), degrees(kept[0])
    assert torch.equal(after, before.clamp(max=max_degree))  # exactly min(deg, D) each


def test_in_degree_edges_from_non_training_nodes_are_dropped() -> None:
    edges = heavy_graph(0)
    nobody = bound_in_degree(
        edges, num_nodes=NUM_NODES, train_nodes=torch.empty(0, dtype=torch.long), max_degree=5, seed=0
    )
    assert nobody.size(1) == 0


@pytest.mark.parametrize("bound", ["in", "out"])
def test_result_does_not_depend_on_column_order(bound: str) -> None:
    edges, train = heavy_graph(1), train_nodes(1)
    shuffled = edges[:, torch.randperm(edges.size(1), generator=torch.Generator().manual_seed(0))]

    def run(edge_index: Tensor) -> Tensor:
        if bound == "in":
            kept = bound_in_degree(edge_index, num_nodes=NUM_NODES, train_nodes=train, max_degree=4, seed=3)
        else:
            kept = bound_out_degree(edge_index, num_nodes=NUM_NODES, max_degree=4, seed=3)
        return keys(kept).sort().values

    assert torch.equal(run(edges), run(shuffled))


@pytest.mark.parametrize("bound", ["in", "out"])
def test_same_seed_same_edges_other_seed_other_edges(bound: str) -> None:
    edges, train = heavy_graph(0), train_nodes(0)

    def run(seed: int) -> Tensor:
        if bound == "in":
            return bound_in_degree(edges, num_nodes=NUM_NODES, train_nodes=train, max_degree=4, seed=seed)
        return bound_out_degree(edges, num_nodes=NUM_NODES, max_degree=4, seed=seed)

    assert torch.equal(run(5), run(5))
    assert not torch.equal(run(5), run(6))


def kept_sets(edge_index: Tensor, *, by: int) -> dict[int, set[int]]:
    """Node -> set of its kept neighbours (by=1: in-edges per dst, by=0: out-edges per src)."""
    sets: dict[int, set[int]] = {}
    for src, dst in edge_index.T.tolist():
        node, other = (dst, src) if by == 1 else (src, dst)
        sets.setdefault(node, set()).add(other)
    return sets


def test_removing_a_node_leaves_unaffected_in_edge_samples_unchanged() -> None:
    edges, train = heavy_graph(2), train_nodes(2)
    hub = int(train[degrees(edges[0])[train].argmax()])  # a training node with many out-edges
    without = edges[:, (edges[0] != hub) & (edges[1] != hub)]
    train_without = train[train != hub]
    args = dict(num_nodes=NUM_NODES, max_degree=4, seed=11)
    full = kept_sets(bound_in_degree(edges, train_nodes=train, **args), by=1)
    reduced = kept_sets(bound_in_degree(without, train_nodes=train_without, **args), by=1)
    touched = set(edges[1, edges[0] == hub].tolist()) | {hub}  # nodes whose RE_v loses the hub
    untouched = set(range(NUM_NODES)) - touched
    assert len(touched) > 20
    assert all(full.get(v, set()) == reduced.get(v, set()) for v in untouched)
    assert sum(bool(full.get(v)) for v in untouched) > 100  # the comparison is not vacuous


def test_removing_a_node_leaves_unaffected_out_edge_samples_unchanged() -> None:
    edges = heavy_graph(2)
    hub = int(degrees(edges[1]).argmax())
    without = edges[:, (edges[0] != hub) & (edges[1] != hub)]
    full = kept_sets(bound_out_degree(edges, num_nodes=NUM_NODES, max_degree=3, seed=1), by=0)
    reduced = kept_sets(bound_out_degree(without, num_nodes=NUM_NODES, max_degree=3, seed=1), by=0)
    touched = set(edges[0, edges[1] == hub].tolist()) | {hub}
    untouched = set(range(NUM_NODES)) - touched
    assert all(full.get(u, set()) == reduced.get(u, set()) for u in untouched)
    assert sum(bool(full.get(u)) for u in untouched) > 100


def test_in_degree_keep_rate_matches_algorithm_over_seeds() -> None:
    # Star: 200 training nodes point at hub 0; p = K / (2 * 200) = 0.025.
    fan_in, max_degree, num_seeds = 200, 10, 2000
    edges = torch.stack([torch.arange(1, fan_in + 1), torch.zeros(fan_in, dtype=torch.long)])
    train = torch.arange(1, fan_in + 1)
    p = max_degree / (2 * fan_in)
    counts, per_edge = [], torch.zeros(fan_in)
    for seed in range(num_seeds):
        kept = bound_in_degree(edges, num_nodes=fan_in + 1, train_nodes=train, max_degree=max_degree, seed=seed)
        counts.append(kept.size(1))
        per_edge[kept[0] - 1] += 1
    counts_t = torch.tensor(counts, dtype=torch.float64)
    assert int(counts_t.max()) <= max_degree
    # Sampled X ~ Binomial(200, p); the hub keeps X edges if X <= K, else none.
    support = torch.arange(max_degree + 1, dtype=torch.float64)
    expected = float((support * torch.from_numpy(binom.pmf(support.numpy(), fan_in, p))).sum())
    assert counts_t.mean().item() == pytest.approx(expected, abs=0.15)
    assert counts_t.mean().item() / fan_in == pytest.approx(p, rel=0.1)
    # Every edge has the same marginal keep rate (no edge is favoured).
    rate = per_edge / num_seeds
    mean_rate = expected / fan_in
    assert float((rate - mean_rate).abs().max()) < 5 * (mean_rate * (1 - mean_rate) / num_seeds) ** 0.5


def test_overfull_node_loses_all_incoming_edges() -> None:
    # K = 1 and 4 training in-neighbours: p = 1/8; any seed whose sample keeps
    # two or more must drop them all, so kept counts are only ever 0 or 1.
    edges = torch.tensor([[1, 2, 3, 4], [0, 0, 0, 0]])
    train = torch.tensor([1, 2, 3, 4])
    counts = {bound_in_degree(edges, num_nodes=5, train_nodes=train, max_degree=1, seed=s).size(1) for s in range(300)}
    assert counts == {0, 1}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_degree": 0}, "max_degree must be an integer >= 1"),
        ({"max_degree": 2.0}, "max_degree must be an integer >= 1"),
        ({"max_degree": True}, "max_degree must be an integer >= 1"),
        ({"num_nodes": 3}, "outside \\[0, num_nodes=3\\)"),
        ({"seed": -1}, "seed"),
        ({"edge_index": torch.tensor([[0, 1], [1, 2]], dtype=torch.int32)}, "edge_index must be int64"),
    ],
)
@pytest.mark.parametrize("bound", ["in", "out"])
def test_bad_arguments_are_refused(bound: str, kwargs: dict, message: str) -> None:
    args = {"edge_index": torch.tensor([[0, 1, 3], [1, 2, 0]]), "num_nodes": 4, "max_degree": 2, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        if bound == "in":
            bound_in_degree(train_nodes=torch.tensor([0, 1]), **args)
        else:
            bound_out_degree(**args)


def test_train_nodes_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="train_nodes has node ids outside"):
        bound_in_degree(torch.tensor([[0], [1]]), num_nodes=2, train_nodes=torch.tensor([2]), max_degree=1, seed=0)


def test_million_edges_are_bounded() -> None:
    # Speed and memory at scale: benchmarks/scale.py.
    generator = torch.Generator().manual_seed(0)
    num_nodes = 100_000
    edges = torch.randint(0, num_nodes, (2, 1_000_000), generator=generator)
    train = torch.arange(0, num_nodes, 2)
    kept_in = bound_in_degree(edges, num_nodes=num_nodes, train_nodes=train, max_degree=5, seed=0)
    kept_out = bound_out_degree(edges, num_nodes=num_nodes, max_degree=5, seed=0)
    assert int(torch.bincount(kept_in[1]).max()) <= 5 and int(torch.bincount(kept_out[0]).max()) <= 5


def test_out_degree_ties_of_truncated_hashes_are_settled_like_a_full_sort(monkeypatch) -> None:
    """With hashes masked to a few bits the sort keys tie often: the result must still be
    each source's D smallest (hash, column) pairs, as a lexsort over full hashes picks them."""
    import numpy as np

    import nodedp.data.degree as degree

    real = degree._edge_hashes
    monkeypatch.setattr(degree, "_edge_hashes", lambda *a: real(*a) & np.uint64(0xF00000000000000F))
    generator = torch.Generator().manual_seed(1)
    num_nodes, max_degree = 50, 3
    edges = torch.randint(0, num_nodes, (2, 2_000), generator=generator)
    kept = degree.bound_out_degree(edges, num_nodes=num_nodes, max_degree=max_degree, seed=7)

    src, dst = edges.numpy()
    hashes = degree._edge_hashes(degree._node_hashes(num_nodes, seed=7, stream=degree._OUT_DEGREE_STREAM), src, dst)
    order = np.lexsort((np.arange(src.size), hashes, src))
    rank = np.empty(src.size, dtype=np.int64)
    counts = np.bincount(src, minlength=num_nodes)
    rank[order] = np.arange(src.size) - (np.cumsum(counts) - counts)[src[order]]
    assert torch.equal(kept, edges[:, torch.from_numpy(rank < max_degree)])


# --- bound_undirected_degree -------------------------------------------------------------------------------------


def undirected_pairs(edge_index: Tensor) -> set[tuple[int, int]]:
    return {(min(s, d), max(s, d)) for s, d in edge_index.T.tolist()}


@pytest.mark.parametrize("graph_seed", [0, 1, 2])
@pytest.mark.parametrize("max_degree", [1, 3, 10])
def test_bound_undirected_degree_invariants(graph_seed: int, max_degree: int) -> None:
    edges = heavy_graph(graph_seed)
    before = degrees(edges[0])
    assert int(before.max()) > 5 * max_degree
    kept = bound_undirected_degree(edges, num_nodes=NUM_NODES, max_degree=max_degree, seed=7)
    position = positions_in(kept, edges)  # kept ⊆ original, in the original column order
    assert bool((position[1:] > position[:-1]).all())
    assert torch.equal(keys(kept).sort().values, keys(kept.flip(0)).sort().values)  # both directions
    after = degrees(kept[0])
    assert int(after.max()) <= max_degree
    assert torch.equal(after, degrees(kept[1]))
    # An edge is dropped only if an endpoint has more than D edges (it did not propose it) ...
    dropped = undirected_pairs(edges) - undirected_pairs(kept)
    assert all(before[u] > max_degree or before[v] > max_degree for u, v in dropped)
    # ... so every edge between two nodes of degree <= D survives.
    light = before <= max_degree
    both_light = light[edges[0]] & light[edges[1]]
    assert undirected_pairs(edges[:, both_light]) <= undirected_pairs(kept)
    assert kept.size(1) > 0


def test_undirected_bound_is_reproducible_and_order_free() -> None:
    edges = heavy_graph(1)
    shuffled = edges[:, torch.randperm(edges.size(1), generator=torch.Generator().manual_seed(0))]
    args = {"num_nodes": NUM_NODES, "max_degree": 4}
    same = bound_undirected_degree(edges, seed=5, **args)
    assert torch.equal(same, bound_undirected_degree(edges, seed=5, **args))
    assert torch.equal(keys(same).sort().values, keys(bound_undirected_degree(shuffled, seed=5, **args)).sort().values)
    assert not torch.equal(same, bound_undirected_degree(edges, seed=6, **args))


def test_removing_a_node_changes_kept_edges_only_within_one_hop() -> None:
    """G' = G without hub v's edges: no kept edge away from v is lost, and the kept edges gained are at
    most one per neighbour u of v that had proposed {u, v}: its new D-th lowest edge (docstring)."""
    edges, max_degree = heavy_graph(2), 3
    hub = int(degrees(edges[0]).argmax())
    neighbours = set(edges[1, edges[0] == hub].tolist())
    without = edges[:, (edges[0] != hub) & (edges[1] != hub)]
    args = {"num_nodes": NUM_NODES, "max_degree": max_degree, "seed": 11}
    full = undirected_pairs(bound_undirected_degree(edges, **args))
    reduced = undirected_pairs(bound_undirected_degree(without, **args))
    at_hub = {p for p in full if hub in p}
    assert 0 < len(at_hub) <= max_degree
    assert full - at_hub <= reduced  # nothing away from the hub is lost
    gained = reduced - full
    assert gained  # the cascade is real: the hub's removal frees proposal slots of its neighbours
    # Each gained edge is the one new proposal of an endpoint u adjacent to the hub that had ranked
    # {u, hub} among its D lowest: its D-th lowest edge once {u, hub} is gone.
    hashes = degree_hashes(edges, seed=11)
    new_proposals = set()
    for u in neighbours:
        incident = sorted((h, p) for p, h in hashes.items() if u in p)
        ranked = [p for _, p in incident]
        if ranked.index((min(u, hub), max(u, hub))) < max_degree and len(ranked) > max_degree:
            new_proposals.add([p for p in ranked if hub not in p][max_degree - 1])
    assert gained <= new_proposals
    assert len(full ^ reduced) <= max_degree + len(neighbours)


def degree_hashes(edge_index: Tensor, *, seed: int) -> dict[tuple[int, int], int]:
    """The shared per-pair draw of bound_undirected_degree, recomputed from its documented definition."""
    import numpy as np

    from nodedp.data import degree

    pairs = sorted(undirected_pairs(edge_index))
    lo = np.array([p[0] for p in pairs], dtype=np.int64)
    hi = np.array([p[1] for p in pairs], dtype=np.int64)
    node_hashes = degree._node_hashes(NUM_NODES, seed=seed, stream=degree._UNDIRECTED_STREAM)
    return dict(zip(pairs, degree._edge_hashes(node_hashes, lo, hi).tolist()))


def test_undirected_bound_drops_self_loops_and_keeps_light_graphs_whole() -> None:
    edges = torch.tensor([[0, 1, 1, 2, 2], [1, 0, 2, 1, 2]])  # path 0-1-2 and a loop at 2
    kept = bound_undirected_degree(edges, num_nodes=3, max_degree=2, seed=0)
    assert torch.equal(kept, edges[:, :4])
    nothing = torch.empty(2, 0, dtype=torch.long)
    assert bound_undirected_degree(nothing, num_nodes=3, max_degree=1, seed=0).shape == (2, 0)


@pytest.mark.parametrize(
    ("edge_index", "message"),
    [
        (torch.tensor([[0, 1, 1], [1, 0, 2]]), "both directions"),
        (torch.tensor([[0, 1, 0, 1], [1, 0, 1, 0]]), "duplicate columns"),
        (torch.tensor([[0, 1], [1, 5]]), "outside"),
    ],
)
def test_undirected_bound_refuses_bad_graphs(edge_index: Tensor, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bound_undirected_degree(edge_index, num_nodes=3, max_degree=2, seed=0)


# --- stability under node removal (degree.py's module docstring) ------------------------------------------------


def line_graph(*, lines_per_point: int, max_degree: int, p: int) -> tuple[Tensor, int, int]:
    """The theorem's graph: targets (i, y), i ≤ D, y ∈ Z_p; one source per line y = a·i + b (a < m) with
    out-edges to its D + 1 points. Returns (edges, number of targets, number of nodes)."""
    targets = (max_degree + 1) * p
    src, dst = [], []
    for a in range(lines_per_point):
        for b in range(p):
            source = targets + a * p + b
            for i in range(max_degree + 1):
                src.append(source)
                dst.append(i * p + (a * i + b) % p)
    return torch.tensor([src, dst]), targets, targets + lines_per_point * p


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_out_degree_bounding_is_unstable_as_the_theorem_says(seed: int) -> None:
    """Removing a target changes on average exactly 1 + m·D/(D+1) rows of A·X (each source drops one of its
    D + 1 edges; once a target goes, every in-neighbour that dropped another edge regains it), far above the
    D + 1 the accountant counts, and more so as m grows."""
    m, max_degree, p = 11, 3, 11
    edges, targets, num_nodes = line_graph(lines_per_point=m, max_degree=max_degree, p=p)
    assert torch.equal(degrees_of(edges[1], num_nodes)[:targets], torch.full((targets,), m))
    full = kept_sets(bound_out_degree(edges, num_nodes=num_nodes, max_degree=max_degree, seed=seed), by=1)
    changed_rows = []
    for u in range(targets):
        reduced = kept_sets(
            bound_out_degree(edges[:, edges[1] != u], num_nodes=num_nodes, max_degree=max_degree, seed=seed), by=1
        )
        changed_rows.append(1 + sum(full.get(z, set()) != reduced.get(z, set()) for z in range(targets) if z != u))
    assert sum(changed_rows) / targets == pytest.approx(1 + m * max_degree / (max_degree + 1))  # 9.25
    assert max(changed_rows) > 2 * (max_degree + 1)


def degrees_of(index: Tensor, num_nodes: int) -> Tensor:
    return torch.bincount(index, minlength=num_nodes)


def test_out_degree_bounding_of_an_edgeless_graph_is_empty() -> None:
    nothing = torch.empty(2, 0, dtype=torch.long)
    assert bound_out_degree(nothing, num_nodes=3, max_degree=1, seed=0).shape == (2, 0)


@pytest.mark.parametrize("kind", ["in-degree", "out-degree", "degree"])
def test_the_artifact_states_the_public_bound_within_which_the_sampling_is_the_identity(kind):
    from nodedp.data import degree_artifact, identity_bound

    # An undirected star: the centre has degree 6, every leaf degree 1; all nodes train.
    leaves = torch.arange(1, 7)
    edge_index = torch.cat(
        [
            torch.stack([torch.zeros(6, dtype=torch.long), leaves]),
            torch.stack([leaves, torch.zeros(6, dtype=torch.long)]),
        ],
        dim=1,
    )
    train = torch.arange(7)
    for bound, over in ((6 * (2 if kind == "in-degree" else 1), 0), (4, 1)):
        artifact = degree_artifact(edge_index, kind=kind, bound=bound, seed=0, num_nodes=7, train_nodes=train)
        assert (
            artifact["identity_bound"] == identity_bound(kind, bound) == (bound // 2 if kind == "in-degree" else bound)
        )
        assert "nodes_over" not in artifact  # a count of the input: the stability report's, never a run's
        if over == 0:  # within the identity bound the sampling keeps every edge
            assert artifact["edge_index"].size(1) == edge_index.size(1)
