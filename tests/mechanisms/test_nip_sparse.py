"""The sparse edge release draws the dense composition's distribution (checked against exact enumeration), and
keeps the dense draws below its threshold."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from scipy import stats
from torch import Tensor

from nodedp.accounting.nip_bounds import min_keep_parameter
from nodedp.data.degree import bound_undirected_degree
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.mechanisms import nip_sparse
from nodedp.mechanisms.edge_rr import flip_probability
from nodedp.mechanisms.nip import (
    debiased_degree,
    degree_preserving_randomization,
    paper_sampling_probability,
    sample_randomized_edges,
    unbiased_sampling_probability,
)
from nodedp.mechanisms.nip_sparse import (
    DENSE_MAX_PAIRS,
    randomize_and_resample,
    randomize_and_resample_with_probabilities,
    uses_dense_release,
)

# Six nodes: a triangle, an edge and an isolated node; D_max = 2. s = 1/2 puts exactly one randomized degree
# (2) inside the clamp window of the suite's estimate, so p varies with the randomized degrees.
N, S, D = 6, 0.5, 2
PAIRS = torch.triu_indices(N, N, 1)
TRIANGLE_AND_EDGE = torch.tensor([[0, 1], [1, 2], [0, 2], [3, 4]]).T
EDGES = torch.cat([TRIANGLE_AND_EDGE, TRIANGLE_AND_EDGE.flip(0)], dim=1)
PAPER_PROBS = paper_sampling_probability(torch.bincount(EDGES[1], minlength=N).to(torch.float64), num_nodes=N, s=S)

Sampler = Callable[[torch.Generator], Tensor]


def exact_release(probs: Tensor | None) -> tuple[Tensor, Tensor]:
    """Each pair's probability to be released and the law of the number released, summed over all 2^15
    randomized graphs; ``probs`` None: the suite's p from each randomized graph's degrees."""
    lo, hi = PAIRS
    q = flip_probability(math.log((2 - S) / S))
    is_edge = torch.isin(lo * N + hi, EDGES[0] * N + EDGES[1])
    graphs = ((torch.arange(2 ** lo.numel()).unsqueeze(1) >> torch.arange(lo.numel())) & 1).bool()
    present = torch.where(is_edge, 1 - q, q).to(torch.float64)
    weight = torch.where(graphs, present, 1 - present).prod(1)
    if probs is None:
        ones = graphs.to(torch.float64)
        degree = torch.zeros(graphs.size(0), N, dtype=torch.float64).index_add_(1, lo, ones).index_add_(1, hi, ones)
        estimate = ((degree - (N - 1) * S / 2) / (1 - S)).clamp(0, D)
        p = unbiased_sampling_probability(estimate.flatten(), num_nodes=N, s=S).view_as(estimate)
    else:
        p = probs.expand(graphs.size(0), N)
    keep = torch.sqrt(p[:, lo] * p[:, hi]) * graphs
    law = torch.zeros(graphs.size(0), lo.numel() + 1, dtype=torch.float64)
    law[:, 0] = 1
    for pair in range(lo.numel()):  # the number kept: a Poisson binomial per randomized graph
        law = (
            law * (1 - keep[:, pair : pair + 1])
            + torch.nn.functional.pad(law[:, :-1], (1, 0)) * keep[:, pair : pair + 1]
        )
    return (weight.unsqueeze(1) * keep).sum(0), (weight.unsqueeze(1) * law).sum(0)


def released_pairs(sampler: Sampler, draws: int) -> Tensor:
    """[draws, 15] indicators of the pairs each draw releases (checking it is undirected and loop-free)."""
    generator = torch.Generator().manual_seed(11)
    index = torch.full((N * N,), -1)
    index[PAIRS[0] * N + PAIRS[1]] = torch.arange(PAIRS.size(1))
    out = torch.zeros(draws, PAIRS.size(1))
    for draw in range(draws):
        edges = sampler(generator)
        upper = edges[0] < edges[1]
        assert int(upper.sum()) * 2 == edges.size(1)  # both directions, no self-loops
        assert torch.equal((edges[0] * N + edges[1]).sort().values, (edges[1] * N + edges[0]).sort().values)
        out[draw, index[edges[0][upper] * N + edges[1][upper]]] = 1
    return out


def discrepancy(released: Tensor, probs: Tensor | None) -> tuple[float, float]:
    """(largest |z| of a pair's release frequency, p-value of the χ² test of the number released)."""
    marginal, law = exact_release(probs)
    draws = released.size(0)
    frequency = released.mean(0).to(torch.float64)
    possible = marginal > 0
    assert bool((frequency[~possible] == 0).all())  # pairs at a node with p = 0 are never released
    z = (frequency - marginal)[possible] / torch.sqrt(marginal * (1 - marginal) / draws)[possible]
    observed = torch.bincount(released.sum(1).long(), minlength=law.numel()).to(torch.float64)
    expected = law * draws
    bins_observed, bins_expected, pending_observed, pending_expected = [], [], 0.0, 0.0
    for count, mean in zip(observed.tolist(), expected.tolist(), strict=True):  # bins of ≥ 5 expected
        pending_observed, pending_expected = pending_observed + count, pending_expected + mean
        if pending_expected >= 5:
            bins_observed.append(pending_observed)
            bins_expected.append(pending_expected)
            pending_observed = pending_expected = 0.0
    bins_observed[-1] += pending_observed
    bins_expected[-1] += pending_expected
    chi2 = sum((o - e) ** 2 / e for o, e in zip(bins_observed, bins_expected, strict=True))
    return float(z.abs().max()), float(stats.chi2.sf(chi2, len(bins_observed) - 1))


def dense_suite(generator: torch.Generator) -> Tensor:
    released = degree_preserving_randomization(EDGES, num_nodes=N, s=S, generator=generator)
    estimate = debiased_degree(released, num_nodes=N, s=S).clamp(min=0, max=D)
    return sample_randomized_edges(
        released, unbiased_sampling_probability(estimate, num_nodes=N, s=S), generator, rule="pair"
    )


def sparse_suite(generator: torch.Generator) -> Tensor:
    return randomize_and_resample(EDGES, num_nodes=N, s=S, max_degree=D, generator=generator, dense_max_pairs=0)


def suite_with_independent_flips(generator: torch.Generator) -> Tensor:
    """Wrong: p from one randomized graph, resampling another, so a pair's presence and its endpoints' p are
    independent (what a sparse draw that ignored the degrees' dependence on the pairs would give)."""
    released = degree_preserving_randomization(EDGES, num_nodes=N, s=S, generator=generator)
    estimate = debiased_degree(released, num_nodes=N, s=S).clamp(min=0, max=D)
    other = degree_preserving_randomization(EDGES, num_nodes=N, s=S, generator=generator)
    return sample_randomized_edges(
        other, unbiased_sampling_probability(estimate, num_nodes=N, s=S), generator, rule="pair"
    )


def dense_paper(generator: torch.Generator) -> Tensor:
    released = degree_preserving_randomization(EDGES, num_nodes=N, s=S, generator=generator)
    return sample_randomized_edges(released, PAPER_PROBS, generator, rule="pair")


def sparse_paper(generator: torch.Generator) -> Tensor:
    return randomize_and_resample_with_probabilities(
        EDGES, PAPER_PROBS, num_nodes=N, s=S, generator=generator, dense_max_pairs=0
    )


def paper_without_the_input_edges(generator: torch.Generator) -> Tensor:
    """Wrong: every pair appears w.p. s/2, as if the input had no edges (a sparse draw that forgot the XOR)."""
    released = degree_preserving_randomization(
        torch.empty(2, 0, dtype=torch.long), num_nodes=N, s=S, generator=generator
    )
    return sample_randomized_edges(released, PAPER_PROBS, generator, rule="pair")


@pytest.mark.parametrize(
    ("dense", "sparse", "wrong", "probs"),
    [
        (dense_suite, sparse_suite, suite_with_independent_flips, None),
        (dense_paper, sparse_paper, paper_without_the_input_edges, PAPER_PROBS),
    ],
    ids=["suite", "reference"],
)
def test_sparse_and_dense_releases_have_the_exact_distribution_and_a_wrong_sampler_does_not(
    dense: Sampler, sparse: Sampler, wrong: Sampler, probs: Tensor | None
) -> None:
    draws = 2000
    for sampler in (dense, sparse):
        worst_z, p_value = discrepancy(released_pairs(sampler, draws), probs)
        assert worst_z < 4.5 and p_value > 1e-4, sampler.__name__
    worst_z, p_value = discrepancy(released_pairs(wrong, draws // 2), probs)
    assert worst_z > 6 or p_value < 1e-12


@pytest.mark.parametrize("pairs_per_block", [1, 7, 1 << 20])
def test_streaming_pass_counts_exactly_the_flips_it_reports_in_blocks_of_any_size(pairs_per_block: int) -> None:
    n, q = 40, 0.3
    lo, hi = torch.triu_indices(n, n, 1)
    counts, flips = nip_sparse._stream_flips(
        num_nodes=n,
        flip_rate=q,
        lookup=lo * n + hi,
        generator=torch.Generator().manual_seed(2),
        pairs_per_block=pairs_per_block,
    )
    as_float = flips.to(torch.float64)
    reported = torch.zeros(n, dtype=torch.float64).index_add_(0, lo, as_float).index_add_(0, hi, as_float)
    assert torch.equal(counts, reported)
    assert abs(float(as_float.mean()) - q) < 4.5 * math.sqrt(q * (1 - q) / flips.numel())


@pytest.mark.parametrize("rate", [0.02, 0.5, 1.0])
def test_candidates_are_each_pair_once_independently_at_the_rate(monkeypatch, rate: float) -> None:
    monkeypatch.setattr(nip_sparse, "_CANDIDATE_CHUNK", 13)  # many chunks: the gaps carry over between them
    n, trials = 30, 200
    total = n * (n - 1) // 2
    hits = torch.zeros(n, n)
    generator = torch.Generator().manual_seed(3)
    for _ in range(trials):
        rows, cols = (
            torch.cat(part) for part in zip(*nip_sparse._bernoulli_pair_chunks(n, rate=rate, generator=generator))
        )
        keys = rows * n + cols
        assert bool((rows < cols).all()) and bool((cols < n).all()) and bool((keys.diff() > 0).all())
        hits[rows, cols] += 1
    upper = hits[tuple(torch.triu_indices(n, n, 1))]
    if rate == 1.0:
        assert bool((upper == trials).all())
        return
    assert abs(float(upper.mean()) / trials - rate) < 4.5 * math.sqrt(rate * (1 - rate) / (trials * total))
    # every pair at the same rate: the spread across pairs is binomial
    assert (
        float(stats.chi2.sf(float(((upper - trials * rate) ** 2).sum()) / (trials * rate * (1 - rate)), total - 1))
        > 1e-4
    )


def bounded_csbm(num_nodes: int, max_degree: int) -> Tensor:
    spec = CSBMSpec(
        num_nodes=num_nodes,
        num_classes=3,
        avg_degree=8.0,
        homophily=0.5,
        num_features=3,
        feature_signal=0.0,
        degree_exponent=2.5,
        class_weights=None,
        seed=0,
    )
    return bound_undirected_degree(generate_csbm(spec).edge_index, num_nodes=num_nodes, max_degree=max_degree, seed=0)


@pytest.mark.parametrize("reference", [False, True], ids=["suite", "reference"])
def test_below_the_threshold_the_release_is_the_dense_composition_draw_for_draw(reference: bool) -> None:
    n, max_degree = 300, 6
    edges = bounded_csbm(n, max_degree)
    s = min_keep_parameter(1.0, max_degree)
    probs = paper_sampling_probability(torch.bincount(edges[1], minlength=n).to(torch.float64), num_nodes=n, s=s)
    generator, twin = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    released = degree_preserving_randomization(edges, num_nodes=n, s=s, generator=twin)
    if reference:
        out = randomize_and_resample_with_probabilities(edges, probs, num_nodes=n, s=s, generator=generator)
    else:
        out = randomize_and_resample(edges, num_nodes=n, s=s, max_degree=max_degree, generator=generator)
        estimate = debiased_degree(released, num_nodes=n, s=s).clamp(min=0, max=max_degree)
        probs = unbiased_sampling_probability(estimate, num_nodes=n, s=s)
    assert torch.equal(out, sample_randomized_edges(released, probs, twin, rule="pair"))
    assert torch.equal(generator.get_state(), twin.get_state())  # what the run draws next is unchanged too


def test_the_threshold_is_a_number_of_pairs_that_keeps_the_demo_graphs_dense() -> None:
    largest = max(n for n in range(1, 10_000) if uses_dense_release(n))
    assert largest * (largest - 1) // 2 <= DENSE_MAX_PAIRS < (largest + 1) * largest // 2
    assert uses_dense_release(3000)  # csbm-homophilous/heterophilous: their results stay as they were
    assert not uses_dense_release(30_000)
    assert uses_dense_release(30_000, dense_max_pairs=30_000 * 29_999 // 2)


@pytest.mark.parametrize("reference", [False, True], ids=["suite", "reference"])
def test_on_a_thousand_nodes_sparse_and_dense_releases_agree_in_size(reference: bool) -> None:
    """Realistic s (ε_B = 2, D_max = 10) and many streaming blocks; the number released and how many of the input's
    edges survive agree between the paths to within their spread."""
    n, max_degree, draws = 1000, 10, 12
    edges = bounded_csbm(n, max_degree)
    s = min_keep_parameter(2.0, max_degree)
    probs = paper_sampling_probability(torch.bincount(edges[1], minlength=n).to(torch.float64), num_nodes=n, s=s)
    input_keys = edges[0] * n + edges[1]

    def sizes(dense_max_pairs: int, seed: int) -> Tensor:
        generator, out = torch.Generator().manual_seed(seed), []
        for _ in range(draws):
            if reference:
                kept = randomize_and_resample_with_probabilities(
                    edges, probs, num_nodes=n, s=s, generator=generator, dense_max_pairs=dense_max_pairs
                )
            else:
                kept = randomize_and_resample(
                    edges,
                    num_nodes=n,
                    s=s,
                    max_degree=max_degree,
                    generator=generator,
                    dense_max_pairs=dense_max_pairs,
                    pairs_per_block=10_000,
                )
            out.append([kept.size(1), int(torch.isin(kept[0] * n + kept[1], input_keys).sum())])
        return torch.tensor(out, dtype=torch.float64)

    dense, sparse = sizes(DENSE_MAX_PAIRS, 1), sizes(0, 2)
    spread = torch.sqrt((dense.var(0) + sparse.var(0)) / draws)
    assert bool(((dense.mean(0) - sparse.mean(0)).abs() < 5 * spread + 1).all())
    assert float(sparse[:, 0].mean()) < 0.2 * s / 2 * n * (n - 1)  # far below the randomized graph's size


def test_reference_release_at_twenty_thousand_nodes_has_its_expected_size() -> None:
    """Beyond the dense threshold: every pair independently released w.p. (1 − s/2 or s/2)·√(p_u·p_v)."""
    n, max_degree = 20_000, 10
    edges = bounded_csbm(n, max_degree)
    s = min_keep_parameter(2.0, max_degree)
    probs = paper_sampling_probability(torch.bincount(edges[1], minlength=n).to(torch.float64), num_nodes=n, s=s)
    kept = randomize_and_resample_with_probabilities(
        edges, probs, num_nodes=n, s=s, generator=torch.Generator().manual_seed(4)
    )
    root = probs.sqrt()
    lo, hi = edges[:, edges[0] < edges[1]]
    on_edges = root[lo] * root[hi]
    all_pairs = (root.sum() ** 2 - probs.sum()) / 2  # Σ_{u<v} √(p_u p_v)
    q = s / 2
    mean = float(q * all_pairs + (1 - 2 * q) * on_edges.sum())
    assert abs(kept.size(1) / 2 - mean) < 5 * math.sqrt(mean)
    upper = kept[0] < kept[1]
    assert int(upper.sum()) * 2 == kept.size(1)
    assert bool((probs[kept[0]] > 0).all())  # nodes with p = 0 release nothing
