"""Train a node classifier through the one training loop and evaluate it: what every method ends with."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

from nodedp.accounting import Ledger
from nodedp.data import Split
from nodedp.methods.base import RunResult, RunSpec
from nodedp.train import OptimConfig, PrivacyConfig, evaluate, metrics_from_logits, train_model
from nodedp.train.evaluate import majority_class_accuracy
from nodedp.train.stages import stage


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
    example_inputs: Callable[[Tensor], Any] | None = None,
    logits_of: Callable[[Tensor], Tensor] | None = None,
    example_nodes: Tensor | None = None,
    train_labels: Tensor | None = None,
    predict: Callable[[Any], Tensor] | None = None,
) -> RunResult:
    """Examples are the split's training nodes: `batches` index them, `inputs_of(node_ids)`
    gives the model's inputs for those nodes, for training and for validation and test.
    Methods whose training examples differ from inference (DP-GNN's sampled subgraphs
    against the full neighbourhood) pass `example_inputs(example_idx)` for training, and
    methods whose inference is not one forward pass (DPAR's power iteration) pass
    `logits_of(node_ids)`, called after training with the model in eval mode.
    `example_nodes` are the nodes whose labels the examples carry (default: the
    split's training nodes; DPAR trains on a node sample of them), and `train_labels`
    the labels training reads (default `y`; NIP-GNN's randomized ones), while
    validation and test always score against `y`, each beside the accuracy of always predicting the training
    nodes' most frequent class in `y` (``majority_accuracy``, a non-private reference line) and the number of
    classes predicted (``predicted_classes``). `predict(graph, split=None)`: the trained model's logits for
    every node of another graph (the audit's; ``RunResult.predict``), run in eval mode without gradients."""
    train_nodes = (split.train if example_nodes is None else example_nodes).to(device)

    def batch_fn(idx: Tensor) -> tuple[Any, Tensor]:
        idx = idx.to(device)
        nodes = train_nodes[idx]
        labels = y if train_labels is None else train_labels
        return (example_inputs(idx) if example_inputs is not None else inputs_of(nodes)), labels[nodes]

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

    train_labels_true = y[split.train.to(y.device)]

    def scores(nodes: Tensor) -> dict[str, float | int | None]:
        if nodes.numel() == 0:  # e.g. DPAR's 80/20 protocol has no validation part
            return {"accuracy": None, "macro_f1": None, "predicted_classes": None, "majority_accuracy": None}
        nodes = nodes.to(device)
        metrics = (
            metrics_from_logits(logits_of(nodes), y[nodes])
            if logits_of is not None
            else evaluate(model, inputs_of(nodes), y[nodes])
        )
        return {**metrics, "majority_accuracy": majority_class_accuracy(train_labels_true, y[nodes])}

    with stage("evaluation"):
        val, test = scores(split.val), scores(split.test)
    return RunResult(
        val=val,
        test=test,
        ledger=ledger,
        train_seconds=train_seconds,
        details={"steps": stats.steps, "noise_std": stats.noise_std},
        predict=None if predict is None else torch.no_grad()(predict),
    )
