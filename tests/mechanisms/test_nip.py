from __future__ import annotations

import math
from functools import cache

import pytest
import torch
from torch import Tensor

from nodedp.accounting.nip_bounds import label_keep_probability, min_keep_parameter
from nodedp.data.degree import bound_undirected_degree
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.mechanisms.nip import (
    debiased_degree,
    degree_preserving_randomization,
    influence_ranks,
    laplace_sum_aggregate,
    nip_budget_weights,
    paper_sampling_probability,
    randomize_labels,
    sample_randomized_edges,
    scale_budgets_to_worst_case,
    sum_aggregate,
    theorem3_ratio,
    unbiased_sampling_probability,
    worst_case_theorem3_ratio,
)


@cache
def heavy_graph(num_nodes: int, seed: int) -> Tensor:
    spec = CSBMSpec(
        num_nodes=num_nodes,
        num_classes=3,
        avg_degree=8.0,
        homophily=0.5,
        num_features=3,
        feature_signal=0.0,
        degree_exponent=2.1,
        class_weights=None,
        seed=seed,
    )
    return generate_csbm(spec).edge_index


def bounded(num_nodes: int, max_degree: int, seed: int = 0) -> Tensor:
    return bound_undirected_degree(heavy_graph(num_nodes, seed), num_nodes=num_nodes, max_degree=max_degree, seed=seed)


def random_ranks(num_nodes: int, seed: int) -> Tensor:
    scores = torch.rand(num_nodes, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return influence_ranks(scores)


def star(leaves: int) -> Tensor:
    spokes = torch.stack([torch.zeros(leaves, dtype=torch.long), torch.arange(1, leaves + 1)])
    return torch.cat([spokes, spokes.flip(0)], dim=1)


# --- budget weights (Eq. 10-11) ----------------------------------------------------------------------------------


def reference_beta(edge_index: Tensor, ranks: Tensor, max_degree: int, scheme: str) -> list[float]:
    """Eq. 10-11 written out with loops over neighbour lists."""
    n = ranks.numel()
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for u, k in edge_index.T.tolist():
        neighbours[u].append(k)
    beta = []
    for u in range(n):
        if scheme == "uniform" or not neighbours[u]:
            beta.append(1.0)
            continue
        values = []
        for k in neighbours[u]:
            r = float(ranks[u]) / sum(float(ranks[j]) for j in neighbours[k])  # Eq. 10
            values.append(min(r * (max_degree - len(neighbours[k])) + 1, max_degree / len(neighbours[k])))
        b = min(values)
        if scheme == "capped":
            b = min(b, max_degree / len(neighbours[u]))
        beta.append(b)
    return beta


@pytest.mark.parametrize("scheme", ["paper", "capped", "uniform"])
@pytest.mark.parametrize("max_degree", [2, 6])
def test_budget_weights_follow_eq11(scheme: str, max_degree: int) -> None:
    n = 300
    edges, ranks = bounded(n, max_degree, seed=1), random_ranks(n, 1)
    beta = nip_budget_weights(edges, num_nodes=n, ranks=ranks, max_degree=max_degree, scheme=scheme)
    assert beta.tolist() == pytest.approx(reference_beta(edges, ranks, max_degree, scheme), rel=1e-12)
    assert bool((beta >= 1).all())
    isolated = torch.bincount(edges[0], minlength=n) == 0
    assert bool(isolated.any()) and bool((beta[isolated] == 1).all())
    if scheme != "uniform":
        assert float(beta.max()) > 1.5  # budgets really are reused


def test_ranks_rise_with_influence_score_and_ties_share_a_rank() -> None:
    ranks = influence_ranks(torch.tensor([0.3, -1.0, 0.3, 2.0]))
    assert ranks.tolist() == [2.0, 1.0, 2.0, 4.0]


def test_rank_shares_a_neighbours_unused_budget_up_to_the_d_over_dk_cap() -> None:
    # Path 1 - 0 - 2: node 0 (degree 2) shares D − 2 between 1 and 2 in proportion to their ranks,
    # r = 1/4 and 3/4; a share r(D − D_k) + 1 above D/D_k (i.e. r > 1/D_k) is capped at D/D_k.
    edges = torch.tensor([[0, 1, 0, 2], [1, 0, 2, 0]])
    max_degree = 10
    beta = nip_budget_weights(
        edges, num_nodes=3, ranks=torch.tensor([1.0, 1.0, 3.0], dtype=torch.float64), max_degree=max_degree
    )
    assert beta[1].item() == pytest.approx(1 / 4 * (max_degree - 2) + 1)
    assert beta[2].item() == pytest.approx(max_degree / 2)
    assert beta[0].item() == pytest.approx(max_degree)  # its neighbours have degree 1 (the star case below)


@pytest.mark.parametrize("leaves", [2, 5, 9])
def test_eq11_as_printed_breaks_theorem3_on_a_star(leaves: int) -> None:
    """The centre's neighbours are leaves (D_k = 1), so Eq. 11 lets β_centre reach D_max: removing the
    centre then costs (D·D + D)/(2D) = (D + 1)/2 times ε_A. The cap of Theorem 3's proof fixes it."""
    edges, n, ranks = star(leaves), leaves + 1, torch.ones(leaves + 1, dtype=torch.float64)
    paper = nip_budget_weights(edges, num_nodes=n, ranks=ranks, max_degree=leaves, scheme="paper")
    assert paper[0].item() == leaves
    ratio = theorem3_ratio(edges, num_nodes=n, epsilons=paper, epsilon_a=1.0, max_degree=leaves)
    assert ratio == pytest.approx((leaves + 1) / 2)
    capped = nip_budget_weights(edges, num_nodes=n, ranks=ranks, max_degree=leaves, scheme="capped")
    assert theorem3_ratio(edges, num_nodes=n, epsilons=capped, epsilon_a=1.0, max_degree=leaves) <= 1


@pytest.mark.parametrize("max_degree", [2, 5, 12])
def test_capped_and_uniform_budgets_meet_theorem3_and_the_worst_case_bounds_it(max_degree: int) -> None:
    n, paper_ratios = 400, []
    for seed in range(3):
        edges, ranks = bounded(n, max_degree, seed), random_ranks(n, seed)
        for scheme in ("capped", "uniform", "paper"):
            beta = nip_budget_weights(edges, num_nodes=n, ranks=ranks, max_degree=max_degree, scheme=scheme)
            ratio = theorem3_ratio(edges, num_nodes=n, epsilons=0.7 * beta, epsilon_a=0.7, max_degree=max_degree)
            worst = worst_case_theorem3_ratio(0.7 * beta, epsilon_a=0.7, max_degree=max_degree)
            assert ratio <= worst + 1e-12
            if scheme == "paper":
                paper_ratios.append(ratio)
            else:
                assert ratio <= 1 + 1e-12
    assert max(paper_ratios) > 1  # Eq. 11 as printed overspends on these graphs


def random_bounded_graph(num_nodes: int, max_degree: int, seed: int) -> Tensor:
    """An Erdős–Rényi-like graph of mean degree ~D, bounded to D: most nodes near the bound."""
    generator = torch.Generator().manual_seed(seed)
    pairs = torch.combinations(torch.arange(num_nodes))
    keep = torch.rand(pairs.size(0), generator=generator) < max_degree / num_nodes
    edges = pairs[keep].T
    edges = torch.cat([edges, edges.flip(0)], dim=1)
    return bound_undirected_degree(edges, num_nodes=num_nodes, max_degree=max_degree, seed=seed)


@pytest.mark.parametrize("max_degree", [1, 3, 8])
def test_worst_case_ratio_bounds_theorem3_for_budgets_from_another_graph(max_degree: int) -> None:
    """Budgets are computed on one graph (the released one) and NAP runs on another: whatever the graph with
    degrees ≤ D, its ratio is ≤ the worst case, and the star centred at the largest budget attains it."""
    n = 120
    graphs = [bounded(n, max_degree, seed) for seed in range(3)]  # heavy-tailed, then bounded
    graphs += [random_bounded_graph(n, max_degree, seed) for seed in range(3)]
    gaps = []
    for i, source in enumerate(graphs):
        for scheme in ("paper", "capped"):
            beta = nip_budget_weights(
                source, num_nodes=n, ranks=random_ranks(n, i), max_degree=max_degree, scheme=scheme
            )
            for epsilons in (
                0.3 * beta,
                torch.rand(n, generator=torch.Generator().manual_seed(i), dtype=torch.float64) * beta + 1e-3,
            ):
                worst = worst_case_theorem3_ratio(epsilons, epsilon_a=0.3, max_degree=max_degree)
                for target in graphs:
                    ratio = theorem3_ratio(target, num_nodes=n, epsilons=epsilons, epsilon_a=0.3, max_degree=max_degree)
                    assert ratio <= worst * (1 + 1e-12)
                    gaps.append(worst - ratio)
                order = epsilons.argsort(descending=True)
                centre, leaves = int(order[0]), order[1 : max_degree + 1]
                spokes = torch.stack([torch.full_like(leaves, centre), leaves])
                worst_graph = torch.cat([spokes, spokes.flip(0)], dim=1)
                assert theorem3_ratio(
                    worst_graph, num_nodes=n, epsilons=epsilons, epsilon_a=0.3, max_degree=max_degree
                ) == pytest.approx(worst, rel=1e-12)
    assert min(gaps) >= 0 and max(gaps) > 0


@pytest.mark.parametrize("max_degree", [1, 4, 10])
@pytest.mark.parametrize("scheme", ["paper", "capped", "uniform"])
def test_scaled_budgets_keep_the_ranking_and_meet_theorem3_on_every_graph(max_degree: int, scheme: str) -> None:
    n = 200
    beta = nip_budget_weights(
        bounded(n, max_degree, 5), num_nodes=n, ranks=random_ranks(n, 5), max_degree=max_degree, scheme=scheme
    )
    scaled = scale_budgets_to_worst_case(beta, max_degree=max_degree)
    before = worst_case_theorem3_ratio(beta, epsilon_a=1.0, max_degree=max_degree)
    assert scaled.worst_case_ratio_before_scaling == before
    assert scaled.scale >= max(1.0, before) and scaled.scale == pytest.approx(max(1.0, before), rel=1e-14)
    assert torch.equal(scaled.weights, beta / scaled.scale)  # the ranking, and each ratio between budgets, kept
    assert scaled.worst_case_ratio <= 1
    assert scaled.worst_case_ratio == worst_case_theorem3_ratio(scaled.weights, epsilon_a=1.0, max_degree=max_degree)
    assert list(scaled.largest) == sorted(scaled.weights.tolist(), reverse=True)[: max_degree + 1]
    assert int((scaled.weights > 1).sum()) <= max_degree  # the price: above uniform on at most D nodes
    if scheme == "uniform" or max_degree == 1:  # D = 1 leaves no budget to reuse: β = 1
        assert scaled.scale == 1.0 and scaled.worst_case_ratio == 1.0 and torch.equal(scaled.weights, beta)
    else:
        assert before > 1  # the unscaled adaptive budgets overspend on some bounded graph


# --- the perturbed aggregation (Eq. 9, Lemma 1, Theorem 3) ---------------------------------------------------------


def without_node(x: Tensor, edges: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The node-level neighbour: k's features zeroed and all its edges removed."""
    x = x.clone()
    x[k] = 0
    return x, edges[:, (edges[0] != k) & (edges[1] != k)]


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("scheme", ["paper", "capped", "uniform"])
def test_node_removal_changes_the_aggregate_by_at_most_2d_and_costs_at_most_ratio_times_epsilon_a(
    signed: bool, scheme: str
) -> None:
    """Over every node removal: ‖ΔH‖₁ ≤ 2·D_max (Lemma 1), and the Laplace privacy loss
    Σ_rows ‖ΔH_row‖₁·ε_row/(2·D_max) ≤ ε_A·theorem3_ratio, with equality at the worst node for
    non-negative features (so the ratio is the exact cost, not a loose bound)."""
    n, max_degree, epsilon_a = 150, 4, 0.5
    edges = bounded(n, max_degree, seed=2)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(n, 6, generator=generator, dtype=torch.float64) + 0.1
    if signed:
        x = x * torch.randn(n, 6, generator=generator, dtype=torch.float64).sign()
    epsilons = epsilon_a * nip_budget_weights(
        edges, num_nodes=n, ranks=random_ranks(n, 2), max_degree=max_degree, scheme=scheme
    )
    ratio = theorem3_ratio(edges, num_nodes=n, epsilons=epsilons, epsilon_a=epsilon_a, max_degree=max_degree)
    full = sum_aggregate(x, edges)
    changes, losses = [], []
    for k in range(n):
        row_change = (full - sum_aggregate(*without_node(x, edges, k))).abs().sum(dim=1)
        changes.append(float(row_change.sum()))
        losses.append(float((row_change * epsilons).sum()) / (2 * max_degree))
    assert max(changes) <= 2 * max_degree + 1e-9
    assert max(losses) <= epsilon_a * ratio + 1e-12
    degree = torch.bincount(edges[0], minlength=n)
    if not signed:
        assert max(changes) == pytest.approx(2 * int(degree.max()))  # tight: a D-scaled noise would be too small
        assert max(changes) > max_degree
        assert max(losses) == pytest.approx(epsilon_a * ratio)


def test_laplace_noise_has_scale_2d_over_epsilon_per_row() -> None:
    n, width, max_degree = 4, 40_000, 3
    edges = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    x = torch.rand(n, width, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    epsilons = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    out = laplace_sum_aggregate(
        x, edges, epsilons=epsilons, max_degree=max_degree, generator=torch.Generator().manual_seed(2)
    )
    noise = out - sum_aggregate(x, edges)
    scale = 2 * max_degree / epsilons
    # Laplace(b): std √2·b; the sample std of 40 000 draws is within ~0.6% (kurtosis 6), so 3% is 5 SE.
    assert noise.std(dim=1).tolist() == pytest.approx((math.sqrt(2) * scale).tolist(), rel=0.03)
    assert noise.abs().mean(dim=1).tolist() == pytest.approx(scale.tolist(), rel=0.03)  # E|Lap(b)| = b
    assert bool((noise.mean(dim=1).abs() < 5 * math.sqrt(2) * scale / math.sqrt(width)).all())  # unbiased
    again = laplace_sum_aggregate(
        x, edges, epsilons=epsilons, max_degree=max_degree, generator=torch.Generator().manual_seed(2)
    )
    assert torch.equal(out, again)


def test_aggregate_rows_are_l1_normalized_sums_and_zero_rows_stay_zero() -> None:
    x = torch.tensor([[3.0, -1.0], [0.0, 0.0], [0.0, 2.0]])
    edges = torch.tensor([[0, 1, 2, 0], [1, 0, 0, 2]])  # 0 -> 1, 1 -> 0, 2 -> 0, 0 -> 2
    out = sum_aggregate(x, edges)
    assert out.flatten().tolist() == pytest.approx([0.0, 1.0, 0.75, -0.25, 0.75, -0.25])


def test_aggregate_refuses_degrees_above_the_bound() -> None:
    edges = star(4)
    with pytest.raises(ValueError, match="degree 4 > max_degree = 3"):
        laplace_sum_aggregate(
            torch.ones(5, 2), edges, epsilons=torch.ones(5), max_degree=3, generator=torch.Generator()
        )


# --- degree-preserving edge randomization (Section 4.3, Theorem 4) -------------------------------------------------


def pair_set(edge_index: Tensor, n: int) -> set[int]:
    src, dst = edge_index.tolist()
    return {min(s, d) * n + max(s, d) for s, d in zip(src, dst)}


@pytest.mark.parametrize("s", [0.1, 0.6])
def test_randomization_flips_each_pair_with_probability_s_over_2(s: float) -> None:
    n = 700
    edges = bounded(n, 10)
    out = degree_preserving_randomization(edges, num_nodes=n, s=s, generator=torch.Generator().manual_seed(4))
    before, after = pair_set(edges, n), pair_set(out, n)
    total = n * (n - 1) // 2
    flip = s / 2
    lost = len(before - after) / len(before)
    appeared = len(after - before) / (total - len(before))
    assert abs(lost - flip) < 4 * math.sqrt(flip * (1 - flip) / len(before))
    assert abs(appeared - flip) < 4 * math.sqrt(flip * (1 - flip) / (total - len(before)))
    keys = out[0] * n + out[1]
    assert torch.equal(keys.sort().values, (out[1] * n + out[0]).sort().values)  # both directions
    assert out.size(1) == 2 * len(after)


@pytest.mark.parametrize(("epsilon_b", "max_degree"), [(1.0, 10), (4.0, 3), (0.2, 50)])
def test_min_keep_parameter_spends_exactly_epsilon_b_counted_over_2_dmax_entries(epsilon_b, max_degree) -> None:
    s = min_keep_parameter(epsilon_b, max_degree)
    assert s == pytest.approx(2 / (math.exp(epsilon_b / (2 * max_degree)) + 1), rel=1e-14)
    per_entry = math.log((1 - s / 2) / (s / 2))  # the likelihood ratio of one flipped entry
    assert 2 * max_degree * per_entry == pytest.approx(epsilon_b, rel=1e-12)


def test_sampling_with_the_unbiased_probability_restores_every_expected_degree() -> None:
    """Theorem 4: E[D̄'_u] = D_u. Row sampling with p_u = D_u/E[D̄_u] achieves it node by node;
    Eq. 12 as printed does not; the debiased randomized degree is unbiased too."""
    n, s, trials = 300, 0.3, 60
    edges = bounded(n, 8, seed=3)
    degree = torch.bincount(edges[1], minlength=n).to(torch.float64)
    probs = unbiased_sampling_probability(degree, num_nodes=n, s=s)
    paper = paper_sampling_probability(degree, num_nodes=n, s=s)
    generator = torch.Generator().manual_seed(5)
    sampled, sampled_paper, estimates = [], [], []
    for _ in range(trials):
        released = degree_preserving_randomization(edges, num_nodes=n, s=s, generator=generator)
        kept = sample_randomized_edges(released, probs, generator)
        sampled.append(torch.bincount(kept[1], minlength=n))
        sampled_paper.append(torch.bincount(sample_randomized_edges(released, paper, generator)[1], minlength=n))
        estimates.append(debiased_degree(released, num_nodes=n, s=s))
    counts = torch.stack(sampled).to(torch.float64)
    z = (counts.mean(0) - degree) / (counts.std(0).clamp_min(1e-9) / math.sqrt(trials))
    assert float(z.abs().max()) < 5  # every node, 300 of them
    assert abs(float(z.sum()) / math.sqrt(n)) < 4  # and on average
    # Eq. 12 gives D·(2D(1 − s) + (N − 1)s)/(D(1 + s) + N(1 − s)): here about half the degree.
    paper_mean = torch.stack(sampled_paper).to(torch.float64).mean(0)
    expected_paper = degree * (2 * degree * (1 - s) + (n - 1) * s) / (degree * (1 + s) + n * (1 - s))
    assert float(paper_mean.sum()) == pytest.approx(float(expected_paper.sum()), rel=0.03)
    assert float(paper_mean.sum()) < 0.7 * float(degree.sum())
    estimate = torch.stack(estimates).mean(0)
    se = torch.stack(estimates).std(0) / math.sqrt(trials)
    assert abs(float((estimate - degree).sum() / se.pow(2).sum().sqrt())) < 4


def test_eq12_on_private_degrees_has_no_finite_privacy_bound() -> None:
    """Reference mode resamples with Eq. 12 on the private degrees (an uncharged read): a node of degree 0 keeps
    none of its randomized edges, while in a neighbouring graph where it has one edge it keeps them with
    probability > 0, so the likelihood ratio of some released graphs is infinite."""
    n, s = 6, 0.5
    alone = torch.tensor([0.0, 2, 2, 2, 1, 1])  # node 0 isolated
    joined = torch.tensor([1.0, 2, 2, 2, 1, 2])  # a neighbour: node 5 now links to node 0
    p_alone = paper_sampling_probability(alone, num_nodes=n, s=s)
    p_joined = paper_sampling_probability(joined, num_nodes=n, s=s)
    assert float(p_alone[0]) == 0.0 < float(p_joined[0])
    assert float(p_joined[0]) == pytest.approx(2 / (1 + n - n * s + s))
    randomized = torch.tensor([[0, 3], [3, 0]])  # a randomized edge at node 0 (present w.p. > 0 either way)
    kept = [
        sample_randomized_edges(randomized, probs, torch.Generator().manual_seed(seed), rule="pair").size(1)
        for probs in (p_alone, p_joined)
        for seed in range(40)
    ]
    assert sum(kept[:40]) == 0 < sum(kept[40:])


def test_pair_sampling_is_symmetric_and_unbiased_when_probabilities_agree() -> None:
    n, s, trials = 240, 0.2, 40
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    ring = torch.cat([ring, ring.flip(0)], dim=1)  # every degree is 2
    probs = unbiased_sampling_probability(torch.full((n,), 2.0), num_nodes=n, s=s)
    generator = torch.Generator().manual_seed(6)
    total = 0
    for _ in range(trials):
        released = degree_preserving_randomization(ring, num_nodes=n, s=s, generator=generator)
        kept = sample_randomized_edges(released, probs, generator, rule="pair")
        keys = kept[0] * n + kept[1]
        assert torch.equal(keys.sort().values, (kept[1] * n + kept[0]).sort().values)
        total += kept.size(1)
    mean_degree = total / (trials * n)
    assert mean_degree == pytest.approx(2.0, abs=4 * math.sqrt(2.0 / (trials * n)))


# --- labels (Eq. 13) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("num_classes", "epsilon"), [(2, 0.5), (5, 1.0), (7, 3.0)])
def test_label_randomized_response_keeps_at_the_eq13_rate_and_is_uniform_otherwise(num_classes, epsilon) -> None:
    n = 60_000
    y = torch.randint(num_classes, (n,), generator=torch.Generator().manual_seed(0))
    out = randomize_labels(y, num_classes=num_classes, epsilon=epsilon, generator=torch.Generator().manual_seed(1))
    keep = math.exp(epsilon) / (math.exp(epsilon) + num_classes - 1)
    assert label_keep_probability(epsilon, num_classes) == pytest.approx(keep, rel=1e-14)
    assert abs(float((out == y).double().mean()) - keep) < 4 * math.sqrt(keep * (1 - keep) / n)
    # Transition matrix: every off-diagonal entry is 1/(e^ε + M − 1).
    other = 1 / (math.exp(epsilon) + num_classes - 1)
    for c in range(num_classes):
        rows = out[y == c]
        rates = torch.bincount(rows, minlength=num_classes).double() / rows.numel()
        for d in range(num_classes):
            p = keep if d == c else other
            assert abs(float(rates[d]) - p) < 4 * math.sqrt(p * (1 - p) / rows.numel())


# --- refusals ----------------------------------------------------------------------------------------------------


def test_bad_arguments_are_refused_with_the_valid_choices() -> None:
    edges, ones = star(3), torch.ones(4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"unknown scheme 'adaptive'; valid choices: \['paper', 'capped', 'uniform'\]"):
        nip_budget_weights(edges, num_nodes=4, ranks=ones, max_degree=3, scheme="adaptive")
    with pytest.raises(ValueError, match="both directions"):
        nip_budget_weights(edges[:, :3], num_nodes=4, ranks=ones, max_degree=3)
    with pytest.raises(ValueError, match="ranks must be finite and >= 1"):
        nip_budget_weights(edges, num_nodes=4, ranks=0.5 * ones, max_degree=3)
    with pytest.raises(ValueError, match="degree 3 > max_degree = 2"):
        nip_budget_weights(edges, num_nodes=4, ranks=ones, max_degree=2)
    with pytest.raises(ValueError, match="epsilons must be finite and > 0"):
        theorem3_ratio(edges, num_nodes=4, epsilons=0 * ones, epsilon_a=1.0, max_degree=3)
    with pytest.raises(ValueError, match=r"s \(the probability of re-drawing a pair\) must lie in \(0, 1\)"):
        degree_preserving_randomization(edges, num_nodes=4, s=1.0, generator=torch.Generator())
    with pytest.raises(ValueError, match=r"unknown rule 'both'; valid choices: \['row', 'pair'\]"):
        sample_randomized_edges(edges, ones, torch.Generator(), rule="both")
    with pytest.raises(ValueError, match=r"probs must be a float tensor \[N\] with entries in \[0, 1\]"):
        sample_randomized_edges(edges, 2 * ones, torch.Generator())
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        randomize_labels(torch.zeros(3, dtype=torch.long), num_classes=1, epsilon=1.0, generator=torch.Generator())
    with pytest.raises(ValueError, match=r"labels must lie in \[0, num_classes = 3\)"):
        randomize_labels(torch.tensor([0, 3]), num_classes=3, epsilon=1.0, generator=torch.Generator())
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        randomize_labels(torch.tensor([0, 1]), num_classes=3, epsilon=0.0, generator=torch.Generator())
