"""Approximate personalized PageRank (APPR) as ℓ1-regularized PageRank: shared helpers and references.

The problem (Fountoulakis et al. 2019), its KKT conditions to relative tolerance ``tol`` and the subsolution
argument the push solver relies on are in docs/design/appr.md. This module holds the graph conventions and argument
checks, ``appr_ista_reference`` (the literal ISTA loop) and ``exact_ppr`` (the ρ = 0 solution by a sparse solve).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor

__all__ = ["appr_ista_reference", "exact_ppr"]


def _undirected(edge_index: Tensor, *, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of the symmetric 0/1 adjacency, sorted, with a self-loop on every isolated node."""
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, {num_nodes})")
    src, dst = edge_index.cpu().numpy().astype(np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    keys = np.sort(np.concatenate([src * num_nodes + dst, dst * num_nodes + src]))
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    isolated = np.ones(num_nodes, dtype=bool)
    isolated[keys // num_nodes] = False
    loops = np.flatnonzero(isolated)
    keys = np.sort(np.concatenate([keys, loops * num_nodes + loops]))
    return keys // num_nodes, keys % num_nodes


def _check_sources(sources: Tensor, *, num_nodes: int) -> None:
    if sources.dim() != 1:
        raise ValueError(f"sources must be a 1-D tensor of node ids, got shape {tuple(sources.shape)}")
    if sources.numel() and (int(sources.min()) < 0 or int(sources.max()) >= num_nodes):
        raise ValueError(f"sources has node ids outside [0, {num_nodes})")


def _check_params(*, alpha: float, rho: float, tol: float, max_iter: int | None = None) -> None:
    """Refuse α ∉ (0, 1), ρ < 0, tol < 0 and (for the iterative reference) max_iter < 1."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha (teleport probability) must be in (0, 1), got {alpha}")
    if rho < 0.0:
        raise ValueError(f"rho (ℓ1 regularization) must be >= 0, got {rho}")
    if tol < 0.0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if max_iter is not None and max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")


def _crow(sorted_rows: Tensor, *, num_rows: int) -> Tensor:
    """CSR row pointers of entries whose row ids are grouped in increasing order."""
    crow = torch.zeros(num_rows + 1, dtype=torch.int64, device=sorted_rows.device)
    crow[1:] = torch.cumsum(torch.bincount(sorted_rows, minlength=num_rows), 0)
    return crow


def _scipy_problem(edge_index: Tensor, *, num_nodes: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Symmetric-normalized adjacency D^{-1/2} A D^{-1/2} (CSR) and degrees, same conventions."""
    src, dst = _undirected(edge_index, num_nodes=num_nodes)
    degree = np.bincount(src, minlength=num_nodes).astype(np.float64)
    dn_sqrt = 1.0 / np.sqrt(degree)
    norm_adj = sp.csr_matrix((dn_sqrt[src] * dn_sqrt[dst], (src, dst)), shape=(num_nodes, num_nodes))
    return norm_adj, degree


def appr_ista_reference(
    edge_index: Tensor,
    *,
    num_nodes: int,
    sources: Tensor,
    alpha: float = 0.25,
    rho: float = 1e-4,
    tol: float = 1e-4,
    max_iter: int = 1000,
) -> np.ndarray:
    """APPR vectors p = D^{1/2} q of ``sources`` by ISTA, one source at a time with scipy: dense [len(sources), N].

    Row r is the ISTA iterate of docs/design/appr.md for ``sources[r]``,
    q ← max(q − ∇f(q) − ρα√d, 0) from q = 0 over full-length vectors, stopped
    at the first q with max_i |∇f(q)_i| / √d_i ≤ (1 + tol) ρα, where it
    satisfies the KKT conditions to relative tolerance ``tol``. The
    straightforward per-node loop: the baseline of ``benchmarks/appr.py`` and
    the oracle of the tests. Raises RuntimeError if a source needs more than
    ``max_iter`` iterations.
    """
    _check_params(alpha=alpha, rho=rho, tol=tol, max_iter=max_iter)
    _check_sources(sources, num_nodes=num_nodes)
    norm_adj, degree = _scipy_problem(edge_index, num_nodes=num_nodes)
    d_sqrt = np.sqrt(degree)
    threshold = rho * alpha * d_sqrt
    stop = (1.0 + tol) * rho * alpha
    out = np.zeros((sources.numel(), num_nodes))
    for row, s in enumerate(sources.tolist()):
        q = np.zeros(num_nodes)
        for _ in range(max_iter + 1):
            grad = (1.0 + alpha) / 2.0 * q - (1.0 - alpha) / 2.0 * (norm_adj @ q)
            grad[s] -= alpha / d_sqrt[s]
            if np.max(np.abs(grad) / d_sqrt) <= stop:
                break
            q = np.maximum(q - grad - threshold, 0.0)
        else:
            raise RuntimeError(
                f"ISTA did not converge for source node {s} in max_iter={max_iter} iterations; raise max_iter or tol"
            )
        out[row] = q * d_sqrt
    return out


def exact_ppr(edge_index: Tensor, *, num_nodes: int, sources: Tensor, alpha: float = 0.25) -> np.ndarray:
    """Exact lazy-walk PPR p* = α (I − (1−α)(I + A D^{-1})/2)^{-1} e_s: dense [len(sources), N].

    The ρ = 0 solution of the APPR problem (docs/design/appr.md), by a sparse LU solve
    of Q q = α D^{-1/2} e_s (Q is symmetric positive definite, λ_min ≥ α) and
    p = D^{1/2} q.
    """
    _check_params(alpha=alpha, rho=0.0, tol=0.0)
    _check_sources(sources, num_nodes=num_nodes)
    norm_adj, degree = _scipy_problem(edge_index, num_nodes=num_nodes)
    d_sqrt = np.sqrt(degree)
    q_matrix = (1.0 + alpha) / 2.0 * sp.identity(num_nodes, format="csc") - (1.0 - alpha) / 2.0 * norm_adj.tocsc()
    idx = sources.cpu().numpy()
    rhs = np.zeros((num_nodes, idx.size))
    rhs[idx, np.arange(idx.size)] = alpha / d_sqrt[idx]
    q = spla.splu(q_matrix).solve(rhs)
    return (q * d_sqrt[:, None]).T
