"""Privacy accounting of NIP-GNN's three releases (NIP-GNN Sections 4.2-4.3, Appendix A.2).

Neighbouring graphs differ in one node k: its features, label and edges are
removed (k stays an isolated zero row). Every degree is at most the public
bound D = D_max, enforced by sampling edges (``nodedp.data.bound_undirected_degree``).

* NAP, the first sum aggregation (Eq. 9): H_u = Σ_{j ∈ N(u)} X̂_j with ℓ1-unit
  rows X̂_j, plus Laplace(2D/ε_u) on every entry of row u. Removing k zeroes
  row k (≤ D_k unit vectors) and removes X̂_k from its D_k neighbours' rows, so
  ‖ΔH‖₁ ≤ 2D (Lemma 1), and the privacy loss is
  Σ_rows ‖ΔH_row‖₁·ε_row/(2D) ≤ (D_k·ε_k + Σ_{i ∈ N(k)} ε_i)/(2D). Theorem 3
  claims this is ≤ ε_A when ε_u = ε_A·β_u with β from Eq. 11; that holds iff
  ``theorem3_ratio`` ≤ 1 on the graph (``nodedp.mechanisms.nip``). Pure ε_A.
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
Torch-free, like the rest of ``nodedp.accounting``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.ledger import MechanismRecord

__all__ = [
    "BUDGET_SCHEMES",
    "aggregation_sensitivity",
    "edge_randomization_epsilon",
    "min_keep_parameter",
    "nip_aggregation_record",
    "nip_edge_record",
    "nip_label_record",
    "split_budget",
]

# How NAP's per-node budgets β_u are set (``nodedp.mechanisms.nip.nip_budget_weights``):
# "paper" Eq. 11 as printed; "capped" Eq. 11 and β_u ≤ D/D_u (the bound Theorem 3's proof uses);
# "uniform" β = 1 (plain Laplace, the paper's "w/o A-a" ablation).
BUDGET_SCHEMES: tuple[str, ...] = ("paper", "capped", "uniform")

# Floating-point room when checking a claimed bound (ratio ≤ 1, s ≥ s_min).
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


def nip_aggregation_record(
    *,
    epsilon_a: float,
    max_degree: int,
    budget_scheme: str,
    theorem3_ratio: float,
    method: str = "nip-gnn",
    caveat: str | None = None,
) -> MechanismRecord:
    """The ledger record of NAP (Eq. 9): Laplace(2·D_max/ε_u) per row, pure ε_A.

    ``theorem3_ratio`` is max_k (D_k·ε_k + Σ_{i ∈ N(k)} ε_i)/(2·ε_A·D_max) for the
    budgets actually used (``nodedp.mechanisms.nip.theorem3_ratio`` on a graph,
    or ``worst_case_theorem3_ratio`` over all graphs); the record refuses a
    ratio above 1, for which ε_A is not the cost. Say in ``caveat`` what the
    guarantee rests on beyond the module docstring, e.g. budgets or the ratio
    computed on a graph other than the private one, or read from private data.
    """
    epsilon_a = check_positive(epsilon_a, "epsilon_a")
    sensitivity = aggregation_sensitivity(max_degree)
    if budget_scheme not in BUDGET_SCHEMES:
        raise ValueError(f"unknown budget_scheme {budget_scheme!r}; valid choices: {list(BUDGET_SCHEMES)}")
    ratio = theorem3_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not (math.isfinite(ratio) and ratio >= 0):
        raise ValueError(f"theorem3_ratio must be a finite number >= 0, got {ratio!r}")
    if ratio > 1 + _RTOL:
        raise ValueError(
            f"theorem3_ratio = {ratio:.6g} > 1: these budgets lose up to {ratio:.6g}·ε_A, not ε_A "
            "(divide them by the ratio, or use budget_scheme 'capped' or 'uniform')"
        )
    return MechanismRecord(
        name=f"nip-aggregation:{method}",
        kind="laplace",
        touches=("features", "edges"),
        params={"epsilon_a": epsilon_a, "max_degree": max_degree, "budget_scheme": budget_scheme,
                "theorem3_ratio": float(ratio), "laplace_scale_at_epsilon_a": sensitivity / epsilon_a},
        sensitivity=sensitivity,
        sensitivity_reason=(
            f"rows are ℓ1-normalized features summed over neighbours, degrees ≤ D_max = {max_degree}: removing "
            "node k zeroes its own row (≤ D_k unit vectors) and takes its unit vector from D_k neighbours' rows, "
            f"‖ΔH‖₁ ≤ 2·D_max = {sensitivity:g} (Lemma 1); row u gets Laplace(2·D_max/ε_u) per entry, so the loss is "
            "(D_k·ε_k + Σ_{i∈N(k)} ε_i)/(2·D_max) ≤ theorem3_ratio·ε_A ≤ ε_A (Theorem 3's constraint)"
        ),
        dp_event=None,
        pure_epsilon=epsilon_a,
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
        raise ValueError(f"s = {s!r} is below s_min = 2/(e^(ε_B/2D_max) + 1) = {s_min!r} for ε_B = {epsilon_b!r}, "
                         f"D_max = {max_degree}: the randomization would cost more than ε_B")
    return MechanismRecord(
        name=f"nip-edges:{method}",
        kind="randomized_response",
        touches=("edges",),
        params={"epsilon_b": epsilon_b, "s": s, "flip_probability": s / 2, "max_degree": max_degree,
                "s_min": s_min, "epsilon_of_s": edge_randomization_epsilon(s, max_degree=max_degree)},
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


def nip_label_record(*, epsilon_c: float, num_classes: int, method: str = "nip-gnn") -> MechanismRecord:
    """The ledger record of label randomized response (Eq. 13): pure ε_C."""
    epsilon_c = check_positive(epsilon_c, "epsilon_c")
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    return MechanismRecord(
        name=f"nip-labels:{method}",
        kind="randomized_response",
        touches=("labels",),
        params={"epsilon_c": epsilon_c, "num_classes": num_classes,
                "keep_probability": 1.0 / (1.0 + (num_classes - 1) * math.exp(-epsilon_c))},
        sensitivity=1.0,
        sensitivity_reason=(
            f"one node has one label, released once by {num_classes}-ary randomized response: any two labels "
            "(a removed node's is a fixed dummy class) give that output likelihood ratio ≤ e^ε_C"
        ),
        dp_event=None,
        pure_epsilon=epsilon_c,
    )
