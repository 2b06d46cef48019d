"""Approximate personalized PageRank (APPR) as ℓ1-regularized PageRank, solved by ISTA.

DPAR computes its APPR vectors with ISTA, Algorithm 3 of Fountoulakis et al.,
"A variational perspective on local graph clustering" (Math. Program. 2019).
Their problem, which is the one solved here, for a source node s:

    minimize over q ∈ R^N   F(q) = ½ qᵀQq − α (D^{-1/2} e_s)ᵀ q + ρα ‖D^{1/2} q‖₁,
    Q = D^{-1/2} (D − (1−α)/2 (D + A)) D^{-1/2} = (1+α)/2 · I − (1−α)/2 · D^{-1/2} A D^{-1/2}.

A is the symmetric 0/1 adjacency and D its degrees. The APPR vector is
p = D^{1/2} q. With ρ = 0 the minimizer is q* = α Q^{-1} D^{-1/2} e_s, so
p* = α (I − (1−α) W)^{-1} e_s is the personalized PageRank of the *lazy* walk
W = (I + A D^{-1})/2 with teleport α (equivalently the plain walk A D^{-1}
with teleport 2α/(1+α)); ρ > 0 trades accuracy for sparsity:
vol(supp p) ≤ 1/ρ.

ISTA (step size 1, since λ_max(Q) ≤ 1), from q₀ = 0, with gradient
g = ∇f(q) = Qq − α D^{-1/2} e_s:

    q ← max(q − g − ρα√d, 0),

(the solution is non-negative, so the soft threshold has one side), until
max_i |g_i| / √d_i ≤ (1 + tol) ρα, Fountoulakis et al.'s stopping rule. The
iterates increase monotonically (their Lemma), so at the stopping point q
satisfies the optimality conditions of F to relative tolerance ``tol``:

    q_i > 0:  −(1+tol) ρα√d_i ≤ g_i ≤ −ρα√d_i,
    q_i = 0:  |g_i| ≤ (1+tol) ρα√d_i.

Graph conventions. ``edge_index`` is read as an undirected graph: the union of
both directions, duplicates and self-loops dropped. A node of degree 0 would
make D^{-1/2} undefined; it gets one self-loop (d = 1, A_ii = 1), so its walk
stays put: its exact PPR vector is e_s, its APPR vector is (1 − ρ) e_s, and it
never appears in another node's vector. A source with d_s ≥ 1/ρ has q = 0 as
its exact solution (the threshold exceeds the initial gradient), so its row is
empty.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor

__all__ = ["appr_ista", "appr_ista_reference", "exact_ppr"]

# Entries of a block's dense [block, N] buffer when block_size is not given (256 MiB in float64).
_BLOCK_ENTRIES = 2**25


def _undirected(edge_index: Tensor, *, num_nodes: int) -> tuple[Tensor, Tensor]:
    """(src, dst) of the symmetric 0/1 adjacency, with a self-loop on every isolated node."""
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, {num_nodes})")
    ei = edge_index.to(torch.int64)
    ei = ei[:, ei[0] != ei[1]]
    both = torch.cat([ei, ei.flip(0)], dim=1)
    keys = torch.unique(both[0] * num_nodes + both[1])
    src, dst = keys // num_nodes, keys % num_nodes
    isolated = torch.ones(num_nodes, dtype=torch.bool, device=ei.device)
    isolated[src] = False
    loops = isolated.nonzero().flatten()
    src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    order = torch.argsort(src * num_nodes + dst)
    return src[order], dst[order]


def _check_sources(sources: Tensor, *, num_nodes: int) -> None:
    if sources.dim() != 1:
        raise ValueError(f"sources must be a 1-D tensor of node ids, got shape {tuple(sources.shape)}")
    if sources.numel() and (int(sources.min()) < 0 or int(sources.max()) >= num_nodes):
        raise ValueError(f"sources has node ids outside [0, {num_nodes})")


def _check_params(*, alpha: float, rho: float, tol: float, max_iter: int) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha (teleport probability) must be in (0, 1), got {alpha}")
    if rho < 0.0:
        raise ValueError(f"rho (ℓ1 regularization) must be >= 0, got {rho}")
    if tol < 0.0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")


def _not_converged(num: int, *, max_iter: int) -> RuntimeError:
    return RuntimeError(f"ISTA did not converge for {num} source node(s) in max_iter={max_iter} iterations; "
                        "raise max_iter or tol")


def appr_ista(
    edge_index: Tensor,
    *,
    num_nodes: int,
    sources: Tensor,
    alpha: float = 0.25,
    rho: float = 1e-4,
    tol: float = 1e-4,
    max_iter: int = 1000,
    block_size: int | None = None,
) -> Tensor:
    """APPR vectors p = D^{1/2} q of all ``sources`` at once, as a sparse CSR tensor [len(sources), N].

    Row r is the solution for ``sources[r]`` (see the module docstring for the
    problem and its conventions). Sources are solved in blocks of
    ``block_size`` (default: as many as fit in 2^25 entries of a dense [block, N]
    buffer). Within a block every ISTA step is one sparse × sparse product
    (the block's iterates, [block, N], times the N × N step matrix), so its cost
    follows the iterates' support volumes, not N; a source stops contributing
    as soon as it meets the stopping rule. The result does not depend on the
    block size. Runs on ``edge_index``'s device, in float64. Raises
    RuntimeError if a source needs more than ``max_iter`` steps.
    """
    _check_params(alpha=alpha, rho=rho, tol=tol, max_iter=max_iter)
    _check_sources(sources, num_nodes=num_nodes)
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be >= 1 or None, got {block_size}")
    device, dtype = edge_index.device, torch.float64
    src, dst = _undirected(edge_index, num_nodes=num_nodes)
    degree = torch.bincount(src, minlength=num_nodes).to(dtype)
    d_sqrt = degree.sqrt()
    dn_sqrt = 1.0 / d_sqrt
    # One ISTA step is q − ∇f(q) = M q + α D^{-1/2} e_s with M = (1−α)/2 (I + D^{-1/2} A D^{-1/2}),
    # symmetric, so the iterates of a block (rows of a sparse [block, N] matrix) step as Qᵀ M.
    loop = torch.arange(num_nodes, device=device)
    off_diagonal = dn_sqrt[src] * dn_sqrt[dst]
    step_matrix = torch.sparse_coo_tensor(
        torch.stack([torch.cat([src, loop]), torch.cat([dst, loop])]),
        (1.0 - alpha) / 2.0 * torch.cat([off_diagonal, torch.ones(num_nodes, dtype=dtype, device=device)]),
        size=(num_nodes, num_nodes), check_invariants=False,
    ).coalesce().to_sparse_csr()  # coalesce: an isolated node's self-loop sits on the identity
    threshold = rho * alpha * d_sqrt
    stop = (1.0 + tol) * rho * alpha

    sources = sources.to(device=device, dtype=torch.int64)
    # From q₀ = 0 the gradient is −α D^{-1/2} e_s: a source with α/d_s within the stopping rule has
    # solution 0; every other one has q₁ = (α − ρα d_s)/√d_s · e_s > 0, and its seed entry stays
    # positive (the iterates increase), so the seed term always lands on a stored entry.
    live = (alpha / degree[sources]) > stop
    block = block_size or max(1, _BLOCK_ENTRIES // max(num_nodes, 1))
    rows, cols, vals = [], [], []
    for start in range(0, sources.numel(), block):
        slots = torch.arange(start, min(start + block, sources.numel()), device=device)
        slots = slots[live[slots]]
        if slots.numel() == 0:
            continue
        seeds, width = sources[slots], slots.numel()
        # q of the block as a dense [width, N] array (read and written only where the step touches)
        # and as the sparse matrix of its positive entries, the next product's left factor.
        dense = torch.zeros(width * num_nodes, dtype=dtype, device=device)
        first = (alpha / d_sqrt[seeds]) - threshold[seeds]
        dense[torch.arange(width, device=device) * num_nodes + seeds] = first
        iterate = torch.sparse_csr_tensor(torch.arange(width + 1, device=device), seeds, first,
                                          size=(width, num_nodes), check_invariants=False)
        pending = torch.ones(width, dtype=torch.bool, device=device)
        for _ in range(max_iter):
            product = torch.sparse.mm(iterate, step_matrix)
            crow, col = product.crow_indices(), product.col_indices()
            row = torch.repeat_interleave(torch.arange(width, device=device), crow.diff())
            key = row * num_nodes + col
            step = product.values()
            at_seed = (col == seeds[row]).nonzero().squeeze(1)
            step.index_add_(0, at_seed, alpha * dn_sqrt[col[at_seed]])
            q = dense[key]
            inv_sqrt_d = dn_sqrt[col]
            scaled = (q - step).abs_().mul_(inv_sqrt_d)  # |∇f(q)_i| / √d_i on every touched entry
            done = pending & (torch.segment_reduce(scaled, "max", offsets=crow, initial=0.0) <= stop)
            if bool(done.any()):
                hit = (done[row] & (q > 0)).nonzero().squeeze(1)
                rows.append(slots[row[hit]])
                cols.append(col[hit])
                vals.append(q[hit] / inv_sqrt_d[hit])
                pending &= ~done
                if not bool(pending.any()):
                    break
            nxt = step.sub_(inv_sqrt_d.reciprocal_().mul_(rho * alpha)).clamp_(min=0.0)  # q − ∇f − ρα√d
            dense[key] = nxt
            kept = (pending[row] & (nxt > 0)).nonzero().squeeze(1)
            iterate = torch.sparse_csr_tensor(_crow(row[kept], num_rows=width), col[kept], nxt[kept],
                                              size=(width, num_nodes), check_invariants=False)
        else:
            raise _not_converged(int(pending.sum()), max_iter=max_iter)
    if rows:
        row, col, val = torch.cat(rows), torch.cat(cols), torch.cat(vals)
    else:
        row = col = torch.zeros(0, dtype=torch.int64, device=device)
        val = torch.zeros(0, dtype=dtype, device=device)
    order = torch.argsort(row * num_nodes + col)
    return torch.sparse_csr_tensor(_crow(row[order], num_rows=sources.numel()), col[order], val[order],
                                   size=(sources.numel(), num_nodes), check_invariants=False)


def _crow(sorted_rows: Tensor, *, num_rows: int) -> Tensor:
    """CSR row pointers of entries whose row ids are grouped in increasing order."""
    crow = torch.zeros(num_rows + 1, dtype=torch.int64, device=sorted_rows.device)
    crow[1:] = torch.cumsum(torch.bincount(sorted_rows, minlength=num_rows), 0)
    return crow


def _scipy_problem(edge_index: Tensor, *, num_nodes: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Symmetric-normalized adjacency D^{-1/2} A D^{-1/2} (CSR) and degrees, same conventions."""
    src, dst = (t.cpu().numpy() for t in _undirected(edge_index, num_nodes=num_nodes))
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
    """The same solutions as ``appr_ista``, one source at a time with scipy: dense [len(sources), N].

    The straightforward per-node ISTA loop over full-length vectors: the
    baseline of ``benchmarks/appr.py`` and the oracle of the tests.
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
            raise _not_converged(1, max_iter=max_iter)
        out[row] = q * d_sqrt
    return out


def exact_ppr(edge_index: Tensor, *, num_nodes: int, sources: Tensor, alpha: float = 0.25) -> np.ndarray:
    """Exact lazy-walk PPR p* = α (I − (1−α)(I + A D^{-1})/2)^{-1} e_s: dense [len(sources), N].

    The ρ = 0 solution of ``appr_ista``'s problem, by a sparse LU solve of
    Q q = α D^{-1/2} e_s (Q is symmetric positive definite, λ_min ≥ α) and p = D^{1/2} q.
    """
    _check_params(alpha=alpha, rho=0.0, tol=0.0, max_iter=1)
    _check_sources(sources, num_nodes=num_nodes)
    norm_adj, degree = _scipy_problem(edge_index, num_nodes=num_nodes)
    d_sqrt = np.sqrt(degree)
    q_matrix = (1.0 + alpha) / 2.0 * sp.identity(num_nodes, format="csc") - (1.0 - alpha) / 2.0 * norm_adj.tocsc()
    idx = sources.cpu().numpy()
    rhs = np.zeros((num_nodes, idx.size))
    rhs[idx, np.arange(idx.size)] = alpha / d_sqrt[idx]
    q = spla.splu(q_matrix).solve(rhs)
    return (q * d_sqrt[:, None]).T
