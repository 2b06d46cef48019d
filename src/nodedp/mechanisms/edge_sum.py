"""Σ over edges of gathered rows, without holding every edge's message at once."""

from __future__ import annotations

from torch import Tensor

__all__ = ["MESSAGES_PER_CHUNK", "edge_chunks", "neighbour_sum"]

# Gathered message entries held at once (128 MiB of float32). At ogbn-products size all of a layer's
# messages at once are [123.7M, 64]: 31.7 GB.
MESSAGES_PER_CHUNK = 1 << 25


def edge_chunks(num_edges: int, width: int, *, chunk: int | None = None) -> list[slice]:
    """Slices of the edges, in order, each holding at most ``chunk`` (default MESSAGES_PER_CHUNK) message entries
    of ``width`` numbers per edge."""
    per_chunk = max(1, (MESSAGES_PER_CHUNK if chunk is None else chunk) // max(1, width))
    return [slice(start, min(start + per_chunk, num_edges)) for start in range(0, num_edges, per_chunk)]


def neighbour_sum(h: Tensor, src: Tensor, dst: Tensor, *, chunk: int | None = None) -> Tensor:
    """[N, H]: row v is Σ_{edges u -> v} h_u, the edges taken in chunks in their order (so every row sums in
    the same order as in one pass: the same result). Differentiable."""
    chunks = edge_chunks(src.numel(), h[0].numel() if h.dim() else 1, chunk=chunk)
    if len(chunks) <= 1:
        return h.new_zeros(h.shape).index_add_(0, dst, h[src])
    total = h.new_zeros(h.shape)
    for c in chunks:
        total = total.index_add_(0, dst[c], h[src[c]])
    return total
