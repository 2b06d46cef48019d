from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import Tensor

from nodedp.accounting import max_occurrences
from nodedp.data import bound_in_degree, bound_out_degree
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.structure import (
    Subgraphs,
    gather_features,
    load_subgraphs,
    occurrence_counts,
    sample_subgraphs,
    save_subgraphs,
)

NUM_NODES = 240


def _heavy_tailed_spec(seed: int) -> CSBMSpec:
    return CSBMSpec(
        num_nodes=NUM_NODES,
        num_classes=3,
        avg_degree=10.0,
        homophily=0.7,
        num_features=4,
        feature_signal=1.0,
        degree_exponent=2.1,
        class_weights=None,
        seed=seed,
    )


def _kept_edges(*, seed: int, max_degree: int) -> tuple[Tensor, Tensor]:
    """A heavy-tailed CSBM graph's edges after Algorithm 1 and the out-degree bound; and the training nodes."""
    spec = _heavy_tailed_spec(seed)
    graph = generate_csbm(spec)
    train = torch.randperm(NUM_NODES, generator=torch.Generator().manual_seed(seed))[: NUM_NODES * 2 // 3]
    train = train.sort().values
    kept = bound_in_degree(graph.edge_index, num_nodes=NUM_NODES, train_nodes=train, max_degree=max_degree, seed=seed)
    kept = bound_out_degree(kept, num_nodes=NUM_NODES, max_degree=max_degree, seed=seed)
    return kept, train


def _edge_set(sg: Subgraphs, row: int) -> set[tuple[int, int]]:
    nodes = sg.nodes[row]
    a, b = sg.adj[row].nonzero(as_tuple=True)
    return set(zip(nodes[a].tolist(), nodes[b].tolist(), strict=True))


def _node_set(sg: Subgraphs, row: int) -> set[int]:
    nodes = sg.nodes[row]
    return set(nodes[nodes >= 0].tolist())


def _recursive_neighborhood(out: dict[int, list[int]], v: int, depth: int) -> tuple[set[int], set[tuple[int, int]]]:
    """Algorithm 2 read literally: S_v = {v} ∪ ⋃_{u ∈ E_v} S_u(depth - 1), with the edges it follows."""
    nodes, edges = {v}, set()
    if depth == 0:
        return nodes, edges
    for u in out.get(v, []):
        edges.add((v, u))
        sub_nodes, sub_edges = _recursive_neighborhood(out, u, depth - 1)
        nodes |= sub_nodes
        edges |= sub_edges
    return nodes, edges


def _out_lists(edge_index: Tensor) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for s, d in edge_index.t().tolist():
        out.setdefault(s, []).append(d)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_degree", [2, 5, 10])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_occurrences_and_sizes_within_lemma_1(seed: int, max_degree: int, num_layers: int) -> None:
    kept, train = _kept_edges(seed=seed, max_degree=max_degree)
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=num_layers, max_degree=max_degree)
    bound = max_occurrences(max_degree=max_degree, num_layers=num_layers)
    counts = occurrence_counts(sg, NUM_NODES)
    assert int(counts.max()) <= bound
    # Not vacuous: some node sits in other roots' subgraphs.
    assert int(counts.max()) > 1
    assert sg.nodes.shape == (len(train), bound)
    for row in range(len(train)):
        real = sg.nodes[row][sg.nodes[row] >= 0]
        assert real.unique().numel() == real.numel()
    assert int(counts.sum()) == int((sg.nodes >= 0).sum())


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_matches_algorithm_2_read_literally(num_layers: int) -> None:
    kept, train = _kept_edges(seed=3, max_degree=4)
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=num_layers, max_degree=4)
    out = _out_lists(kept)
    kept_set = set(map(tuple, kept.t().tolist()))
    for row, root in enumerate(train.tolist()):
        nodes, edges = _recursive_neighborhood(out, root, num_layers)
        assert int(sg.nodes[row, 0]) == root
        assert _node_set(sg, row) == nodes
        assert _edge_set(sg, row) == edges
        assert edges <= kept_set
        # Padding only after the real nodes.
        real = sg.nodes[row] >= 0
        assert bool(real[: int(real.sum())].all())
        if num_layers == 1:
            assert nodes == {root} | set(out.get(root, []))


def test_root_output_equals_propagation_on_the_whole_kept_graph() -> None:
    # r rounds of mean aggregation over (A + I): the root needs exactly the recursion's edges.
    kept, train = _kept_edges(seed=4, max_degree=5)
    num_layers = 2
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=num_layers, max_degree=5)
    x = torch.randn(NUM_NODES, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    full = torch.eye(NUM_NODES, dtype=torch.float64)
    full[kept[0], kept[1]] = 1.0
    h = x
    for _ in range(num_layers):
        h = (full @ h) / full.sum(1, keepdim=True)
    x_local, adj, mask = gather_features(sg, x, torch.arange(len(train)))
    local = adj + torch.diag_embed(mask.to(adj.dtype))
    g = x_local
    for _ in range(num_layers):
        g = (local @ g) / local.sum(2, keepdim=True).clamp(min=1.0)
    torch.testing.assert_close(g[:, 0], h[train])


@pytest.mark.parametrize("num_layers", [1, 2])
def test_removing_a_node_changes_only_the_subgraphs_that_held_it(num_layers: int) -> None:
    max_degree = 3
    bound = max_occurrences(max_degree=max_degree, num_layers=num_layers)
    spec = _heavy_tailed_spec(5)
    graph = generate_csbm(spec)
    train = torch.arange(0, NUM_NODES, 2)
    in_bounded = bound_in_degree(
        graph.edge_index, num_nodes=NUM_NODES, train_nodes=train, max_degree=max_degree, seed=5
    )
    kept = bound_out_degree(in_bounded, num_nodes=NUM_NODES, max_degree=max_degree, seed=5)
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=num_layers, max_degree=max_degree)
    counts = occurrence_counts(sg, NUM_NODES)
    changed_any = False
    # The most-shared nodes, training and not: the cases where most can change.
    for w in counts.argsort(descending=True)[:6].tolist():
        holders = {int(sg.nodes[row, 0]) for row in range(len(train)) if w in _node_set(sg, row)}
        assert len(holders) <= bound
        untouched = (in_bounded[0] != w) & (in_bounded[1] != w)
        # The same sampled edge lists without w's edges; and with the out-degree bound redrawn on them.
        for neighbour in (
            kept[:, (kept[0] != w) & (kept[1] != w)],
            bound_out_degree(in_bounded[:, untouched], num_nodes=NUM_NODES, max_degree=max_degree, seed=5),
        ):
            roots = train[train != w]
            sg2 = sample_subgraphs(
                neighbour, roots=roots, num_nodes=NUM_NODES, num_layers=num_layers, max_degree=max_degree
            )
            rows = {int(r): i for i, r in enumerate(train.tolist())}
            changed = {w} & set(train.tolist())
            for row2, root in enumerate(roots.tolist()):
                row = rows[root]
                if _node_set(sg, row) != _node_set(sg2, row2) or _edge_set(sg, row) != _edge_set(sg2, row2):
                    changed.add(root)
            assert changed <= holders
            assert len(changed) <= bound
            changed_any |= len(changed - {w}) > 0
    assert changed_any


def test_gather_features_pads_with_zeros_and_is_deterministic() -> None:
    kept, train = _kept_edges(seed=6, max_degree=3)
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=2, max_degree=3)
    again = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=2, max_degree=3)
    assert torch.equal(sg.nodes, again.nodes) and torch.equal(sg.adj, again.adj)
    x = torch.randn(NUM_NODES, 5, generator=torch.Generator().manual_seed(1)) + 10.0
    idx = torch.tensor([4, 0, 7])
    x_local, adj, mask = gather_features(sg, x, idx)
    width = max_occurrences(max_degree=3, num_layers=2)
    assert x_local.shape == (3, width, 5) and adj.shape == (3, width, width) and mask.shape == (3, width)
    assert adj.dtype == x.dtype and mask.dtype == torch.bool
    nodes = sg.nodes[idx]
    assert torch.equal(mask, nodes >= 0)
    assert torch.equal(x_local[mask], x[nodes[mask]])
    assert bool((x_local[~mask] == 0).all())
    assert torch.equal(adj, sg.adj[idx].to(x.dtype))
    assert torch.equal(x_local[:, 0], x[train[idx]])


def test_save_load_round_trip_and_bad_files(tmp_path: Path) -> None:
    kept, train = _kept_edges(seed=7, max_degree=3)
    sg = sample_subgraphs(kept, roots=train, num_nodes=NUM_NODES, num_layers=1, max_degree=3)
    path = save_subgraphs(sg, tmp_path / "subgraphs.pt")
    loaded = load_subgraphs(path)
    assert torch.equal(loaded.nodes, sg.nodes) and torch.equal(loaded.adj, sg.adj)
    assert (loaded.num_layers, loaded.max_degree) == (1, 3)

    other = tmp_path / "other.pt"
    torch.save({"format": "something-else"}, other)
    with pytest.raises(ValueError, match="other.pt.*not a subgraphs file"):
        load_subgraphs(other)
    wrong = tmp_path / "wrong.pt"
    torch.save(
        {"format": "nodedp-subgraphs-v1", "nodes": sg.nodes, "adj": sg.adj, "num_layers": 2, "max_degree": 3}, wrong
    )
    with pytest.raises(ValueError, match="wrong.pt.*width"):
        load_subgraphs(wrong)
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="damaged.pt"):
        load_subgraphs(damaged)


def test_refuses_unbounded_degrees_and_repeated_roots() -> None:
    star_out = torch.tensor([[0, 0, 0], [1, 2, 3]])
    with pytest.raises(ValueError, match="bound_out_degree"):
        sample_subgraphs(star_out, roots=torch.tensor([0]), num_nodes=4, num_layers=1, max_degree=2)
    with pytest.raises(ValueError, match="bound_in_degree"):
        sample_subgraphs(star_out.flip(0), roots=torch.tensor([1]), num_nodes=4, num_layers=1, max_degree=2)
    with pytest.raises(ValueError, match="roots has repeated"):
        sample_subgraphs(star_out, roots=torch.tensor([1, 1]), num_nodes=4, num_layers=1, max_degree=3)
    with pytest.raises(ValueError, match="outside"):
        sample_subgraphs(star_out, roots=torch.tensor([4]), num_nodes=4, num_layers=1, max_degree=3)


def test_trimming_the_padding_changes_no_models_output():
    """``trim_padding`` keeps the columns some subgraph uses; SparseGNN's SAGE and GIN models and HeterPoisson's
    G_net read padding as absent, so their root outputs are the same on the trimmed batch."""
    from nodedp.models import SubgraphGNN
    from nodedp.models.heter_poisson import GNet
    from nodedp.structure import StructuredSampler, gather_structured, prepare_structured_graph, trim_padding

    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(0, 40, (2, 160), generator=generator)
    arcs = prepare_structured_graph(edges, num_nodes=40, out_degree_bound=4, seed=1)
    sampler = StructuredSampler(arcs, num_nodes=40, radius=2, edge_keep=0.3)
    nodes, adj = sampler.expand(torch.arange(12), generator)
    trimmed_nodes, trimmed_adj = trim_padding(nodes, adj)
    assert trimmed_nodes.size(1) == int((nodes >= 0).sum(1).max()) < nodes.size(1)
    assert (
        torch.equal(trimmed_nodes, nodes[:, : trimmed_nodes.size(1)])
        and not (nodes[:, trimmed_nodes.size(1) :] >= 0).any()
    )
    x = torch.randn(40, 5, generator=generator)
    torch.manual_seed(0)
    models = [SubgraphGNN(5, 8, 3, layer=k, num_layers=2, activation="relu") for k in ("sage", "gin")]
    models.append(GNet(5, 8, 3))
    for model in models:
        full = (
            model(*gather_structured(nodes, adj, x))
            if isinstance(model, SubgraphGNN)
            else model(gather_structured(nodes, adj, x))
        )
        cut = gather_structured(trimmed_nodes, trimmed_adj, x)
        short = model(*cut) if isinstance(model, SubgraphGNN) else model(cut)
        assert torch.allclose(full, short, atol=1e-6), type(model).__name__
    with pytest.raises(ValueError, match="need nodes"):
        trim_padding(nodes, adj[:, :2])
