"""HeterPoisson (Xiang, Wang, Wang, S&P 2024): DP-SGD on Poisson roots' 1-hop subgraphs, `heterpoisson`.

Each step samples roots from the training nodes independently at q = B / |train| (``poisson_batches``); each root
lists its out-neighbours on the edges bounded to the public D (the workflow's undirected bounding) and keeps each
with probability min(1, M/D); every sampled root is removed from every other subgraph of the step and an isolated
root gets no neighbour (``HeterPoissonSampler``, mode "suite"). One example per root through G_net
(``nodedp.models.heter_poisson``), loss on the root, the gradient clipped to C/2, one Gaussian of std σ·C on the sum
divided by the expected batch size: the suite's one loop. The plan (``nodedp.plans.heterpoisson``) calibrates σ by
the per-node mixture's PLD at d = D. Reference mode (``heterpoisson@paper``) runs the public code's sampler (mode
"paper") with its accountant's σ. Inference (not private) gives every node ≤ M_test of its out-neighbours, a
uniform subset, on the full graph. Details: docs/design/methods.md, section `nodedp.methods.heterpoisson`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.heterpoisson import HeterPoissonHparams
from nodedp.data import Split, remove_cross_split_edges
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models.heter_poisson import GNet
from nodedp.plans import PublicInputs
from nodedp.plans.heterpoisson import plan_heterpoisson
from nodedp.structure.heter_poisson_sampling import HeterPoissonSampler
from nodedp.structure.structured_subsampling import StructuredSampler, gather_structured
from nodedp.structure.subgraphs import trim_padding
from nodedp.train import PrivacyConfig, make_generator, poisson_batches, resolve_device, seed_everything

if TYPE_CHECKING:
    from torch_geometric.data import Data

__all__ = ["inference_sampler", "run_heterpoisson", "sampled_logits"]

# The training sampler's and inference's own streams (CPU generators), XOR-ed into the run's seed.
_SAMPLER_SALT, _INFERENCE_SALT = 0x4E7E, 0x1AFE
# Nodes per inference batch (subgraphs of width 1 + M_test).
_INFERENCE_CHUNK = 4096


def _out_neighbour_arcs(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Arcs u -> v for every edge v -> u (no self-loops, no repeats): ``StructuredSampler`` grows a root v along
    its in-arcs, which are then v's out-neighbours, the nodes HeterPoisson lists."""
    src, dst = edge_index.cpu()
    keep = src != dst
    keys = torch.unique(dst[keep] * num_nodes + src[keep])
    return torch.stack([keys // num_nodes, keys % num_nodes])


def inference_sampler(edge_index: Tensor, num_nodes: int, *, neighbours: int) -> StructuredSampler:
    """Each node with a uniform ≤ ``neighbours``-subset of its out-neighbours in ``edge_index`` (the public code's
    inference with M_test, without fill or root removal): built once per graph, one pass over its edges."""
    arcs = _out_neighbour_arcs(edge_index, num_nodes)
    return StructuredSampler(arcs, num_nodes=num_nodes, radius=1, edge_keep=1.0, caps=(neighbours,))


def sampled_logits(model: nn.Module, x: Tensor, sampler: StructuredSampler, nodes: Tensor, *, seed: int) -> Tensor:
    """Logits of ``nodes``, each through G_net on its ``inference_sampler`` subgraph, in batches of 4,096."""
    generator = make_generator(seed)
    out = [
        model(gather_structured(*trim_padding(*sampler.expand(chunk.cpu(), generator)), x))
        for chunk in nodes.split(_INFERENCE_CHUNK)
    ]
    return torch.cat(out) if out else x.new_zeros(0, 0)


def _check_artifact(artifact: Mapping[str, Any], bound: int) -> Tensor:
    if int(artifact["bound"]) != bound:
        raise ValueError(
            f"the plan's public degree bound is D = {bound} but the degree artifact was bounded to "
            f"D = {int(artifact['bound'])}; build it with `bound-degree --kind degree --bound {bound}` "
            "(the workflow does)"
        )
    return artifact["edge_index"]


def run_heterpoisson(inputs: RunInputs, spec: RunSpec, hp: HeterPoissonHparams) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    planned = plan_heterpoisson(PublicInputs.from_run(inputs, spec), spec, hp)  # before any private data is read
    ledger, params, bound = planned.ledger, planned.parts["params"], planned.parts["degree_bound"]
    inductive = split.setting == "inductive"
    common = {
        "num_nodes": graph.num_nodes,
        "train_nodes": split.train,
        "neighbours": hp.neighbours,
        "inductive": inductive,
    }
    if bound is None:  # reference mode: the public code's sampler on the unbounded graph
        sampler = HeterPoissonSampler(graph.edge_index, mode="paper", **common)
    else:
        edges = _check_artifact(inputs.structure["degree"], bound)
        sampler = HeterPoissonSampler(edges, mode="suite", degree_bound=bound, **common)
    sampler_generator = make_generator(spec.seed ^ _SAMPLER_SALT)

    x, y = graph.x.to(device), graph.y.to(device)
    model = GNet(graph.num_features, hp.hidden_dim, inputs.num_classes, num_blocks=hp.num_blocks).to(device)
    full_edges = remove_cross_split_edges(graph.edge_index, split) if inductive else graph.edge_index

    def example_inputs(idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        nodes, adj = trim_padding(*sampler.sample(split.train[idx.cpu()], sampler_generator))
        return sampler.gather(nodes, adj, x)

    evaluation: list[StructuredSampler] = []  # built at the first evaluation, shared by validation and test

    def logits_of(nodes: Tensor) -> Tensor:
        if not evaluation:
            evaluation.append(inference_sampler(full_edges, graph.num_nodes, neighbours=hp.test_neighbours))
        return sampled_logits(model, x, evaluation[0], nodes, seed=spec.seed ^ _INFERENCE_SALT)

    def predict(other: Data, parts: Split | None = None) -> Tensor:
        parts = split if parts is None else parts
        edges = remove_cross_split_edges(other.edge_index.cpu(), parts) if parts.setting == "inductive" else None
        edges = other.edge_index if edges is None else edges
        sampler = inference_sampler(edges, other.num_nodes, neighbours=hp.test_neighbours)
        every = torch.arange(other.num_nodes)
        return sampled_logits(model, other.x.to(device), sampler, every, seed=spec.seed ^ _INFERENCE_SALT)

    privacy = PrivacyConfig(
        clip_norm=float(params["example_clip_norm"]),  # C/2: the mixture's shift ½ for a root, 1 per appearance
        noise_std=float(params["noise_std"]),
        expected_batch_size=float(params["expected_batch_size"]),
        steps=int(params["steps"]),
    )
    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=example_inputs,
        logits_of=logits_of,
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=poisson_batches(
            split.train.numel(), sampling_rate=params["sampling_rate"], steps=params["steps"], generator=generator
        ),
        privacy=privacy,
        ledger=ledger,
        generator=generator,
        device=device,
        predict=predict,
    )
