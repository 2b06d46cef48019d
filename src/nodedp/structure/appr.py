"""Approximate personalized PageRank (APPR) as ℓ1-regularized PageRank: the problem, its optimality conditions, references.

DPAR's APPR vectors (computed by ``nodedp.structure.appr_push``) solve the
problem of Fountoulakis et al., "A variational perspective on local graph
clustering" (Math. Program. 2019), for a source node s:

    minimize over q ∈ R^N   F(q) = ½ qᵀQq − α (D^{-1/2} e_s)ᵀ q + ρα ‖D^{1/2} q‖₁,
    Q = D^{-1/2} (D − (1−α)/2 (D + A)) D^{-1/2} = (1+α)/2 · I − (1−α)/2 · D^{-1/2} A D^{-1/2}.

A is the symmetric 0/1 adjacency and D its degrees. The APPR vector is
p = D^{1/2} q. With ρ = 0 the minimizer is q* = α Q^{-1} D^{-1/2} e_s, so
p* = α (I − (1−α) W)^{-1} e_s is the personalized PageRank of the *lazy* walk
W = (I + A D^{-1})/2 with teleport α (equivalently the plain walk A D^{-1}
with teleport 2α/(1+α)); ρ > 0 trades accuracy for sparsity:
vol(supp p) ≤ 1/ρ.

Optimality conditions. ISTA (their Algorithm 3; step size 1, since
λ_max(Q) ≤ 1), from q₀ = 0, with gradient g = ∇f(q) = Qq − α D^{-1/2} e_s,
iterates q ← max(q − g − ρα√d, 0) (the solution is non-negative, so the soft
threshold has one side) until max_i |g_i| / √d_i ≤ (1 + tol) ρα, their
stopping rule. Its iterates increase monotonically (their Lemma), so at the
stopping point q satisfies the optimality (KKT) conditions of F to relative
tolerance ``tol``:

    q_i > 0:  −(1+tol) ρα√d_i ≤ g_i ≤ −ρα√d_i,
    q_i = 0:  |g_i| ≤ (1+tol) ρα√d_i.

Any q ≥ 0 that satisfies them is within tol·ρ‖√d‖₂ of the optimum q* in ℓ2:
the subgradient of F at q closest to 0 has entries of size at most
tol·ρα√d_i, so dist(0, ∂F(q)) ≤ tol·ρα‖√d‖₂, and F is α-strongly convex
(λ_min(Q) ≥ α). Two solvers stopping at these conditions (ISTA, push) thus
differ by at most 2·tol·ρ‖√d‖₂ in q, and agree as tol → 0.

Subsolutions (why a solver that only raises coordinates ends below q* and at
these conditions; ``appr_push`` relies on it). With c = α D^{-1/2} e_s − ρα√d
and w = Qq − c = g + ρα√d, a non-negative q is optimal iff w ≥ 0 and
q_i w_i = 0 (for q_i = 0 the other half, g_i ≤ ρα√d_i, always holds:
g_i = Σ_{j≠i} Q_ij q_j − α D^{-1/2}_{ii}[i = s] ≤ 0, as Q's off-diagonal is
≤ 0). Q is a symmetric positive definite Z-matrix (an M-matrix), so every
principal submatrix Q_SS is one too, with Q_SS^{-1} ≥ 0 entrywise; let q* be
the optimum and S* = supp q*.

* Call y ≥ 0 with support S a *subsolution* if w_S(y) ≤ 0. Then y_S ≤
  x^S := Q_SS^{-1} c_S (multiply Q_SS y_S ≤ c_S by Q_SS^{-1} ≥ 0), and if S ⊆ S*
  then x^S ≤ q*_S (Q_SS q*_S = c_S − Q_{S,S*∖S} q*_{S*∖S} ≥ c_S).
* A *violator* of a subsolution y ≤ q* is an i ∉ S with w_i(y) < −tol·ρα√d_i.
  Then i ∈ S*: were q*_i = 0, w_i(q*) = Σ_{j≠i} Q_ij q*_j − c_i ≤ Σ_{j∈S} Q_ij y_j − c_i
  = w_i(y) < 0, contradicting optimality.
* An exact minimization of F over each coordinate of a set T ⊆ S ∪ {violators}
  with w_T(y) ≤ 0, y'_i = y_i − w_i(y)/Q_ii on T (a Jacobi step; with |T| = 1 a
  coordinate-descent push), keeps a subsolution: y' ≥ y and, as the
  off-diagonal of Q is ≤ 0, w_i(y') = w_i(y) + Q_ii(y'_i − y_i) + Σ_{j≠i} Q_ij (y'_j − y_j)
  ≤ 0 on S ∪ T.

So from q = 0 (a subsolution whose only possible violator is the source:
w(0) = −c) such steps keep subsolutions below q* whose supports only grow
inside S* (hence vol(supp q) ≤ vol(S*) ≤ 1/ρ), and a stopping point with no
violator and −tol·ρα√d_i ≤ w_i ≤ 0 on the support satisfies the KKT
conditions above.

Graph conventions. ``edge_index`` is read as an undirected graph: the union of
both directions, duplicates and self-loops dropped. A node of degree 0 would
make D^{-1/2} undefined; it gets one self-loop (d = 1, A_ii = 1), so its walk
stays put: its exact PPR vector is e_s, its APPR vector is (1 − ρ) e_s, and it
never appears in another node's vector. A source with d_s ≥ 1/ρ has q = 0 as
its exact solution (the threshold exceeds the initial gradient), so its row is
empty.

This module holds the problem's shared helpers (graph conventions, argument
checks) and two references: ``appr_ista_reference``, the literal ISTA loop one
source at a time, and ``exact_ppr``, the ρ = 0 solution by a sparse LU solve.
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

    Row r is the ISTA iterate of the module docstring for ``sources[r]``,
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

    The ρ = 0 solution of the module docstring's problem, by a sparse LU solve
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
