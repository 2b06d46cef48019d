"""White-box audit of a NAP release: the noise a run's ledger records, on the graph where its sensitivity is reached.

Canaries with D receivers and ⌈R⌉ feeders each shift the release by Δ = √(D + R²); the Neyman–Pearson score of
that shift gives a lower bound on the release's ε. Design and canary graph: docs/design/audit-internals.md.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from nodedp.mechanisms import NAP

__all__ = ["nap_edge_record", "nap_edge_release_scores", "nap_record", "nap_release_scores"]


def nap_record(ledger: Any) -> Any | None:
    """The ledger's first node-level NAP record (``params["mechanism"] == "nap"``), or None."""
    for record in ledger.mechanisms:
        params = record.params
        if params.get("mechanism") == "nap" and params.get("level", "node") == "node":
            return record
    return None


def nap_release_scores(
    *, noise_std: float, row_clip: float, max_degree: int, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Release one NAP query with noise std ``noise_std`` over the canary graph of docs/design/audit-internals.md (m
    canaries, each included with probability ½) and score every canary; returns (scores [m], included [m])."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise ValueError(f"m must be an integer >= 2, got {m!r}")
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    if not (math.isfinite(row_clip) and row_clip > 0):
        raise ValueError(f"row_clip must be finite and > 0 (a node-level NAP), got {row_clip!r}")
    if not (math.isfinite(noise_std) and noise_std > 0):
        raise ValueError(f"noise_std must be finite and > 0, got {noise_std!r}")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    feeders, receivers = math.ceil(row_clip), max_degree
    block = 1 + feeders + receivers  # canary, its feeders, its receivers
    base = torch.arange(m) * block
    canary = base
    feeder = base[:, None] + 1 + torch.arange(feeders)  # [m, ⌈R⌉]
    receiver = base[:, None] + 1 + feeders + torch.arange(receivers)  # [m, D]
    x = torch.zeros(m * block, 2, dtype=torch.float64)
    x[feeder.flatten(), 0] = 1.0
    x[canary, 1] = 1.0
    kept = included.nonzero().flatten()
    into = torch.stack([feeder[kept].flatten(), canary[kept].repeat_interleave(feeders)])
    out = torch.stack([canary[kept].repeat_interleave(receivers), receiver[kept].flatten()])
    edges = torch.cat([into, out], dim=1)
    # Δ = √(D + R²): a NAP whose noise multiplier gives exactly the recorded std.
    sensitivity = math.sqrt(max_degree + row_clip**2)
    nap = NAP(level="node", row_clip=row_clip, noise_multiplier=noise_std / sensitivity, max_degree=max_degree)
    released = nap(x, edges, generator=generator)
    own = min(float(feeders), row_clip)  # the included canary's own row, clip_R(⌈R⌉·e₀)
    scores = released[receiver, 1].sum(dim=1) + own * released[canary, 0]
    return scores, included


def nap_edge_record(ledger: Any) -> Any | None:
    """The ledger's first edge-level NAP record (GAP's and ProGAP's ``-edge`` variants), or None."""
    for record in ledger.mechanisms:
        if record.params.get("mechanism") == "nap" and record.params.get("level") == "edge":
            return record
    return None


def nap_edge_release_scores(
    *, noise_std: float, row_clip: float | None, undirected: bool, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Release one edge-level NAP query over m canary pairs (a, b) of unit rows e₀ and e₁, the edge a→b (and b→a
    where the release is undirected) present with probability ½: it moves b's aggregate by e₀ (and a's by e₁), the
    sensitivity 1 (√2 undirected) the accountant charges, where the row clip R ≥ 1 leaves one unit row whole.
    The score is the sum of the moved coordinates; returns (scores [m], included [m])."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise ValueError(f"m must be an integer >= 2, got {m!r}")
    if not (math.isfinite(noise_std) and noise_std > 0):
        raise ValueError(f"noise_std must be finite and > 0, got {noise_std!r}")
    clip = math.inf if row_clip is None else float(row_clip)
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    a, b = torch.arange(m) * 2, torch.arange(m) * 2 + 1
    x = torch.zeros(2 * m, 2, dtype=torch.float64)
    x[a, 0], x[b, 1] = 1.0, 1.0
    kept = included.nonzero().flatten()
    edges = torch.stack([a[kept], b[kept]])
    if undirected:
        edges = torch.cat([edges, edges.flip(0)], dim=1)
    sensitivity = math.sqrt(2.0) if undirected else 1.0
    nap = NAP(level="edge", row_clip=clip, noise_multiplier=noise_std / sensitivity, undirected=undirected)
    released = nap(x, edges, generator=generator)
    scores = released[b, 0] + (released[a, 1] if undirected else 0.0)
    return scores, included
