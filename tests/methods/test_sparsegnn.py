"""SparseGNN's run (``nodedp.methods.sparsegnn``): trained through the one loop on the sampler's rooted subgraphs,
its noise independent across same-shaped parameter tensors, an inductive split's subgraphs within the training
part."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.train import OptimConfig, PrivacyConfig, train_model

SMALL = {"epochs": 1, "batch_size": 32, "hidden_dim": 8}


def test_the_noise_on_same_shaped_tensors_is_drawn_independently():
    """SAGE's root and neighbour weights have one shape: an empty step's update is the noise alone, and the two
    must not share it (the public code once reused one buffer per shape, releasing a noise-free difference)."""
    torch.manual_seed(0)
    gnn = SubgraphGNN(6, 16, 3, layer="sage", num_layers=1, activation="relu")
    conv = gnn.convs[0]
    assert conv.self_linear.weight.shape == conv.neighbour_linear.weight.shape
    model = GraphReadout(gnn, torch.zeros(4, 6), torch.zeros(2, 0, dtype=torch.int64))
    before = [p.detach().clone() for p in (conv.self_linear.weight, conv.neighbour_linear.weight)]
    train_model(
        model,
        batch_fn=lambda idx: (_ for _ in ()).throw(AssertionError("an empty step reads no example")),
        batches=[torch.zeros(0, dtype=torch.int64)],
        optim=OptimConfig(optimizer="sgd", lr=1.0),
        privacy=PrivacyConfig(clip_norm=1.0, noise_std=1.0, expected_batch_size=1.0, steps=1),
        generator=torch.Generator().manual_seed(1),
        device="cpu",
    )
    a, b = (before[i] - p.detach() for i, p in enumerate((conv.self_linear.weight, conv.neighbour_linear.weight)))
    assert a.std() == pytest.approx(1.0, rel=0.2) and b.std() == pytest.approx(1.0, rel=0.2)  # std σ·C / E[B]
    assert not torch.allclose(a, b) and not torch.allclose(a, -b)
    assert abs(float(torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1])) < 0.3


def _spec(method: str) -> RunSpec:
    return RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=4.0, target_delta=1e-4, accountant="pld")


@pytest.mark.parametrize("method", ["sparse-sage", "sparse-gin"])
def test_a_run_trains_its_planned_steps_and_its_ledger_verifies(tiny_inputs, method):
    from nodedp.accounting import verify_ledger_dict

    info = get_method(method)
    result = info.run(tiny_inputs, _spec(method), info.parse_hparams({**SMALL, "radius": 2, "edge_keep": 0.5}))
    (record,) = result.ledger.mechanisms
    assert result.details["steps"] == record.params["steps"]
    assert result.details["noise_std"] == pytest.approx(record.params["noise_std"])
    assert verify_ledger_dict(result.ledger.to_dict()) <= 4.0
    assert 0.0 <= result.test["accuracy"] <= 1.0


def test_an_inductive_runs_training_subgraphs_hold_training_nodes_only(tiny_inputs, monkeypatch):
    from nodedp.methods import sparsegnn

    split = tiny_inputs.split
    inductive = dataclasses.replace(split, setting="inductive")
    inputs = RunInputs(graph=tiny_inputs.graph, split=inductive, num_classes=tiny_inputs.num_classes)
    seen: list[torch.Tensor] = []
    expand = sparsegnn.StructuredSampler.expand

    def recording(self, roots, generator):
        nodes, adj = expand(self, roots, generator)
        seen.append(nodes[nodes >= 0])
        return nodes, adj

    monkeypatch.setattr(sparsegnn.StructuredSampler, "expand", recording)
    info = get_method("sparse-sage")
    info.run(inputs, _spec("sparse-sage"), info.parse_hparams({**SMALL, "edge_keep": 1.0}))
    members = torch.cat(seen)
    assert members.numel() > len(seen) * 10  # subgraphs have neighbours
    is_train = torch.zeros(tiny_inputs.graph.num_nodes, dtype=torch.bool)
    is_train[split.train] = True
    assert bool(is_train[members].all())
