"""HeterPoisson's run (``nodedp.methods.heterpoisson``): the suite's sampler on the degree artifact at the plan's D
(a wrong artifact refused), each subgraph clipped to C/2, the public code's sampler in reference mode, and inference
on ≤ M_test out-neighbours."""

from __future__ import annotations

import pytest
import torch

from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method
from nodedp.mechanisms.trace import trace_noise
from nodedp.methods.heterpoisson import inference_sampler, sampled_logits
from tests.methods._structure import with_bound

SMALL = {"epochs": 1, "batch_size": 32, "hidden_dim": 8, "max_degree": 4}


def _spec(method: str = "heterpoisson") -> RunSpec:
    return RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=4.0, target_delta=1e-4, accountant="pld")


def test_a_suite_run_clips_each_subgraph_to_half_c_and_draws_the_ledgers_noise(tiny_inputs, monkeypatch):
    from nodedp.methods import heterpoisson

    modes = []
    original = heterpoisson.HeterPoissonSampler.__init__

    def recording(self, *args, **kwargs):
        modes.append((kwargs["mode"], kwargs.get("degree_bound")))
        original(self, *args, **kwargs)

    monkeypatch.setattr(heterpoisson.HeterPoissonSampler, "__init__", recording)
    info = get_method("heterpoisson")
    hp = info.parse_hparams({**SMALL, "clip_norm": 3.0})
    with trace_noise() as trace:
        result = info.run(with_bound(tiny_inputs, "degree", 4), _spec(), hp)
    (record,) = result.ledger.mechanisms
    (stage,) = trace.stages("dp-sgd")
    assert {d.params["clip_norm"] for d in stage} == {1.5}  # C/2: the mixture's shift ½ for a root
    assert all(d.std == pytest.approx(record.params["noise_std"]) for d in stage)
    assert record.params["noise_std"] == pytest.approx(3.0 * record.params["noise_multiplier"])
    assert sum(d.count for d in stage) == record.params["steps"] == result.details["steps"]
    assert modes == [("suite", 4)]


def test_a_degree_artifact_at_another_bound_is_refused_naming_both(tiny_inputs):
    info = get_method("heterpoisson")
    with pytest.raises(ValueError, match=r"D = 4 but the degree artifact was bounded to D = 6"):
        info.run(with_bound(tiny_inputs, "degree", 6), _spec(), info.parse_hparams(SMALL))


def test_reference_mode_runs_the_public_codes_sampler_on_the_unbounded_graph(tiny_inputs, monkeypatch):
    from nodedp.methods import heterpoisson

    seen = []
    original = heterpoisson.HeterPoissonSampler.__init__

    def recording(self, edge_index, **kwargs):
        seen.append((kwargs["mode"], edge_index.size(1)))
        original(self, edge_index, **kwargs)

    monkeypatch.setattr(heterpoisson.HeterPoissonSampler, "__init__", recording)
    info = get_method("heterpoisson")
    hp = info.parse_hparams({**SMALL, "accounting": "paper"})
    result = info.run(with_bound(tiny_inputs, "degree", 4), _spec("heterpoisson@paper"), hp)
    assert seen == [("paper", tiny_inputs.graph.edge_index.size(1))]
    assert result.ledger.claim is not None and result.ledger.uncharged


def test_inference_gives_each_node_at_most_m_test_out_neighbours_and_is_reproducible():
    class Width(torch.nn.Module):  # the number of real members of each subgraph, root included
        def forward(self, inputs):
            _, _, mask = inputs
            return mask.sum(1, keepdim=True).float()

    edges = torch.tensor([[0, 0, 0, 0, 1, 2, 3], [1, 2, 3, 4, 0, 0, 0]])  # node 0 has four out-neighbours
    x = torch.zeros(5, 2)
    nodes = torch.arange(5)
    widths = sampled_logits(Width(), x, inference_sampler(edges, 5, neighbours=2), nodes, seed=0).squeeze(1)
    assert widths.tolist() == [3.0, 2.0, 2.0, 2.0, 1.0]
    again = sampled_logits(Width(), x, inference_sampler(edges, 5, neighbours=10), nodes, seed=0).squeeze(1)
    assert again.tolist() == [5.0, 2.0, 2.0, 2.0, 1.0]
