"""`gcn`: the non-private GCN reference (full batch; inductive splits drop cross-split edges)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nodedp.accounting import Ledger
from nodedp.data import remove_cross_split_edges
from nodedp.methods.base import MethodInfo, OptimHparams, RunInputs, RunResult, RunSpec
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.registry import register_method
from nodedp.models import GCN, NodeReadout
from nodedp.train import resolve_device, seed_everything


@dataclass(frozen=True)
class GcnHparams(OptimHparams):
    weight_decay: float = 5e-4
    hidden_dim: int = 64
    num_layers: int = 2
    dropout: float = 0.5

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.num_layers) < 1:
            raise ValueError("hidden_dim and num_layers must be ≥ 1")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 ≤ dropout < 1, got {self.dropout}")


def run_gcn(inputs: RunInputs, spec: RunSpec, hp: GcnHparams) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    edges = graph.edge_index
    if split.setting == "inductive":  # train, val and test nodes each see only their own part
        edges = remove_cross_split_edges(edges, split)
    gnn = GCN(graph.num_features, hp.hidden_dim, inputs.num_classes, num_layers=hp.num_layers, dropout=hp.dropout)
    model = NodeReadout(gnn, graph.x, edges).to(device)
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
        ledger=Ledger.non_private(),
        generator=generator,
        device=device,
    )


register_method(
    MethodInfo(
        name="gcn",
        description="non-private 2-layer GCN on the full graph (transductive reference)",
        private=False,
        level="none",
        hparams=GcnHparams,
        run=run_gcn,
    )
)
