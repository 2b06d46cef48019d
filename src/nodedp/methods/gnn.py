"""`gcn`, `gin`, `gat`, `sage`: the non-private twins of DP-GNN.

The same model as `dp-<layer>` (encoder MLP, r GNN layers, decoder MLP; GCN with DP-GNN's (D+I)^-1(A+I)
normalisation), trained non-privately and full batch on the whole graph, as the DP-GNN paper's non-private
baselines. Inductive splits drop the cross-split edges. `predict` (`full_graph_predict`, shared with DP-GNN) is the
evaluation's forward pass on another graph: message passing over that graph's own edges, unbounded, cross-part
edges (of the split given with it) dropped as evaluation drops them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from nodedp.accounting import Ledger
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.gnn import GnnHparams
from nodedp.data import Split, remove_cross_split_edges
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.train import full_batches, resolve_device, seed_everything

if TYPE_CHECKING:
    from torch_geometric.data import Data


def full_graph_predict(gnn: SubgraphGNN, split: Split, device: torch.device) -> Callable[..., Tensor]:
    """``RunResult.predict`` of a ``GraphReadout`` model: logits of every node of another graph, read as the
    evaluation reads the training graph (``forward_full`` over all its edges, no degree bounding).

    Only ``gnn``'s trained weights and the run's split are kept: never the training graph's features or edges
    (the ``GraphReadout`` buffers). With an inductive split, ``remove_cross_split_edges`` drops every cross-part
    edge of the given graph, its parts given by ``predict``'s ``split`` (default: the run's, on which appended
    nodes lie in no part, so all their edges go and each is scored on its own features).
    """

    def predict(graph: Data, parts: Split | None = None) -> Tensor:
        parts = split if parts is None else parts
        edges = graph.edge_index
        if parts.setting == "inductive":
            edges = remove_cross_split_edges(edges.cpu(), parts)
        return gnn.forward_full(graph.x.to(device), edges.to(device))

    return predict


def run_gnn(
    inputs: RunInputs,
    spec: RunSpec,
    hp: GnnHparams,
    *,
    layer: str,
    edges: Callable[[torch.Generator], Tensor] | None = None,
    ledger: Ledger | None = None,
) -> RunResult:
    """Full-batch training on the graph's edges, or on ``edges(generator)`` (a privatized
    adjacency, e.g. EdgeRand's) with that mechanism's ``ledger``."""
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    # On a released adjacency (EdgeRand) inference reads that release, not a given graph's raw edges: no predict.
    released = edges is not None
    read = graph.edge_index if edges is None else edges(generator)
    if split.setting == "inductive":  # train, val and test nodes each see only their own part
        read = remove_cross_split_edges(read, split)
    gnn = SubgraphGNN(graph.num_features, hp.hidden_dim, inputs.num_classes, layer=layer, num_layers=hp.num_layers)
    model = GraphReadout(gnn, graph.x, read).to(device)
    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,  # the model reads the whole graph and returns these rows
        y=graph.y.to(device),
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=full_batches(split.train.numel(), epochs=hp.epochs),  # one step per epoch
        privacy=None,
        ledger=Ledger.non_private() if ledger is None else ledger,
        generator=generator,
        device=device,
        predict=None if released else full_graph_predict(gnn, split, device),
    )
