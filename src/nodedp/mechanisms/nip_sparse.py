"""NIP-GNN's edge release (Section 4.3) without the N×N intermediate, same output distribution.

``randomize_and_resample`` keeps the dense draws up to ``DENSE_MAX_PAIRS`` pairs and beyond draws the same
distribution by candidate pairs (geometric gaps) and thinning, in O(c·N²) draws and O(N·D_max) memory for the
result. Why the distributions agree: docs/design/mechanisms.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import Tensor

from nodedp.accounting._checks import check_int
from nodedp.accounting.nip_bounds import _check_s
from nodedp.mechanisms.edge_rr import flip_probability
from nodedp.mechanisms.nip import (
    _check_edge_index,
    _check_undirected,
    debias_randomized_degree,
    debiased_degree,
    degree_preserving_randomization,
    sample_randomized_edges,
    unbiased_sampling_probability,
)

__all__ = [
    "DENSE_MAX_PAIRS",
    "PAIRS_PER_BLOCK",
    "randomize_and_resample",
    "randomize_and_resample_with_probabilities",
    "uses_dense_release",
]

# Up to 2^23 pairs (N ≤ 4096) the dense composition's intermediate (≈ s/2 of the pairs) stays below a few
# hundred MB, and the streaming pass is Θ(N²) time too: the demo's 3000-node graphs keep their exact draws.
DENSE_MAX_PAIRS = 1 << 23
# Pairs drawn at once by the streaming pass: a 64 MiB float32 block.
PAIRS_PER_BLOCK = 1 << 24
# Candidate pairs drawn at once (geometric gaps).
_CANDIDATE_CHUNK = 1 << 20


def uses_dense_release(num_nodes: int, *, dense_max_pairs: int = DENSE_MAX_PAIRS) -> bool:
    """Whether ``randomize_and_resample`` takes the dense path: a function of the public N alone."""
    return num_nodes * (num_nodes - 1) // 2 <= dense_max_pairs


def randomize_and_resample(
    edge_index: Tensor,
    *,
    num_nodes: int,
    s: float,
    max_degree: int,
    generator: torch.Generator,
    device: torch.device | None = None,
    dense_max_pairs: int = DENSE_MAX_PAIRS,
    pairs_per_block: int = PAIRS_PER_BLOCK,
) -> Tensor:
    """The suite's edge release: randomization, then "pair" resampling with p from the released degrees.

    p = ``unbiased_sampling_probability`` of ``debiased_degree`` clamped to
    [0, D_max = ``max_degree``], so the resampling reads the release alone.
    Returns an undirected edge_index on ``edge_index``'s device. The sparse
    path runs on ``device`` (default: the generator's).
    """
    check_int(max_degree, "max_degree", minimum=1)
    if uses_dense_release(num_nodes, dense_max_pairs=dense_max_pairs):
        released = degree_preserving_randomization(edge_index, num_nodes=num_nodes, s=s, generator=generator)
        estimate = debiased_degree(released, num_nodes=num_nodes, s=s).clamp(min=0, max=max_degree)
        probs = unbiased_sampling_probability(estimate, num_nodes=num_nodes, s=s)
        return sample_randomized_edges(released, probs, generator, rule="pair")
    pairs, q = _pair_keys(edge_index, num_nodes=num_nodes, s=s)
    generator = _on_device(generator, device)
    # every p_u ≤ p at D_max: the estimates are clamped to it and p grows with the degree
    rate = float(unbiased_sampling_probability(torch.tensor([float(max_degree)]), num_nodes=num_nodes, s=s))
    candidates = torch.cat(
        [rows * num_nodes + cols for rows, cols in _bernoulli_pair_chunks(num_nodes, rate=rate, generator=generator)]
        or [torch.empty(0, dtype=torch.long, device=generator.device)]
    )
    pairs = pairs.to(generator.device)
    lookup = torch.unique(torch.cat([candidates, pairs]))
    flip_count, flips = _stream_flips(
        num_nodes=num_nodes, flip_rate=q, lookup=lookup, generator=generator, pairs_per_block=pairs_per_block
    )
    # The randomized degree: flips, with a flipped input edge counting −1 instead of +1.
    edge_flips = flips[torch.searchsorted(lookup, pairs)]
    change = 1.0 - 2.0 * edge_flips.to(torch.float64)
    degree = flip_count.index_add_(0, pairs // num_nodes, change).index_add_(0, pairs % num_nodes, change)
    estimate = debias_randomized_degree(degree.cpu(), num_nodes=num_nodes, s=s).clamp(min=0, max=max_degree)
    probs = unbiased_sampling_probability(estimate, num_nodes=num_nodes, s=s).to(generator.device)
    randomized = flips[torch.searchsorted(lookup, candidates)] ^ torch.isin(candidates, pairs)
    kept = _thin(candidates[randomized], probs, num_nodes=num_nodes, rate=rate, generator=generator)
    return _undirected(kept, num_nodes=num_nodes).to(edge_index.device)


def randomize_and_resample_with_probabilities(
    edge_index: Tensor,
    probs: Tensor,
    *,
    num_nodes: int,
    s: float,
    generator: torch.Generator,
    device: torch.device | None = None,
    dense_max_pairs: int = DENSE_MAX_PAIRS,
) -> Tensor:
    """Randomization, then "pair" resampling with p = ``probs`` fixed beforehand (reference mode: Eq. 12 on
    the private degrees). Each pair is then independent: O(E + output) beyond the dense threshold."""
    if probs.dim() != 1 or probs.numel() != num_nodes or not probs.is_floating_point():
        raise ValueError(f"probs must be a float tensor [num_nodes = {num_nodes}], got {list(probs.shape)}")
    if uses_dense_release(num_nodes, dense_max_pairs=dense_max_pairs):
        released = degree_preserving_randomization(edge_index, num_nodes=num_nodes, s=s, generator=generator)
        return sample_randomized_edges(released, probs, generator, rule="pair")
    if not bool(((probs >= 0) & (probs <= 1)).all()):
        raise ValueError("probs must lie in [0, 1]")
    pairs, q = _pair_keys(edge_index, num_nodes=num_nodes, s=s)
    generator = _on_device(generator, device)
    pairs, probs = pairs.to(generator.device), probs.to(device=generator.device, dtype=torch.float64)
    # Nodes with p = 0 keep nothing: draw candidates among the others only.
    nodes = torch.nonzero(probs > 0).flatten()
    rate = float(probs.max()) if nodes.numel() else 0.0
    kept = []
    for rows, cols in _bernoulli_pair_chunks(nodes.numel(), rate=rate, generator=generator):
        candidates = nodes[rows] * num_nodes + nodes[cols]
        flipped = torch.rand(candidates.numel(), generator=generator, device=generator.device) < q
        kept.append(
            _thin(
                candidates[flipped ^ torch.isin(candidates, pairs)],
                probs,
                num_nodes=num_nodes,
                rate=rate,
                generator=generator,
            )
        )
    kept_keys = torch.cat(kept) if kept else torch.empty(0, dtype=torch.long, device=generator.device)
    return _undirected(kept_keys, num_nodes=num_nodes).to(edge_index.device)


def _pair_keys(edge_index: Tensor, *, num_nodes: int, s: float) -> tuple[Tensor, float]:
    """The input's unordered pairs as sorted keys u·N + v (u < v), and the flip probability the dense path uses."""
    _check_edge_index(edge_index, num_nodes)
    s = _check_s(s)
    _check_undirected(edge_index, num_nodes)
    src, dst = edge_index
    upper = src < dst
    return torch.unique(src[upper] * num_nodes + dst[upper]), flip_probability(math.log((2.0 - s) / s))


def _on_device(generator: torch.Generator, device: torch.device | None) -> torch.Generator:
    """``generator`` itself on its own device, else a generator on ``device`` seeded by one draw from it."""
    if device is None or torch.device(device) == generator.device:
        return generator
    seed = int(torch.randint(0, 2**62, (), generator=generator, device=generator.device))
    return torch.Generator(device=device).manual_seed(seed)


def _bernoulli_pair_chunks(
    num_nodes: int, *, rate: float, generator: torch.Generator
) -> Iterator[tuple[Tensor, Tensor]]:
    """(rows, cols) of every pair u < v of [0, ``num_nodes``), each independently w.p. ``rate``, in row-major
    order, a chunk at a time: geometric gaps between successes, O(rate·N²) draws."""
    total = num_nodes * (num_nodes - 1) // 2
    if total == 0 or rate <= 0:
        return
    device = generator.device
    rows = torch.arange(num_nodes, device=device)
    starts = rows * (num_nodes - 1) - rows * (rows - 1) // 2  # pairs in the rows before u
    log_miss = math.log1p(-rate) if rate < 1 else -math.inf
    expected = total * min(rate, 1.0)
    chunk = min(_CANDIDATE_CHUNK, int(expected + 8 * math.sqrt(expected)) + 16)
    last = -1.0  # the previous success; float64 sums are exact below 2^53 > every position kept
    while True:
        uniform = torch.rand(chunk, generator=generator, device=device, dtype=torch.float64)
        # P(gap > k) = (1 − rate)^k; −0.0 when rate = 1, so every gap is 1
        gaps = torch.floor(torch.log1p(-uniform) / log_miss).clamp_(max=float(total)) + 1
        positions = last + torch.cumsum(gaps, 0)
        inside = positions[positions < total].to(torch.long)
        if inside.numel():
            row = torch.searchsorted(starts, inside, right=True) - 1
            yield row, row + 1 + inside - starts[row]
        if inside.numel() < chunk:
            return
        last = float(positions[-1])


def _stream_flips(
    *, num_nodes: int, flip_rate: float, lookup: Tensor, generator: torch.Generator, pairs_per_block: int
) -> tuple[Tensor, Tensor]:
    """Every pair's flip drawn once, in blocks of rows: each node's number of flipped pairs (float64 [N]) and
    the flips at the sorted pair keys ``lookup``."""
    check_int(pairs_per_block, "pairs_per_block", minimum=1)
    if num_nodes > 1 << 24:
        raise ValueError(f"the streaming pass counts degrees in float32, exact up to 2^24 nodes; got {num_nodes}")
    device = generator.device
    counts = torch.zeros(num_nodes, dtype=torch.float64, device=device)
    flips = torch.zeros(lookup.numel(), dtype=torch.bool, device=device)
    # Rows [first, first + rows) against columns (first, N): the upper triangle, block by block.
    blocks, first = [], 0
    while first < num_nodes - 1:
        width = num_nodes - 1 - first
        rows = min(width, max(1, pairs_per_block // width))
        blocks.append((first, rows, width))
        first += rows
    if not blocks:
        return counts, flips
    bounds = torch.tensor([start * num_nodes for start, _, _ in blocks] + [num_nodes * num_nodes], device=device)
    slices = torch.searchsorted(lookup, bounds).tolist()
    lo, hi = lookup // num_nodes, lookup % num_nodes
    buffer = torch.empty(max(rows * width for _, rows, width in blocks), device=device)
    for (first, rows, width), begin, end in zip(blocks, slices[:-1], slices[1:], strict=True):
        block = buffer[: rows * width].view(rows, width).uniform_(generator=generator)
        if end > begin:
            at = (lo[begin:end] - first) * width + (hi[begin:end] - first - 1)
            flips[begin:end] = block.view(-1)[at] < flip_rate
        block.lt_(flip_rate)  # 1.0 where the pair flips
        square = torch.arange(rows, device=device)
        block[:, :rows].masked_fill_(square.unsqueeze(1) > square, 0.0)  # row first + r: columns > first + r only
        # float32 sums of 0/1 are exact below 2^24 (and a cast inside the reduction is ~30× slower)
        counts[first : first + rows] += block.sum(1)
        counts[first + 1 :] += block.sum(0)
    return counts, flips


def _thin(keys: Tensor, probs: Tensor, *, num_nodes: int, rate: float, generator: torch.Generator) -> Tensor:
    """The randomized edges ``keys`` (candidates drawn w.p. ``rate``) kept w.p. √(p_u·p_v)/rate."""
    accept = torch.sqrt(probs[keys // num_nodes] * probs[keys % num_nodes]) / rate
    return keys[torch.rand(keys.numel(), generator=generator, device=generator.device, dtype=torch.float64) < accept]


def _undirected(keys: Tensor, *, num_nodes: int) -> Tensor:
    lo, hi = keys // num_nodes, keys % num_nodes
    return torch.stack([torch.cat([lo, hi]), torch.cat([hi, lo])])
