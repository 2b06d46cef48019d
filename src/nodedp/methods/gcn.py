"""`gcn`: the non-private GCN reference (full-batch, transductive)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from nodedp.accounting import Ledger
from nodedp.methods.base import MethodInfo, RunInputs, RunResult, RunSpec
from nodedp.methods.registry import register_method
from nodedp.models.gcn import GCN, NodeReadout
from nodedp.train import OptimConfig, evaluate, resolve_device, seed_everything, train_model

OPTIMIZERS = ("adam", "sgd", "adamw")


@dataclass(frozen=True)
class GcnHparams:
    hidden_dim: int = 64
    num_layers: int = 2
    dropout: float = 0.5
    epochs: int = 100
    lr: float = 0.01
    optimizer: str = "adam"
    weight_decay: float = 5e-4

    def check(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer {self.optimizer!r} not in {list(OPTIMIZERS)}")
        if min(self.hidden_dim, self.num_layers, self.epochs) < 1:
            raise ValueError("hidden_dim, num_layers and epochs must be ≥ 1")
        if not (self.lr > 0 and 0 <= self.dropout < 1 and self.weight_decay >= 0):
            raise ValueError("need lr > 0, 0 ≤ dropout < 1, weight_decay ≥ 0")


def run_gcn(inputs: RunInputs, spec: RunSpec, hp: GcnHparams) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    y = graph.y.to(device)
    gnn = GCN(graph.num_features, hp.hidden_dim, inputs.num_classes, num_layers=hp.num_layers, dropout=hp.dropout)
    model = NodeReadout(gnn, graph.x, graph.edge_index).to(device)
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
        optim=OptimConfig(optimizer=hp.optimizer, lr=hp.lr, weight_decay=hp.weight_decay),
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
