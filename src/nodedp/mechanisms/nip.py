"""The privacy building blocks of NIP-GNN (NIP-GNN Sections 4.2-4.3, Eq. 9-13).

Per-node budget weights (Eq. 10-11) and Theorem 3's check, the Laplace-perturbed first aggregation (Eq. 9), the
degree-preserving edge randomization and sampling, and label randomized response. The privacy analysis and ledger
records live in ``nodedp.accounting.nip``; conventions and details: docs/design/mechanisms.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.constants import BUDGET_SCHEMES
from nodedp.accounting.nip_bounds import (
    _check_s,
    aggregation_sensitivity,
    label_keep_probability,
    worst_case_budget_ratio,
)
from nodedp.mechanisms.edge_rr import randomize_adjacency
from nodedp.mechanisms.edge_sum import neighbour_sum
from nodedp.mechanisms.noise import laplace_noise

__all__ = [
    "SAMPLING_RULES",
    "ScaledBudgets",
    "debias_randomized_degree",
    "debiased_degree",
    "degree_preserving_randomization",
    "influence_ranks",
    "laplace_sum_aggregate",
    "nip_budget_weights",
    "paper_sampling_probability",
    "randomize_labels",
    "sample_randomized_edges",
    "scale_budgets_to_worst_case",
    "sum_aggregate",
    "theorem3_ratio",
    "unbiased_sampling_probability",
    "worst_case_theorem3_ratio",
]

# How a node's sampling probability p_u becomes an edge's (``sample_randomized_edges``).
SAMPLING_RULES: tuple[str, ...] = ("row", "pair")


# --- argument checks ---------------------------------------------------------------------------------------------


def _check_num_nodes(num_nodes: int) -> None:
    check_int(num_nodes, "num_nodes", minimum=1)


def _check_edge_index(edge_index: Tensor, num_nodes: int) -> None:
    _check_num_nodes(num_nodes)
    if edge_index.dtype != torch.int64 or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be int64 [2, E], got {edge_index.dtype} {list(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, num_nodes={num_nodes})")


def _check_undirected(edge_index: Tensor, num_nodes: int) -> None:
    keys = edge_index[0] * num_nodes + edge_index[1]
    reverse = edge_index[1] * num_nodes + edge_index[0]
    if not torch.equal(keys.sort().values, reverse.sort().values):
        raise ValueError("edge_index must store both directions of every edge (an undirected graph)")


def _check_max_degree(max_degree: int) -> None:
    check_int(max_degree, "max_degree", minimum=1)


def _check_degrees_bounded(edge_index: Tensor, num_nodes: int, max_degree: int) -> None:
    """Both in- and out-degrees ≤ D_max, which the noise scale 2·D_max/ε relies on (Lemma 1)."""
    _check_max_degree(max_degree)
    for side, name in ((1, "in"), (0, "out")):
        top = int(torch.bincount(edge_index[side], minlength=num_nodes).max()) if edge_index.numel() else 0
        if top > max_degree:
            raise ValueError(
                f"a node has {name}-degree {top} > max_degree = {max_degree}: bound the degrees first "
                "(nodedp.data.bound_undirected_degree)"
            )


def _check_per_node(values: Tensor, name: str, num_nodes: int, *, minimum: float, strict: bool) -> None:
    if values.dim() != 1 or values.numel() != num_nodes or not values.is_floating_point():
        raise ValueError(
            f"{name} must be a float tensor [num_nodes = {num_nodes}], got {values.dtype} {list(values.shape)}"
        )
    bad = ~torch.isfinite(values) | ((values <= minimum) if strict else (values < minimum))
    if bool(bad.any()):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise ValueError(f"{name} must be finite and {bound}; got {values[bad][:3].tolist()}")


# --- NAP: per-node budgets and the perturbed aggregation ----------------------------------------------------------


def influence_ranks(scores: Tensor) -> Tensor:
    """R(u) = 1 + #{v : s(v) < s(u)}: the influence rank of Eq. 10, as float64 [N].

    Convention: a higher influence score s(u)* gives a higher rank, 1 for the
    lowest; equal scores share a rank. Eq. 10 shares a node's reusable budget
    in proportion to R, so the more influential a node, the larger its share
    (ε_u "proportional to C(u)", C increasing with s(u)*, Section 4.2).
    """
    if scores.dim() != 1 or not scores.is_floating_point() or not bool(torch.isfinite(scores).all()):
        raise ValueError(f"scores must be a finite float tensor [N], got {scores.dtype} {list(scores.shape)}")
    ordered = scores.sort().values
    return (torch.searchsorted(ordered, scores, right=False) + 1).to(torch.float64)


def nip_budget_weights(
    edge_index: Tensor, *, num_nodes: int, ranks: Tensor, max_degree: int, scheme: str = "paper"
) -> Tensor:
    """NAP's budget weights β [N] (float64), so that ε_u = ε_A·β_u (Eq. 10-11).

    On the undirected graph ``edge_index`` (degrees D_k ≤ D = ``max_degree``),
    with influence ranks R ≥ 1 (``influence_ranks``):

        r(u, k) = R(u) / Σ_{j ∈ N(k)} R(j)                                  (Eq. 10)
        β_u = min_{k ∈ N(u)} min{ r(u, k)·(D − D_k) + 1,  D/D_k }            (Eq. 11)

    ``scheme``: "paper" is Eq. 11 as printed; "capped" also caps β_u ≤ D/D_u,
    the bound Theorem 3's proof uses, which makes ``theorem3_ratio`` ≤ 1 on
    ``edge_index`` itself (any graph with degrees ≤ D), not on other graphs
    (``scale_budgets_to_worst_case``; docs/design/mechanisms.md); "uniform" is β = 1. An
    isolated node has no k to take the minimum over: β = 1, the uniform
    budget (its row is pure noise and its removal changes no row, so any β is
    private). Every β_u ≥ 1, since both terms are ≥ 1 when D_k ≤ D.
    """
    _check_edge_index(edge_index, num_nodes)
    if scheme not in BUDGET_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; valid choices: {list(BUDGET_SCHEMES)}")
    _check_per_node(ranks, "ranks", num_nodes, minimum=1.0, strict=False)
    _check_undirected(edge_index, num_nodes)
    _check_degrees_bounded(edge_index, num_nodes, max_degree)
    beta = torch.ones(num_nodes, dtype=torch.float64, device=edge_index.device)
    if scheme == "uniform" or edge_index.numel() == 0:
        return beta
    u, k = edge_index  # one column per (u, k ∈ N(u)), both directions stored
    ranks = ranks.to(device=edge_index.device, dtype=torch.float64)
    degree = torch.bincount(u, minlength=num_nodes).to(torch.float64)
    rank_sum = torch.zeros(num_nodes, dtype=torch.float64, device=edge_index.device).index_add_(0, k, ranks[u])
    share = ranks[u] / rank_sum[k] * (max_degree - degree[k]) + 1  # r(u, k)(D − D_k) + 1
    candidates = torch.minimum(share, max_degree / degree[k])
    beta = beta.scatter_reduce(0, u, candidates, reduce="amin", include_self=False)
    if scheme == "capped":
        connected = degree > 0
        beta[connected] = torch.minimum(beta[connected], max_degree / degree[connected])
    return beta


def theorem3_ratio(edge_index: Tensor, *, num_nodes: int, epsilons: Tensor, epsilon_a: float, max_degree: int) -> float:
    """max_k (D_k·ε_k + Σ_{i ∈ N(k)} ε_i) / (2·ε_A·D_max): ≤ 1 iff Theorem 3's constraint holds.

    With Laplace(2·D_max/ε_u) on row u (``laplace_sum_aggregate``), removing
    node k costs at most (that numerator)/(2·D_max) (Appendix A.2.1, Eq. 19),
    so the aggregation is (ratio·ε_A)-DP against removing any node of this
    graph, whatever its degrees. On a directed graph D_k is k's in-degree
    (the terms of its own row) and N(k) its out-neighbours (the rows it
    appears in); on an undirected one both are the paper's. 0 without edges.
    """
    _check_edge_index(edge_index, num_nodes)
    _check_per_node(epsilons, "epsilons", num_nodes, minimum=0.0, strict=True)
    epsilon_a = check_positive(epsilon_a, "epsilon_a")
    _check_max_degree(max_degree)
    if edge_index.numel() == 0:
        return 0.0
    src, dst = edge_index
    eps = epsilons.to(device=edge_index.device, dtype=torch.float64)
    own_row = torch.bincount(dst, minlength=num_nodes).to(torch.float64) * eps
    in_other_rows = torch.zeros(num_nodes, dtype=torch.float64, device=edge_index.device).index_add_(0, src, eps[dst])
    return float((own_row + in_other_rows).max()) / (2.0 * epsilon_a * max_degree)


def worst_case_theorem3_ratio(epsilons: Tensor, *, epsilon_a: float, max_degree: int) -> float:
    """max over graphs with degrees ≤ D of ``theorem3_ratio``: (D·ε_(1) + Σ_{j=2}^{D+1} ε_(j)) / (2·ε_A·D).

    ε_(1) ≥ ε_(2) ≥ … are the budgets sorted. For fixed budgets (public, or
    computed from an earlier private release), every graph on these nodes
    with degrees ≤ D, and both removal and addition of any node, has
    ``theorem3_ratio`` at most this; the star centred at the largest budget
    with the next D as leaves attains it (N > D). The argument is
    ``nodedp.accounting.nip.worst_case_budget_ratio``'s (rounded up).
    """
    if epsilons.dim() != 1 or epsilons.numel() == 0:
        raise ValueError(f"epsilons must be a non-empty tensor [N], got shape {list(epsilons.shape)}")
    _check_per_node(epsilons, "epsilons", epsilons.numel(), minimum=0.0, strict=True)
    epsilon_a = check_positive(epsilon_a, "epsilon_a")
    _check_max_degree(max_degree)
    return worst_case_budget_ratio(_largest(epsilons, max_degree), max_degree=max_degree) / epsilon_a


def _largest(values: Tensor, max_degree: int) -> list[float]:
    """The min(N, D + 1) largest values, descending: all that the worst-case ratio reads."""
    return values.to(torch.float64).topk(min(max_degree + 1, values.numel())).values.tolist()


@dataclass(frozen=True)
class ScaledBudgets:
    """Budget weights divided so that NAP costs ≤ ε_A on every graph with degrees ≤ D_max.

    ``weights`` [N] are the β to use (ε_u = ε_A·weights_u); ``largest`` their
    min(N, D_max + 1) largest, descending (what the ledger stores);
    ``worst_case_ratio`` ≤ 1 theirs, ``worst_case_ratio_before_scaling`` that
    of the input β, ``scale`` the divisor.
    """

    weights: Tensor
    largest: tuple[float, ...]
    worst_case_ratio: float
    worst_case_ratio_before_scaling: float
    scale: float


def scale_budgets_to_worst_case(beta: Tensor, *, max_degree: int) -> ScaledBudgets:
    """β / max(1, worst-case ratio of β): budgets whose NAP is ε_A-DP against every private graph.

    β is fixed before NAP runs (a function of released data), so adaptive
    composition needs NAP's bound for every neighbouring pair with degrees ≤
    D_max, not only on the graph β was computed on: dividing by the
    worst-case Theorem 3 ratio (``worst_case_theorem3_ratio``, a function of
    β alone) gives exactly that, and reads nothing private. The divisor is
    nudged up by ulps until the stored weights' ratio is ≤ 1 exactly.
    Uniform budgets (β = 1) have ratio 1 (N > D) and are left unchanged.

    The price: a ratio ≤ 1 forces all but the D_max largest weights to be
    ≤ 1 and the largest < 2 (``worst_case_budget_ratio``), so the scaled
    budgets exceed the uniform ones on at most D_max nodes.
    """
    _check_per_node(beta, "beta", beta.numel(), minimum=0.0, strict=True)
    _check_max_degree(max_degree)
    beta = beta.to(torch.float64)
    before = worst_case_budget_ratio(_largest(beta, max_degree), max_degree=max_degree)
    scale = max(1.0, before)
    while True:
        weights = beta / scale
        largest = _largest(weights, max_degree)
        ratio = worst_case_budget_ratio(largest, max_degree=max_degree)
        if ratio <= 1:
            return ScaledBudgets(
                weights=weights,
                largest=tuple(largest),
                worst_case_ratio=ratio,
                worst_case_ratio_before_scaling=before,
                scale=scale,
            )
        scale = math.nextafter(scale, math.inf)


def sum_aggregate(x: Tensor, edge_index: Tensor) -> Tensor:
    """H = A·X̂, H_u = Σ_{j: (j, u) ∈ E} X̂_j, with X̂_j = X_j/‖X_j‖₁ (a zero row stays zero)."""
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x must be a float matrix [N, F], got {x.dtype} {list(x.shape)}")
    _check_edge_index(edge_index, x.size(0))
    normalized = x / x.abs().sum(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    src, dst = edge_index.to(x.device)
    # in chunks of edges on large graphs (at Reddit size all [E, F] rows at once are 123 GB), the same sum
    return neighbour_sum(normalized, src, dst)


def laplace_sum_aggregate(
    x: Tensor, edge_index: Tensor, *, epsilons: Tensor, max_degree: int, generator: torch.Generator
) -> Tensor:
    """Eq. 9: H̄_u = Σ_{j ∈ N(u)} X̂_j + Lap(2·D_max/ε_u)^F, the NAP release.

    ``sum_aggregate`` plus i.i.d. Laplace noise of scale 2·D_max/ε_u on every
    entry of row u (ΔH⁰ = 2·D_max, Lemma 1). Refuses a graph with an in- or
    out-degree above ``max_degree``, for which that scale is too small.
    """
    num_nodes = x.size(0) if x.dim() == 2 else -1
    aggregate = sum_aggregate(x, edge_index)
    _check_per_node(epsilons, "epsilons", num_nodes, minimum=0.0, strict=True)
    _check_degrees_bounded(edge_index, num_nodes, max_degree)
    scale = aggregation_sensitivity(max_degree) / epsilons.to(device=x.device, dtype=x.dtype)
    noise = laplace_noise(tuple(x.shape), scale=1.0, generator=generator, device=x.device, dtype=x.dtype)
    return aggregate + noise * scale.unsqueeze(1)


# --- degree-preserving edge randomization -------------------------------------------------------------------------


def degree_preserving_randomization(
    edge_index: Tensor, *, num_nodes: int, s: float, generator: torch.Generator
) -> Tensor:
    """Each unordered pair {i, j} kept w.p. 1 − s, else set to Bern(1/2) (Section 4.3).

    That is randomized response flipping each pair w.p. s/2, which
    ``randomize_adjacency`` does at ε' = ln((2 − s)/s), since 1/(1 + e^ε') = s/2.
    The input must be undirected (both directions stored); so is the output.
    Self-loops are neither read nor produced. O(N²) time and memory (≈ s·N²/4
    edges out); followed by resampling, ``nodedp.mechanisms.nip_sparse`` draws
    the composition in linear memory.
    """
    _check_edge_index(edge_index, num_nodes)
    s = _check_s(s)
    _check_undirected(edge_index, num_nodes)
    return randomize_adjacency(
        edge_index, num_nodes=num_nodes, epsilon=math.log((2.0 - s) / s), undirected=True, generator=generator
    )


def _check_degree_tensor(degree: Tensor, num_nodes: int) -> Tensor:
    if degree.dim() != 1 or degree.is_complex() or degree.dtype == torch.bool:
        raise ValueError(f"degree must be a real tensor [N], got {degree.dtype} {list(degree.shape)}")
    degree = degree.to(torch.float64)
    if not bool(torch.isfinite(degree).all()) or bool((degree < 0).any()) or bool((degree > num_nodes - 1).any()):
        raise ValueError(f"degree must be finite and in [0, num_nodes − 1 = {num_nodes - 1}]")
    return degree


def unbiased_sampling_probability(degree: Tensor, *, num_nodes: int, s: float) -> Tensor:
    """p_u = D_u / (D_u(1 − s) + (N − 1)·s/2), clamped to ≤ 1: E[p_u·D̄_u] = D_u.

    After ``degree_preserving_randomization`` node u's expected degree is
    E[D̄_u] = D_u(1 − s/2) + (N − 1 − D_u)·s/2 = D_u(1 − s) + (N − 1)s/2 (each
    edge survives w.p. 1 − s/2, each of the N − 1 − D_u non-edges appears
    w.p. s/2), so keeping u's randomized edges w.p. p_u = D_u/E[D̄_u] restores
    E = D_u: Theorem 4's E[D̄'_u] = D_u for the mechanism as Section 4.3
    describes it (Eq. 12 is not; docs/design/mechanisms.md). The clamp binds only if
    D_u > (N − 1)/2, where p_u = 1 and E = E[D̄_u] < D_u.
    """
    _check_num_nodes(num_nodes)
    s = _check_s(s)
    degree = _check_degree_tensor(degree, num_nodes)
    expected = degree * (1 - s) + (num_nodes - 1) * s / 2  # 0 only for N = 1, where D = 0 too
    return torch.where(degree > 0, degree / expected.clamp_min(1e-300), 0.0).clamp(max=1.0)


def paper_sampling_probability(degree: Tensor, *, num_nodes: int, s: float) -> Tensor:
    """Eq. 12 as printed: p_u = 2D_u / (D_u + N − N·s + D_u·s) (≤ 1 for D_u ≤ N; clamped all the same).

    It undoes Eq. 23's expectation, not the mechanism's: under
    ``degree_preserving_randomization`` it gives E[D̄'_u] =
    D_u·(2D_u(1 − s) + (N − 1)s)/(D_u(1 + s) + N(1 − s)), not D_u.
    """
    _check_num_nodes(num_nodes)
    s = _check_s(s)
    degree = _check_degree_tensor(degree, num_nodes)
    return (2 * degree / (degree + num_nodes - num_nodes * s + degree * s)).clamp(max=1.0)


def debiased_degree(randomized_edge_index: Tensor, *, num_nodes: int, s: float) -> Tensor:
    """(D̄_u − (N − 1)·s/2)/(1 − s): an unbiased estimate of D_u from the randomized graph alone.

    D̄_u is u's degree after ``degree_preserving_randomization``. Computed only
    from the released graph, it is post-processing, so sampling probabilities
    built on it cost no privacy (those built on the private D_u do: Eq. 12
    reads the degree before randomization). The estimate can be negative.
    """
    _check_edge_index(randomized_edge_index, num_nodes)
    randomized = torch.bincount(randomized_edge_index[1], minlength=num_nodes).to(torch.float64)
    return debias_randomized_degree(randomized, num_nodes=num_nodes, s=s)


def debias_randomized_degree(randomized_degree: Tensor, *, num_nodes: int, s: float) -> Tensor:
    """``debiased_degree`` from the randomized degrees D̄ [N] themselves, for a release that never stores its
    randomized graph (``nodedp.mechanisms.nip_sparse``)."""
    _check_num_nodes(num_nodes)
    s = _check_s(s)
    return (randomized_degree.to(torch.float64) - (num_nodes - 1) * s / 2) / (1 - s)


def sample_randomized_edges(
    edge_index: Tensor, probs: Tensor, generator: torch.Generator, *, rule: str = "row"
) -> Tensor:
    """Keep the edges of the randomized graph with per-node probabilities p (Eq. 12, Theorem 4).

    ``rule`` turns p_u into a per-edge probability:

    * "row" (default): column (j, u) is kept w.p. p_u, independently: node u
      samples its own row of A (its in-edges, the terms it aggregates), so
      E[D̄'_u] = p_u·E[D̄_u] exactly as Theorem 4's Eq. 24 states. The output
      is directed in general (the two directions of a pair are kept
      independently, with the two endpoints' probabilities).
    * "pair": the undirected edge {u, v} is kept w.p. √(p_u·p_v), both
      directions together (input must be undirected; the output is). Symmetric
      and equal to p when p_u = p_v, but E[D̄'_u] = √p_u·Σ_v P(uv ∈ Ā)·√p_v is
      D_u only when p is constant over u's partners (e.g. a regular graph): no
      symmetric rule built from the endpoints' p makes every node unbiased.

    Returns the kept columns of ``edge_index`` in their original order.
    """
    if rule not in SAMPLING_RULES:
        raise ValueError(f"unknown rule {rule!r}; valid choices: {list(SAMPLING_RULES)}")
    num_nodes = probs.numel()
    _check_edge_index(edge_index, max(num_nodes, 1))
    if probs.dim() != 1 or not probs.is_floating_point() or not bool(((probs >= 0) & (probs <= 1)).all()):
        raise ValueError("probs must be a float tensor [N] with entries in [0, 1]")
    src, dst = edge_index.cpu()
    p = probs.cpu().to(torch.float64)
    if rule == "row":
        draws = torch.rand(src.numel(), generator=generator, device=generator.device, dtype=torch.float64).cpu()
        keep = draws < p[dst]
    else:
        _check_undirected(edge_index, num_nodes)
        lo, hi = torch.minimum(src, dst), torch.maximum(src, dst)
        pairs, column_pair = torch.unique(lo * num_nodes + hi, return_inverse=True)  # one draw per pair, in key order
        draws = torch.rand(pairs.numel(), generator=generator, device=generator.device, dtype=torch.float64).cpu()
        pair_keep = draws < torch.sqrt(p[pairs // num_nodes] * p[pairs % num_nodes])
        keep = pair_keep[column_pair]
    return edge_index[:, keep.to(edge_index.device)]


# --- labels ------------------------------------------------------------------------------------------------------


def randomize_labels(y: Tensor, *, num_classes: int, epsilon: float, generator: torch.Generator) -> Tensor:
    """M-ary randomized response (Eq. 13): y'_i = y_i w.p. e^ε/(e^ε + M − 1), else uniform over the other M − 1.

    Each of the other classes has probability 1/(e^ε + M − 1). Labels are
    int64 in [0, M); every node gets its own independent draw.
    """
    keep_probability = label_keep_probability(epsilon, num_classes)
    if y.dim() != 1 or y.dtype != torch.int64:
        raise ValueError(f"y must be an int64 tensor [N], got {y.dtype} {list(y.shape)}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"labels must lie in [0, num_classes = {num_classes})")
    device = generator.device
    keep = torch.rand(y.numel(), generator=generator, device=device, dtype=torch.float64) < keep_probability
    shift = torch.randint(1, num_classes, (y.numel(),), generator=generator, device=device)
    other = (y.to(device) + shift) % num_classes
    return torch.where(keep, y.to(device), other).to(y.device)
