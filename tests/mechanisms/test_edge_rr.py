from __future__ import annotations

import math

import pytest
import torch

from nodedp.mechanisms.edge_rr import flip_probability, randomize_adjacency


def _random_graph(num_nodes: int, num_pairs: int, *, undirected: bool, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(num_nodes, (num_pairs,), generator=g)
    dst = torch.randint(num_nodes, (num_pairs,), generator=g)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if undirected:
        src, dst = torch.cat([src, dst]), torch.cat([dst, src])
    keys = torch.unique(src * num_nodes + dst)
    return torch.stack([keys // num_nodes, keys % num_nodes])


def _pairs(edge_index: torch.Tensor, num_nodes: int, *, undirected: bool) -> set[int]:
    src, dst = edge_index.tolist()
    return {min(s, d) * num_nodes + max(s, d) if undirected else s * num_nodes + d for s, d in zip(src, dst)}


@pytest.mark.parametrize("undirected", [True, False])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_entries_flip_at_the_randomized_response_rate(undirected, epsilon):
    n = 600
    edges = _random_graph(n, 4000, undirected=undirected)
    out = randomize_adjacency(
        edges, num_nodes=n, epsilon=epsilon, undirected=undirected, generator=torch.Generator().manual_seed(1)
    )
    before, after = _pairs(edges, n, undirected=undirected), _pairs(out, n, undirected=undirected)
    total = n * (n - 1) // 2 if undirected else n * (n - 1)
    p = flip_probability(epsilon)
    assert p == pytest.approx(1 / (1 + math.exp(epsilon)))
    kept = len(before & after) / len(before)
    appeared = len(after - before) / (total - len(before))
    # 5 binomial standard deviations
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / len(before))
    assert abs(appeared - p) < 5 * math.sqrt(p * (1 - p) / (total - len(before)))
    assert bool((out[0] != out[1]).all())
    if undirected:  # both directions of every output edge, each once
        assert _pairs(out.flip(0), n, undirected=False) == _pairs(out, n, undirected=False)
        assert out.size(1) == 2 * len(after)


def test_same_generator_state_same_output_and_larger_epsilon_keeps_more():
    n = 300
    edges = _random_graph(n, 1500, undirected=True)
    a = randomize_adjacency(
        edges, num_nodes=n, epsilon=1.0, undirected=True, generator=torch.Generator().manual_seed(3)
    )
    b = randomize_adjacency(
        edges, num_nodes=n, epsilon=1.0, undirected=True, generator=torch.Generator().manual_seed(3)
    )
    assert torch.equal(a, b)
    loose = randomize_adjacency(
        edges, num_nodes=n, epsilon=8.0, undirected=True, generator=torch.Generator().manual_seed(3)
    )
    before = _pairs(edges, n, undirected=True)
    assert len(before ^ _pairs(loose, n, undirected=True)) < len(before ^ _pairs(a, n, undirected=True))


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.inf, math.nan])
def test_impossible_epsilons_are_refused(epsilon):
    with pytest.raises(ValueError, match="finite ε > 0"):
        flip_probability(epsilon)
