from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import Tensor

from nodedp.structure import appr, appr_ista, appr_ista_reference, exact_ppr

ALPHA = 0.25


def _random_graph(num_nodes: int, *, avg_degree: float, isolated: int, seed: int) -> Tensor:
    """Undirected G(n, p) graph (both directions stored) whose last ``isolated`` nodes have no edges."""
    gen = torch.Generator().manual_seed(seed)
    connected = num_nodes - isolated
    upper = torch.triu(torch.rand(connected, connected, generator=gen) < avg_degree / connected, diagonal=1)
    src, dst = upper.nonzero().T
    return torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)


def _degrees(edge_index: Tensor, num_nodes: int) -> np.ndarray:
    """Degrees under appr's conventions: distinct neighbours, 1 for an isolated node (its self-loop)."""
    deg = np.bincount(edge_index[0].numpy(), minlength=num_nodes).astype(np.float64)
    return np.where(deg == 0, 1.0, deg)


def _gradient(edge_index: Tensor, num_nodes: int, q: np.ndarray, source: int) -> np.ndarray:
    """∇f(q) = Qq − α D^{-1/2} e_s, from a dense Q built independently of the module."""
    adj = np.zeros((num_nodes, num_nodes))
    adj[edge_index[0].numpy(), edge_index[1].numpy()] = 1.0
    deg = _degrees(edge_index, num_nodes)
    adj[np.diag_indices(num_nodes)] += adj.sum(1) == 0
    norm = adj / np.sqrt(np.outer(deg, deg))
    q_matrix = (1 + ALPHA) / 2 * np.eye(num_nodes) - (1 - ALPHA) / 2 * norm
    grad = q_matrix @ q
    grad[source] -= ALPHA / np.sqrt(deg[source])
    return grad


@pytest.fixture(scope="module")
def graph() -> tuple[Tensor, int]:
    return _random_graph(120, avg_degree=6.0, isolated=3, seed=0), 120


def test_solution_satisfies_kkt_conditions(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    rho, tol = 1e-3, 1e-4
    sources = torch.arange(0, n, 7)
    p = appr_ista(edge_index, num_nodes=n, sources=sources, alpha=ALPHA, rho=rho, tol=tol).to_dense().numpy()
    sqrt_d = np.sqrt(_degrees(edge_index, n))
    for row, s in enumerate(sources.tolist()):
        q = p[row] / sqrt_d
        grad = _gradient(edge_index, n, q, s)
        bound = rho * ALPHA * sqrt_d
        slack = 1e-12
        on = q > 0
        assert on[s]
        # q_i > 0: ∇f_i = −ρα√d_i (ISTA stops within relative tol); q_i = 0: |∇f_i| ≤ ρα√d_i.
        assert np.all(grad[on] <= -bound[on] + slack)
        assert np.all(grad[on] >= -(1 + tol) * bound[on] - slack)
        assert np.all(np.abs(grad[~on]) <= (1 + tol) * bound[~on] + slack)


def test_matches_the_per_source_reference_within_the_tolerance(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([5, 0, 117, 5, 64, 119])  # unsorted, repeated, isolated (117, 119)
    sqrt_d = np.sqrt(_degrees(edge_index, n))
    rho, tol = 1e-3, 1e-4
    batched = appr_ista(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol).to_dense().numpy()
    reference = appr_ista_reference(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol)
    # Both are within tol·ρ‖√d‖₂ of the optimum in q (F is α-strongly convex; the KKT residual is
    # ≤ tol·ρα‖√d‖₂), so within twice that of each other; they differ, as ISTA stops early.
    gaps = np.linalg.norm((batched - reference) / sqrt_d, axis=1)
    assert np.all(gaps <= 2 * tol * rho * np.linalg.norm(sqrt_d))
    assert gaps.max() > 1e-12
    # As tol → 0 both reach the optimum.
    tol = 1e-11
    batched = appr_ista(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol).to_dense().numpy()
    reference = appr_ista_reference(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol)
    np.testing.assert_allclose(batched, reference, rtol=0, atol=1e-12)
    assert np.array_equal(batched > 0, reference > 0)


def test_converges_to_exact_ppr_from_below_as_rho_vanishes(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([1, 30, 118])
    exact = exact_ppr(edge_index, num_nodes=n, sources=sources, alpha=ALPHA)
    errors = []
    for rho in (1e-2, 1e-3, 1e-4, 1e-6):
        p = appr_ista(edge_index, num_nodes=n, sources=sources, rho=rho).to_dense().numpy()
        assert np.all(p <= exact + 1e-12)  # the ℓ1 iterates stay below the ρ = 0 ones
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


def test_rows_are_positive_and_sparse_with_bounded_support_volume(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    rho = 2e-2
    result = appr_ista(edge_index, num_nodes=n, sources=torch.arange(n), rho=rho)
    deg = _degrees(edge_index, n)
    crow, col, val = result.crow_indices(), result.col_indices(), result.values()
    assert torch.all(val > 0)
    for row in range(n):
        support = col[crow[row]:crow[row + 1]].numpy()
        assert deg[support].sum() <= 1 / rho  # Fountoulakis et al.: vol(supp) ≤ 1/ρ
    assert result.values().numel() < n * n / 10


def test_block_size_does_not_change_the_result(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.randperm(n, generator=torch.Generator().manual_seed(1))[:40]
    whole = appr_ista(edge_index, num_nodes=n, sources=sources, rho=1e-3)
    for block_size in (1, 7):
        blocked = appr_ista(edge_index, num_nodes=n, sources=sources, rho=1e-3, block_size=block_size)
        assert torch.equal(blocked.crow_indices(), whole.crow_indices())
        assert torch.equal(blocked.col_indices(), whole.col_indices())
        torch.testing.assert_close(blocked.values(), whole.values(), rtol=0, atol=1e-15)


def test_sparse_solves_and_small_batches_give_the_dense_result(
    graph: tuple[Tensor, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    edge_index, n = graph
    sources = torch.arange(0, n, 3)
    dense = appr_ista(edge_index, num_nodes=n, sources=sources, rho=1e-3)
    # Every support above 8 nodes goes to the sparse LU; dense batches hold one or two systems.
    monkeypatch.setattr(appr, "_DENSE_MAX", 8)
    monkeypatch.setattr(appr, "_SYSTEM_ENTRIES", 128)
    other = appr_ista(edge_index, num_nodes=n, sources=sources, rho=1e-3)
    assert (torch.diff(dense.crow_indices()) > 8).sum() > 10
    assert torch.equal(other.crow_indices(), dense.crow_indices())
    assert torch.equal(other.col_indices(), dense.col_indices())
    torch.testing.assert_close(other.values(), dense.values(), rtol=0, atol=1e-14)


def test_isolated_source_and_high_degree_source() -> None:
    # A star with 12 leaves plus isolated node 13: with ρ = 0.1 the hub has d ≥ 1/ρ, so q = 0.
    leaves = torch.arange(1, 13)
    edge_index = torch.cat([torch.stack([torch.zeros(12, dtype=torch.int64), leaves]),
                            torch.stack([leaves, torch.zeros(12, dtype=torch.int64)])], dim=1)
    p = appr_ista(edge_index, num_nodes=14, sources=torch.tensor([0, 13, 1]), rho=0.1).to_dense()
    assert torch.all(p[0] == 0)
    assert torch.equal(p[1].nonzero().flatten(), torch.tensor([13]))
    assert 1 - 0.1 * (1 + 1e-4) <= p[1, 13].item() <= 1 - 0.1  # (1 − ρ) e_s, within ISTA's tolerance
    assert p[2, 13] == 0 and p[2, 1] > 0


def test_edge_direction_and_duplicates_do_not_matter(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    one_way = edge_index[:, edge_index[0] < edge_index[1]]
    messy = torch.cat([one_way, one_way, torch.tensor([[4, 9], [4, 9]])], dim=1)  # duplicates and self-loops
    sources = torch.tensor([0, 50])
    a = appr_ista(edge_index, num_nodes=n, sources=sources, rho=1e-3).to_dense()
    b = appr_ista(messy, num_nodes=n, sources=sources, rho=1e-3).to_dense()
    torch.testing.assert_close(a, b, rtol=0, atol=1e-15)


def test_invalid_inputs_are_refused(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    with pytest.raises(ValueError, match="alpha"):
        appr_ista(edge_index, num_nodes=n, sources=torch.tensor([0]), alpha=1.0)
    with pytest.raises(ValueError, match="sources"):
        appr_ista(edge_index, num_nodes=n, sources=torch.tensor([n]))
    with pytest.raises(ValueError, match="edge_index"):
        appr_ista(edge_index, num_nodes=10, sources=torch.tensor([0]))
    with pytest.raises(RuntimeError, match="max_iter=2"):
        appr_ista(edge_index, num_nodes=n, sources=torch.tensor([0]), rho=1e-4, max_iter=2)
