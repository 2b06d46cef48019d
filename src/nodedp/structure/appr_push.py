"""APPR by compiled coordinate descent ("push"), to the same optimality conditions as ISTA.

``appr_push`` solves the ℓ1-regularized PageRank problem of Fountoulakis et al.
stated in ``nodedp.structure.appr``, for a source s,

    minimize over q ≥ 0   F(q) = ½ qᵀQq − α (D^{-1/2} e_s)ᵀ q + ρα ‖D^{1/2} q‖₁,
    Q = (1+α)/2 · I − (1−α)/2 · D^{-1/2} A D^{-1/2},

with the same graph conventions (undirected union of both directions,
duplicates and self-loops dropped, one self-loop on each isolated node) and
returns p = D^{1/2} q. With c = α D^{-1/2} e_s − ρα√d and
w = Qq − c = ∇f(q) + ρα√d, its entries are

    Q_ii = (1+α)/2 − (1−α)/2 · A_ii/d_i  (= α on an isolated node, (1+α)/2 elsewhere),
    Q_ij = −(1−α)/2 / √(d_i d_j)          for neighbours j ≠ i,

and a node i is a *violator* when w_i < −tol·ρα√d_i.

Algorithm (per source; Gauss–Seidel coordinate descent in the order of a FIFO
queue). Start from q = 0, where w = −c: w_s = ρα√d_s − α/√d_s and w_i = ρα√d_i ≥ 0
elsewhere, so the source is the only possible violator. While the queue of
violators is not empty, pop i and minimize F exactly over q_i (an exact
coordinate step; F restricted to a positive q_i is the quadratic ½Q_ii q_i² +
(w_i − Q_ii q_i) q_i + const):

    δ = −w_i / Q_ii > 0,   q_i ← q_i + δ,   w_i ← 0,   w_j ← w_j + Q_ji δ  (j a neighbour of i),

and append each neighbour that has just become a violator. q and w live in
dense length-N scratch arrays (w = ρα√d on untouched nodes), allocated once per
chunk of sources and reused: after a source only the entries it touched (the
source, the pushed nodes and their neighbours) are reset, so a source costs
time proportional to its work (the degrees of its pushes), not to N.

Why the result is an optimum to relative tolerance ``tol`` (the subsolution
argument of ``nodedp.structure.appr``, with one coordinate per step). Let S be the
set of nodes pushed so far (the support of q). Invariant: q ≥ 0 with w_S(q) ≤ 0
(q is a subsolution) and q ≤ q*. It holds at q = 0. A push at i with w_i < 0
(i ∈ S, or a violator i ∉ S) sets w_i = 0, increases q_i only (δ > 0), and
changes any other w_j by Q_ji δ ≤ 0 (Q's off-diagonal is ≤ 0), so w stays
≤ 0 on S ∪ {i}: the new q is again a subsolution, and larger. A violator i ∉ S
lies in S* = supp q* (appr.py: were q*_i = 0, w_i(q*) ≤ w_i(q) < 0), so
S ∪ {i} ⊆ S*, and a subsolution y supported in S' ⊆ S* has y ≤ Q_S'S'^{-1} c_S' ≤ q*
(Q_S'S' is an M-matrix). Hence every iterate is a subsolution below q*, q only
grows, and vol(supp q) ≤ vol(S*) ≤ 1/ρ. When the queue is empty no node has
w_i < −tol·ρα√d_i (untouched ones keep w_i = ρα√d_i ≥ 0), so with g = ∇f(q) = w − ρα√d:

    q_i > 0:  −(1+tol) ρα√d_i ≤ g_i ≤ −ρα√d_i    (−tol·ρα√d_i ≤ w_i ≤ 0),
    q_i = 0:  |g_i| ≤ (1+tol) ρα√d_i             (g_i = Σ_j Q_ij q_j ≤ 0 for i ≠ s, and w_i ≥ −tol·ρα√d_i),

the KKT conditions of ``nodedp.structure.appr`` that ISTA stops at. (A source
whose unpushed w_s is already ≥ −tol·ρα√d_s, e.g. one with d_s ≥ 1/ρ, has the
empty row, as there.) By the strong-convexity argument there (the subgradient
of F at q closest to 0 has entries w_i on the support and at most tol·ρα√d_i
elsewhere), ‖q − q*‖₂ ≤ tol·ρ‖√d‖₂, so ``appr_push`` and the ISTA loop
``appr_ista_reference`` are within 2·tol·ρ‖√d‖₂ of each other in q.

Termination. Each push raises q_i by δ > tol·ρα√d_i / Q_ii, i.e. √d_i q_i by more
than tol·ρα d_i / Q_ii ≥ 2·tol·ρα/(1+α), and Σ_i √d_i q_i ≤ Σ_i √d_i q*_i ≤ 1 (q* lies
below the ρ = 0 solution, a probability vector). So a source takes fewer than
(1+α) / (2·tol·ρα) pushes whose degrees sum to less than that too: the
work per source is bounded independently of N. In practice coordinate descent
converges linearly (rate about (1−α)/(1+α) per sweep of the support) and far
fewer pushes are needed. ``max_pushes`` caps the pushes of each source
(default: that bound when tol·ρ > 0; with tol·ρ = 0 the loop still ends, once
the updates underflow, but may take long).

Parallelism: sources are split into chunks solved by ``num_threads`` Python
threads, each calling the compiled kernel (which releases the GIL) with its own
scratch arrays. Each row is computed by the same sequence of floating-point
operations whichever thread or chunk it falls in, so the result is
deterministic and identical to the serial one. (Threads rather than
``numba.prange``: a source's output size is only known after solving it, which
per-chunk output buffers handle simply.) The kernel is compiled on first use
and cached on disk (``cache=True``), so later processes only load it.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch
from torch import Tensor

from nodedp.structure.appr import _check_params, _check_sources, _crow, _undirected

__all__ = ["appr_push"]

# Chunks per thread: more chunks balance uneven sources better; each chunk allocates O(N) scratch.
_CHUNKS_PER_THREAD = 4
# An upper limit for the default max_pushes (the proven bound can exceed int64 when tol·ρ is tiny).
_PUSH_LIMIT = 2**62


def appr_push(
    edge_index: Tensor,
    *,
    num_nodes: int,
    sources: Tensor,
    alpha: float = 0.25,
    rho: float = 1e-4,
    tol: float = 1e-4,
    max_pushes: int | None = None,
    num_threads: int | None = None,
) -> Tensor:
    """APPR vectors p = D^{1/2} q of all ``sources`` by compiled push, as a sparse CSR tensor [len(sources), N].

    Row r solves the problem of ``nodedp.structure.appr`` for ``sources[r]``
    to ISTA's KKT conditions stated there (relative tolerance ``tol``),
    by the coordinate-descent push of this module's docstring; float64,
    columns sorted within each row, only the positive entries stored, on
    ``sources``' device. ``max_pushes`` caps the pushes per source (default:
    the bound (1+α)/(2·tol·ρα) proven in the module docstring; a RuntimeError
    names it when exceeded). ``num_threads`` threads (default
    ``torch.get_num_threads()``) solve chunks of sources in parallel; the
    result does not depend on it.
    """
    if max_pushes is not None and max_pushes < 1:
        raise ValueError(f"max_pushes must be >= 1 or None, got {max_pushes}")
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be >= 1 or None, got {num_threads}")
    _check_params(alpha=alpha, rho=rho, tol=tol)
    _check_sources(sources, num_nodes=num_nodes)
    if max_pushes is None:
        bound = (1.0 + alpha) / (2.0 * tol * rho * alpha) if tol * rho > 0 else math.inf
        max_pushes = int(min(bound, _PUSH_LIMIT)) + 1
    threads = num_threads or torch.get_num_threads()

    src, dst = _undirected(edge_index, num_nodes=num_nodes)
    degree = np.bincount(src, minlength=num_nodes).astype(np.float64)
    d_sqrt = np.sqrt(degree)
    # Only isolated nodes carry a self-loop (A_ii = 1, d_i = 1); it is part of Q_ii, so the kernel's
    # neighbour lists leave it out and carry −Q_ij = (1−α)/2 / √(d_i d_j) beside each neighbour j.
    loop = src == dst
    self_loop = np.zeros(num_nodes, dtype=bool)
    self_loop[src[loop]] = True
    q_diag = (1.0 + alpha) / 2.0 - (1.0 - alpha) / 2.0 * self_loop / degree
    src, dst = src[~loop], dst[~loop]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=num_nodes), out=indptr[1:])
    indices = np.ascontiguousarray(dst, dtype=np.int64)
    coupling = (1.0 - alpha) / 2.0 / (d_sqrt[src] * d_sqrt[dst])
    seeds = sources.cpu().numpy().astype(np.int64)

    def solve(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        return _push_chunk(
            chunk, indptr, indices, coupling, d_sqrt, q_diag, float(alpha), float(rho), float(tol), np.int64(max_pushes)
        )

    chunks = np.array_split(seeds, max(1, min(seeds.size, threads * _CHUNKS_PER_THREAD if threads > 1 else 1)))
    if threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(solve, chunks))
    else:
        results = [solve(chunk) for chunk in chunks]
    failed = sum(result[3] for result in results)
    if failed:
        raise RuntimeError(
            f"appr_push: {failed} source node(s) needed more than max_pushes={max_pushes} pushes; "
            "raise max_pushes or tol"
        )
    counts = np.concatenate([result[0] for result in results])
    cols = np.concatenate([result[1] for result in results])
    vals = np.concatenate([result[2] for result in results])
    device = sources.device
    row = torch.repeat_interleave(torch.arange(seeds.size), torch.from_numpy(counts))
    return torch.sparse_csr_tensor(
        _crow(row, num_rows=seeds.size).to(device),
        torch.from_numpy(cols).to(device),
        torch.from_numpy(vals).to(device),
        size=(seeds.size, num_nodes),
        check_invariants=False,
    )


@numba.njit(cache=True, nogil=True)
def _push_chunk(seeds, indptr, indices, coupling, d_sqrt, q_diag, alpha, rho, tol, max_pushes):  # pragma: no cover
    """Solve the sources ``seeds`` one after another: (nnz per row, columns, values of p, failed sources).

    ``indptr``/``indices`` are the neighbour lists without self-loops and
    ``coupling`` holds −Q_ij beside each neighbour. Scratch arrays of length N
    are allocated once per chunk; after each source only the entries it
    touched (the source, the pushed nodes and their neighbours) are reset, at
    a cost below that of its pushes. A source exceeding ``max_pushes`` gets an
    empty row and is counted as failed.
    """
    n = d_sqrt.size
    threshold = rho * alpha * d_sqrt  # ρα√d: w of an untouched node
    floor = -tol * threshold  # i is a violator if w_i < floor_i = −tol·ρα√d_i
    q = np.zeros(n)
    w = threshold.copy()
    queued = np.zeros(n, dtype=np.bool_)
    support = np.empty(n, dtype=np.int64)  # pushed nodes, in order of first push
    queue = np.empty(n, dtype=np.int64)  # FIFO ring buffer: a node is queued at most once at a time

    counts = np.zeros(seeds.size, dtype=np.int64)
    capacity = max(16, 8 * seeds.size)
    out_cols = np.empty(capacity, dtype=np.int64)
    out_vals = np.empty(capacity)
    nnz = 0
    failed = 0
    for r in range(seeds.size):
        s = seeds[r]
        w[s] -= alpha / d_sqrt[s]  # w = −c at q = 0
        num_support, head, size = _push_source(
            s, indptr, indices, coupling, q_diag, floor, q, w, queued, support, queue, max_pushes
        )
        # Reset w where this source touched it.
        w[s] = threshold[s]
        for k in range(num_support):
            i = support[k]
            w[i] = threshold[i]
            for kk in range(indptr[i], indptr[i + 1]):
                w[indices[kk]] = threshold[indices[kk]]
        if size > 0:  # stopped by max_pushes: an empty row, reported by the caller
            failed += 1
            _drop_source(q, queued, support, num_support, queue, head, size)
            num_support = 0
        if nnz + num_support > capacity:
            capacity = max(2 * capacity, nnz + num_support)
            out_cols, out_vals = _grown(out_cols, out_vals, nnz, capacity)
        row_cols = out_cols[nnz : nnz + num_support]
        row_cols[:] = support[:num_support]
        row_cols.sort()
        for k in range(num_support):
            j = row_cols[k]
            out_vals[nnz + k] = q[j] * d_sqrt[j]  # p = D^{1/2} q
            q[j] = 0.0
        counts[r] = num_support
        nnz += num_support
    return counts, out_cols[:nnz].copy(), out_vals[:nnz].copy(), failed


@numba.njit(cache=True, nogil=True)
def _push_source(
    s, indptr, indices, coupling, q_diag, floor, q, w, queued, support, queue, max_pushes
):  # pragma: no cover
    """Push from source ``s`` (its ``w`` already at −c) until no violator is left or ``max_pushes`` pushes are
    spent: (nodes in ``support``, queue head, queue size; size > 0 when stopped by ``max_pushes``)."""
    n = q.size
    num_support = 0
    head = 0
    size = 0
    if w[s] < floor[s]:
        queue[0] = s
        queued[s] = True
        size = 1
    pushes = 0
    while size > 0 and pushes < max_pushes:
        pushes += 1
        i = queue[head]
        head += 1
        if head == n:
            head = 0
        size -= 1
        queued[i] = False
        # Exact minimization over q_i: w_i ← 0; each neighbour's w_j moves by Q_ji δ ≤ 0.
        delta = -w[i] / q_diag[i]
        if q[i] == 0.0:
            support[num_support] = i
            num_support += 1
        q[i] += delta
        w[i] = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            w_j = w[j] - coupling[k] * delta
            w[j] = w_j
            if w_j < floor[j] and not queued[j]:
                queued[j] = True
                tail = head + size
                if tail >= n:
                    tail -= n
                queue[tail] = j
                size += 1
    return num_support, head, size


@numba.njit(cache=True, nogil=True)
def _drop_source(q, queued, support, num_support, queue, head, size):  # pragma: no cover
    """Empty the queue and zero the q of a source stopped by max_pushes (its row stays empty)."""
    n = q.size
    while size > 0:
        queued[queue[head]] = False
        head += 1
        if head == n:
            head = 0
        size -= 1
    for k in range(num_support):
        q[support[k]] = 0.0


@numba.njit(cache=True, nogil=True)
def _grown(out_cols, out_vals, nnz, capacity):  # pragma: no cover
    """The output arrays moved into ones of ``capacity`` entries (the first ``nnz`` kept)."""
    grown_cols = np.empty(capacity, dtype=np.int64)
    grown_vals = np.empty(capacity)
    grown_cols[:nnz] = out_cols[:nnz]
    grown_vals[:nnz] = out_vals[:nnz]
    return grown_cols, grown_vals
