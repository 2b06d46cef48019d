"""Shared helpers of the APPR tests: random graphs, a dense Q built independently of the modules, a KKT check."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

ALPHA = 0.25


def random_graph(num_nodes: int, *, avg_degree: float, isolated: int, seed: int) -> Tensor:
    """Undirected G(n, p) graph (both directions stored) whose last ``isolated`` nodes have no edges."""
    gen = torch.Generator().manual_seed(seed)
    connected = num_nodes - isolated
    upper = torch.triu(torch.rand(connected, connected, generator=gen) < avg_degree / connected, diagonal=1)
    src, dst = upper.nonzero().T
    return torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)


def dense_problem(edge_index: Tensor, num_nodes: int, *, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(Q, √d) built densely: Q = (1+α)/2 · I − (1−α)/2 · D^{-1/2} A D^{-1/2}, isolated nodes with a self-loop."""
    adj = np.zeros((num_nodes, num_nodes))
    adj[edge_index[0].numpy(), edge_index[1].numpy()] = 1.0
    adj[np.diag_indices(num_nodes)] = 0.0
    adj = np.maximum(adj, adj.T)
    adj[np.diag_indices(num_nodes)] += adj.sum(1) == 0
    sqrt_d = np.sqrt(adj.sum(1))
    q_matrix = (1 + alpha) / 2 * np.eye(num_nodes) - (1 - alpha) / 2 * adj / np.outer(sqrt_d, sqrt_d)
    return q_matrix, sqrt_d


def assert_kkt(
    p: np.ndarray,
    sources: Tensor,
    q_matrix: np.ndarray,
    sqrt_d: np.ndarray,
    *,
    rho: float,
    tol: float,
    alpha: float = ALPHA,
) -> None:
    """Each row's q = D^{-1/2} p satisfies the KKT conditions of appr.py to relative tolerance tol.

    With g = Qq − α D^{-1/2} e_s and t = ρα√d: q ≥ 0, −(1+tol) t ≤ g ≤ −t where q > 0, |g| ≤ (1+tol) t
    where q = 0 (up to 1e-12 of rounding).
    """
    bound = rho * alpha * sqrt_d
    slack = 1e-12
    for row, s in enumerate(sources.tolist()):
        q = p[row] / sqrt_d
        assert np.all(q >= 0)
        grad = q_matrix @ q
        grad[s] -= alpha / sqrt_d[s]
        on = q > 0
        assert np.all(grad[on] <= -bound[on] + slack)
        assert np.all(grad[on] >= -(1 + tol) * bound[on] - slack)
        assert np.all(np.abs(grad[~on]) <= (1 + tol) * bound[~on] + slack)


def optimum_on_support(
    p_tight: np.ndarray, sources: Tensor, q_matrix: np.ndarray, sqrt_d: np.ndarray, *, rho: float, alpha: float = ALPHA
) -> np.ndarray:
    """The exact optimum p* = D^{1/2} q*, given a tight approximation ``p_tight`` with the optimum's support S.

    On S the optimum solves Q_SS q_S = c_S with c = α D^{-1/2} e_s − ρα√d (w = Qq − c vanishes on the support),
    and 0 elsewhere; the result is checked against the KKT conditions with tol = 0, which fail if S is wrong.
    """
    out = np.zeros_like(p_tight)
    for row, s in enumerate(sources.tolist()):
        on = p_tight[row] > 0
        c = -rho * alpha * sqrt_d
        c[s] += alpha / sqrt_d[s]
        out[row, on] = np.linalg.solve(q_matrix[np.ix_(on, on)], c[on]) * sqrt_d[on]
    assert_kkt(out, sources, q_matrix, sqrt_d, rho=rho, tol=0.0, alpha=alpha)
    return out
