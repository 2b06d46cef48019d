"""The references of nodedp.structure.appr: the per-source ISTA loop and exact PPR."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import Tensor

from nodedp.structure import appr_ista_reference, exact_ppr
from tests.structure._kkt import ALPHA, assert_kkt, dense_problem, optimum_on_support, random_graph


@pytest.fixture(scope="module")
def graph() -> tuple[Tensor, int]:
    return random_graph(120, avg_degree=6.0, isolated=3, seed=0), 120


def test_reference_satisfies_kkt_conditions_from_below(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    q_matrix, sqrt_d = dense_problem(edge_index, n)
    sources = torch.cat([torch.arange(0, n, 7), torch.tensor([118, 119])])  # with isolated nodes
    for rho in (1e-2, 1e-3):
        tight = appr_ista_reference(edge_index, num_nodes=n, sources=sources, rho=rho, tol=1e-10)
        optimum = optimum_on_support(tight, sources, q_matrix, sqrt_d, rho=rho)
        previous = np.zeros_like(optimum)
        for tol in (1e-1, 1e-2, 1e-4):
            p = appr_ista_reference(edge_index, num_nodes=n, sources=sources, alpha=ALPHA, rho=rho, tol=tol)
            assert_kkt(p, sources, q_matrix, sqrt_d, rho=rho, tol=tol)
            assert np.all(p[np.arange(sources.numel()), sources.numpy()] > 0)  # every source is in its own support
            # ISTA's iterates only grow: a smaller tol stops later on the same path, still below the optimum.
            assert np.all(p >= previous) and np.all(p <= optimum + 1e-15)
            assert np.any(p > previous)
            previous = p


def test_reference_converges_to_exact_ppr_from_below_as_rho_vanishes(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([1, 30, 118])
    exact = exact_ppr(edge_index, num_nodes=n, sources=sources, alpha=ALPHA)
    errors = []
    for rho in (1e-2, 1e-3, 1e-4, 1e-6):
        p = appr_ista_reference(edge_index, num_nodes=n, sources=sources, alpha=ALPHA, rho=rho)
        assert np.all(p <= exact + 1e-12)  # the ℓ1 solutions stay below the ρ = 0 one
        errors.append(np.abs(p - exact).sum(1).max())
    assert all(a > b for a, b in itertools.pairwise(errors))
    assert errors[-1] < 1e-3


def test_exact_ppr_is_the_lazy_walk_stationary_distribution(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([2, 119])
    p = exact_ppr(edge_index, num_nodes=n, sources=sources, alpha=ALPHA)
    adj = np.zeros((n, n))
    adj[edge_index[0].numpy(), edge_index[1].numpy()] = 1.0
    adj[np.diag_indices(n)] += adj.sum(1) == 0
    walk = (np.eye(n) + adj / adj.sum(0, keepdims=True)) / 2  # lazy walk, column-stochastic
    for row, s in enumerate(sources.tolist()):
        seed = np.eye(n)[s]
        np.testing.assert_allclose(p[row], ALPHA * seed + (1 - ALPHA) * walk @ p[row], atol=1e-12)
        assert p[row].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p[1], np.eye(n)[119], atol=1e-15)  # an isolated node keeps all mass


def test_reference_isolated_source_and_high_degree_source() -> None:
    # A star with 12 leaves plus isolated node 13: with ρ = 0.1 the hub has d ≥ 1/ρ, so q = 0.
    leaves = torch.arange(1, 13)
    hub = torch.zeros(12, dtype=torch.int64)
    edge_index = torch.cat([torch.stack([hub, leaves]), torch.stack([leaves, hub])], dim=1)
    rho, tol = 0.1, 1e-4
    p = appr_ista_reference(edge_index, num_nodes=14, sources=torch.tensor([0, 13, 1]), rho=rho, tol=tol)
    assert np.all(p[0] == 0)
    assert np.flatnonzero(p[1]).tolist() == [13]
    assert 1 - rho * (1 + tol) <= p[1, 13] <= 1 - rho  # (1 − ρ) e_s, within ISTA's tolerance
    assert p[2, 13] == 0 and p[2, 1] > 0


def test_invalid_inputs_are_refused(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    one = torch.tensor([0])
    for name, bad in (("alpha", 1.0), ("rho", -1.0), ("tol", -1.0), ("max_iter", 0)):
        with pytest.raises(ValueError, match=name):
            appr_ista_reference(edge_index, num_nodes=n, sources=one, **{name: bad})
    with pytest.raises(ValueError, match="sources"):
        appr_ista_reference(edge_index, num_nodes=n, sources=torch.tensor([n]))
    with pytest.raises(ValueError, match="sources"):
        appr_ista_reference(edge_index, num_nodes=n, sources=torch.tensor([[0]]))
    with pytest.raises(ValueError, match="edge_index"):
        appr_ista_reference(edge_index, num_nodes=10, sources=one)
    with pytest.raises(RuntimeError, match="max_iter=2"):
        appr_ista_reference(edge_index, num_nodes=n, sources=one, rho=1e-4, max_iter=2)
    with pytest.raises(ValueError, match="alpha"):
        exact_ppr(edge_index, num_nodes=n, sources=one, alpha=0.0)
    with pytest.raises(ValueError, match="sources"):
        exact_ppr(edge_index, num_nodes=n, sources=torch.tensor([-1]))
