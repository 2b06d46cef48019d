"""SparseGNN's structured subsampler: the exact affected-root law on a star, dominance by the accountant's count
law, the shape of every subgraph, the capped-fan-out law, preprocessing, and training through the suite's loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import binom
from torch import Tensor

from nodedp.accounting.structured import structured_count_law
from nodedp.models.subgraph_gnn import GraphReadout, SubgraphGNN
from nodedp.structure.structured_subsampling import (
    StructuredSampler,
    gather_structured,
    prepare_structured_graph,
)
from nodedp.train.loop import OptimConfig, PrivacyConfig, train_model
from nodedp.train.sampling import poisson_batches


def _random_graph(num_nodes: int, num_edges: int, seed: int, *, hubs: int = 0) -> Tensor:
    """Directed random edges, with self-loops and duplicates; with ``hubs``, half the edges point at nodes < hubs."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=g)
    if hubs:
        dst[: num_edges // 2] = torch.randint(0, hubs, (num_edges // 2,), generator=g)
    return torch.stack([src, dst])


def _affected_counts(sampler: StructuredSampler, candidates: Tensor, s: int, p1: float, trials: int, seed: int):
    """Per trial: Poisson(p1) roots over ``candidates``, the number of sampled roots whose subgraph contains s."""
    g = torch.Generator().manual_seed(seed)
    trial, which = torch.nonzero(torch.rand(trials, candidates.numel(), generator=g) < p1, as_tuple=True)
    nodes, _ = sampler.expand(candidates[which], g)
    hit = (nodes == s).any(1)
    return torch.bincount(trial[hit], minlength=trials).numpy()


def _pmf(counts: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(counts, minlength=size)[:size] / counts.size


def _dominance_margin(counts: np.ndarray, law: np.ndarray) -> float:
    """min_k F_emp(k) − F_law(k): >= 0 (up to Monte-Carlo error) iff the count is dominated by ``law``."""
    assert counts.max() < law.size
    return float(np.min(np.cumsum(_pmf(counts, law.size)) - np.cumsum(law)))


def test_star_affected_root_count_follows_bern_p1_conv_bin_k_p1p2_and_is_dominated():
    k_out, p1, p2, trials = 5, 0.3, 0.5, 30_000
    star = torch.stack([torch.zeros(k_out, dtype=torch.int64), torch.arange(1, k_out + 1)])  # s = 0 -> v_i
    arcs = prepare_structured_graph(star, num_nodes=k_out + 1, out_degree_bound=k_out, seed=3)
    assert sorted(arcs[1][arcs[0] == 0].tolist()) == list(range(1, k_out + 1))  # s's out-arcs are all kept
    sampler = StructuredSampler(arcs, num_nodes=k_out + 1, radius=1, edge_keep=p2)
    counts = _affected_counts(sampler, torch.arange(k_out + 1), 0, p1, trials, seed=11)

    exact = np.convolve([1 - p1, p1], binom.pmf(np.arange(k_out + 1), k_out, p1 * p2))
    empirical = _pmf(counts, exact.size)
    assert counts.max() < exact.size
    assert np.max(np.abs(empirical - exact)) < 0.01
    assert 0.5 * np.sum(np.abs(empirical - exact)) < 0.01
    for chi in (1, 2):
        law = structured_count_law(sampling_rate=p1, edge_keep=p2, radius=1, out_degree_bound=k_out, union_factor=chi)
        exact_padded = np.pad(exact, (0, law.size - exact.size))
        assert np.all(np.cumsum(exact_padded) >= np.cumsum(law) - 1e-12)
        assert _dominance_margin(counts, law) > -0.01


@pytest.mark.parametrize("chi", [2, 1])
def test_heavy_tailed_radius_2_affected_counts_are_dominated_by_the_count_law(chi):
    n, k_out, p1, p2, trials = 80, 3, 0.25, 0.5, 10_000
    arcs = prepare_structured_graph(_random_graph(n, 240, seed=5, hubs=3), num_nodes=n, out_degree_bound=k_out, seed=2)
    in_degree = torch.bincount(arcs[1], minlength=n)
    assert int(in_degree[:3].min()) > 12  # the hubs' hop caps (6, 4) bind
    sampler = StructuredSampler(arcs, num_nodes=n, radius=2, edge_keep=p2, caps=(6, 4))
    law = structured_count_law(sampling_rate=p1, edge_keep=p2, radius=2, out_degree_bound=k_out, union_factor=chi)
    out_degree = torch.bincount(arcs[0], minlength=n)
    busiest = int(torch.argmax(out_degree[3:] * 100 + in_degree[3:])) + 3
    for s in (0, 1, busiest, n - 1):
        # Only s and the nodes it reaches in <= 2 out-arcs can have s in their subgraph.
        ball = torch.tensor([s])
        for _ in range(2):
            ball = torch.unique(torch.cat([ball, arcs[1][torch.isin(arcs[0], ball)]]))
        counts = _affected_counts(sampler, ball, s, p1, trials, seed=100 + s)
        assert _dominance_margin(counts, law) > -0.015, (s, chi)


def _depths(adj: Tensor, radius: int) -> Tensor:
    """[B, S] hop of every column from the root along recorded arcs (radius + 1 where unreached)."""
    depth = torch.full(adj.shape[:2], radius + 1)
    depth[:, 0] = 0
    for hop in range(1, radius + 1):
        frontier = (depth == hop - 1).to(torch.float32)
        reached = torch.einsum("ba,bac->bc", frontier, adj.to(torch.float32)) > 0
        depth[reached & (depth > hop)] = hop
    return depth


@pytest.mark.parametrize("radius, p2, caps", [(1, 0.5, (3,)), (2, 0.6, (4, 3)), (2, 1.0, (20, 10))])
def test_subgraphs_are_rooted_padded_thinned_in_arc_trees(radius, p2, caps):
    n = 150
    arcs = prepare_structured_graph(_random_graph(n, 600, seed=7, hubs=4), num_nodes=n, out_degree_bound=4, seed=9)
    sampler = StructuredSampler(arcs, num_nodes=n, radius=radius, edge_keep=p2, caps=caps)
    assert sampler.width == 1 + caps[0] + (caps[0] * caps[1] if radius == 2 else 0)
    roots = torch.randint(0, n, (400,), generator=torch.Generator().manual_seed(1))
    nodes, adj = sampler.expand(roots, torch.Generator().manual_seed(2))
    assert nodes.shape == (400, sampler.width) and adj.shape == (400, sampler.width, sampler.width)
    assert nodes.dtype == torch.int64 and adj.dtype == torch.bool
    assert torch.equal(nodes[:, 0], roots)
    valid = nodes >= 0
    assert torch.equal(valid, valid.cummin(1).values)  # padding only after the real nodes
    padding = -torch.arange(1, sampler.width + 1).expand_as(nodes)  # distinct negatives
    ids = torch.sort(torch.where(valid, nodes, padding), 1).values
    assert bool((ids[:, 1:] != ids[:, :-1]).all())  # no node twice in a row
    assert not bool((adj & ~(valid[:, :, None] & valid[:, None, :])).any())  # padding rows/cols empty

    row, a, b = adj.nonzero(as_tuple=True)
    arc_keys = arcs[0] * n + arcs[1]
    assert bool(torch.isin(nodes[row, b] * n + nodes[row, a], arc_keys).all())  # nodes[b] -> nodes[a] is an arc
    depth = _depths(adj, radius)
    assert bool((depth[valid] <= radius).all())  # every node has a path of kept arcs to the root
    assert bool((depth[row, a] < radius).all())  # only nodes within r - 1 hops aggregate
    fan_out = adj.sum(2)
    cap_of = torch.tensor([*caps[:radius], 0])[depth.clamp(max=radius)]
    assert bool((fan_out <= cap_of).all())
    # Columns by hop, then by id within a hop.
    assert bool((depth[:, 1:][valid[:, 1:]] >= depth[:, :-1][valid[:, 1:]]).all())
    same_hop = valid[:, 1:] & (depth[:, 1:] == depth[:, :-1])
    assert bool((nodes[:, 1:][same_hop] > nodes[:, :-1][same_hop]).all())


def _reference_expand(arcs: Tensor, root: int, radius: int) -> tuple[set[int], set[tuple[int, int]]]:
    """SPARSE_EXPAND at p2 = 1 with no cap binding, one root, plain Python: its nodes and arcs (w, u)."""
    in_neighbours: dict[int, list[int]] = {}
    for w, u in arcs.t().tolist():
        in_neighbours.setdefault(u, []).append(w)
    nodes, found, frontier = {root}, set(), [root]
    for _ in range(radius):
        following = []
        for u in frontier:
            for w in in_neighbours.get(u, []):
                if w not in nodes:
                    nodes.add(w)
                    following.append(w)
                found.add((w, u))
        frontier = following
    return nodes, found


@pytest.mark.parametrize("radius", [1, 2])
def test_p2_one_without_binding_caps_keeps_every_in_arc(radius):
    n = 60
    arcs = prepare_structured_graph(_random_graph(n, 150, seed=4), num_nodes=n, out_degree_bound=4, seed=0)
    max_in = int(torch.bincount(arcs[1], minlength=n).max())
    sampler = StructuredSampler(arcs, num_nodes=n, radius=radius, edge_keep=1.0, caps=(max_in, max_in))
    nodes, adj = sampler.expand(torch.arange(n), torch.Generator().manual_seed(0))
    for root in range(n):
        expected_nodes, expected_arcs = _reference_expand(arcs, root, radius)
        row = nodes[root]
        assert set(row[row >= 0].tolist()) == expected_nodes
        a, b = adj[root].nonzero(as_tuple=True)
        assert set(zip(row[b].tolist(), row[a].tolist(), strict=True)) == expected_arcs


def test_binding_cap_keeps_a_uniform_min_binomial_cap_subset():
    leaves, p2, cap, draws = 30, 0.6, 20, 20_000
    edges = torch.stack([torch.arange(1, leaves + 1), torch.zeros(leaves, dtype=torch.int64)])  # leaf -> 0
    arcs = prepare_structured_graph(edges, num_nodes=leaves + 1, out_degree_bound=1, seed=0)
    assert int((arcs[1] == 0).sum()) == leaves
    sampler = StructuredSampler(arcs, num_nodes=leaves + 1, radius=1, edge_keep=p2, caps=(cap,))
    nodes, adj = sampler.expand(torch.zeros(draws, dtype=torch.int64), torch.Generator().manual_seed(5))
    fan_out = adj[:, 0].sum(1).numpy()
    law = binom.pmf(np.arange(cap + 1), leaves, p2)
    law[cap] += binom.sf(cap, leaves, p2)
    assert np.max(np.abs(np.bincount(fan_out, minlength=cap + 1) / draws - law)) < 0.01
    inclusion = torch.zeros(leaves + 1).index_add_(0, nodes[nodes >= 0], torch.ones(int((nodes >= 0).sum())))
    expected = float(np.sum(np.arange(cap + 1) * law)) / leaves
    assert np.max(np.abs(inclusion[1:].numpy() / draws - expected)) < 0.015


def test_expand_is_deterministic_for_a_seed():
    n = 100
    arcs = prepare_structured_graph(_random_graph(n, 400, seed=1), num_nodes=n, out_degree_bound=5, seed=1)
    sampler = StructuredSampler(arcs, num_nodes=n, radius=2, edge_keep=0.5)
    roots = torch.arange(n)
    first = sampler.expand(roots, torch.Generator().manual_seed(8))
    second = sampler.expand(roots, torch.Generator().manual_seed(8))
    other = sampler.expand(roots, torch.Generator().manual_seed(9))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert not torch.equal(first[1], other[1])
    empty_nodes, empty_adj = sampler.expand(torch.empty(0, dtype=torch.int64), torch.Generator())
    assert empty_nodes.shape == (0, sampler.width) and empty_adj.shape == (0, sampler.width, sampler.width)


def test_prepared_graph_is_the_symmetrised_graph_with_bounded_degrees():
    n = 120
    edges = _random_graph(n, 700, seed=3, hubs=5)
    src, dst = edges
    plain = edges[:, src != dst]
    symmetric = set(zip(*plain.tolist(), strict=True)) | set(zip(*plain.flip(0).tolist(), strict=True))

    uncapped = prepare_structured_graph(edges, num_nodes=n, out_degree_bound=n, seed=0)
    assert set(zip(*uncapped.tolist(), strict=True)) == symmetric and uncapped.size(1) == len(symmetric)

    arcs = prepare_structured_graph(edges, num_nodes=n, out_degree_bound=4, seed=6)
    pairs = list(zip(*arcs.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs) and set(pairs) <= symmetric
    assert not bool((arcs[0] == arcs[1]).any())
    assert int(torch.bincount(arcs[0], minlength=n).max()) <= 4
    assert int(torch.bincount(uncapped[0], minlength=n).max()) > 4  # the cap bound somewhere
    assert torch.equal(arcs, prepare_structured_graph(edges.flip(1), num_nodes=n, out_degree_bound=4, seed=6))
    assert not torch.equal(arcs, prepare_structured_graph(edges, num_nodes=n, out_degree_bound=4, seed=7))

    both = prepare_structured_graph(edges, num_nodes=n, out_degree_bound=4, seed=6, in_degree_cap=3)
    assert int(torch.bincount(both[1], minlength=n).max()) <= 3
    assert int(torch.bincount(both[0], minlength=n).max()) <= 4
    in_only = prepare_structured_graph(edges, num_nodes=n, out_degree_bound=n, seed=6, in_degree_cap=3)
    assert int(torch.bincount(in_only[1], minlength=n).max()) == 3
    assert set(zip(*in_only.tolist(), strict=True)) <= symmetric


def test_bad_inputs_are_refused_clearly():
    arcs = prepare_structured_graph(_random_graph(10, 30, seed=0), num_nodes=10, out_degree_bound=3, seed=0)
    with pytest.raises(ValueError, match=r"edge_keep \(p2\)"):
        StructuredSampler(arcs, num_nodes=10, edge_keep=0.0)
    with pytest.raises(ValueError, match=r"edge_keep \(p2\)"):
        StructuredSampler(arcs, num_nodes=10, edge_keep=1.5)
    with pytest.raises(ValueError, match=r"limit of 2 hops.*1,221"):
        StructuredSampler(arcs, num_nodes=10, radius=3, caps=(20, 10, 5))
    with pytest.raises(ValueError, match="radius"):
        StructuredSampler(arcs, num_nodes=10, radius=0)
    with pytest.raises(ValueError, match="each of the 2 hops"):
        StructuredSampler(arcs, num_nodes=10, radius=2, caps=(20,))
    with pytest.raises(ValueError, match=r"caps\[1\]"):
        StructuredSampler(arcs, num_nodes=10, radius=2, caps=(20, 0))
    with pytest.raises(ValueError, match="self-loops"):
        StructuredSampler(torch.tensor([[1], [1]]), num_nodes=10)
    with pytest.raises(ValueError, match="duplicates"):
        StructuredSampler(torch.tensor([[1, 1], [2, 2]]), num_nodes=10)
    sampler = StructuredSampler(arcs, num_nodes=10, radius=2)
    for roots in (torch.tensor([0, 10]), torch.tensor([-1])):
        with pytest.raises(ValueError, match=r"roots has node ids outside \[0, num_nodes=10\)"):
            sampler.expand(roots, torch.Generator())
    with pytest.raises(ValueError, match="int64"):
        sampler.expand(torch.tensor([0.0]), torch.Generator())
    with pytest.raises(ValueError, match="outside"):
        prepare_structured_graph(torch.tensor([[0], [10]]), num_nodes=10, out_degree_bound=3, seed=0)
    with pytest.raises(ValueError, match="out_degree_bound"):
        prepare_structured_graph(arcs, num_nodes=10, out_degree_bound=0, seed=0)
    with pytest.raises(ValueError, match="in_degree_cap"):
        prepare_structured_graph(arcs, num_nodes=10, out_degree_bound=3, seed=0, in_degree_cap=0)
    with pytest.raises(ValueError, match="seed"):
        prepare_structured_graph(arcs, num_nodes=10, out_degree_bound=3, seed=-1)


@pytest.mark.parametrize("layer", ["sage", "gin"])
def test_batches_train_a_subgraph_gnn_with_the_suites_dp_sgd_loop(layer):
    n, features, classes = 50, 6, 3
    arcs = prepare_structured_graph(_random_graph(n, 200, seed=2), num_nodes=n, out_degree_bound=5, seed=0)
    sampler = StructuredSampler(arcs, num_nodes=n, radius=2, edge_keep=0.5, caps=(4, 3))
    x, y = torch.randn(n, features), torch.randint(0, classes, (n,))
    train_nodes, sampling = torch.arange(0, n, 2), torch.Generator().manual_seed(3)

    def batch_fn(indices: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
        roots = train_nodes[indices]
        nodes, adj = sampler.expand(roots, sampling)
        x_local, adj_float, mask = gather_structured(nodes, adj, x)
        assert torch.equal(x_local[:, 0], x[roots]) and adj_float.dtype == x.dtype
        assert not bool(x_local[~mask].any())
        return (x_local, adj_float, mask), y[roots]

    model = GraphReadout(SubgraphGNN(features, 8, classes, layer=layer, num_layers=2), x, arcs)
    before = [p.detach().clone() for p in model.parameters()]
    stats = train_model(
        model,
        batch_fn=batch_fn,
        batches=poisson_batches(
            len(train_nodes), sampling_rate=0.4, steps=3, generator=torch.Generator().manual_seed(1)
        ),
        optim=OptimConfig(optimizer="adam", lr=0.01),
        privacy=PrivacyConfig(clip_norm=1.0, noise_std=0.1, expected_batch_size=10.0, steps=3),
        generator=torch.Generator().manual_seed(0),
        device="cpu",
    )
    assert stats.steps == 3
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
