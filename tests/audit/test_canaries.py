from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor
from torch_geometric.data import Data

from nodedp.audit.canaries import CanaryPlan, default_canary_count, plant_canaries
from nodedp.data import (
    Split,
    bound_in_degree,
    bound_out_degree,
    bound_undirected_degree,
    random_split,
    validate_graph,
    validate_split,
)

# ----------------------------------------------------------------------------- helpers


def _star_graph(num_nodes: int = 120, extra_edges: int = 150, seed: int = 0) -> tuple[Data, Split]:
    """Heavy-tailed: node 0 joined to every other node, plus random edges; symmetric, no self-loops or duplicates."""
    gen = torch.Generator().manual_seed(seed)
    pairs = {(0, v) for v in range(1, num_nodes)}
    while len(pairs) < num_nodes - 1 + extra_edges:
        u, v = torch.randint(1, num_nodes, (2,), generator=gen).tolist()
        if u != v:
            pairs.add((min(u, v), max(u, v)))
    edges = torch.tensor(sorted(pairs), dtype=torch.int64).T
    edge_index = torch.cat([edges, edges.flip(0)], dim=1)
    graph = Data(
        x=torch.randn(num_nodes, 4, generator=gen),
        y=torch.randint(3, (num_nodes,), generator=gen),
        edge_index=edge_index,
    )
    return graph, random_split(num_nodes, seed=seed)


def _directed_graph(num_nodes: int = 80, num_edges: int = 200, seed: int = 1) -> tuple[Data, Split]:
    gen = torch.Generator().manual_seed(seed)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < num_edges:
        u, v = torch.randint(num_nodes, (2,), generator=gen).tolist()
        if u != v and (v, u) not in pairs:  # strictly one-way, so the graph is not symmetric
            pairs.add((u, v))
    graph = Data(
        x=torch.randn(num_nodes, 4, generator=gen),
        y=torch.randint(4, (num_nodes,), generator=gen),
        edge_index=torch.tensor(sorted(pairs), dtype=torch.int64).T.contiguous(),
    )
    return graph, random_split(num_nodes, seed=seed)


def _degrees(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    src, dst = edge_index
    return torch.bincount(dst, minlength=num_nodes), torch.bincount(src, minlength=num_nodes)


def _edge_set(edge_index: Tensor) -> set[tuple[int, int]]:
    return {(int(s), int(d)) for s, d in edge_index.T.tolist()}


def _edges_in_plan_ids(edge_index: Tensor, id_map: Tensor) -> set[tuple[int, int]]:
    """A private graph's edges with node ids mapped back to the plan's graph."""
    old = torch.nonzero(id_map >= 0).flatten()  # new id j is old id old[j]
    return _edge_set(old[edge_index])


def _canary_edge_columns(plan: CanaryPlan) -> Tensor:
    n = plan.num_original_nodes
    edge_index = plan.graph.edge_index
    return (edge_index[0] >= n) | (edge_index[1] >= n)


@pytest.fixture(scope="module")
def tiny_plan(tiny_inputs) -> CanaryPlan:
    return plant_canaries(
        tiny_inputs.graph, tiny_inputs.split, m=60, degree_bound=6, num_classes=tiny_inputs.num_classes, seed=3
    )


# --------------------------------------------------------------------------- the count


def test_default_canary_count():
    assert default_canary_count(4000) == 1000
    assert default_canary_count(2_000_000) == 1000
    assert default_canary_count(3999) == 999
    assert default_canary_count(300) == 75
    assert default_canary_count(80) == 20
    # At a δ, no more than the count whose perfect-attack bound is highest (the 2·m·δ term); δ = 0: the graph's.
    assert default_canary_count(3000, 1e-4) == 100 and default_canary_count(30000, 1e-5) == 500
    assert default_canary_count(300, 1e-4) == 75 and default_canary_count(3000, 0.0) == 750
    assert default_canary_count(10) == 20
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="num_nodes"):
            default_canary_count(bad)


# ------------------------------------------------------------------ shapes, ids, inputs


def test_shapes_ids_and_the_original_graph_kept(tiny_inputs, tiny_plan):
    graph, split, plan = tiny_inputs.graph, tiny_inputs.split, tiny_plan
    n, m, num_edges = graph.num_nodes, 60, graph.edge_index.size(1)
    assert plan.num_original_nodes == n and plan.graph.num_nodes == n + m
    assert torch.equal(plan.canaries, torch.arange(n, n + m)) and plan.canaries.dtype == torch.int64
    assert plan.included.dtype == torch.bool and plan.included.shape == (m,)
    assert plan.labels.dtype == torch.int64 and plan.labels.shape == (m,)
    assert plan.sources.shape == plan.canary_degrees.shape == (m,)
    assert plan.directed is None  # csbm-tiny is symmetric
    validate_graph(plan.graph, where="plan", num_classes=tiny_inputs.num_classes)
    validate_split(plan.split, where="plan", num_nodes=n + m)
    # The original nodes and edges come first, unchanged; canaries copy their source's features.
    assert torch.equal(plan.graph.x[:n], graph.x) and torch.equal(plan.graph.y[:n], graph.y)
    assert torch.equal(plan.graph.edge_index[:, :num_edges], graph.edge_index)
    # each canary's features are its source's, shuffled: the same values, not the same vector
    assert torch.equal(plan.graph.x[n:].sort(dim=1).values, graph.x[plan.sources].sort(dim=1).values)
    assert not torch.equal(plan.graph.x[n:], graph.x[plan.sources])
    assert torch.equal(plan.graph.y[n:], plan.labels)
    assert bool(torch.isin(plan.sources, split.train).all())
    # Both directions stored, one pair per endpoint.
    new = plan.graph.edge_index[:, num_edges:]
    assert _edge_set(new) == _edge_set(plan.canary_edges) | _edge_set(plan.canary_edges.flip(0))
    assert new.size(1) == 2 * int(plan.canary_degrees.sum()) == 2 * plan.canary_edges.size(1)


def test_split_parts(tiny_inputs, tiny_plan):
    split, plan = tiny_inputs.split, tiny_plan
    assert torch.equal(plan.split.val, split.val) and torch.equal(plan.split.test, split.test)
    assert torch.equal(plan.split.train, torch.cat([split.train, plan.canaries[plan.included]]))
    assert (plan.split.setting, plan.split.seed) == (split.setting, split.seed)
    parts = torch.cat([plan.split.train, plan.split.val, plan.split.test])
    assert not bool(torch.isin(plan.canaries[~plan.included], parts).any())
    # The private graph's split: same parts, excluded canaries gone.
    private, private_split, id_map = plan.private_graph()
    validate_split(private_split, where="private", num_nodes=private.num_nodes)
    assert torch.equal(private_split.train, id_map[plan.split.train])
    assert torch.equal(private_split.val, split.val) and torch.equal(private_split.test, split.test)


def test_inclusion_is_about_half_and_reproducible(tiny_inputs):
    graph, split, c = tiny_inputs.graph, tiny_inputs.split, tiny_inputs.num_classes
    m = 1000
    plan = plant_canaries(graph, split, m=m, degree_bound=4, num_classes=c, seed=11, canary_degree=1)
    assert abs(int(plan.included.sum()) - m / 2) <= 4 * math.sqrt(m) / 2  # 4 standard deviations
    again = plant_canaries(graph, split, m=m, degree_bound=4, num_classes=c, seed=11, canary_degree=1)
    for name in ("included", "labels", "sources", "canary_degrees", "canary_edges"):
        assert torch.equal(getattr(plan, name), getattr(again, name)), name
    assert torch.equal(plan.graph.edge_index, again.graph.edge_index)
    other = plant_canaries(graph, split, m=m, degree_bound=4, num_classes=c, seed=12, canary_degree=1)
    assert not torch.equal(plan.included, other.included)
    # The inclusion bits are the Generator's first m draws: the canaries' construction does not change them.
    fewer_edges = plant_canaries(graph, split, m=m, degree_bound=4, num_classes=c, seed=11, canary_degree=0)
    assert torch.equal(plan.included, fewer_edges.included)


def test_labels_differ_from_the_source_label(tiny_inputs):
    graph, c = tiny_inputs.graph, tiny_inputs.num_classes
    plan = plant_canaries(graph, tiny_inputs.split, m=600, degree_bound=4, num_classes=c, seed=5)
    source_labels = graph.y[plan.sources]
    assert bool((plan.labels != source_labels).all())
    assert int(plan.labels.min()) >= 0 and int(plan.labels.max()) < c
    # Uniform over the other classes: for each source label, each other class shows up.
    for label in range(c):
        chosen = plan.labels[source_labels == label]
        assert set(chosen.tolist()) == set(range(c)) - {label}


# ------------------------------------------------------------------- edges and degrees


def _check_edges_and_degrees(plan: CanaryPlan, train: Tensor, canary_degree: int) -> None:
    n, bound = plan.num_original_nodes, plan.degree_bound
    canary_ids, endpoints = plan.canary_edges
    # Every endpoint is an original training node, distinct per canary; the degrees recorded match.
    assert bool(torch.isin(endpoints, train).all())
    assert torch.equal(torch.bincount(canary_ids - n, minlength=plan.canaries.numel()), plan.canary_degrees)
    assert len(_edge_set(plan.canary_edges)) == plan.canary_edges.size(1)
    assert int(plan.canary_degrees.max()) <= canary_degree
    # In- and out-degree of every canary and every endpoint within the bound, all canaries planted.
    in_degree, out_degree = _degrees(plan.graph.edge_index, plan.graph.num_nodes)
    touched = torch.cat([plan.canaries, endpoints])
    assert int(in_degree[touched].max()) <= bound and int(out_degree[touched].max()) <= bound


def _check_bounding_keeps_canary_edges(plan: CanaryPlan) -> None:
    """The methods' bounding (identity bound = degree_bound) keeps every canary edge, in every private graph."""
    bound = plan.degree_bound
    for graph, split, id_map in (plan.private_graph(), plan.neighbour(0), plan.neighbour(1)):
        n = graph.num_nodes
        canary = id_map[plan.canaries]
        canary = canary[canary >= 0]
        edges = graph.edge_index
        wanted = _edge_set(edges[:, torch.isin(edges[0], canary) | torch.isin(edges[1], canary)])
        assert wanted
        kept = [
            bound_out_degree(edges, num_nodes=n, max_degree=bound, seed=0),
            bound_in_degree(edges, num_nodes=n, train_nodes=split.train, max_degree=2 * bound, seed=0),
        ]
        if plan.directed is None:
            kept.append(bound_undirected_degree(edges, num_nodes=n, max_degree=bound, seed=0))
        for result in kept:
            assert wanted <= _edge_set(result)


def test_endpoints_and_degrees_on_csbm(tiny_inputs, tiny_plan):
    _check_edges_and_degrees(tiny_plan, tiny_inputs.split.train, canary_degree=3)
    _check_bounding_keeps_canary_edges(tiny_plan)


def test_heavy_tailed_star_and_running_out_of_capacity():
    graph, split = _star_graph()
    bound = 5
    m = 40
    plan = plant_canaries(graph, split, m=m, degree_bound=bound, num_classes=3, seed=2, canary_degree=4)
    _check_edges_and_degrees(plan, split.train, canary_degree=4)
    _check_bounding_keeps_canary_edges(plan)
    assert 0 not in plan.canary_edges[1].tolist()  # the hub is over the bound: never an endpoint
    # Capacity is the limit: every training node's spare degree, summed, is used up.
    degree = torch.bincount(graph.edge_index[0], minlength=graph.num_nodes)[split.train]
    capacity = int((bound - degree).clamp(min=0).sum())
    assert capacity < m * 4
    assert int(plan.canary_degrees.sum()) == capacity
    # Early canaries get all they ask for, later ones fewer and at last none.
    assert int(plan.canary_degrees[0]) == 4 and int(plan.canary_degrees[-1]) == 0
    assert bool((plan.canary_degrees[1:] <= plan.canary_degrees[:-1]).all())


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_directed_graph(direction):
    graph, split = _directed_graph()
    num_edges = graph.edge_index.size(1)
    plan = plant_canaries(
        graph, split, m=30, degree_bound=6, num_classes=4, seed=4, canary_degree=3, direction=direction
    )
    assert plan.directed == direction
    _check_edges_and_degrees(plan, split.train, canary_degree=3)
    _check_bounding_keeps_canary_edges(plan)
    new = _edge_set(plan.graph.edge_index[:, num_edges:])
    forward, backward = _edge_set(plan.canary_edges), _edge_set(plan.canary_edges.flip(0))
    expected = {"out": forward, "in": backward, "both": forward | backward}[direction]
    assert new == expected


def test_directed_default_and_symmetric_direction(tiny_inputs):
    graph, split = _directed_graph()
    assert plant_canaries(graph, split, m=5, degree_bound=4, num_classes=4, seed=0).directed == "out"
    with pytest.raises(ValueError, match="direction"):
        plant_canaries(graph, split, m=5, degree_bound=4, num_classes=4, seed=0, direction="sideways")
    with pytest.raises(ValueError, match="symmetric"):
        plant_canaries(
            tiny_inputs.graph,
            tiny_inputs.split,
            m=5,
            degree_bound=4,
            num_classes=tiny_inputs.num_classes,
            seed=0,
            direction="out",
        )


# ------------------------------------------------------------------ the neighbour relation


def test_private_graph_and_neighbours_differ_by_one_node_and_its_edges(tiny_plan):
    plan = tiny_plan
    n = plan.num_original_nodes
    private, _, private_map = plan.private_graph()
    assert private.num_nodes == n + int(plan.included.sum())
    assert torch.equal(private_map[:n], torch.arange(n))  # original ids unchanged
    private_nodes = set(torch.nonzero(private_map >= 0).flatten().tolist())
    private_edges = _edges_in_plan_ids(private.edge_index, private_map)
    # Every private edge is a planted edge between kept nodes; excluded canaries have none.
    assert private_edges <= _edge_set(plan.graph.edge_index)
    assert private.edge_index.size(1) == len(private_edges)
    all_edges = plan.graph.edge_index
    tested = {True: 0, False: 0}
    for i in range(plan.canaries.numel()):
        if int(plan.canary_degrees[i]) == 0 or tested[bool(plan.included[i])] >= 3:
            continue
        tested[bool(plan.included[i])] += 1
        node = int(plan.canaries[i])
        graph, split, id_map = plan.neighbour(i)
        nodes = set(torch.nonzero(id_map >= 0).flatten().tolist())
        assert nodes ^ private_nodes == {node}
        own = _edge_set(all_edges[:, (all_edges[0] == node) | (all_edges[1] == node)])
        assert len(own) == 2 * int(plan.canary_degrees[i])
        assert _edges_in_plan_ids(graph.edge_index, id_map) ^ private_edges == own
        # Features and labels follow their nodes; the canary is in train iff it is in the graph.
        old = torch.nonzero(id_map >= 0).flatten()
        assert torch.equal(graph.x, plan.graph.x[old]) and torch.equal(graph.y, plan.graph.y[old])
        in_train = bool((split.train == id_map[node]).any()) if id_map[node] >= 0 else False
        assert in_train == (node in nodes) == (not bool(plan.included[i]))
    assert tested == {True: 3, False: 3}
    with pytest.raises(ValueError, match="canary index"):
        plan.neighbour(plan.canaries.numel())


# ------------------------------------------------------------------------- bad inputs


def test_value_errors(tiny_inputs):
    graph, split, c = tiny_inputs.graph, tiny_inputs.split, tiny_inputs.num_classes
    base = {"m": 5, "degree_bound": 4, "num_classes": c, "seed": 0}
    for change, message in [
        ({"m": 0}, "m must be"),
        ({"degree_bound": 0}, "degree_bound must be"),
        ({"num_classes": 1}, "num_classes must be"),
        ({"canary_degree": 5}, "canary_degree"),
        ({"canary_degree": -1}, "canary_degree"),
        ({"seed": -1}, "seed"),
    ]:
        with pytest.raises(ValueError, match=message):
            plant_canaries(graph, split, **{**base, **change})
    empty = torch.empty(0, dtype=torch.int64)
    no_train = Split(train=empty, val=split.val, test=split.test, setting=split.setting, seed=split.seed)
    with pytest.raises(ValueError, match="no training node"):
        plant_canaries(graph, no_train, **base)
    with pytest.raises(ValueError, match="labels out of range"):  # labels beyond the public class count
        plant_canaries(graph, split, **{**base, "num_classes": 2})


def test_canaries_in_feature_columns_of_their_own(tiny_inputs):
    graph = tiny_inputs.graph
    n, d, m = graph.num_nodes, graph.x.size(1), 40
    plan = plant_canaries(
        graph, tiny_inputs.split, m=m, degree_bound=6, num_classes=tiny_inputs.num_classes, seed=3, own_column=2.5
    )
    x = plan.graph.x
    assert x.shape == (n + m, d + m)
    assert torch.equal(x[:n, :d], graph.x) and not x[:n, d:].any()  # original nodes: zero in the new columns
    assert not x[n:, :d].any() and torch.equal(x[n:, d:], 2.5 * torch.eye(m))  # canary j: only its column j
    baseline = plan.baseline_graph()
    assert not baseline.x[:, d:].any() and torch.equal(baseline.x[:, :d], x[:, :d])
    private, _, id_map = plan.private_graph()
    kept = plan.canaries[plan.included]
    assert private.x.shape == (n + int(plan.included.sum()), d + m)
    assert torch.equal(private.x[id_map[kept]], x[kept])
    # The same seed draws the same canaries (inclusion, labels, edges) whatever the design.
    rows = plant_canaries(graph, tiny_inputs.split, m=m, degree_bound=6, num_classes=tiny_inputs.num_classes, seed=3)
    assert torch.equal(rows.included, plan.included) and torch.equal(rows.labels, plan.labels)
    assert torch.equal(rows.graph.edge_index, plan.graph.edge_index)
    with pytest.raises(ValueError, match="baseline_graph needs"):
        rows.baseline_graph()
    with pytest.raises(ValueError, match="own_column"):
        plant_canaries(
            graph, tiny_inputs.split, m=m, degree_bound=6, num_classes=tiny_inputs.num_classes, seed=3, own_column=-1.0
        )


def test_the_scoring_graph_extends_the_private_graph_node_for_node_with_every_canary_in_train(tiny_inputs):
    plan = plant_canaries(
        tiny_inputs.graph,
        tiny_inputs.split,
        m=12,
        degree_bound=6,
        num_classes=tiny_inputs.num_classes,
        seed=3,
        own_column=2.0,
    )
    private, private_split, _ = plan.private_graph()
    graph, split, ids = plan.scoring_graph()
    k = private.num_nodes
    # The private graph is the scoring graph's first k nodes, with exactly its edges among them.
    assert torch.equal(graph.x[:k], private.x) and torch.equal(graph.y[:k], private.y)
    inner = graph.edge_index[:, (graph.edge_index < k).all(0)]
    assert sorted(map(tuple, inner.t().tolist())) == sorted(map(tuple, private.edge_index.t().tolist()))
    # Canary i is node ids[i]: its features, label and edges; every canary in train, in or out.
    assert torch.equal(graph.x[ids], plan.graph.x[plan.canaries]) and torch.equal(graph.y[ids], plan.labels)
    assert bool((ids[plan.included] < k).all()) and bool((ids[~plan.included] >= k).all())
    assert set(ids.tolist()) <= set(split.train.tolist()) and torch.equal(split.test, plan.split.test)
    assert set(private_split.train.tolist()) <= set(split.train.tolist())
    assert graph.edge_index.size(1) == plan.graph.edge_index.size(1)
    baseline, _, same = plan.scoring_graph(baseline=True)
    assert torch.equal(same, ids) and float(baseline.x[ids][:, -12:].abs().sum()) == 0.0
