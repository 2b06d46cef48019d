"""Train a node classifier through the one training loop and evaluate it: what every method ends with."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, cast

import torch
from torch import Tensor, nn

from nodedp.accounting import Ledger
from nodedp.contract.base import RunResult, RunSpec
from nodedp.data import Split
from nodedp.train import OptimConfig, PrivacyConfig, evaluate, metrics_from_logits, train_model
from nodedp.train.evaluate import majority_class_accuracy
from nodedp.train.stages import stage

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

__all__ = ["TrainHooks", "fit_node_classifier"]

Scores = dict[str, float | int | None]


class TrainHooks(TypedDict, total=False):
    """Where a method's training examples or inference differ from the plain case (each optional, None = plain).

    ``example_inputs(example_idx)``: the model's inputs for a batch of training examples, where they differ from
    inference (DP-GNN's sampled subgraphs against the full neighbourhood); default ``inputs_of(nodes)``.
    ``logits_of(node_ids)``: inference that is not one forward pass (DPAR's power iteration), called after
    training with the model in eval mode. ``example_nodes``: the nodes whose labels the examples carry (default:
    the split's training nodes; DPAR trains on a node sample of them). ``train_labels``: the labels training
    reads (default ``y``; NIP-GNN's randomized ones). ``predict(graph, split=None)``: the trained model's logits
    for every node of another graph (the audit's; ``RunResult.predict``), run in eval mode without gradients.
    """

    example_inputs: Callable[[Tensor], Any] | None
    logits_of: Callable[[Tensor], Tensor] | None
    example_nodes: Tensor | None
    train_labels: Tensor | None
    predict: Callable[..., Tensor] | None


def fit_node_classifier(
    model: nn.Module,
    *,
    inputs_of: Callable[[Tensor], Any],
    y: Tensor,
    split: Split,
    spec: RunSpec,
    optim: OptimConfig,
    batches: Iterable[Tensor],
    privacy: PrivacyConfig | None,
    ledger: Ledger,
    generator: torch.Generator,
    device: torch.device,
    **hooks: Unpack[TrainHooks],
) -> RunResult:
    """Train ``model`` on the split's training nodes and score it on validation and test.

    `batches` index the examples (the training nodes, or ``hooks["example_nodes"]``); `inputs_of(node_ids)`
    gives the model's inputs for those nodes, for training and for validation and test, unless ``hooks``
    (:class:`TrainHooks`) say otherwise. Validation and test always score against `y`, each beside the accuracy of
    always predicting the training nodes' most frequent class in `y` (``majority_accuracy``, a non-private
    reference line) and the number of classes predicted (``predicted_classes``)."""
    # A misspelt hook would be ignored without a word (and, say, train on the true labels instead of released ones).
    unknown = sorted(set(hooks) - set(TrainHooks.__annotations__))
    if unknown:
        raise TypeError(f"fit_node_classifier: unknown hook(s) {unknown}; valid: {sorted(TrainHooks.__annotations__)}")
    batch_fn = _example_batches(inputs_of, y, split, device, hooks)
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
    )
    train_seconds = time.perf_counter() - start
    model.eval()
    predict = hooks.get("predict")
    with stage("evaluation"):
        val, test = (_scores(model, nodes, inputs_of, y, split, device, hooks) for nodes in (split.val, split.test))
    return RunResult(
        val=val,
        test=cast(Mapping[str, float], test),  # the test part is never empty: no None among its scores
        ledger=ledger,
        train_seconds=train_seconds,
        details={"steps": stats.steps, "noise_std": stats.noise_std},
        predict=None if predict is None else torch.no_grad()(predict),
    )


def _example_batches(
    inputs_of: Callable[[Tensor], Any], y: Tensor, split: Split, device: torch.device, hooks: TrainHooks
) -> Callable[[Tensor], tuple[Any, Tensor]]:
    """``batch_fn(example_idx)`` for ``train_model``: the examples' inputs and the labels training reads."""
    example_nodes, example_inputs = hooks.get("example_nodes"), hooks.get("example_inputs")
    train_labels = hooks.get("train_labels")
    train_nodes = (split.train if example_nodes is None else example_nodes).to(device)

    def batch_fn(idx: Tensor) -> tuple[Any, Tensor]:
        idx = idx.to(device)
        nodes = train_nodes[idx]
        labels = y if train_labels is None else train_labels
        return (example_inputs(idx) if example_inputs is not None else inputs_of(nodes)), labels[nodes]

    return batch_fn


def _scores(
    model: nn.Module,
    nodes: Tensor,
    inputs_of: Callable[[Tensor], Any],
    y: Tensor,
    split: Split,
    device: torch.device,
    hooks: TrainHooks,
) -> Scores:
    """Accuracy, macro-F1, classes predicted and the majority-class reference of the trained model on ``nodes``."""
    if nodes.numel() == 0:  # e.g. DPAR's 80/20 protocol has no validation part
        return {"accuracy": None, "macro_f1": None, "predicted_classes": None, "majority_accuracy": None}
    train_labels_true = y[split.train.to(y.device)]
    nodes = nodes.to(device)
    logits_of = hooks.get("logits_of")
    metrics = (
        metrics_from_logits(logits_of(nodes), y[nodes])
        if logits_of is not None
        else evaluate(model, inputs_of(nodes), y[nodes])
    )
    return {**metrics, "majority_accuracy": majority_class_accuracy(train_labels_true, y[nodes])}
