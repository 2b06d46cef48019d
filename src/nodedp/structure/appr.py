"""Approximate personalized PageRank (APPR) as ℓ1-regularized PageRank, solved to ISTA's optimality conditions.

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
g = ∇f(q) = Qq − α D^{-1/2} e_s, iterates q ← max(q − g − ρα√d, 0) (the
solution is non-negative, so the soft threshold has one side) until
max_i |g_i| / √d_i ≤ (1 + tol) ρα, Fountoulakis et al.'s stopping rule. Its
iterates increase monotonically (their Lemma), so at the stopping point q
satisfies the optimality (KKT) conditions of F to relative tolerance ``tol``:

    q_i > 0:  −(1+tol) ρα√d_i ≤ g_i ≤ −ρα√d_i,
    q_i = 0:  |g_i| ≤ (1+tol) ρα√d_i.

``appr_ista_reference`` is that ISTA loop, one source at a time.
``appr_ista`` returns a point satisfying the same conditions (on its support
even exactly: g_i = −ρα√d_i up to rounding) with far fewer sweeps, by an
active-set method for the equivalent linear complementarity problem. With
c = α D^{-1/2} e_s − ρα√d and w = Qq − c = g + ρα√d, a non-negative q is
optimal iff w ≥ 0 and q_i w_i = 0 (for q_i = 0 the other half, g_i ≤ ρα√d_i,
always holds: g_i = Σ_{j≠i} Q_ij q_j − α D^{-1/2}_{ii}[i = s] ≤ 0, as Q's
off-diagonal is ≤ 0). Q is a symmetric positive definite Z-matrix (an
M-matrix), so every principal submatrix Q_SS is one too, with Q_SS^{-1} ≥ 0
entrywise; let q* be the optimum and S* = supp q*.

* Call y ≥ 0 with support S a *subsolution* if w_S(y) ≤ 0. Then y_S ≤
  x^S := Q_SS^{-1} c_S (multiply Q_SS y_S ≤ c_S by Q_SS^{-1} ≥ 0), and if S ⊆ S*
  then x^S ≤ q*_S (Q_SS q*_S = c_S − Q_{S,S*∖S} q*_{S*∖S} ≥ c_S).
* A *violator* of a subsolution y ≤ q* is an i ∉ S with w_i(y) < −tol·ρα√d_i.
  Then i ∈ S*: were q*_i = 0, w_i(q*) = Σ_{j≠i} Q_ij q*_j − c_i ≤ Σ_{j∈S} Q_ij y_j − c_i
  = w_i(y) < 0, contradicting optimality.
* A Jacobi step on S' = S ∪ V (V: violators), y'_i = y_i − w_i(y)/Q_ii on S',
  keeps a subsolution: y' ≥ y (w_S ≤ 0, w_V < 0) and, as the off-diagonal of Q is
  ≤ 0, w_i(y') = w_i(y) + Q_ii(y'_i − y_i) + Σ_{j≠i} Q_ij (y'_j − y_j) ≤ 0 on S'.
  Its new entries are > 0, and so is every later value on S' (the iterates only grow).

The solver starts from q = 0 (the source is the only possible violator: w(0) =
−c) and repeats, per source: evaluate w; if there are violators, add them with a
Jacobi step on the support; if not, and the support grew since the last exact
solve, replace y by x^S (an LU solve of the small system Q_SS x = c_S: batched
dense LAPACK, or SuperLU for large supports; x^S ≥ y > 0); otherwise stop. By the points above the supports only
grow inside S*, so it stops after at most |S*| exact solves (in practice 1–2),
and at the stopping point q = x^S has w_S = 0 and w_i ≥ −tol·ρα√d_i off S, that
is, the KKT conditions above. Its solution lies below q* (q ≤ q*), as ISTA's
does, and each is within tol·ρ‖√d‖₂ of q* in ℓ2 (F is α-strongly convex and
both satisfy dist(0, ∂F(q)) ≤ tol·ρα‖√d‖₂), so they agree as tol → 0.

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

# Entries of a block's [block, N] int32 position table when block_size is not given (64 MiB).
_BLOCK_ENTRIES = 2**24
# Entries of one stacked batch of dense systems (128 MiB in float64).
_SYSTEM_ENTRIES = 2**24
# Systems are padded to a multiple of this size (identity padding), so a source's system,
# and so its solution, does not depend on which other sources share its batch.
_PAD = 8
# Larger supports are solved together by a sparse LU (SuperLU): numpy's OpenBLAS threads an
# LU of m² ≥ 10⁴ entries over all cores, which stalls on a busy machine (10× slower under load).
_DENSE_MAX = 96


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

    Row r solves the problem of the module docstring for ``sources[r]`` to
    ISTA's optimality conditions with tolerance ``tol``, by the active-set
    method described there, vectorized over all sources of a block: each
    round is one sparse product (the block's iterates, [block, N], times Q,
    in scipy) over the current supports and their boundaries, and the exact
    solves are batched dense LU solves of the supports' systems (one sparse LU
    for all supports above 96 nodes). Blocks hold ``block_size`` sources
    (default: as many as fit a 2^24-entry [block, N] position table); the
    result does not depend on it. Computed on the CPU in float64 (scipy and
    LAPACK), returned on ``edge_index``'s device. Raises
    RuntimeError if a source needs more than ``max_iter`` rounds.
    """
    _check_params(alpha=alpha, rho=rho, tol=tol, max_iter=max_iter)
    _check_sources(sources, num_nodes=num_nodes)
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be >= 1 or None, got {block_size}")
    norm_adj, degree = _scipy_problem(edge_index, num_nodes=num_nodes)
    q_matrix = ((1.0 + alpha) / 2.0 * sp.identity(num_nodes, format="csr") - (1.0 - alpha) / 2.0 * norm_adj).tocsr()
    q_matrix.sort_indices()
    d_sqrt = np.sqrt(degree)
    seeds = sources.cpu().numpy().astype(np.int64)
    block = block_size or max(1, _BLOCK_ENTRIES // max(num_nodes, 1))
    rows, nodes, values = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for start in range(0, seeds.size, block):
        row, node, q = _solve_block(seeds[start:start + block], q_matrix=q_matrix, d_sqrt=d_sqrt,
                                    alpha=alpha, rho=rho, tol=tol, max_iter=max_iter)
        rows.append(row + start)
        nodes.append(node)
        values.append(q * d_sqrt[node])
    row, node, val = np.concatenate(rows), np.concatenate(nodes), np.concatenate(values)
    order = np.argsort(row * num_nodes + node)
    device = edge_index.device
    row, col = (torch.from_numpy(a[order]).to(device) for a in (row, node))
    return torch.sparse_csr_tensor(_crow(row, num_rows=seeds.size), col, torch.from_numpy(val[order]).to(device),
                                   size=(seeds.size, num_nodes), check_invariants=False)


def _solve_block(
    seeds: np.ndarray,
    *,
    q_matrix: sp.csr_matrix,
    d_sqrt: np.ndarray,
    alpha: float,
    rho: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, node, q) of the non-zeros of the solutions for ``seeds``: the method of the module docstring."""
    n, width = d_sqrt.size, seeds.size
    rows = np.arange(width)
    threshold = rho * alpha * d_sqrt
    slack = tol * threshold  # i is a violator if w_i < −slack_i
    seed_term = alpha / d_sqrt[seeds]
    q_diag = q_matrix.diagonal()
    indptr, indices = q_matrix.indptr.astype(np.int64), q_matrix.indices.astype(np.int64)
    support = _Supports(width=width)
    # position[row * n + node]: the flat index of a support entry, −1 off the supports.
    position = np.full(width * n, -1, dtype=np.int32 if width * n < 2**31 else np.int64)
    systems: list[tuple[np.ndarray, ...]] = []  # chunks of (row, i, j, Q_ij) of the supports' systems
    # w(0) = −c: each source is its own only possible violator.
    w_seed = threshold[seeds] - seed_term
    first = w_seed < -slack[seeds]
    new_row, new_node, new_w = rows[first], seeds[first], w_seed[first]
    active = np.zeros(width, dtype=bool)
    dirty = np.zeros(width, dtype=bool)  # the support grew since the row's last exact solve
    for _ in range(max_iter):
        if new_row.size:
            _enter(support, position, systems, new_row, new_node, new_w, seeds=seeds, seed_term=seed_term,
                   threshold=threshold, q_diag=q_diag, indptr=indptr, indices=indices, q_values=q_matrix.data)
        grew = np.zeros(width, dtype=bool)
        grew[new_row] = True
        exact = active & ~grew & dirty  # no violators left: solve exactly on the support
        if exact.any():
            _solve_systems(support, systems, exact)
        dirty = (dirty | grew) & ~exact
        active = grew | exact
        if not active.any():
            return support.row, support.node, support.x
        # Qq of the active rows, on their supports and boundaries (exact zeros are dropped by scipy:
        # off the supports they are no violators, on them the Jacobi step below may skip them).
        on = np.flatnonzero(active[support.row])
        on = on[np.argsort(support.row[on], kind="stable")]
        crow = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(support.row[on], minlength=width), out=crow[1:])
        product = sp.csr_matrix((support.x[on], support.node[on], crow), shape=(width, n)) @ q_matrix
        g_row = np.repeat(rows, np.diff(product.indptr))
        g_node = product.indices.astype(np.int64)
        # Off the supports c = −ρα√d (a source is always on its own support), so w = Qq + ρα√d there.
        w_off = product.data + threshold[g_node]
        low = np.flatnonzero(w_off < -slack[g_node])
        low = low[position[g_row[low] * n + g_node[low]] < 0]
        new_row, new_node, new_w = g_row[low], g_node[low], w_off[low]
        # Rows with violators take a Jacobi step on their supports; the violators enter next round.
        has_violator = np.zeros(width, dtype=bool)
        has_violator[new_row] = True
        step = np.flatnonzero(has_violator[g_row])
        flat = position[g_row[step] * n + g_node[step]].astype(np.int64)
        step, flat = step[flat >= 0], flat[flat >= 0]
        support.x[flat] -= (product.data[step] - support.c[flat]) / q_diag[g_node[step]]
    raise _not_converged(int(active.sum()), max_iter=max_iter)


class _Supports:
    """A block's supports, flat in order of entry (appended to, never reordered)."""

    def __init__(self, *, width: int) -> None:
        self.size = np.zeros(width, dtype=np.int64)  # support size of each row
        self.row = np.zeros(0, dtype=np.int64)
        self.node = np.zeros(0, dtype=np.int64)
        self.local = np.zeros(0, dtype=np.int64)  # index within its row's support: its place in the row's system
        self.c = np.zeros(0)  # c = α D^{-1/2} e_s − ρα√d
        self.x = np.zeros(0)  # the iterate q


def _enter(
    support: _Supports,
    position: np.ndarray,
    systems: list[tuple[np.ndarray, ...]],
    new_row: np.ndarray,
    new_node: np.ndarray,
    new_w: np.ndarray,
    *,
    seeds: np.ndarray,
    seed_term: np.ndarray,
    threshold: np.ndarray,
    q_diag: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    q_values: np.ndarray,
) -> None:
    """Add violators (grouped by row, with their w) to the supports with a Jacobi step, and their Q entries."""
    n, old, count = threshold.size, support.row.size, new_row.size
    local = support.size[new_row] + np.arange(count) - np.searchsorted(new_row, new_row)
    support.size += np.bincount(new_row, minlength=support.size.size)
    position[new_row * n + new_node] = old + np.arange(count)
    support.row = np.concatenate([support.row, new_row])
    support.node = np.concatenate([support.node, new_node])
    support.local = np.concatenate([support.local, local])
    support.c = np.concatenate([support.c, np.where(new_node == seeds[new_row], seed_term[new_row], 0.0)
                                - threshold[new_node]])
    support.x = np.concatenate([support.x, -new_w / q_diag[new_node]])
    # Q between each new node and its neighbours (and itself) on the support; an older neighbour
    # also gets the mirrored entry (pairs of new nodes meet from both sides).
    counts = indptr[new_node + 1] - indptr[new_node]
    owner = np.repeat(np.arange(count), counts)
    entry = np.arange(owner.size) + np.repeat(indptr[new_node] - (np.cumsum(counts) - counts), counts)
    row = new_row[owner]
    other = position[row * n + indices[entry]].astype(np.int64)
    keep = other >= 0
    row, owner, other, value = row[keep], owner[keep], other[keep], q_values[entry[keep]]
    i, j = local[owner], support.local[other]
    mirror = other < old
    systems.append((np.concatenate([row, row[mirror]]), np.concatenate([i, j[mirror]]),
                    np.concatenate([j, i[mirror]]), np.concatenate([value, value[mirror]])))


def _solve_systems(support: _Supports, systems: list[tuple[np.ndarray, ...]], rows: np.ndarray) -> None:
    """Set the iterate of the ``rows`` (a mask) to the exact solution x^S of Q_SS x = c_S on their supports."""
    picked = [np.flatnonzero(rows[chunk[0]]) for chunk in systems]
    row, i, j, value = (np.concatenate([chunk[k][pick] for chunk, pick in zip(systems, picked)]) for k in range(4))
    # Rows in order of padded size, so that rows of one size form contiguous batches.
    padded = -(-support.size // _PAD) * _PAD
    order = np.flatnonzero(rows)
    order = order[np.argsort(padded[order], kind="stable")]
    widths = padded[order]
    rank = np.full(rows.size, -1, dtype=np.int64)
    rank[order] = np.arange(order.size)
    ent = np.argsort(rank[row], kind="stable")
    ent_rank = rank[row[ent]]
    sup = np.flatnonzero(rows[support.row])
    sup = sup[np.argsort(rank[support.row[sup]], kind="stable")]
    sup_rank = rank[support.row[sup]]
    def entries(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions in (row, i, j, value) and in the supports of the rows ranked start..stop-1."""
        return (ent[np.searchsorted(ent_rank, start):np.searchsorted(ent_rank, stop)],
                sup[np.searchsorted(sup_rank, start):np.searchsorted(sup_rank, stop)])

    dense_end = int(np.searchsorted(widths, _DENSE_MAX, side="right"))
    start = 0
    while start < dense_end:
        m = int(widths[start])
        stop = min(int(np.searchsorted(widths, m, side="right")), start + max(1, _SYSTEM_ENTRIES // (m * m)))
        e, s = entries(start, stop)
        s_slot, s_local = rank[support.row[s]] - start, support.local[s]
        mats = np.zeros((stop - start, m, m))
        mats[:, np.arange(m), np.arange(m)] = 1.0  # identity padding
        mats[rank[row[e]] - start, i[e], j[e]] = value[e]
        rhs = np.zeros((stop - start, m))
        rhs[s_slot, s_local] = support.c[s]
        support.x[s] = np.linalg.solve(mats, rhs[..., None])[s_slot, s_local, 0]
        start = stop
    if dense_end < order.size:
        # The large systems as one block-diagonal sparse system (one SuperLU call, not one per row).
        e, s = entries(dense_end, order.size)
        sizes = support.size[order[dense_end:]]
        offset = np.cumsum(sizes) - sizes
        e_base, s_base = offset[rank[row[e]] - dense_end], offset[rank[support.row[s]] - dense_end]
        total = int(sizes.sum())
        rhs = np.zeros(total)
        rhs[s_base + support.local[s]] = support.c[s]
        system = sp.csc_matrix((value[e], (e_base + i[e], e_base + j[e])), shape=(total, total))
        # A minimum-degree ordering of Q_SS + Q_SSᵀ suits these symmetric systems.
        support.x[s] = spla.spsolve(system, rhs, permc_spec="MMD_AT_PLUS_A")[s_base + support.local[s]]


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
