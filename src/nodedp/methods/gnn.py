"""`gcn`, `gin`, `gat`, `sage`: the non-private twins of DP-GNN.

The same model as `dp-<layer>` (encoder MLP, r GNN layers, decoder MLP;
GCN with DP-GNN's (D+I)^-1(A+I) normalisation), trained non-privately and full
batch on the whole graph, as the DP-GNN paper's non-private baselines.
Inductive splits drop the cross-split edges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from nodedp.accounting import Ledger
from nodedp.data import remove_cross_split_edges
from nodedp.methods.base import MethodInfo, OptimHparams, RunInputs, RunResult, RunSpec
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.registry import register_method
from nodedp.models import LAYERS, GraphReadout, SubgraphGNN
from nodedp.train import resolve_device, seed_everything


@dataclass(frozen=True)
class GnnHparams(OptimHparams):
    weight_decay: float = 5e-4
    hidden_dim: int = 64
    num_layers: int = 1  # r, as the DP-GNN paper's 1-layer transductive models

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.num_layers) < 1:
            raise ValueError("hidden_dim and num_layers must be ≥ 1")


def run_gnn(inputs: RunInputs, spec: RunSpec, hp: GnnHparams, *, layer: str,
            edges: Callable[[torch.Generator], Tensor] | None = None, ledger: Ledger | None = None) -> RunResult:
    """Full-batch training on the graph's edges, or on ``edges(generator)`` (a privatized
    adjacency, e.g. EdgeRand's) with that mechanism's ``ledger``."""
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    edges = graph.edge_index if edges is None else edges(generator)
    if split.setting == "inductive":  # train, val and test nodes each see only their own part
        edges = remove_cross_split_edges(edges, split)
    gnn = SubgraphGNN(graph.num_features, hp.hidden_dim, inputs.num_classes, layer=layer, num_layers=hp.num_layers)
    model = GraphReadout(gnn, graph.x, edges).to(device)
    everything = torch.arange(split.train.numel())
    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,  # the model reads the whole graph and returns these rows
        y=graph.y.to(device),
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=(everything for _ in range(hp.epochs)),  # full batch, one step per epoch
        total=hp.epochs,
        privacy=None,
        ledger=Ledger.non_private() if ledger is None else ledger,
        generator=generator,
        device=device,
    )


for _layer in LAYERS:
    register_method(
        MethodInfo(
            name=_layer,
            description=f"non-private {_layer.upper()} (DP-GNN's model, full batch on the whole graph)",
            private=False,
            level="none",
            hparams=GnnHparams,
            run=lambda inputs, spec, hp, _l=_layer: run_gnn(inputs, spec, hp, layer=_l),
        )
    )
