"""Privacy accounting of NIP-GNN's three releases (NIP-GNN Sections 4.2-4.3, Appendix A.2).

Neighbouring graphs differ in one node k: its features, label and edges are
removed (k stays an isolated zero row). Every degree is at most the public
bound D = D_max, enforced by sampling edges (``nodedp.data.bound_undirected_degree``).

* NAP, the first sum aggregation (Eq. 9): H_u = Σ_{j ∈ N(u)} X̂_j with ℓ1-unit
  rows X̂_j, plus Laplace(2D/ε_u) on every entry of row u. Removing k zeroes
  row k (≤ D_k unit vectors) and removes X̂_k from its D_k neighbours' rows, so
  ‖ΔH‖₁ ≤ 2D (Lemma 1), and the privacy loss is
  Σ_rows ‖ΔH_row‖₁·ε_row/(2D) ≤ (D_k·ε_k + Σ_{i ∈ N(k)} ε_i)/(2D). Theorem 3
  claims this is ≤ ε_A when ε_u = ε_A·β_u with β from Eq. 11, but β is
  computed on the *released* graph (the budgets are post-processing of the
  ε_B release) while the bound must hold for every private graph and node k:
  adaptive composition fixes the budgets and then needs NAP to be ε_A-DP for
  every neighbouring pair. ``worst_case_budget_ratio`` is that supremum over
  all graphs with degrees ≤ D (exact once N > D); the suite divides β by it
  when it exceeds 1 (``nodedp.mechanisms.nip.scale_budgets_to_worst_case``),
  so NAP is pure ε_A-DP, and the record stores the D + 1 largest budgets the
  cost is recomputed from.
* Degree-preserving edge randomization (Theorem 4): each unordered pair is
  kept w.p. 1 − s, else set to Bern(1/2), i.e. flipped w.p. s/2, a likelihood
  ratio of (1 − s/2)/(s/2) = (2 − s)/s per pair. The paper counts the D_k
  row entries and the D_k column entries of k, 2·D entries, so
  ε_B = 2D·ln((2 − s)/s), i.e. s ≥ s_min = 2/(e^{ε_B/(2D)} + 1). Since the two
  entries of a pair are set together, D·ln((2 − s)/s) = ε_B/2 would suffice:
  charging ε_B follows the paper and over-charges by a factor of 2.
* Labels by M-ary randomized response (Eq. 13): keep w.p. e^ε/(e^ε + M − 1),
  else a uniformly random other class; any two inputs give likelihood ratio
  ≤ e^{ε_C} for the one output of node k (a removed node's label is a fixed
  dummy class, so removal is a substitution). Pure ε_C.

The three compose to ε_A + ε_B + ε_C (Theorem 5, basic composition).

Reference mode (``nip_paper_noise``, ``nip_reference_epsilon``): the paper sizes
the noise with D_max = the private graph's maximum degree D_p and Eq. 11's β
unscaled, and claims ε_A + ε_B + ε_C (pure ε, δ = 0). Recorded against the bound
D ≥ D_p actually enforced, the same noise costs ε_A·(D/D_p)·(worst-case ratio of
β at D) + ε_B·D/D_p + ε_C. That figure takes D_p (and Eq. 12's private degrees)
as given: the ledger records them as uncharged reads, for which no finite ε
exists (``nip_reference_epsilon``).
Torch-free, like the rest of ``nodedp.accounting``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.constants import BUDGET_SCHEMES  # re-exported
from nodedp.accounting.ledger import MechanismRecord

__all__ = [
    "BUDGET_SCHEMES",
    "NipActualEpsilon",
    "NipPaperNoise",
    "aggregation_sensitivity",
    "edge_randomization_epsilon",
    "label_keep_probability",
    "min_keep_parameter",
    "nip_aggregation_record",
    "nip_edge_record",
    "nip_label_record",
    "nip_paper_noise",
    "nip_reference_epsilon",
    "split_budget",
    "worst_case_budget_ratio",
]

# Floating-point room when checking a claimed bound (s ≥ s_min, the budget scale).
_RTOL = 1e-12


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


def nip_aggregation_record(
    *,
    epsilon_a: float,
    max_degree: int,
    budget_scheme: str,
    largest_budget_weights: Sequence[float],
    worst_case_ratio_before_scaling: float,
    budget_scale: float,
    method: str = "nip-gnn",
    caveat: str | None = None,
    reference: bool = False,
) -> MechanismRecord:
    """The ledger record of NAP (Eq. 9): Laplace(2·D_max/ε_u) per row, ε_u = ε_A·β_u, pure ε_A.

    ``largest_budget_weights`` are the min(N, D_max + 1) largest β_u actually
    used, in descending order; the record recomputes ``worst_case_budget_ratio``
    from them and refuses a ratio above 1, for which ε_A is not the cost. The
    weights are the scheme's β (computed on released data) divided by
    ``budget_scale`` = max(1, ``worst_case_ratio_before_scaling``) (nudged up
    by ulps where rounding needs it), so the stored ratio must equal the one
    before scaling divided by the scale. A verifier rebuilds the cost from
    ``epsilon_a``, ``max_degree``, ``laplace_scale_at_epsilon_a`` (= 2·D_max/ε_A)
    and ``largest_budget_weights`` alone: ``charged_ratio`` =
    ``worst_case_budget_ratio(largest_budget_weights, max_degree=max_degree)``
    ≤ 1, and the cost is ε_A·charged_ratio ≤ ε_A (the charge).

    ``reference`` (a paper-mode run, ``nip_reference_epsilon``): the budgets
    are the paper's, unscaled (``budget_scale`` = 1), so ``charged_ratio`` may
    exceed 1, and the record charges what they cost, ε_A·charged_ratio. Here
    ``max_degree`` is the bound actually enforced and ``epsilon_a`` the ε_A at
    which Laplace(2·max_degree/ε_A) is the noise that ran (ε_A·D/D_p for noise
    sized at the paper's D_p).
    """
    epsilon_a = check_positive(epsilon_a, "epsilon_a")
    sensitivity = aggregation_sensitivity(max_degree)
    if budget_scheme not in BUDGET_SCHEMES:
        raise ValueError(f"unknown budget_scheme {budget_scheme!r}; valid choices: {list(BUDGET_SCHEMES)}")
    weights = _check_weights(largest_budget_weights, "largest_budget_weights")
    if len(weights) > max_degree + 1 or weights != sorted(weights, reverse=True):
        raise ValueError(
            f"largest_budget_weights must be the ≤ D_max + 1 = {max_degree + 1} largest weights in "
            f"descending order, got {len(weights)} values"
        )
    ratio = worst_case_budget_ratio(weights, max_degree=max_degree)
    if ratio > 1 and not reference:
        raise ValueError(
            f"worst-case Theorem 3 ratio = {ratio:.6g} > 1: these budgets lose up to {ratio:.6g}·ε_A, not ε_A, "
            "on some graph with degrees ≤ D_max (divide them by the ratio)"
        )
    before = check_positive(worst_case_ratio_before_scaling, "worst_case_ratio_before_scaling")
    scale = check_positive(budget_scale, "budget_scale")
    if reference and scale != 1.0:
        raise ValueError(
            f"a reference record's budgets are the paper's, unscaled: budget_scale must be 1, got {scale!r}"
        )
    if not reference and scale < max(1.0, before) * (1 - _RTOL):
        raise ValueError(f"budget_scale = {scale!r} is below max(1, worst_case_ratio_before_scaling = {before!r})")
    if not math.isclose(ratio, before / scale, rel_tol=1e-9):
        raise ValueError(
            f"largest_budget_weights give worst-case ratio {ratio!r}, but "
            f"worst_case_ratio_before_scaling / budget_scale = {before / scale!r}"
        )
    return MechanismRecord(
        name=f"nip-aggregation:{method}",
        kind="laplace",
        touches=("features", "edges"),
        params={
            "mechanism": "nip_aggregation",
            "epsilon_a": epsilon_a,
            "max_degree": max_degree,
            "budget_scheme": budget_scheme,
            "laplace_scale_at_epsilon_a": sensitivity / epsilon_a,
            "largest_budget_weights": weights,
            "charged_ratio": ratio,
            "worst_case_ratio_before_scaling": before,
            "budget_scale": scale,
        },
        sensitivity=sensitivity,
        sensitivity_reason=(
            f"rows are ℓ1-normalized features summed over neighbours, degrees ≤ D_max = {max_degree}: removing "
            "node k zeroes its own row (≤ D_k unit vectors) and takes its unit vector from D_k neighbours' rows, "
            f"‖ΔH‖₁ ≤ 2·D_max = {sensitivity:g} (Lemma 1); row u gets Laplace(2·D_max/(ε_A·β_u)) per entry, so the "
            "loss is ε_A·(D_k·β_k + Σ_{i∈N(k)} β_i)/(2·D_max) ≤ ε_A·(D_max·β_(1) + Σ_{j=2}^{D_max+1} β_(j))/(2·D_max) "
            f"= {ratio:.6g}·ε_A {'(charged as such: the paper claims ε_A)' if reference else '≤ ε_A'} for every "
            "graph with degrees ≤ D_max and either direction of the pair "
            "(β is fixed by the earlier edge release; Theorem 3's constraint over all graphs)"
        ),
        dp_event=None,
        pure_epsilon=epsilon_a * ratio if reference else epsilon_a,
        caveat=caveat,
    )


def nip_edge_record(
    *, epsilon_b: float, s: float, max_degree: int, method: str = "nip-gnn", caveat: str | None = None
) -> MechanismRecord:
    """The ledger record of degree-preserving edge randomization (Theorem 4): pure ε_B.

    Refuses s < s_min(ε_B, D_max) (``min_keep_parameter``). The sampling that
    follows is post-processing only if its probabilities come from public or
    already released data; if they read the private degrees, say so in ``caveat``.
    """
    epsilon_b = check_positive(epsilon_b, "epsilon_b")
    s = _check_s(s)
    s_min = min_keep_parameter(epsilon_b, max_degree)
    if s < s_min * (1 - _RTOL):
        raise ValueError(
            f"s = {s!r} is below s_min = 2/(e^(ε_B/2D_max) + 1) = {s_min!r} for ε_B = {epsilon_b!r}, "
            f"D_max = {max_degree}: the randomization would cost more than ε_B"
        )
    return MechanismRecord(
        name=f"nip-edges:{method}",
        kind="randomized_response",
        touches=("edges",),
        params={
            "mechanism": "nip_edge_rr",
            "epsilon_b": epsilon_b,
            "s": s,
            "flip_probability": s / 2,
            "max_degree": max_degree,
            "s_min": s_min,
            "epsilon_of_s": edge_randomization_epsilon(s, max_degree=max_degree),
        },
        sensitivity=2.0 * max_degree,
        sensitivity_reason=(
            f"degrees ≤ D_max = {max_degree} (enforced by sampling edges, bound_undirected_degree): removing a node "
            "changes its ≤ D_max pairs, each kept w.p. 1 − s else re-drawn Bern(1/2) (flipped w.p. s/2, likelihood "
            f"ratio (2 − s)/s); counted as in the paper over both directions, 2·D_max = {2 * max_degree} entries, "
            "2·D_max·ln((2 − s)/s) ≤ ε_B for s ≥ s_min (Theorem 4; the pairs flip together, so ε_B/2 would suffice)"
        ),
        dp_event=None,
        pure_epsilon=epsilon_b,
        caveat=caveat,
    )


@dataclass(frozen=True)
class NipPaperNoise:
    """The noise NIP-GNN's paper sizes for a claimed ε (``nip_paper_noise``)."""

    epsilon_a: float  # NAP's ε_A
    epsilon_b: float  # the edge randomization's ε_B
    epsilon_c: float  # the labels' ε_C
    max_degree: int  # the paper's D_max: the private graph's maximum degree
    laplace_scale_at_epsilon_a: float  # 2·D_max/ε_A; row u gets this/β_u (Eq. 9, Lemma 1)
    s: float  # 2/(e^{ε_B/2D_max} + 1) (Theorem 4)
    label_keep_probability: float  # e^{ε_C}/(e^{ε_C} + M − 1) (Eq. 13)


def nip_paper_noise(epsilon: float, shares: Sequence[float], *, max_degree: int, num_classes: int) -> NipPaperNoise:
    """NIP-GNN's noise for a claimed pure ε, by the paper's rule (Theorems 3-5, Eq. 9, 13).

    ε = ε_A + ε_B + ε_C (Theorem 5; the split is ``split_budget`` of the
    suite's ``shares``, the paper gives none); NAP adds Laplace(2·D_max/ε_u),
    ε_u = ε_A·β_u, to row u (Eq. 9 with Lemma 1's ΔH⁰ = 2·D_max; β from Eq. 11,
    which Theorem 3 claims keeps the total at ε_A); the edges are randomized
    with s = 2/(e^{ε_B/2D_max} + 1) (Theorem 4); the labels by M-ary randomized
    response at ε_C (Eq. 13). ``max_degree`` is the paper's D_max, the
    maximum degree of the private graph (§5.1: no degree bounding).
    """
    epsilon_a, epsilon_b, epsilon_c = split_budget(epsilon, shares)
    return NipPaperNoise(
        epsilon_a=epsilon_a,
        epsilon_b=epsilon_b,
        epsilon_c=epsilon_c,
        max_degree=max_degree,
        laplace_scale_at_epsilon_a=aggregation_sensitivity(max_degree) / epsilon_a,
        s=min_keep_parameter(epsilon_b, max_degree),
        label_keep_probability=label_keep_probability(epsilon_c, num_classes),
    )


@dataclass(frozen=True)
class NipActualEpsilon:
    """What the paper's noise costs over graphs with degrees ≤ the enforced bound (``nip_reference_epsilon``)."""

    epsilon_a_at_bound: float  # ε_A·D/D_p: the ε_A at which Laplace(2D/ε_A) is the noise that ran
    charged_ratio: float  # the budgets' worst-case Theorem 3 ratio at D (> 1 for Eq. 11's budgets)
    nap: float  # epsilon_a_at_bound·charged_ratio
    edges: float  # ε_B·D/D_p = 2D·ln((2 − s)/s)
    labels: float  # ε_C
    total: float  # their sum (fsum, as the ledger adds pure ε)


def nip_reference_epsilon(
    epsilon: float,
    shares: Sequence[float],
    *,
    paper_max_degree: int,
    enforced_bound: int,
    largest_budget_weights: Sequence[float],
) -> NipActualEpsilon:
    """The actual pure ε of NIP-GNN's noise sized by the paper for a claimed ``epsilon`` (``nip_paper_noise``).

    The noise is sized at the paper's D_max = D_p (``paper_max_degree``, the
    private graph's maximum degree); the graph has degrees ≤ D =
    ``enforced_bound`` ≥ D_p (the public bound the suite's sampling enforces).
    Over every neighbouring pair of graphs with degrees ≤ D:

    * NAP: row u has Laplace(2·D_p/(ε_A·β_u)), so removing k costs
      ε_A·(D_k·β_k + Σ_{i∈N(k)} β_i)/(2·D_p) ≤ ε_A·(D/D_p)·``worst_case_budget_ratio``(β, D),
      not ε_A: Eq. 11's budgets (computed on one graph, unscaled) exceed
      Theorem 3's constraint on others (a star, for one);
    * edges: 2D·ln((2 − s)/s) with s sized at D_p, = ε_B·D/D_p;
    * labels: ε_C.

    ``largest_budget_weights`` are the min(N, D + 1) largest β used. With
    D_p = D and uniform budgets this is ε (what the paper claims), otherwise
    more. It is a figure *given* D_p and Eq. 12's private degrees: the noise
    scales and s depend on D_p, so a neighbouring graph with another maximum
    degree gets Laplace noise of another scale, whose privacy loss is unbounded
    (as is that of Eq. 12's probabilities, 0 for an isolated node); no finite ε
    covers those reads, which the ledger records as uncharged.
    """
    paper_max_degree = check_int(paper_max_degree, "paper_max_degree", minimum=1)
    enforced_bound = check_int(enforced_bound, "enforced_bound", minimum=1)
    if paper_max_degree > enforced_bound:
        raise ValueError(
            f"the private maximum degree D_p = {paper_max_degree} cannot exceed the enforced bound D = {enforced_bound}"
        )
    epsilon_a, epsilon_b, epsilon_c = split_budget(epsilon, shares)
    factor = enforced_bound / paper_max_degree
    weights = sorted(_check_weights(largest_budget_weights, "largest_budget_weights"), reverse=True)
    ratio = worst_case_budget_ratio(weights[: enforced_bound + 1], max_degree=enforced_bound)
    at_bound = epsilon_a * factor
    nap, edges = at_bound * ratio, epsilon_b * factor
    return NipActualEpsilon(
        epsilon_a_at_bound=at_bound,
        charged_ratio=ratio,
        nap=nap,
        edges=edges,
        labels=epsilon_c,
        total=math.fsum([nap, edges, epsilon_c]),
    )


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


def nip_label_record(*, epsilon_c: float, num_classes: int, method: str = "nip-gnn") -> MechanismRecord:
    """The ledger record of label randomized response (Eq. 13): pure ε_C (``label_keep_probability``)."""
    epsilon_c = check_positive(epsilon_c, "epsilon_c")
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    keep = label_keep_probability(epsilon_c, num_classes)
    return MechanismRecord(
        name=f"nip-labels:{method}",
        kind="randomized_response",
        touches=("labels",),
        params={
            "mechanism": "nip_label_rr",
            "epsilon_c": epsilon_c,
            "num_classes": num_classes,
            "keep_probability": keep,
        },
        sensitivity=1.0,
        sensitivity_reason=(
            f"one node has one label, released once by {num_classes}-ary randomized response: any two labels "
            "(a removed node's is a fixed dummy class) give that output likelihood ratio ≤ e^ε_C"
        ),
        dp_event=None,
        pure_epsilon=epsilon_c,
    )
