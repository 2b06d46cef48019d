"""NIP-GNN as a method: exact pure-ε composition, the records' parameters, the ablations' switches."""

from __future__ import annotations

import math

import pytest
import torch

from nodedp.accounting import min_keep_parameter, split_budget, verify_ledger_dict
from nodedp.methods import RunInputs, RunSpec, get_method
from nodedp.methods.nip_gnn import tnie_scores
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
    # adaptive budgets rest on the released graph: the record says so; uniform ones need no such caveat
    assert ("released" in (nap.caveat or "")) == (budgets == "capped")


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
