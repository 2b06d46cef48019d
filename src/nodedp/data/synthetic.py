"""Contextual stochastic block model (CSBM) with degree correction.

The embedded default dataset: graphs made from code, so the demo runs offline.
Edges follow a degree-corrected SBM parameterised by the expected share of
intra-class edges (``homophily``); features are a class mean plus N(0, I)
noise. Sampling is vectorised: draw the number of edges, draw each edge's
block pair, draw both endpoints by propensity within their blocks, dedupe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import numpy as np

if TYPE_CHECKING:
    from torch_geometric.data import Data

_MAX_ROUNDS = 64


@dataclass(frozen=True)
class CSBMSpec:
    """Parameters of a CSBM graph; the graph is a pure function of this value.

    ``homophily`` is the expected share of intra-class edges. ``feature_signal``
    is the distance between any two class means (orthogonal directions), in
    units of the unit-variance Gaussian feature noise. ``degree_exponent`` is
    the power-law exponent of the degree propensities (smaller = heavier tail;
    > 2 so the mean is finite); ``None`` gives every node the same propensity.
    ``class_weights`` are relative class sizes (``None`` = equal).
    """

    num_nodes: int
    num_classes: int
    avg_degree: float
    homophily: float
    num_features: int
    feature_signal: float
    degree_exponent: float | None
    class_weights: tuple[float, ...] | None
    seed: int

    def __post_init__(self) -> None:
        def fail(problem: str) -> NoReturn:
            raise ValueError(f"invalid CSBMSpec: {problem}")

        if self.num_classes < 2:
            fail(f"num_classes must be >= 2, got {self.num_classes}")
        if self.num_nodes < self.num_classes:
            fail(f"num_nodes ({self.num_nodes}) must be >= num_classes ({self.num_classes})")
        if not 0 < self.avg_degree < self.num_nodes - 1:
            fail(f"avg_degree must lie in (0, num_nodes - 1 = {self.num_nodes - 1}), got {self.avg_degree}")
        if not 0.0 <= self.homophily <= 1.0:
            fail(f"homophily must lie in [0, 1], got {self.homophily}")
        if self.num_features < self.num_classes:
            fail(
                f"num_features ({self.num_features}) must be >= num_classes ({self.num_classes}) "
                "so that the class means can be orthogonal"
            )
        if not (math.isfinite(self.feature_signal) and self.feature_signal >= 0):
            fail(f"feature_signal must be finite and >= 0, got {self.feature_signal}")
        if self.degree_exponent is not None and not (math.isfinite(self.degree_exponent) and self.degree_exponent > 2):
            fail(f"degree_exponent must be None or a finite number > 2, got {self.degree_exponent}")
        if self.class_weights is not None:
            if len(self.class_weights) != self.num_classes:
                fail(f"class_weights has {len(self.class_weights)} entries, num_classes is {self.num_classes}")
            if not all(math.isfinite(w) and w > 0 for w in self.class_weights):
                fail(f"class_weights must be finite and > 0, got {self.class_weights}")
        if self.seed < 0:
            fail(f"seed must be >= 0, got {self.seed}")


def _class_sizes(spec: CSBMSpec) -> np.ndarray:
    """Exact class sizes by largest remainder, so every class share is as specified."""
    weights = np.ones(spec.num_classes) if spec.class_weights is None else np.asarray(spec.class_weights)
    quota = weights / weights.sum() * spec.num_nodes
    sizes = np.floor(quota).astype(np.int64)
    remainder_order = np.argsort(-(quota - sizes), kind="stable")
    sizes[remainder_order[: spec.num_nodes - sizes.sum()]] += 1
    if sizes.min() == 0:
        raise ValueError(
            f"invalid CSBMSpec: class_weights {spec.class_weights} leave class {int(sizes.argmin())} "
            f"empty with num_nodes {spec.num_nodes}"
        )
    return sizes


def _propensities(spec: CSBMSpec, rng: np.random.Generator) -> np.ndarray:
    """Degree propensities θ (mean 1), Pareto-tailed and capped at the structural cutoff."""
    if spec.degree_exponent is None:
        return np.ones(spec.num_nodes)
    # P(θ > t) = t^-(γ-1): degrees then follow a power law with exponent γ.
    theta = (1.0 - rng.random(spec.num_nodes)) ** (-1.0 / (spec.degree_exponent - 1.0))
    # Expected degrees above sqrt(N * d) would ask for more than one edge per
    # pair; the cap (a fixed point, reached in a few rounds) keeps them simple.
    cap = math.sqrt(spec.num_nodes * spec.avg_degree) / spec.avg_degree
    for _ in range(8):
        theta = np.minimum(theta / theta.mean(), cap)
    return theta / theta.mean()


def _sample_edges(spec: CSBMSpec, labels: np.ndarray, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unique undirected pairs (u < v), shape [2, M], M ~ Poisson(N * d / 2).

    Intra- and inter-class edges are drawn as two pools with their own targets
    (M_intra ~ Binomial(M, homophily)), so deduplication, which hits the denser
    intra-class blocks harder, does not bias the realised homophily.
    """
    n, c = spec.num_nodes, spec.num_classes
    order = np.argsort(labels, kind="stable")
    cum = np.cumsum(theta[order])
    mass = np.bincount(labels, weights=theta, minlength=c)
    block_end = np.cumsum(np.bincount(labels, minlength=c))
    block_start_mass = np.concatenate([[0.0], np.cumsum(mass)[:-1]])

    def endpoints(blocks: np.ndarray) -> np.ndarray:
        target = block_start_mass[blocks] + rng.random(blocks.size) * mass[blocks]
        idx = np.minimum(np.searchsorted(cum, target, side="right"), block_end[blocks] - 1)
        return order[idx]

    def pool(block_weight: np.ndarray, target_edges: int, kind: str) -> np.ndarray:
        pair_prob = (block_weight / block_weight.sum()).ravel()
        keys = np.empty(0, dtype=np.int64)
        # Self-loops and repeats are dropped, so draw in rounds until enough remain.
        for _ in range(_MAX_ROUNDS):
            if keys.size >= target_edges:
                return keys[:target_edges]
            draws = int((target_edges - keys.size) * 1.2) + 16
            pairs = rng.choice(c * c, size=draws, p=pair_prob)
            u, v = endpoints(pairs // c), endpoints(pairs % c)
            fresh = (np.minimum(u, v) * n + np.maximum(u, v))[u != v]
            # Keep first occurrences in draw order, so truncation drops the
            # latest draws rather than a subset biased by node id.
            merged = np.concatenate([keys, fresh])
            _, first = np.unique(merged, return_index=True)
            keys = merged[np.sort(first)]
        raise ValueError(
            f"CSBM sampling found only {keys.size} of {target_edges} distinct {kind}-class edges "
            f"after {_MAX_ROUNDS} rounds: avg_degree {spec.avg_degree} is too dense for "
            f"homophily {spec.homophily} and these class sizes"
        )

    total = int(rng.poisson(n * spec.avg_degree / 2))
    num_intra = int(rng.binomial(total, spec.homophily))
    intra = np.diag(mass**2)
    keys = np.concatenate(
        [
            pool(intra, num_intra, "intra"),
            pool(np.outer(mass, mass) - intra, total - num_intra, "inter"),
        ]
    )
    return np.stack([keys // n, keys % n])


def _features(spec: CSBMSpec, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    # Orthonormal class directions scaled by signal / sqrt(2): every pair of
    # class means is exactly feature_signal apart.
    q, _ = np.linalg.qr(rng.standard_normal((spec.num_features, spec.num_classes)))
    means = q.T * (spec.feature_signal / math.sqrt(2.0))
    return means[labels] + rng.standard_normal((spec.num_nodes, spec.num_features))


def generate_csbm(spec: CSBMSpec) -> Data:
    """Sample a CSBM graph: undirected (both directions stored), no self-loops or duplicates."""
    import torch  # here: the registry builds specs (CSBMSpec) torch-free
    from torch_geometric.data import Data

    rng = np.random.default_rng(spec.seed)
    labels = rng.permutation(np.repeat(np.arange(spec.num_classes), _class_sizes(spec)))
    theta = _propensities(spec, rng)
    pairs = _sample_edges(spec, labels, theta, rng)
    x = _features(spec, labels, rng)

    n = spec.num_nodes
    directed = np.concatenate([pairs, pairs[::-1]], axis=1)
    directed = directed[:, np.argsort(directed[0] * n + directed[1], kind="stable")]
    return Data(
        x=torch.from_numpy(x.astype(np.float32)),
        y=torch.from_numpy(labels.astype(np.int64)),
        edge_index=torch.from_numpy(np.ascontiguousarray(directed, dtype=np.int64)),
    )
