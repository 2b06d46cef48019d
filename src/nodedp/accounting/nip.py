"""The ledger records of NIP-GNN's three releases (NIP-GNN Sections 4.2-4.3, Appendix A.2) and its reference mode.

NAP (Laplace sum aggregation with per-node budgets, pure ε_A), degree-preserving edge randomization (pure ε_B)
and M-ary label randomized response (pure ε_C) compose to ε_A + ε_B + ε_C. The bounds are functions of
``nodedp.accounting.nip_bounds``; the neighbouring relation, why Theorem 3 needs the
worst case over every graph, and what reference mode charges are in docs/design/accounting.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.constants import BUDGET_SCHEMES
from nodedp.accounting.ledger import MechanismRecord
from nodedp.accounting.nip_bounds import (
    _check_s,
    _check_weights,
    aggregation_sensitivity,
    edge_randomization_epsilon,
    label_keep_probability,
    min_keep_parameter,
    split_budget,
    worst_case_budget_ratio,
)

# Floating-point room when checking a claimed bound (s ≥ s_min, the budget scale).
_RTOL = 1e-12


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
