from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nodedp.data.degree import bound_out_degree
from nodedp.mechanisms import NAP, nap_aggregate, nap_sensitivity

D = 4
R = 1.5


def _heavy_tailed_graph(num_nodes: int, *, seed: int, undirected: bool) -> torch.Tensor:
    """Zipf out-degrees, Pareto-popular targets, no self-loops or duplicates."""
    rng = np.random.default_rng(seed)
    popularity = rng.pareto(1.2, num_nodes) + 1.0
    out_degree = np.minimum(rng.zipf(1.8, num_nodes), num_nodes - 1)
    src, dst = [], []
    for u in range(num_nodes):
        weights = popularity.copy()
        weights[u] = 0.0
        targets = rng.choice(num_nodes, size=out_degree[u], replace=False, p=weights / weights.sum())
        src += [u] * len(targets)
        dst += targets.tolist()
    pairs = np.array([src, dst])
    if undirected:
        pairs = np.concatenate([pairs, pairs[::-1]], axis=1)
    pairs = np.unique(pairs, axis=1)
    return torch.from_numpy(pairs).to(torch.int64)


def _features(num_nodes: int, *, seed: int) -> torch.Tensor:
    x = torch.randn(num_nodes, 8, generator=torch.Generator().manual_seed(seed))
    x[:3] = 0.0  # zero rows must stay zero through the normalization
    return x


def _remove_node(x: torch.Tensor, edge_index: torch.Tensor, v: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The node-level neighbour: v's features zeroed, every edge touching v dropped, the rest kept as sampled."""
    x2 = x.clone()
    x2[v] = 0.0
    keep = (edge_index[0] != v) & (edge_index[1] != v)
    return x2, edge_index[:, keep]


def test_aggregate_matches_dense_normalized_sum_then_clip() -> None:
    n = 30
    edge_index = _heavy_tailed_graph(n, seed=0, undirected=False)
    x = _features(n, seed=0).double()
    adjacency = torch.zeros(n, n, dtype=torch.float64)
    adjacency[edge_index[1], edge_index[0]] = 1.0  # row i sums over j -> i
    norms = x.norm(dim=1, keepdim=True)
    normalized = torch.where(norms > 0, x / norms.clamp_min(1e-300), torch.zeros_like(x))
    summed = adjacency @ normalized
    expected = summed * torch.clamp(R / summed.norm(dim=1, keepdim=True).clamp_min(1e-300), max=1.0)
    out = nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)
    assert torch.allclose(out, expected, atol=1e-12)
    assert (out.norm(dim=1) <= R + 1e-12).all()
    # Row normalization makes the result invariant to the scale of each input row.
    scales = torch.rand(n, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 10 + 0.1
    assert torch.allclose(nap_aggregate(x * scales, edge_index, num_nodes=n, row_clip=R), out, atol=1e-12)


@pytest.mark.parametrize("undirected", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_node_removal_changes_aggregate_within_node_sensitivity(seed: int, undirected: bool) -> None:
    n = 60
    full = _heavy_tailed_graph(n, seed=seed, undirected=undirected)
    edge_index = bound_out_degree(full, num_nodes=n, max_degree=D, seed=seed)
    assert full.size(1) > edge_index.size(1)  # the bound binds on these graphs
    x = _features(n, seed=seed)
    bound = nap_sensitivity(level="node", max_degree=D, row_clip=R, undirected=undirected)
    assert bound == pytest.approx(math.sqrt(D + R**2))
    before = nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)
    largest = 0.0
    for v in range(n):
        x2, edges2 = _remove_node(x, edge_index, v)
        change = nap_aggregate(x2, edges2, num_nodes=n, row_clip=R) - before
        assert change.norm().item() <= bound * (1 + 1e-5)
        largest = max(largest, change.norm().item())
        changed = set(torch.nonzero(change.norm(dim=1) > 1e-6).flatten().tolist())
        out_neighbours = set(edge_index[1, edge_index[0] == v].tolist())
        assert changed <= out_neighbours | {v}
        assert len(changed) <= D + 1
    # Tight-ish: some hub with D unclipped out-neighbours and a clipped own row
    # comes close (√D alone, the reference's claim, is 0.8 of the bound).
    assert largest >= 0.9 * bound


def test_node_sensitivity_is_attained() -> None:
    # Hub 0 keeps D out-edges to leaves whose only in-neighbour is the hub, and
    # has many in-neighbours, so its own row sits at the clip R.
    n = 1 + D + 10
    leaves = list(range(1, D + 1))
    feeders = list(range(D + 1, n))
    edge_index = torch.tensor([[0] * D + feeders, leaves + [0] * len(feeders)], dtype=torch.int64)
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(0)).abs()  # aligned rows: the sum is long
    before = nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)
    assert before[0].norm().item() == pytest.approx(R)
    x2, edges2 = _remove_node(x, edge_index, 0)
    change = (nap_aggregate(x2, edges2, num_nodes=n, row_clip=R) - before).norm().item()
    assert change == pytest.approx(math.sqrt(D + R**2), rel=1e-5)


@pytest.mark.parametrize("undirected", [True, False])
def test_edge_removal_changes_aggregate_within_edge_sensitivity(undirected: bool) -> None:
    n = 40
    edge_index = _heavy_tailed_graph(n, seed=3, undirected=undirected)
    x = _features(n, seed=3)
    bound = nap_sensitivity(level="edge", max_degree=None, row_clip=R, undirected=undirected)
    assert bound == (math.sqrt(2) if undirected else 1.0)
    before = nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)
    largest = 0.0
    for u, w in edge_index.t().tolist():
        if undirected and u > w:
            continue  # each undirected edge once; both of its directions go
        gone = (edge_index[0] == u) & (edge_index[1] == w)
        if undirected:
            gone |= (edge_index[0] == w) & (edge_index[1] == u)
        change = (nap_aggregate(x, edge_index[:, ~gone], num_nodes=n, row_clip=R) - before).norm().item()
        assert change <= bound * (1 + 1e-5)
        largest = max(largest, change)
    assert largest >= 0.9 * bound  # rows far from the clip lose a full unit vector


def test_sensitivity_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="max_degree"):
        nap_sensitivity(level="node", max_degree=None, row_clip=R, undirected=True)
    with pytest.raises(ValueError, match="'node', 'edge'"):
        nap_sensitivity(level="graph", max_degree=D, row_clip=R, undirected=True)
    with pytest.raises(ValueError, match="row_clip"):
        nap_sensitivity(level="node", max_degree=D, row_clip=0.0, undirected=True)
    with pytest.raises(ValueError, match="row_clip must be a finite number"):  # R is part of Δ_node
        nap_sensitivity(level="node", max_degree=D, row_clip=math.inf, undirected=True)
    assert nap_sensitivity(level="edge", max_degree=None, row_clip=math.inf, undirected=True) == math.sqrt(2.0)


def test_an_infinite_row_clip_does_not_clip() -> None:
    edge_index = _heavy_tailed_graph(50, seed=2, undirected=True)
    x = torch.randn(50, 8, generator=torch.Generator().manual_seed(2))
    unclipped = nap_aggregate(x, edge_index, num_nodes=50, row_clip=math.inf)
    assert unclipped.norm(dim=1).max() > 1.5
    clipped = nap_aggregate(x, edge_index, num_nodes=50, row_clip=1.5)
    assert clipped.norm(dim=1).max() <= 1.5 + 1e-5
    small = unclipped.norm(dim=1) <= 1.5
    assert torch.allclose(clipped[small], unclipped[small])


@pytest.mark.parametrize(("level", "expected_delta"), [("node", math.sqrt(D + R**2)), ("edge", math.sqrt(2.0))])
def test_noise_added_matches_the_declared_std(level: str, expected_delta: float) -> None:
    n = 20_000
    edge_index = _heavy_tailed_graph(200, seed=4, undirected=True)  # the rest are isolated nodes
    x = torch.randn(n, 16, generator=torch.Generator().manual_seed(4))
    nap = NAP(level=level, row_clip=R, noise_multiplier=0.7, max_degree=D)
    assert nap.sensitivity == pytest.approx(expected_delta)
    assert nap.noise_std == pytest.approx(0.7 * expected_delta)
    noisy = nap(x, edge_index, generator=torch.Generator().manual_seed(5))
    noise = noisy - nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)
    assert noise.std().item() == pytest.approx(0.7 * expected_delta, rel=0.02)
    assert noise.std().item() > 0


def test_calls_count_noisy_queries_and_noise_is_reproducible() -> None:
    n = 50
    edge_index = _heavy_tailed_graph(n, seed=5, undirected=True)
    x = _features(n, seed=5)
    nap = NAP(level="node", row_clip=R, noise_multiplier=1.0, max_degree=D)
    assert nap.calls == 0
    first = nap(x, edge_index, generator=torch.Generator().manual_seed(0))
    nap_aggregate(x, edge_index, num_nodes=n, row_clip=R)  # not a noisy query
    assert nap.calls == 1
    again = nap(x, edge_index, generator=torch.Generator().manual_seed(0))
    other = nap(x, edge_index, generator=torch.Generator().manual_seed(1))
    assert nap.calls == 3
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_non_private_nap_is_the_exact_aggregate() -> None:
    n = 50
    edge_index = _heavy_tailed_graph(n, seed=6, undirected=True)
    x = _features(n, seed=6)
    nap = NAP(level="none", row_clip=R, noise_multiplier=0.0)
    assert nap.noise_std == 0.0 and nap.sensitivity is None
    out = nap(x, edge_index, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out, nap_aggregate(x, edge_index, num_nodes=n, row_clip=R))
    assert nap.calls == 1


def test_zero_noise_only_when_non_private() -> None:
    with pytest.raises(ValueError, match="noise_multiplier > 0"):
        NAP(level="node", row_clip=R, noise_multiplier=0.0, max_degree=D)
    with pytest.raises(ValueError, match="noise_multiplier > 0"):
        NAP(level="edge", row_clip=R, noise_multiplier=-1.0)
    with pytest.raises(ValueError, match="must be 0"):
        NAP(level="none", row_clip=R, noise_multiplier=0.5)
    with pytest.raises(ValueError, match="valid choices"):
        NAP(level="nodes", row_clip=R, noise_multiplier=1.0, max_degree=D)
    with pytest.raises(ValueError, match="max_degree"):
        NAP(level="node", row_clip=R, noise_multiplier=1.0)
