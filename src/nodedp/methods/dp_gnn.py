"""DP-GNN (Daigavane et al.): DP-SGD/DP-Adam on degree-bounded r-hop subgraphs.

`dp-gcn`, `dp-gin`, `dp-gat`, `dp-sage`: every training node's r-hop subgraph built once from the in-degree-bounded
edges (the dataset's public K); each step takes m of them without replacement, clips their gradients and adds one
Gaussian, z calibrated with Theorem 1. The plan (ledger, K, N, T, z, clip norms) is ``nodedp.plans.dp_gnn``'s;
with ``clip_percentile`` the thresholds are measured here and passed to it. Inference is not private.
Clip thresholds, inference and reference mode: docs/design/methods.md, section `nodedp.methods.dp_gnn`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from nodedp.contract.base import RunInputs, RunResult, RunSpec, degree_bound_of
from nodedp.contract.specs.dp_gnn import DpGnnHparams
from nodedp.data import bound_out_degree, remove_cross_split_edges
from nodedp.methods.gnn import full_graph_predict
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.plans import PublicInputs
from nodedp.plans.dp_gnn import (
    layer_names,
    plan_dp_gnn,
)
from nodedp.plans.dpsgd import privacy_from_record
from nodedp.structure import gather_features, sample_subgraphs
from nodedp.train import (
    fixed_size_batches,
    percentile_clip_norms,
    resolve_device,
    seed_everything,
    trainable_layer_names,
)


def run_dp_gnn(inputs: RunInputs, spec: RunSpec, hp: DpGnnHparams, *, layer: str) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    public = PublicInputs.from_run(inputs, spec)
    # The plan first, from public inputs (the thresholds aside where clip_percentile > 0: measured below).
    planned = None if hp.clip_percentile > 0 else plan_dp_gnn(public, spec, hp, layer=layer)
    max_degree = int(public.degree_bounds(dataclasses.asdict(hp))["in-degree"])
    bounded = inputs.structure["in-degree"]
    degree_bound = _check_artifact(bounded, spec, hp, max_degree=max_degree)
    subgraphs = _training_subgraphs(bounded, inputs, hp, max_degree=max_degree)
    num_examples = split.train.numel()

    x, y = graph.x.to(device), graph.y.to(device)
    full_edges = graph.edge_index
    if split.setting == "inductive":  # each part sees only its own edges at inference too
        full_edges = remove_cross_split_edges(full_edges, split)
    gnn = SubgraphGNN(graph.num_features, hp.hidden_dim, inputs.num_classes, layer=layer, num_layers=hp.num_layers)
    model = GraphReadout(gnn, x, full_edges.to(device)).to(device)
    train_nodes = split.train.to(device)
    if hp.clipping == "layerwise" or hp.accounting == "paper":  # the plan's clip groups are the model's layers
        names = tuple(trainable_layer_names(model))
        if names != layer_names(layer, hp.num_layers):
            raise ValueError(
                f"the model's layers {list(names)} are not the plan's {list(layer_names(layer, hp.num_layers))}"
            )

    def example_inputs(idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return gather_features(subgraphs, x, idx)

    if planned is None:  # the paper's recipe: thresholds read off the private data (the plan records it uncharged)
        idx = torch.randperm(num_examples, generator=generator, device=generator.device)[: hp.batch_size].to(device)
        thresholds = percentile_clip_norms(
            model,
            lambda i: (example_inputs(i), y[train_nodes[i]]),
            idx,
            percentile=hp.clip_percentile,
            layerwise=hp.clipping == "layerwise",
        )
        planned = plan_dp_gnn(public, spec, hp, layer=layer, thresholds=thresholds)
    ledger, parts = planned.ledger, planned.parts
    if ledger.degree_bound != degree_bound:
        raise ValueError(f"the in-degree artifact's bound {degree_bound} is not the plan's {ledger.degree_bound}")
    (record,) = ledger.mechanisms
    steps, layer_clips = parts["steps"], parts["layer_clip_norms"]

    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=example_inputs,
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=fixed_size_batches(num_examples, batch_size=hp.batch_size, steps=steps, generator=generator),
        privacy=privacy_from_record(record, expected_batch_size=hp.batch_size, layer_clip_norms=layer_clips),
        ledger=ledger,
        generator=generator,
        device=device,
        predict=full_graph_predict(gnn, split, device),  # the evaluation's full-graph pass (docs/design/methods.md)
    )


def _check_artifact(bounded: Mapping[str, Any], spec: RunSpec, hp: DpGnnHparams, *, max_degree: int) -> Any:
    """The in-degree artifact's ``DegreeBound``, once checked to be bounded to the plan's public K and to state the
    plan's identity bound ⌊K/2⌋."""
    if int(bounded["bound"]) != max_degree:
        public_k = (
            f"in_degree_bound is {hp.in_degree_bound}"
            if hp.in_degree_bound
            else f"{spec.dataset}'s public in-degree bound is K={max_degree}"
        )
        raise ValueError(
            f"{public_k} but the in-degree artifact was bounded to K={int(bounded['bound'])}; "
            f"build it with `bound-degree --bound {max_degree}` (the workflow does)"
        )
    degree_bound = degree_bound_of(bounded)
    if degree_bound.identity_bound != max_degree // 2:  # the plan's (Algorithm 1 keeps every edge up to ⌊K/2⌋)
        raise ValueError(
            f"the in-degree artifact states identity bound {degree_bound.identity_bound}, the plan "
            f"{max_degree // 2} for K={max_degree}; rebuild it with `bound-degree`"
        )
    return degree_bound


def _training_subgraphs(bounded: Mapping[str, Any], inputs: RunInputs, hp: DpGnnHparams, *, max_degree: int) -> Any:
    """Every training node's r-hop subgraph (Algorithms 2-3) on the in-degree-bounded edges.

    Algorithm 1 bounds in-degrees (how many subgraphs a node joins); padding every subgraph to N(K,r) nodes also
    needs its root's kept out-edges bounded to K. Dropping edges only shrinks subgraphs, so Lemma 1's occurrence
    bound still holds.
    """
    graph = inputs.graph
    kept = bound_out_degree(
        bounded["edge_index"], num_nodes=graph.num_nodes, max_degree=max_degree, seed=int(bounded["seed"])
    )
    return sample_subgraphs(
        kept,
        roots=inputs.split.train,
        num_nodes=graph.num_nodes,
        num_layers=hp.num_layers,
        max_degree=max_degree,
    )
