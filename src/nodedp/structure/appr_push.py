"""APPR by compiled coordinate descent ("push"), to the same optimality conditions as ISTA.

``appr_push`` solves every source's ℓ1-regularized PageRank problem by FIFO push in a numba kernel, returning the
rows p = D^{1/2} q as a sparse CSR tensor; threads solve chunks of sources, with results independent of the
thread count. Why it stops at ISTA's KKT conditions, the push bound and the kernel's layout: docs/design/appr.md.
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
    by the coordinate-descent push of docs/design/appr.md; float64,
    columns sorted within each row, only the positive entries stored, on
    ``sources``' device. ``max_pushes`` caps the pushes per source (default:
    the bound (1+α)/(2·tol·ρα) proven in docs/design/appr.md; a RuntimeError
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
