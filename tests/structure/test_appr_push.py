from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import Tensor

from nodedp.structure import appr_ista_reference, appr_push, exact_ppr
from tests.structure._kkt import ALPHA, assert_kkt, dense_problem, optimum_on_support, random_graph


@pytest.fixture(scope="module")
def graph() -> tuple[Tensor, int]:
    return random_graph(120, avg_degree=6.0, isolated=3, seed=0), 120


def test_solution_satisfies_kkt_conditions(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    q_matrix, sqrt_d = dense_problem(edge_index, n)
    sources = torch.cat([torch.arange(0, n, 7), torch.tensor([118, 119])])  # with isolated nodes
    for rho, tol in ((1e-3, 1e-4), (1e-2, 1e-2), (1e-4, 1e-6)):
        p = appr_push(edge_index, num_nodes=n, sources=sources, alpha=ALPHA, rho=rho, tol=tol).to_dense().numpy()
        assert_kkt(p, sources, q_matrix, sqrt_d, rho=rho, tol=tol)
        assert np.all(p[np.arange(sources.numel()), sources.numpy()] > 0)  # every source is in its own support


def test_disconnected_graph_and_high_degree_source() -> None:
    # Two components: a star with 12 leaves (0..12) and a 6-cycle (13..18); 19 is isolated. With ρ = 0.1
    # the hub has d = 12 ≥ 1/ρ, so its exact solution is q = 0.
    leaves = torch.arange(1, 13)
    cycle = torch.arange(13, 19)
    star = torch.stack([torch.zeros(12, dtype=torch.int64), leaves])
    ring = torch.stack([cycle, torch.roll(cycle, 1)])
    edge_index = torch.cat([star, ring], dim=1)
    n, rho, tol = 20, 0.1, 1e-4
    q_matrix, sqrt_d = dense_problem(edge_index, n)
    sources = torch.tensor([0, 19, 1, 13])
    p = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol).to_dense().numpy()
    assert_kkt(p, sources, q_matrix, sqrt_d, rho=rho, tol=tol)
    assert np.all(p[0] == 0)
    assert np.flatnonzero(p[1]).tolist() == [19]
    assert 1 - rho * (1 + tol) <= p[1, 19] <= 1 - rho  # (1 − ρ) e_s, within the tolerance
    assert p[2, 1] > 0 and np.all(p[2, 13:] == 0)  # a leaf's mass stays in the star
    assert p[3, 13] > 0 and np.all(p[3, :13] == 0) and p[3, 19] == 0  # a cycle node's in the cycle
    # With ρ = 0 an isolated node keeps all its mass, exactly.
    p = appr_push(edge_index, num_nodes=n, sources=torch.tensor([19]), rho=0.0, tol=0.0).to_dense()
    assert torch.equal(p, torch.eye(n, dtype=torch.float64)[19:])


def test_matches_the_ista_reference_within_the_tolerance(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([5, 0, 117, 5, 64, 119])  # unsorted, repeated, isolated (117, 119)
    q_matrix, sqrt_d = dense_problem(edge_index, n)
    rho, tol = 1e-3, 1e-4
    push = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol).to_dense().numpy()
    ista = appr_ista_reference(edge_index, num_nodes=n, sources=sources, rho=rho, tol=tol)
    # Both leave a subgradient of F with entries ≤ tol·ρα√d_i in size, so (F being α-strongly convex) each
    # is within tol·ρ‖√d‖₂ of the optimum q* in ℓ2, and they are within twice that of each other, in q = D^{-1/2} p.
    bound = tol * rho * np.linalg.norm(sqrt_d)
    gaps = np.linalg.norm((push - ista) / sqrt_d, axis=1)
    assert np.all(gaps <= 2 * bound)
    assert gaps.max() > 1e-12  # they do differ: push and ISTA stop at different points
    # Both stay below the optimum, within the bound of it, and push reaches it as tol → 0.
    tight = appr_ista_reference(edge_index, num_nodes=n, sources=sources, rho=rho, tol=1e-10)
    optimum = optimum_on_support(tight, sources, q_matrix, sqrt_d, rho=rho)
    for p in (push, ista):
        assert np.all(p <= optimum + 1e-15)
        assert np.all(np.linalg.norm((optimum - p) / sqrt_d, axis=1) <= bound)
    push = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho, tol=1e-11).to_dense().numpy()
    np.testing.assert_allclose(push, optimum, rtol=0, atol=1e-12)
    assert np.array_equal(push > 0, optimum > 0)


def test_converges_to_exact_ppr_from_below_as_rho_vanishes(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    sources = torch.tensor([1, 30, 118])
    exact = exact_ppr(edge_index, num_nodes=n, sources=sources, alpha=ALPHA)
    errors = []
    for rho in (1e-2, 1e-3, 1e-4, 1e-6):
        p = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho).to_dense().numpy()
        assert np.all(p <= exact + 1e-12)
        errors.append(np.abs(p - exact).sum(1).max())
    assert all(a > b for a, b in itertools.pairwise(errors))
    assert errors[-1] < 1e-3


def test_rows_are_sorted_positive_sparse_and_independent_of_threads(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    rho = 2e-2
    sources = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    sources = torch.cat([sources, sources[:5]])
    serial = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho, num_threads=1)
    assert serial.layout == torch.sparse_csr and serial.dtype == torch.float64
    assert serial.shape == (sources.numel(), n)
    crow, col, val = serial.crow_indices(), serial.col_indices(), serial.values()
    assert torch.all(val > 0)
    _, sqrt_d = dense_problem(edge_index, n)
    for row in range(sources.numel()):
        support = col[crow[row] : crow[row + 1]]
        assert torch.all(torch.diff(support) > 0)  # sorted, no duplicates
        assert (sqrt_d[support.numpy()] ** 2).sum() <= 1 / rho  # vol(supp) ≤ 1/ρ
    assert val.numel() < sources.numel() * n / 10
    for threads in (2, 3):
        parallel = appr_push(edge_index, num_nodes=n, sources=sources, rho=rho, num_threads=threads)
        assert torch.equal(parallel.crow_indices(), crow)
        assert torch.equal(parallel.col_indices(), col)
        assert torch.equal(parallel.values(), val)  # bit-identical: each row is computed the same way
    # Scratch arrays are reset between sources: solving them in reverse order (one chunk) reverses the rows.
    reverse = appr_push(edge_index, num_nodes=n, sources=sources.flip(0), rho=rho, num_threads=1).to_dense()
    assert torch.equal(reverse.flip(0), serial.to_dense())
    empty = appr_push(edge_index, num_nodes=n, sources=torch.zeros(0, dtype=torch.int64))
    assert empty.shape == (0, n) and empty.values().numel() == 0


def test_edge_direction_and_duplicates_do_not_matter(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    one_way = edge_index[:, edge_index[0] < edge_index[1]]
    messy = torch.cat([one_way, one_way, torch.tensor([[4, 9], [4, 9]])], dim=1)  # duplicates and self-loops
    sources = torch.tensor([0, 50])
    a = appr_push(edge_index, num_nodes=n, sources=sources, rho=1e-3).to_dense()
    b = appr_push(messy, num_nodes=n, sources=sources, rho=1e-3).to_dense()
    assert torch.equal(a, b)


def test_invalid_inputs_are_refused(graph: tuple[Tensor, int]) -> None:
    edge_index, n = graph
    one = torch.tensor([0])
    with pytest.raises(ValueError, match="alpha"):
        appr_push(edge_index, num_nodes=n, sources=one, alpha=1.0)
    with pytest.raises(ValueError, match="rho"):
        appr_push(edge_index, num_nodes=n, sources=one, rho=-1.0)
    with pytest.raises(ValueError, match="tol"):
        appr_push(edge_index, num_nodes=n, sources=one, tol=-1.0)
    with pytest.raises(ValueError, match="sources"):
        appr_push(edge_index, num_nodes=n, sources=torch.tensor([n]))
    with pytest.raises(ValueError, match="sources"):
        appr_push(edge_index, num_nodes=n, sources=torch.tensor([[0]]))
    with pytest.raises(ValueError, match="edge_index"):
        appr_push(edge_index, num_nodes=10, sources=one)
    with pytest.raises(ValueError, match="max_pushes"):
        appr_push(edge_index, num_nodes=n, sources=one, max_pushes=0)
    with pytest.raises(ValueError, match="num_threads"):
        appr_push(edge_index, num_nodes=n, sources=one, num_threads=0)
    with pytest.raises(RuntimeError, match="max_pushes=2"):
        appr_push(edge_index, num_nodes=n, sources=torch.tensor([0, 1]), rho=1e-4, max_pushes=2)
