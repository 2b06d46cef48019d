"""NIP-GNN's privacy bounds as plain functions of their parameters: sensitivities, budgets and ε.

The ledger records built from them are ``nodedp.accounting.nip``'s; ``nodedp.accounting.rebuild`` rebuilds a
record's cost from them. The bounds and their proofs (Lemma 1, Theorems 3-5) are in docs/design/accounting.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from nodedp.accounting._checks import check_int, check_positive


def aggregation_sensitivity(max_degree: int) -> float:
    """ΔH⁰ = 2·D_max: the ℓ1 sensitivity of the ℓ1-normalized sum aggregation (Lemma 1)."""
    return 2.0 * check_int(max_degree, "max_degree", minimum=1)


def min_keep_parameter(epsilon_b: float, max_degree: int) -> float:
    """s_min = 2/(e^{ε_B/(2·D_max)} + 1), the smallest s that Theorem 4 allows for ε_B.

    Computed as 2·e^{−x}/(1 + e^{−x}), x = ε_B/(2·D_max), which cannot overflow.
    """
    epsilon_b = check_positive(epsilon_b, "epsilon_b")
    max_degree = check_int(max_degree, "max_degree", minimum=1)
    tail = math.exp(-epsilon_b / (2.0 * max_degree))
    return 2.0 * tail / (1.0 + tail)


def _check_s(s: float) -> float:
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < 1:
        raise ValueError(f"s (the probability of re-drawing a pair) must lie in (0, 1), got {s!r}")
    return float(s)


def edge_randomization_epsilon(s: float, *, max_degree: int) -> float:
    """ε_B = 2·D_max·ln((2 − s)/s): Theorem 4's bound for randomization parameter s (inverse of s_min)."""
    s = _check_s(s)
    return 2.0 * check_int(max_degree, "max_degree", minimum=1) * math.log((2.0 - s) / s)


def split_budget(epsilon: float, shares: Sequence[float]) -> tuple[float, float, float]:
    """(ε_A, ε_B, ε_C) ∝ ``shares`` (three numbers > 0, normalized), adding up to ``epsilon`` exactly.

    "Exactly" as the ledger adds pure ε (``math.fsum``, the correctly rounded
    sum): the smallest part is the remainder ε − (the other two), nudged by
    an ulp at a time until the sum rounds to ε. It is below ε/2, so its ulp is
    at most half ε's and a remainder that rounds to ε always exists.
    """
    epsilon = check_positive(epsilon, "epsilon")
    if isinstance(shares, str | bytes) or len(shares) != 3:
        raise ValueError(f"shares must be three numbers (for ε_A, ε_B, ε_C), got {shares!r}")
    weights = [check_positive(w, f"shares[{i}]") for i, w in enumerate(shares)]
    total = math.fsum(weights)
    parts = [epsilon * w / total for w in weights]
    last = min(range(3), key=lambda i: parts[i])
    others = [parts[i] for i in range(3) if i != last]

    def with_last(value: float) -> list[float]:
        return [value if i == last else parts[i] for i in range(3)]

    value = epsilon - math.fsum(others)
    for _ in range(64):
        excess = math.fsum([*others, value]) - epsilon
        if excess == 0:
            break
        value = math.nextafter(value, -math.inf if excess > 0 else math.inf)
    if not value > 0 or math.fsum(with_last(value)) != epsilon:  # unreachable for shares > 0
        raise ValueError(f"cannot split ε = {epsilon!r} exactly with shares {list(shares)!r}")
    a, b, c = with_last(value)
    return a, b, c


def _check_weights(weights: Sequence[float], name: str) -> list[float]:
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence) or len(weights) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of numbers, got {weights!r}")
    return [check_positive(w, f"{name}[{i}]") for i, w in enumerate(weights)]


def worst_case_budget_ratio(weights: Sequence[float], *, max_degree: int) -> float:
    """(D·β_(1) + Σ_{j=2}^{D+1} β_(j)) / (2D): Theorem 3's ratio for budgets ε_u = ε_A·β_u on the worst graph.

    β_(1) ≥ β_(2) ≥ … are the weights sorted (any that are not among the
    D + 1 largest do not matter, so the D + 1 largest suffice). For budgets
    fixed before NAP runs (public, or computed from an earlier release only),
    NAP costs ε_A·max_k (D_k·β_k + Σ_{i ∈ N(k)} β_i)/(2D) on a graph with
    degrees ≤ D. Over all such graphs on these node ids and every node k:

    * upper bound: D_k·β_k ≤ D·β_k, and N(k) is at most D nodes other than k
      (no self-loops), so the sum is ≤ D·β_k + (the D largest β_i, i ≠ k).
      That is largest at k = the argmax: for any other k′, swapping k′ for
      the argmax in its neighbour set shows Σ_{D largest, ≠ k′} ≤
      Σ_{D largest, ≠ argmax} + β_(1) − β_k′, so k′'s bound is at most
      (D − 1)·β_k′ + β_(1) + Σ_{D largest, ≠ argmax} ≤ the argmax's.
    * attained (N > D): the star with the argmax at its centre and the next D
      as leaves has degrees ≤ D and exactly this ratio at its centre.

    The pair is the same under removal and addition of k: the graph in which
    k has its edges and the one in which k is an isolated zero row (every
    node id has a budget, absent or not), so the bound covers both
    directions. The ratio does not depend on ε_A. If it is ≤ 1, then
    β_(D+1) ≤ 1 (D·β_(D+1) + D·β_(D+1) ≤ 2D): all but the D largest budgets
    are at most the uniform one, and β_(1) < 2. Computed exactly (in
    fractions) and rounded up, so "ratio ≤ 1" holds exactly for these weights.
    """
    max_degree = check_int(max_degree, "max_degree", minimum=1)
    top = sorted(_check_weights(weights, "weights"), reverse=True)[: max_degree + 1]
    exact = (max_degree * Fraction(top[0]) + sum(map(Fraction, top[1:]), Fraction(0))) / (2 * max_degree)
    ratio = float(exact)
    return ratio if Fraction(ratio) >= exact else math.nextafter(ratio, math.inf)


def label_keep_probability(epsilon: float, num_classes: int) -> float:
    """k = e^ε/(e^ε + M − 1) = 1/(1 + (M − 1)e^{−ε}), rounded down so that ln(k(M − 1)/(1 − k)) ≤ ε in float64.

    The float k is what the sampler uses and what a verifier rebuilds ε from:
    rounded to nearest it can exceed the exact k, and for large ε (≳ 37 +
    ln(M − 1)) it rounds to 1, a sampler that keeps every label. Rounded down
    (ulps at a time) the implemented mechanism costs at most ε, at large ε
    the largest float below 1 (whose cost, ≈ 36.7 + ln(M − 1), is below ε).
    """
    epsilon = check_positive(epsilon, "epsilon")
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    keep = 1.0 / (1.0 + (num_classes - 1) * math.exp(-epsilon))
    while keep >= 1 or math.log(keep * (num_classes - 1) / (1 - keep)) > epsilon:
        keep = math.nextafter(keep, 0.0)
    return keep
