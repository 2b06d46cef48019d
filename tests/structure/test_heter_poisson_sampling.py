"""HeterPoisson's step sampler: the suite's mode against the accountant's law, and the public code's mode as it is.

Monte-Carlo tests run many independent steps in one ``sample`` call: the graph is made of disjoint copies of a
small component, and a node's law in one step depends only on its own copy (the roots of other copies never list
it, and root removal acts on members only), so each copy is one step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import Tensor

from nodedp.accounting.heter_poisson import heter_poisson_mixture
from nodedp.data import bound_undirected_degree
from nodedp.models import SubgraphGNN
from nodedp.models.subgraph_gnn import GraphReadout
from nodedp.structure import Subgraphs
from nodedp.structure.heter_poisson_sampling import PAPER_MAX_NEIGHBOURS, HeterPoissonSampler
from nodedp.train import OptimConfig, PrivacyConfig, poisson_batches, train_model

# The Monte-Carlo component: x (0) is listed by v1..v4 (2..5), y (1) by v1, v2; the graph is symmetric.
COMPONENT = [(0, 2), (0, 3), (0, 4), (0, 5), (1, 2), (1, 3)]
COMPONENT_SIZE, X, Y = 6, 0, 1
D, M, Q = 4, 2, 0.3  # keep probability min(1, M/D) = 0.5; a listing root samples and keeps a node w.p. 0.15
COPIES = 40_000  # one step each; the largest standard error of a weight is sqrt(0.25/40k) = 0.0025
TOLERANCE = 0.01


def _symmetric(pairs: list[tuple[int, int]]) -> Tensor:
    src, dst = torch.tensor(pairs, dtype=torch.int64).T
    return torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])


def _copies(component: Tensor, size: int, copies: int) -> Tensor:
    """``copies`` disjoint copies of ``component`` (a [2, E] edge list on ``size`` nodes)."""
    offsets = torch.arange(copies).repeat_interleave(component.size(1)) * size
    return component.repeat(1, copies) + offsets


def _law(sampler: HeterPoissonSampler, node: int, *, seed: int) -> tuple[Tensor, Tensor]:
    """One step on all copies: (is ``node`` a root, how many other subgraphs hold it) for every copy."""
    generator = torch.Generator().manual_seed(seed)
    (indices,) = poisson_batches(sampler.num_nodes, sampling_rate=Q, steps=1, generator=generator)
    roots = sampler.train_nodes[indices]
    nodes, _ = sampler.sample(roots, generator)
    appearances = torch.bincount(nodes[:, 1:][nodes[:, 1:] >= 0], minlength=sampler.num_nodes)
    is_root = torch.zeros(sampler.num_nodes, dtype=torch.bool)
    is_root[roots] = True
    ids = torch.arange(COPIES) * COMPONENT_SIZE + node
    return is_root[ids], appearances[ids]


def _empirical_weights(is_root: Tensor, count: Tensor, degree: int) -> np.ndarray:
    """The frequencies of the accountant's components: shift 0, ½ (root), 1..degree (neighbour count)."""
    rest = torch.bincount(count[~is_root], minlength=degree + 1).double() / count.numel()
    return np.concatenate(([rest[0].item(), is_root.double().mean().item()], rest[1:].numpy()))


@pytest.fixture(scope="module")
def copies_graph() -> Tensor:
    return _copies(_symmetric(COMPONENT), COMPONENT_SIZE, COPIES)


def test_suite_mode_follows_the_accountants_mixture_at_d_equal_d_max(copies_graph):
    n = COMPONENT_SIZE * COPIES
    sampler = HeterPoissonSampler(copies_graph, num_nodes=n, train_nodes=torch.arange(n), neighbours=M, degree_bound=D)
    is_root, count = _law(sampler, X, seed=0)
    assert int(count[is_root].max()) == 0  # a sampled root is in no other subgraph
    shifts, weights = heter_poisson_mixture(sampling_rate=Q, neighbours=M, degree=D, degree_bound=D)
    assert list(shifts) == [0.0, 0.5, 1.0, 2.0, 3.0, 4.0]
    empirical = _empirical_weights(is_root, count, D)
    assert np.abs(empirical - weights).max() < TOLERANCE, (empirical, weights)


def test_suite_mode_a_node_listed_by_fewer_roots_is_stochastically_below(copies_graph):
    n = COMPONENT_SIZE * COPIES
    sampler = HeterPoissonSampler(copies_graph, num_nodes=n, train_nodes=torch.arange(n), neighbours=M, degree_bound=D)
    is_root, count = _law(sampler, Y, seed=1)
    assert int(count[is_root].max()) == 0
    # y, listed by d = 2 < D roots, keeps the public rate M/D (not M/d = 1): Bernoulli(q) root, else Bin(2, qM/D).
    _, weights = heter_poisson_mixture(sampling_rate=Q, neighbours=M, degree=2, degree_bound=D)
    empirical = _empirical_weights(is_root, count, 2)
    assert np.abs(empirical - weights).max() < TOLERANCE, (empirical, weights)
    # Dominated by the law at D: every tail P(shift >= s) is at most the accountant's.
    _, worst = heter_poisson_mixture(sampling_rate=Q, neighbours=M, degree=D, degree_bound=D)
    worst_tails = np.cumsum(worst[::-1])[::-1]  # shifts 0, ½, 1, ..., D in order
    tails = np.cumsum(empirical[::-1])[::-1]
    assert np.all(tails <= worst_tails[: tails.size] + TOLERANCE)
    assert tails[2] < worst_tails[2] - 0.05  # strictly below at shift >= 1: 0.7·(1 − 0.85²) vs 0.7·(1 − 0.85⁴)


def test_paper_mode_leaves_a_root_in_subgraphs_earlier_in_the_batch(copies_graph):
    n = COMPONENT_SIZE * COPIES
    sampler = HeterPoissonSampler(copies_graph, num_nodes=n, train_nodes=torch.arange(n), neighbours=M, mode="paper")
    is_root, count = _law(sampler, X, seed=2)
    # Given k of v1..v4 sampled, x's place among the k + 1 is uniform, and each v_i before x keeps it w.p. M/d(x) = ½.
    missed = sum(
        math.comb(D, k) * Q**k * (1 - Q) ** (D - k) * sum(0.5**j for j in range(k + 1)) / (k + 1) for k in range(D + 1)
    )
    also_member = (count[is_root] > 0).double().mean().item()
    assert abs(also_member - (1 - missed)) < 0.02, (also_member, 1 - missed)


def _bounded_graph(seed: int, *, num_nodes: int = 300, isolated: int = 20) -> tuple[Tensor, Tensor, int]:
    """A random symmetric graph on ``num_nodes`` (the last ``isolated`` without edges) bounded to D = 5; training
    nodes: two thirds of all, the isolated ones included."""
    generator = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src, dst = torch.randint(active, (2, 6 * active), generator=generator)
    pairs = torch.unique(torch.stack([torch.minimum(src, dst), torch.maximum(src, dst)])[:, src != dst], dim=1)
    both = torch.cat([pairs, pairs.flip(0)], dim=1)
    bounded = bound_undirected_degree(both, num_nodes=num_nodes, max_degree=5, seed=seed)
    train = torch.randperm(active, generator=generator)[: 2 * num_nodes // 3 - isolated]
    return bounded, torch.cat([train, torch.arange(active, num_nodes)]).sort().values, num_nodes


def test_suite_mode_subgraphs_are_the_padded_dense_format_and_keep_the_premises():
    edges, train, n = _bounded_graph(0)
    sampler = HeterPoissonSampler(edges, num_nodes=n, train_nodes=train, neighbours=2, degree_bound=5)
    arcs = set(zip(*edges.tolist(), strict=True))
    isolated = set(range(n - 20, n))
    generator = torch.Generator().manual_seed(3)
    for indices in poisson_batches(train.numel(), sampling_rate=0.5, steps=20, generator=generator):
        roots = train[indices]
        nodes, adj = sampler.sample(roots, generator)
        Subgraphs(nodes=nodes, adj=adj, num_layers=1, max_degree=5)  # the suite's format checks pass
        assert nodes.shape == (roots.numel(), 6) and torch.equal(nodes[:, 0], roots)
        members = nodes[:, 1:] >= 0
        assert torch.equal(adj[:, 0, 1:], members) and not adj[:, 1:].any() and not adj[:, :, 0].any()
        assert torch.equal(members, members.sort(dim=1, descending=True).values)  # padding last
        present = nodes[:, 1:][members]
        assert not torch.isin(present, roots).any()  # no sampled root is a member of any subgraph
        rows = members.nonzero()[:, 0]
        assert all((r, m) in arcs for r, m in zip(roots[rows].tolist(), present.tolist(), strict=True))
        assert not members[torch.isin(roots, torch.tensor(sorted(isolated)))].any()  # isolated roots: none
        for row in nodes[:, 1:].tolist():
            kept = [m for m in row if m >= 0]
            assert len(kept) == len(set(kept))


def test_suite_mode_is_deterministic_for_a_seed():
    edges, train, n = _bounded_graph(1)
    sampler = HeterPoissonSampler(edges, num_nodes=n, train_nodes=train, neighbours=1, degree_bound=5)
    runs = [sampler.sample(train, torch.Generator().manual_seed(seed)) for seed in (7, 7, 8)]
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    assert not torch.equal(runs[0][0], runs[2][0])


def test_paper_mode_collate_drops_only_roots_of_earlier_subgraphs():
    # 0 <-> 1 <-> 2; d(0) = d(2) = 1, d(1) = 2: at M = 2 the public keep probability M/d(u) keeps every arc.
    edges = _symmetric([(0, 1), (1, 2)])
    paper = HeterPoissonSampler(edges, num_nodes=3, train_nodes=torch.arange(3), neighbours=2, mode="paper")
    roots, generator = torch.tensor([0, 1]), torch.Generator().manual_seed(0)
    nodes, _ = paper.sample(roots, generator, batch_order=torch.tensor([0, 1]))
    assert nodes[0].tolist() == [0, 1]  # 1 is a later root: it stays in 0's subgraph
    assert nodes[1].tolist() == [1, 2]  # 0 is an earlier root: dropped from 1's
    nodes, _ = paper.sample(roots, generator, batch_order=torch.tensor([1, 0]))
    assert nodes.tolist() == [[0, -1, -1], [1, 2, 0]]  # 1's list in edge order: arcs (1, 2), then (1, 0)
    suite = HeterPoissonSampler(edges, num_nodes=3, train_nodes=torch.arange(3), neighbours=2, degree_bound=2)
    nodes, _ = suite.sample(roots, generator)
    assert nodes.tolist() == [[0, -1, -1], [1, 2, -1]]  # the suite drops every root everywhere


def test_paper_mode_default_order_is_random_and_drops_one_root_of_each_pair():
    pairs = 300
    edges = _copies(_symmetric([(0, 1)]), 2, pairs)
    paper = HeterPoissonSampler(
        edges, num_nodes=2 * pairs, train_nodes=torch.arange(2 * pairs), neighbours=1, mode="paper"
    )
    nodes, _ = paper.sample(torch.arange(2 * pairs), torch.Generator().manual_seed(4))
    first_keeps = nodes[0::2, 1] >= 0  # a kept b: a came first
    assert torch.equal(first_keeps, nodes[1::2, 1] < 0)  # exactly one of each pair keeps the other
    assert 0.4 < first_keeps.double().mean().item() < 0.6


def test_paper_mode_keep_probability_depends_on_the_private_degree():
    """Removing x (x -> w) changes the keep probability of w in v's subgraph, which does not contain x."""
    copies = 4000
    component = torch.tensor([[0, 1], [2, 2]])  # v = 0 and x = 1 list w = 2
    with_x = _copies(component, 3, copies)
    without_x = _copies(component[:, :1], 3, copies)
    train, roots = torch.arange(3 * copies), torch.arange(copies) * 3  # the step samples every v, never x
    kept = {}
    for name, edges in (("with", with_x), ("without", without_x)):
        paper = HeterPoissonSampler(edges, num_nodes=3 * copies, train_nodes=train, neighbours=1, mode="paper")
        nodes, _ = paper.sample(roots, torch.Generator().manual_seed(5))
        kept[name] = (nodes[:, 1] >= 0).double().mean().item()
    assert abs(kept["with"] - 0.5) < 0.05 and kept["without"] == 1.0  # M/d(w): 1/2 with x, 1/1 without
    # The suite's public rate min(1, M/D) is the same on both graphs: the same seed gives the same subgraphs.
    suite = [
        HeterPoissonSampler(edges, num_nodes=3 * copies, train_nodes=train, neighbours=1, degree_bound=2)
        for edges in (with_x, without_x)
    ]
    runs = [s.sample(roots, torch.Generator().manual_seed(5))[0] for s in suite]
    assert torch.equal(runs[0], runs[1])


def test_isolated_roots_get_m_fill_nodes_in_paper_mode_and_none_in_the_suite():
    n, train = 40, torch.arange(0, 40, 2)
    edges = _symmetric([(2 * i, 2 * i + 1) for i in range(10)])  # roots 20..38 (even) have no neighbour
    generator = torch.Generator().manual_seed(6)
    for inductive in (False, True):
        paper = HeterPoissonSampler(
            edges, num_nodes=n, train_nodes=train, neighbours=3, mode="paper", inductive=inductive
        )
        for root in range(20, 40, 2):
            nodes, adj = paper.sample(torch.tensor([root]), generator)
            assert nodes.shape == (1, 4) and adj[0, 0, 1:].all()
            if inductive:
                assert torch.isin(nodes[0, 1:], train).all()
        if inductive:  # with only training nodes admissible, the listing roots 0..18 are isolated too
            assert paper.sample(torch.tensor([0]), generator)[0].shape == (1, 4)
    suite = HeterPoissonSampler(edges, num_nodes=n, train_nodes=train, neighbours=3, degree_bound=2)
    nodes, adj = suite.sample(torch.arange(20, 40, 2), generator)
    assert (nodes[:, 1:] == -1).all() and not adj.any()


def test_paper_mode_lists_the_first_500_arcs_in_edge_order():
    n = 1 + 600
    targets = torch.randperm(600, generator=torch.Generator().manual_seed(7)) + 1
    edges = torch.stack([torch.zeros(600, dtype=torch.int64), targets])  # each target listed once: kept w.p. 1
    paper = HeterPoissonSampler(edges, num_nodes=n, train_nodes=torch.tensor([0]), neighbours=1, mode="paper")
    nodes, adj = paper.sample(torch.tensor([0]), torch.Generator().manual_seed(8))
    assert paper.max_width == 1 + PAPER_MAX_NEIGHBOURS
    assert nodes[0, 1:].tolist() == targets[:PAPER_MAX_NEIGHBOURS].tolist() and int(adj.sum()) == 500


def test_gather_and_one_private_training_run_take_the_batches_unchanged():
    edges, train, n = _bounded_graph(2)
    x, y = torch.randn(n, 4), torch.randint(3, (n,))
    sampler = HeterPoissonSampler(edges, num_nodes=n, train_nodes=train, neighbours=2, degree_bound=5)
    nodes, adj = sampler.sample(train[:7], torch.Generator().manual_seed(9))
    x_local, adj_f, mask = sampler.gather(nodes, adj, x)
    assert x_local.shape == (7, 6, 4) and adj_f.dtype == x.dtype and torch.equal(mask, nodes >= 0)
    assert torch.equal(x_local[mask], x[nodes[mask]]) and not x_local[~mask].any()
    gnn = SubgraphGNN(4, 8, 3, layer="sage", num_layers=1)
    generator = torch.Generator().manual_seed(10)
    stats = train_model(
        GraphReadout(gnn, x, edges),
        batch_fn=sampler.batch_fn(x, y, torch.Generator().manual_seed(11)),
        batches=poisson_batches(train.numel(), sampling_rate=0.1, steps=3, generator=generator),
        optim=OptimConfig(optimizer="adam", lr=0.01),
        privacy=PrivacyConfig(clip_norm=0.5, noise_std=1.0, expected_batch_size=0.1 * train.numel()),
        generator=generator,
        device="cpu",
    )
    assert stats.steps == 3 and np.isfinite(stats.final_loss)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"neighbours": 0}, "neighbours"),
        ({"degree_bound": 0}, "degree_bound"),
        ({"degree_bound": None}, "needs the public degree_bound"),
        ({"mode": "exact"}, "unknown sampler mode"),
        ({"degree_bound": 1}, "lists 2 nodes > degree_bound"),
        (
            {"edge_index": torch.tensor([[0, 3], [1, 1]]), "train_nodes": torch.tensor([0, 3]), "degree_bound": 1},
            "listed by 2 training nodes",
        ),
        ({"edge_index": torch.tensor([[0], [9]])}, "outside"),
        ({"train_nodes": torch.tensor([0, 0])}, "repeated"),
        ({"train_nodes": torch.tensor([0.0])}, "int64"),
    ],
)
def test_bad_construction_is_refused(kwargs, match):
    args = {
        "edge_index": torch.tensor([[0, 0, 3], [1, 2, 1]]),  # 0 lists 1 and 2, 3 (not training) lists 1
        "num_nodes": 4,
        "train_nodes": torch.tensor([0, 1]),
        "neighbours": 1,
        "degree_bound": 2,
        **kwargs,
    }
    with pytest.raises(ValueError, match=match):
        HeterPoissonSampler(**args)


@pytest.mark.parametrize("mode", ["suite", "paper"])
def test_bad_roots_are_refused(mode):
    edges = _symmetric([(0, 1), (1, 2)])
    sampler = HeterPoissonSampler(
        edges, num_nodes=4, train_nodes=torch.tensor([0, 1, 2]), neighbours=1, degree_bound=2, mode=mode
    )
    generator = torch.Generator().manual_seed(0)
    for roots, match in (
        (torch.tensor([4]), "outside"),
        (torch.tensor([-1]), "outside"),
        (torch.tensor([3]), "training nodes"),
        (torch.tensor([1, 1]), "repeated"),
        (torch.tensor([0.0]), "int64"),
    ):
        with pytest.raises(ValueError, match=match):
            sampler.sample(roots, generator)
    bad_order = "batch_order applies" if mode == "suite" else "permutation"
    with pytest.raises(ValueError, match=bad_order):
        sampler.sample(torch.tensor([0, 1]), generator, batch_order=torch.tensor([0, 0]))


@pytest.mark.parametrize("mode", ["suite", "paper"])
def test_a_dense_batch_over_the_size_limit_is_refused(mode):
    edges = _symmetric([(0, 1), (1, 2)])
    sampler = HeterPoissonSampler(
        edges, num_nodes=3, train_nodes=torch.arange(3), neighbours=1, degree_bound=2, mode=mode, max_dense_entries=2
    )
    with pytest.raises(ValueError, match="max_dense_entries"):
        sampler.sample(torch.arange(3), torch.Generator().manual_seed(0))
