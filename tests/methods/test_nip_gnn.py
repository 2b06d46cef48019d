"""NIP-GNN as a method: exact pure-ε composition, the records' parameters, the ablations' switches."""

from __future__ import annotations

import math

import pytest
import torch

from nodedp.accounting import min_keep_parameter, split_budget, verify_ledger_dict
from nodedp.accounting.nip import worst_case_budget_ratio
from nodedp.data import bound_undirected_degree
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.mechanisms import (
    debiased_degree,
    degree_preserving_randomization,
    sample_randomized_edges,
    theorem3_ratio,
    unbiased_sampling_probability,
)
from nodedp.methods import RunInputs, RunSpec, get_method
from nodedp.methods.nip_gnn import NipHparams, nap_budgets, tnie_scores
from nodedp.models import aca_propagate
from tests.methods._structure import with_bound

D = 5
FAST = {"epochs": 2, "batch_size": 32, "hidden_dim": 8}


def _inputs(tiny_inputs) -> RunInputs:
    return with_bound(tiny_inputs, "degree", D)


def _run(inputs, epsilon: float, **hparams):
    info = get_method("nip-gnn")
    spec = RunSpec(dataset="csbm-tiny", method="nip-gnn", seed=0, target_epsilon=epsilon, target_delta=0.0)
    return info.run(inputs, spec, info.parse_hparams({**FAST, **hparams}))


@pytest.mark.parametrize("budgets", ["capped", "uniform"])
def test_parts_add_up_to_the_target_exactly_and_match_the_mechanisms(tiny_inputs, budgets):
    result = _run(_inputs(tiny_inputs), 3.7, budgets=budgets, share_a=0.6, share_b=0.3, share_c=0.1)
    ledger = result.ledger
    assert ledger.composed() == (3.7, 0.0)  # pure ε, exactly
    assert verify_ledger_dict(ledger.to_dict()) == 3.7
    edges, nap, labels = ledger.mechanisms
    eps_a, eps_b, eps_c = split_budget(3.7, (0.6, 0.3, 0.1))
    assert (nap.pure_epsilon, edges.pure_epsilon, labels.pure_epsilon) == (eps_a, eps_b, eps_c)
    assert nap.sensitivity == 2 * D  # Lemma 1
    assert result.details["keep_parameter_s"] == pytest.approx(min_keep_parameter(eps_b, D))
    assert result.details["theorem3_ratio_released"] <= 1 + 1e-9
    # the budgets are scaled to their worst case over every graph with degrees ≤ D: no caveat about the
    # released graph, and the record holds what a verifier recomputes the ratio from
    assert "released" not in (nap.caveat or "")
    params = nap.params
    assert params["charged_ratio"] == worst_case_budget_ratio(params["largest_budget_weights"], max_degree=D) <= 1
    assert len(params["largest_budget_weights"]) == D + 1
    assert params["laplace_scale_at_epsilon_a"] == 2 * D / eps_a
    assert params["budget_scale"] == result.details["budget_scale"]
    assert params["worst_case_ratio_before_scaling"] == result.details["worst_case_ratio_before_scaling"]
    if budgets == "uniform":
        assert params["budget_scale"] == 1.0 and params["largest_budget_weights"] == [1.0] * (D + 1)
    else:
        assert params["budget_scale"] == params["worst_case_ratio_before_scaling"] > 1
    assert "bounded_edges" not in result.details  # a count of private edges: not published unaccounted


def heavy_private_graph(num_nodes: int, max_degree: int, seed: int):
    spec = CSBMSpec(num_nodes=num_nodes, num_classes=3, avg_degree=6.0, homophily=0.5, num_features=3,
                    feature_signal=0.0, degree_exponent=2.1, class_weights=None, seed=seed)
    edges = generate_csbm(spec).edge_index
    return bound_undirected_degree(edges, num_nodes=num_nodes, max_degree=max_degree, seed=seed)


def without(edges, k: int):
    return edges[:, (edges[0] != k) & (edges[1] != k)]


def neighbouring_graphs(private, budgets, *, num_nodes: int, max_degree: int, additions: int):
    """The private graph, every graph with one node removed, and graphs in which one node k (absent: isolated)
    is added with up to D_max edges to the nodes of highest budget that have room (the adversarial choice)."""
    yield private
    for v in range(num_nodes):
        yield without(private, v)
    order = budgets.argsort(descending=True).tolist()
    for k in order[:additions]:
        rest = without(private, k)
        degree = torch.bincount(rest[0], minlength=num_nodes)
        partners = [u for u in order if u != k and degree[u] < max_degree][:max_degree]
        spokes = torch.tensor([[k] * len(partners), partners])
        yield torch.cat([rest, spokes, spokes.flip(0)], dim=1)


@pytest.mark.parametrize(("epsilon_b", "seed"), [(0.5, 0), (4.0, 1)])
def test_budgets_from_the_released_graph_meet_theorem3_on_the_private_graph_and_its_neighbours(epsilon_b, seed):
    """NAP runs on the private graph with budgets from the released one: for the budgets actually used, the
    ratio on the private graph, on every removal and on adversarial additions is ≤ 1, so ε_A covers every
    neighbouring pair; the unscaled budgets (all earlier runs) overspend on some of them."""
    n, max_degree = 150, 6
    private = heavy_private_graph(n, max_degree, seed)
    generator = torch.Generator().manual_seed(seed)
    s = min_keep_parameter(epsilon_b, max_degree)
    released = degree_preserving_randomization(private, num_nodes=n, s=s, generator=generator)
    estimate = debiased_degree(released, num_nodes=n, s=s).clamp(min=0, max=max_degree)
    released = sample_randomized_edges(released, unbiased_sampling_probability(estimate, num_nodes=n, s=s),
                                       generator, rule="pair")
    rebounded, budgets = nap_budgets(released, num_nodes=n, max_degree=max_degree, hp=NipHparams(), seed=seed)
    degree = torch.bincount(private[0], minlength=n)
    assert not torch.equal(torch.bincount(rebounded[0], minlength=n), degree)  # the premise: they differ
    unscaled = budgets.weights * budgets.scale
    used_ratios, unscaled_ratios = [], []
    for graph in neighbouring_graphs(private, budgets.weights, num_nodes=n, max_degree=max_degree, additions=8):
        assert int(torch.bincount(graph[0], minlength=n).max()) <= max_degree
        used_ratios.append(theorem3_ratio(graph, num_nodes=n, epsilons=budgets.weights, epsilon_a=1.0,
                                          max_degree=max_degree))
        unscaled_ratios.append(theorem3_ratio(graph, num_nodes=n, epsilons=unscaled, epsilon_a=1.0,
                                              max_degree=max_degree))
    assert len(used_ratios) == 1 + n + 8
    assert max(used_ratios) <= budgets.worst_case_ratio <= 1
    # released-graph budgets meet the constraint there, not on the graphs NAP may run on
    assert theorem3_ratio(rebounded, num_nodes=n, epsilons=unscaled, epsilon_a=1.0, max_degree=max_degree) <= 1
    assert max(unscaled_ratios) > 1


def test_resampling_keeps_the_released_graph_sparse(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    sampled = _run(inputs, 2.0).details["released_edges"]
    dense = _run(inputs, 2.0, resample=False).details["released_edges"]
    n = tiny_inputs.graph.num_nodes
    s = min_keep_parameter(2.0 * 0.25, D)
    assert dense == pytest.approx(s / 2 * n * (n - 1), rel=0.1)  # ~every pair re-drawn at Bern(1/2)
    assert sampled < 0.1 * dense


def test_learns_with_a_large_budget(tiny_inputs):
    assert _run(_inputs(tiny_inputs), 2000.0, epochs=30).test["accuracy"] > 0.6


def test_a_degree_artifact_bounded_otherwise_is_refused(tiny_inputs):
    with pytest.raises(ValueError, match="max_degree is 7"):
        _run(_inputs(tiny_inputs), 2.0, max_degree=7)


def test_tnie_ranks_hubs_above_leaves():
    star = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 2, 3, 0, 0, 0]])
    scores = tnie_scores(star, num_nodes=4, layers=2, lam=1.0, phi=0.0)
    assert scores[0] > scores[1] == scores[2] == scores[3]


def test_aca_interpolates_between_the_noisy_aggregate_and_propagation():
    torch.manual_seed(0)
    h0 = torch.randn(6, 3)
    edges = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    plain = aca_propagate(h0, edges, hops=1, tau=0.0, adaptive=False)
    assert torch.allclose(aca_propagate(h0, edges, hops=1, tau=0.0), plain)  # τ = 0: γ = 1
    assert torch.allclose(aca_propagate(h0, edges, hops=1, tau=1e6), h0)  # τ huge: γ = 0
    mid = aca_propagate(h0, edges, hops=1, tau=1.0)
    distance = (plain - h0).norm(dim=1)
    gamma = (1 - distance.median() / distance).clamp(min=0)
    assert torch.allclose(mid, (1 - gamma[:, None]) * h0 + gamma[:, None] * plain, atol=1e-6)
    assert math.isclose(float(gamma.min()), 0.0)  # nodes at or below the median keep H̄⁰
