"""`gcn`: the non-private GCN reference (full batch; inductive splits drop cross-split edges)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from nodedp.accounting import Ledger
from nodedp.data import remove_cross_split_edges
from nodedp.methods.base import MethodInfo, OptimHparams, RunInputs, RunResult, RunSpec
from nodedp.methods.registry import register_method
from nodedp.models import GCN, NodeReadout
from nodedp.train import evaluate, resolve_device, seed_everything, train_model

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
    y = graph.y.to(device)
    edges = graph.edge_index
    if split.setting == "inductive":  # train, val and test nodes each see only their own part
        edges = remove_cross_split_edges(edges, split)
    gnn = GCN(graph.num_features, hp.hidden_dim, inputs.num_classes, num_layers=hp.num_layers, dropout=hp.dropout)
    model = NodeReadout(gnn, graph.x, edges).to(device)
    train_nodes = split.train.to(device)

    def batch_fn(idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        nodes = train_nodes[idx.to(device)]
        return nodes, y[nodes]

    everything = torch.arange(train_nodes.numel())
    start = time.perf_counter()
    stats = train_model(
        model,
        batch_fn=batch_fn,
        batches=(everything for _ in range(hp.epochs)),  # full batch, one step per epoch
        optim=hp.optim_config(),
        privacy=None,
        generator=generator,
        device=device,
        progress=spec.progress and f"{spec.method} {spec.dataset}",
        total=hp.epochs,
    )
    train_seconds = time.perf_counter() - start
    model.eval()
    val, test = split.val.to(device), split.test.to(device)
    return RunResult(
        val=evaluate(model, val, y[val]),
        test=evaluate(model, test, y[test]),
        ledger=Ledger.non_private(),
        train_seconds=train_seconds,
        details={"steps": stats.steps},
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
