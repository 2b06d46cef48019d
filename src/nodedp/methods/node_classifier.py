"""Train a node classifier through the one training loop and evaluate it: what every method ends with."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn

from nodedp.accounting import Ledger
from nodedp.data import Split
from nodedp.methods.base import RunResult, RunSpec
from nodedp.train import OptimConfig, PrivacyConfig, evaluate, train_model


def fit_node_classifier(
    model: nn.Module,
    *,
    inputs_of: Callable[[Tensor], Tensor],
    y: Tensor,
    split: Split,
    spec: RunSpec,
    optim: OptimConfig,
    batches: Iterable[Tensor],
    total: int,
    privacy: PrivacyConfig | None,
    ledger: Ledger,
    generator: torch.Generator,
    device: torch.device,
) -> RunResult:
    """Examples are the split's training nodes: `batches` index them, `inputs_of(node_ids)`
    gives the model's inputs for those nodes. Validation and test use the same mapping."""
    train_nodes = split.train.to(device)

    def batch_fn(idx: Tensor) -> tuple[Tensor, Tensor]:
        nodes = train_nodes[idx.to(device)]
        return inputs_of(nodes), y[nodes]

    start = time.perf_counter()
    stats = train_model(
        model,
        batch_fn=batch_fn,
        batches=batches,
        optim=optim,
        privacy=privacy,
        generator=generator,
        device=device,
        progress=spec.progress and f"{spec.method} {spec.dataset}",
        total=total,
    )
    train_seconds = time.perf_counter() - start
    model.eval()

    def scores(nodes: Tensor) -> dict[str, float | None]:
        if nodes.numel() == 0:  # e.g. DPAR's 80/20 protocol has no validation part
            return {"accuracy": None, "macro_f1": None}
        nodes = nodes.to(device)
        return evaluate(model, inputs_of(nodes), y[nodes])

    return RunResult(
        val=scores(split.val),
        test=scores(split.test),
        ledger=ledger,
        train_seconds=train_seconds,
        details={"steps": stats.steps, "noise_std": stats.noise_std},
    )
