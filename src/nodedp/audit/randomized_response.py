"""White-box audits of randomized-response releases: NIP-GNN's edges and labels, EdgeRand's adjacency.

Each canary changes every released bit the accountant charges for (a node's D_max edges, its one label, or for
EdgeRand's edge-level ledger one adjacency entry), drawn by the suite's own randomization at the flip or keep
probability the ledger records; its score is the log-likelihood ratio of the released bits, "in" against "out".
Canaries touch disjoint bits, so their scores are independent trials. Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from nodedp.accounting._checks import check_int
from nodedp.mechanisms.edge_rr import randomize_adjacency
from nodedp.mechanisms.nip import degree_preserving_randomization, randomize_labels

__all__ = [
    "RANDOMIZED_RESPONSE_MECHANISMS",
    "edge_rr_release_scores",
    "nip_edge_release_scores",
    "nip_label_release_scores",
    "randomized_response_records",
    "randomized_response_release_scores",
]

# The ledger's randomized-response records (kind "randomized_response") audited here, by ``params["mechanism"]``.
RANDOMIZED_RESPONSE_MECHANISMS = ("nip_edge_rr", "nip_label_rr", "edge_rr")

# Nodes of one randomized canary graph: the randomization is O(N²), so the canaries go a few at a time.
_NODES_PER_DRAW = 64

# randomize(edge_index, num_nodes, generator) -> the released edge_index
Randomizer = Callable[[torch.Tensor, int, torch.Generator], torch.Tensor]


def randomized_response_records(ledger: Any) -> list[Any]:
    """The ledger's randomized-response records this module audits (``RANDOMIZED_RESPONSE_MECHANISMS``), in order."""
    known = RANDOMIZED_RESPONSE_MECHANISMS
    return [r for r in ledger.mechanisms if r.kind == "randomized_response" and r.params.get("mechanism") in known]


def randomized_response_release_scores(record: Any, *, m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The audit of one record of ``randomized_response_records``, its noise read off the record's params."""
    params = record.params
    mechanism = params.get("mechanism")
    if mechanism == "nip_edge_rr":
        return nip_edge_release_scores(s=float(params["s"]), max_degree=int(params["max_degree"]), m=m, seed=seed)
    if mechanism == "nip_label_rr":
        return nip_label_release_scores(
            keep_probability=float(params["keep_probability"]),
            num_classes=int(params["num_classes"]),
            m=m,
            seed=seed,
        )
    if mechanism == "edge_rr":
        return edge_rr_release_scores(
            flip_probability=float(params["flip_probability"]), pairs=str(params["pairs"]), m=m, seed=seed
        )
    raise ValueError(
        f"record {record.name!r}: mechanism {mechanism!r} is not one of {list(RANDOMIZED_RESPONSE_MECHANISMS)}"
    )


def _check_probability(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low < value < high:
        raise ValueError(f"{name} must be a number in ({low:g}, {high:g}), got {value!r}")
    return float(value)


def nip_edge_release_scores(*, s: float, max_degree: int, m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """NIP-GNN's edge randomization (``degree_preserving_randomization``, each pair re-drawn w.p. ``s``, i.e.
    flipped w.p. s/2) over m canaries; returns (scores [m], included [m]), each included with probability ½.

    A canary node has D_max = ``max_degree`` partners of its own: included, it is joined to all of them (its
    D_max pairs present); excluded, it is isolated (all absent), the node relation's neighbouring pair. The
    score is the log-likelihood ratio of its D_max released pairs, ln((2 − s)/s) per pair present less per
    pair absent, at most D_max·ln((2 − s)/s) in size: half the record's ε_B, which counts both directions of
    each pair. The resampling after it is post-processing, so the randomized graph itself is audited.
    """
    s = _check_probability(s, "s", 0.0, 1.0)
    max_degree = check_int(max_degree, "max_degree", minimum=1)

    def randomize(edges: torch.Tensor, num_nodes: int, generator: torch.Generator) -> torch.Tensor:
        return degree_preserving_randomization(edges, num_nodes=num_nodes, s=s, generator=generator)

    return _edge_scores(randomize, flip=s / 2, partners=max_degree, undirected=True, m=m, seed=seed)


def edge_rr_release_scores(
    *, flip_probability: float, pairs: str, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """EdgeRand's randomized response (``randomize_adjacency``, every entry flipped w.p. ``flip_probability``)
    over m canaries; returns (scores [m], included [m]), each included with probability ½.

    EdgeRand's ledger is edge-level: one edge is one adjacency entry (an unordered pair for ``pairs`` =
    "unordered", an ordered one for "ordered"). A canary is that entry between two nodes of its own, present
    or absent; its score is the entry's log-likelihood ratio, ±ln((1 − p)/p).
    """
    p = _check_probability(flip_probability, "flip_probability", 0.0, 0.5)
    if pairs not in ("unordered", "ordered"):
        raise ValueError(f"pairs must be 'unordered' or 'ordered', got {pairs!r}")
    undirected = pairs == "unordered"
    epsilon = math.log((1 - p) / p)  # randomize_adjacency flips w.p. 1/(1 + e^ε) = p

    def randomize(edges: torch.Tensor, num_nodes: int, generator: torch.Generator) -> torch.Tensor:
        return randomize_adjacency(
            edges, num_nodes=num_nodes, epsilon=epsilon, undirected=undirected, generator=generator
        )

    return _edge_scores(randomize, flip=p, partners=1, undirected=undirected, m=m, seed=seed)


def _edge_scores(
    randomize: Randomizer, *, flip: float, partners: int, undirected: bool, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Canaries of ``partners`` edges each, randomized a block of canaries at a time; each canary's score is
    (present − absent among its released pairs)·ln((1 − flip)/flip), exact multiples so that ties are exact."""
    m = check_int(m, "m", minimum=2)
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    block = 1 + partners  # the canary, its partners
    per_draw = max(1, _NODES_PER_DRAW // block)
    present = []
    for start in range(0, m, per_draw):
        bits = included[start : start + per_draw]
        canary = torch.arange(bits.numel()) * block
        partner = canary[:, None] + 1 + torch.arange(partners)  # [canaries, partners]
        hub = canary[bits].repeat_interleave(partners)
        spoke = partner[bits].flatten()
        edges = torch.stack([hub, spoke])
        if undirected:
            edges = torch.cat([edges, edges.flip(0)], dim=1)
        num_nodes = bits.numel() * block
        released = randomize(edges, num_nodes, generator)
        keys = torch.unique(released[0] * num_nodes + released[1])
        asked = (canary[:, None] * num_nodes + partner).flatten()
        present.append(torch.isin(asked, keys).view(-1, partners).sum(dim=1))
    count = torch.cat(present).to(torch.float64)
    return (2.0 * count - partners) * math.log((1 - flip) / flip), included


def nip_label_release_scores(
    *, keep_probability: float, num_classes: int, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """NIP-GNN's label randomized response (``randomize_labels``, Eq. 13: kept w.p. k = ``keep_probability``,
    else uniform over the other M − 1 classes) over m canaries; returns (scores [m], included [m]), each
    included with probability ½.

    A removed node's label is a fixed dummy class (the record's relation): an included canary has label 0,
    an excluded one class 1. ``randomize_labels`` takes ε = ln(k·(M − 1)/(1 − k)), the recorded k's, and
    keeps w.p. k again (to the ulp). The score is the released label's log-likelihood ratio: +ε for 0, −ε
    for 1, 0 for any other class.
    """
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    keep = _check_probability(keep_probability, "keep_probability", 1.0 / num_classes, 1.0)
    m = check_int(m, "m", minimum=2)
    epsilon = math.log(keep * (num_classes - 1) / (1 - keep))
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    labels = (~included).to(torch.int64)  # 0 in, the dummy class 1 out
    released = randomize_labels(labels, num_classes=num_classes, epsilon=epsilon, generator=generator)
    scores = epsilon * ((released == 0).to(torch.float64) - (released == 1).to(torch.float64))
    return scores, included
