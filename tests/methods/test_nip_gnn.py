"""NIP-GNN as a method: exact pure-ε composition, the records' parameters, the ablations' switches."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Data

from nodedp.accounting import Ledger, min_keep_parameter, split_budget, verify_ledger_dict
from nodedp.accounting.nip_bounds import worst_case_budget_ratio
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.contract.specs.nip_gnn import NipHparams
from nodedp.data import bound_undirected_degree, random_split
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.mechanisms import (
    debiased_degree,
    degree_preserving_randomization,
    sample_randomized_edges,
    theorem3_ratio,
    unbiased_sampling_probability,
)
from nodedp.mechanisms.nip_sparse import uses_dense_release
from nodedp.methods.nip_gnn import nap_budgets, tnie_scores
from nodedp.models import aca_propagate
from tests.methods._structure import accuracy_on as _accuracy
from tests.methods._structure import extended_graph, with_bound

D = 5
FAST = {"epochs": 2, "batch_size": 32, "hidden_dim": 8}


def _inputs(tiny_inputs) -> RunInputs:
    return with_bound(tiny_inputs, "degree", D)


def _run(inputs, epsilon: float, *, method: str = "nip-gnn", delta: float = 0.0, **hparams):
    info = get_method("nip-gnn")
    spec = RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=epsilon, target_delta=delta)
    # the plan's D_max is public (the dataset's, or `max_degree`): the artifact's bound, as the workflow builds it
    hparams = {"max_degree": int(inputs.structure["degree"]["bound"]), **hparams}
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
    spec = CSBMSpec(
        num_nodes=num_nodes,
        num_classes=3,
        avg_degree=6.0,
        homophily=0.5,
        num_features=3,
        feature_signal=0.0,
        degree_exponent=2.1,
        class_weights=None,
        seed=seed,
    )
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
    released = sample_randomized_edges(
        released, unbiased_sampling_probability(estimate, num_nodes=n, s=s), generator, rule="pair"
    )
    rebounded, budgets = nap_budgets(released, num_nodes=n, max_degree=max_degree, hp=NipHparams(), seed=seed)
    degree = torch.bincount(private[0], minlength=n)
    assert not torch.equal(torch.bincount(rebounded[0], minlength=n), degree)  # the premise: they differ
    unscaled = budgets.weights * budgets.scale
    used_ratios, unscaled_ratios = [], []
    for graph in neighbouring_graphs(private, budgets.weights, num_nodes=n, max_degree=max_degree, additions=8):
        assert int(torch.bincount(graph[0], minlength=n).max()) <= max_degree
        used_ratios.append(
            theorem3_ratio(graph, num_nodes=n, epsilons=budgets.weights, epsilon_a=1.0, max_degree=max_degree)
        )
        unscaled_ratios.append(
            theorem3_ratio(graph, num_nodes=n, epsilons=unscaled, epsilon_a=1.0, max_degree=max_degree)
        )
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


def test_a_graph_beyond_the_dense_threshold_is_released_sparsely_in_both_modes():
    """4200 nodes (> 4096): ``nip_sparse`` draws the release without its ≈ s·N²/4-edge intermediate."""
    n = 4200
    assert not uses_dense_release(n)
    spec = CSBMSpec(
        num_nodes=n,
        num_classes=3,
        avg_degree=6.0,
        homophily=0.9,
        num_features=8,
        feature_signal=3.0,
        degree_exponent=2.5,
        class_weights=None,
        seed=0,
    )
    inputs = with_bound(RunInputs(graph=generate_csbm(spec), split=random_split(n, seed=0), num_classes=3), "degree", D)
    bounded_edges = inputs.structure["degree"]["edge_index"].size(1)
    # s ≈ 4e-22: no pair flips, so every debiased degree is the true one and p_u = 1: the bounded graph itself
    nearly_exact = _run(inputs, 2000.0, epochs=1)
    assert nearly_exact.details["released_edges"] == bounded_edges
    assert nearly_exact.test["accuracy"] > 0.6
    assert 0 < _paper_run(inputs, 2000.0, epochs=1).details["released_edges"] < bounded_edges  # Eq. 12: p_u < 1
    for result in (_run(inputs, 8.0, epochs=1), _paper_run(inputs, 8.0, epochs=1)):
        s = result.details["keep_parameter_s"]
        assert 0 < result.details["released_edges"] < 0.1 * s / 2 * n * (n - 1)


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


# --- reference mode (`nip-gnn@paper`) ---------------------------------------------------------------------------


def _paper_run(inputs, epsilon: float, **hparams):
    # the suite's δ as the target (unused: every part is pure ε), the paper's δ = 0 in the claim
    return _run(inputs, epsilon, method="nip-gnn@paper", delta=1e-5, accounting="paper", **hparams)


def _hand_actual(epsilon: float, *, bound: int, private_max: int, largest: list[float]) -> float:
    """Eq. 9/11 and Theorem 4's noise at the private D_p, costed over graphs with degrees ≤ the bound D, by hand."""
    eps_a, eps_b, eps_c = epsilon / 2, epsilon / 4, epsilon / 4  # shares 0.5, 0.25, 0.25
    top = sorted(largest, reverse=True)[: bound + 1]
    ratio = (bound * top[0] + sum(top[1:])) / (2 * bound)  # the star centred at the largest budget
    return eps_a * bound / private_max * ratio + eps_b * bound / private_max + eps_c


def _check_reference_ledger(result, epsilon: float, *, resample: bool = True) -> Ledger:
    ledger = result.ledger
    assert ledger.reference and ledger.claim.epsilon == epsilon and ledger.claim.delta == 0.0  # pure ε claimed
    assert "Theorem 3" in ledger.claim.rule and "NIP-GNN" in ledger.claim.source
    d = ledger.to_dict()
    assert Ledger.from_dict(d).to_dict() == d
    assert verify_ledger_dict(d) == ledger.composed()[0] == ledger.actual_claim_epsilon()  # pure ε: δ plays no part
    reads = {read.name for read in ledger.uncharged}
    assert reads == (
        {"max-degree:nip-gnn@paper", "resampling-degrees:nip-gnn@paper"} if resample else {"max-degree:nip-gnn@paper"}
    )
    assert not ledger.fully_accounted and d["fully_accounted"] is False
    return ledger


def test_reference_mode_sizes_the_papers_noise_and_records_its_actual_epsilon(tiny_inputs):
    """Eq. 11 as printed, unscaled, at D_p = the private max degree: the ledger claims ε and records more."""
    assert get_method("nip-gnn").has_reference_mode
    inputs = _inputs(tiny_inputs)
    result = _paper_run(inputs, 4.0)
    ledger = _check_reference_ledger(result, 4.0)
    private_max = int(torch.bincount(inputs.structure["degree"]["edge_index"][0]).max())
    assert result.details["paper_max_degree"] == private_max == D  # the bounding binds on this graph
    edges, nap, labels = ledger.mechanisms
    # the paper's rule, by hand: Laplace 2·D_p/ε_A (Lemma 1), s = 2/(e^{ε_B/2D_p} + 1) (Theorem 4), Eq. 13
    assert nap.params["laplace_scale_at_epsilon_a"] == pytest.approx(2 * private_max / 2.0, rel=1e-12)
    assert edges.params["s"] == pytest.approx(2 / (math.exp(1.0 / (2 * private_max)) + 1), rel=1e-12)
    assert labels.params["keep_probability"] == pytest.approx(math.exp(1.0) / (math.exp(1.0) + 2), rel=1e-12)
    assert nap.params["budget_scheme"] == "paper" and nap.params["budget_scale"] == 1.0
    largest = nap.params["largest_budget_weights"]
    assert len(largest) == D + 1 and nap.params["charged_ratio"] > 1  # Eq. 11 breaks Theorem 3's constraint
    actual = ledger.composed()[0]
    assert actual == pytest.approx(_hand_actual(4.0, bound=D, private_max=private_max, largest=largest), rel=1e-12)
    assert actual > 4.0
    # suite mode on the same inputs spends exactly the target, with scaled budgets
    assert _run(inputs, 4.0).ledger.composed()[0] == 4.0


def test_reference_mode_with_uniform_budgets_and_a_binding_bound_costs_what_the_paper_claims(tiny_inputs):
    result = _paper_run(_inputs(tiny_inputs), 7.0, budgets="uniform")
    ledger = _check_reference_ledger(result, 7.0)
    assert ledger.mechanisms[1].params["charged_ratio"] == 1.0
    assert ledger.composed()[0] <= 7.0 * (1 + 1e-12)


def test_reference_mode_on_a_bound_above_every_degree_is_the_papers_unbounded_run_and_costs_more(tiny_inputs):
    """With D above the graph's maximum degree the bounding is the identity (the paper's setting); the noise sized
    at D_p < D costs D/D_p times more over the graphs with degrees ≤ D."""
    raw_max = int(torch.bincount(tiny_inputs.graph.edge_index[0]).max())
    bound = raw_max + 4
    result = _paper_run(with_bound(tiny_inputs, "degree", bound), 12.0, budgets="uniform", resample=False)
    ledger = _check_reference_ledger(result, 12.0, resample=False)
    assert ledger.guarantee_class == "conditional"  # the plan's class: the same whether or not a node is over D
    assert result.details["paper_max_degree"] == raw_max < bound
    largest = ledger.mechanisms[1].params["largest_budget_weights"]
    assert largest == [1.0] * (bound + 1)
    expected = _hand_actual(12.0, bound=bound, private_max=raw_max, largest=largest)
    assert ledger.composed()[0] == pytest.approx(expected, rel=1e-12) and expected > 12.0


@pytest.mark.parametrize("exact", ["features", "edges", "labels", "features,labels"])
def test_an_exact_diagnosis_spends_only_the_parts_that_ran_and_marks_the_others_uncharged(tiny_inputs, exact):
    inputs = _inputs(tiny_inputs)
    full = _run(inputs, 3.0)
    result = _run(inputs, 3.0, exact=exact)
    parts = exact.split(",")
    eps = dict(zip(("features", "edges", "labels"), split_budget(3.0, (0.5, 0.25, 0.25)), strict=True))
    ledger = result.ledger
    assert ledger.composed()[0] == pytest.approx(math.fsum(e for p, e in eps.items() if p not in parts), rel=1e-12)
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(ledger.composed()[0])
    assert not ledger.fully_accounted and sorted(r.touches[0] for r in ledger.uncharged) == sorted(parts)
    # the parts that ran keep the full method's noise (NAP's budgets follow the graph it is given)
    kept = {r.name: r for r in full.ledger.mechanisms}
    assert len(ledger.mechanisms) == 3 - len(parts)
    assert all(
        (kept[r.name].pure_epsilon, kept[r.name].sensitivity) == (r.pure_epsilon, r.sensitivity)
        for r in ledger.mechanisms
    )
    if "edges" in parts:  # the bounded private graph itself, not a randomized one
        assert result.details["released_edges"] == inputs.structure["degree"]["edge_index"].size(1)


def test_exact_features_isolate_naps_noise(tiny_inputs):
    # labels exact in both, edges randomized alike: only NAP's Laplace noise differs, and it is what breaks
    # the signal at a small ε (the diagnosis the nip-gnn-diagnosis study runs on real graphs)
    inputs = _inputs(tiny_inputs)
    exact = _run(inputs, 1.0, exact="features,labels", epochs=30).test["accuracy"]
    noisy = _run(inputs, 1.0, exact="labels", epochs=30).test["accuracy"]
    assert exact > noisy + 0.2


@pytest.mark.parametrize("bad", ["feature", "features,features", "features,edges,labels"])
def test_exact_refuses_unknown_repeated_or_all_parts(bad):
    with pytest.raises(ValueError, match="exact"):
        get_method("nip-gnn").parse_hparams({"exact": bad})


def test_exact_is_refused_in_reference_mode():
    with pytest.raises(ValueError, match="reference mode"):
        get_method("nip-gnn").parse_hparams({"exact": "edges", "accounting": "paper"})


# --- predict: the MLP on ACA features recomputed on a graph that extends the input ------------------------------


def _extended(inputs, extra: int = 6, *, isolated: bool = False) -> Data:
    """``extended_graph`` with this file's degree bound."""
    return extended_graph(inputs, degree_bound=D, extra=extra, isolated=isolated)


@pytest.mark.parametrize(
    "hparams",
    [
        {},
        {"budgets": "uniform"},
        {"resample": False},
        {"aggregation": "plain"},
        {"accounting": "paper"},
        {"exact": "labels"},
    ],
)
def test_predict_gives_finite_logits_on_appended_nodes_from_its_argument_alone(tiny_inputs, hparams):
    """Every variant (the config's ablations, reference mode, a diagnosis) infers the same way: one path."""
    inputs = _inputs(tiny_inputs)
    method = "nip-gnn@paper" if hparams.get("accounting") == "paper" else "nip-gnn"
    result = _run(inputs, 4.0, method=method, **hparams)
    extended = _extended(inputs)
    n, total = inputs.graph.num_nodes, extended.num_nodes
    assert extended.edge_index.size(1) > inputs.graph.edge_index.size(1)  # the new nodes have edges
    logits = result.predict(extended).cpu()
    assert logits.shape == (total, inputs.num_classes) and torch.isfinite(logits).all()
    assert torch.equal(result.predict(extended).cpu(), logits)  # no fresh noise: its argument and the weights
    isolated = result.predict(_extended(inputs, isolated=True)).cpu()[:n]
    own = result.predict(inputs.graph).cpu()
    if hparams.get("aggregation") == "plain":  # sums over bounded edges: local, isolated nodes change nothing
        torch.testing.assert_close(isolated, own, rtol=0, atol=1e-6)
    assert (logits[:n] - own).abs().max() > 1e-6  # the new edges are read (and bounded, not dropped)


def test_predict_is_the_evaluation_when_the_run_releases_features_and_edges_exactly(tiny_inputs):
    """predict skips NAP's noise and the edge randomization; a diagnosis without them evaluates on exactly what
    predict recomputes (the artifact's bounding reproduced from its public bound and seed)."""
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, 40.0, exact="features,edges", epochs=30)  # labels nearly exact: a model that learns
    graph, split = inputs.graph, inputs.split
    own = result.predict(graph)
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    assert _accuracy(own, graph, split.val) == pytest.approx(result.val["accuracy"], abs=1e-9)
    assert result.test["accuracy"] > 0.5  # a model that learnt something: the equality is not between constants


def test_predict_scores_near_the_noisy_evaluation_when_the_noise_is_negligible(tiny_inputs):
    """The full method evaluates on the noisy H⁰ and the randomized, resampled graph, which predict skips: at a
    huge ε (s ≈ 0, Laplace scale 2·D/ε_u ≈ 0.01/β_u) they are nearly the exact ones, and predict's accuracy is
    near the reported one (on csbm-tiny: 2 of 45 test nodes differ, through the small-budget nodes' noise)."""
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, 2000.0, epochs=30)
    test = inputs.split.test
    assert abs(_accuracy(result.predict(inputs.graph), inputs.graph, test) - result.test["accuracy"]) <= 0.1
