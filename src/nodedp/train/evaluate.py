"""The one evaluator: accuracy, macro-F1 and the number of classes predicted, from logits; and the
majority-class reference a model has to beat."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def metrics_from_logits(logits: Tensor, y: Tensor) -> dict[str, float | int]:
    """Accuracy, macro-F1 and ``predicted_classes`` (how many distinct classes the argmax predictions use; 1:
    a constant predictor, whatever its accuracy) of argmax predictions.

    Macro-F1 averages the per-class F1 over the classes present in ``y`` or in
    the predictions (sklearn's default ``labels``).
    """
    if logits.dim() != 2 or y.shape != logits.shape[:1]:
        raise ValueError(f"need logits [N, C] and y [N], got {tuple(logits.shape)} and {tuple(y.shape)}")
    if y.numel() == 0:
        raise ValueError("cannot compute metrics of zero examples")
    pred = logits.argmax(dim=1)
    y = y.to(pred.device)
    classes = torch.unique(torch.cat([y, pred]))
    is_pred = pred.unsqueeze(0) == classes.unsqueeze(1)  # [K, N]
    is_true = y.unsqueeze(0) == classes.unsqueeze(1)
    tp = (is_pred & is_true).sum(1)
    # 2tp / (2tp + fp + fn), where 2tp + fp + fn = #predicted + #true > 0 for present classes.
    f1 = 2 * tp / (is_pred.sum(1) + is_true.sum(1))
    return {
        "accuracy": (pred == y).double().mean().item(),
        "macro_f1": f1.double().mean().item(),
        "predicted_classes": int(torch.unique(pred).numel()),
    }


def majority_class_accuracy(train_labels: Tensor, labels: Tensor) -> float:
    """Accuracy on ``labels`` of always predicting the most frequent class of ``train_labels`` (the smallest
    class id among ties): the constant predictor a model has to beat. It reads labels only (the evaluator's,
    not a private release), so it is a non-private reference line."""
    if train_labels.numel() == 0 or labels.numel() == 0:
        raise ValueError("the majority class needs training labels and labels to score")
    if int(train_labels.min()) < 0:
        raise ValueError("training labels must be class ids >= 0")
    majority = torch.bincount(train_labels.reshape(-1)).argmax()
    return (labels == majority.to(labels.device)).double().mean().item()


def _chunks(inputs: Tensor | tuple[Tensor, ...], batch_size: int | None) -> list[Tensor | tuple[Tensor, ...]]:
    if isinstance(inputs, Tensor):
        return list(inputs.split(batch_size)) if batch_size else [inputs]
    # A tuple of per-example tensors (dim 0 indexes examples): chunk them together.
    if not batch_size:
        return [inputs]
    return list(zip(*(t.split(batch_size) for t in inputs)))


def _to(chunk: Tensor | tuple[Tensor, ...], device: torch.device) -> Tensor | tuple[Tensor, ...]:
    return chunk.to(device) if isinstance(chunk, Tensor) else tuple(t.to(device) for t in chunk)


@torch.no_grad()
def evaluate(
    model: nn.Module, inputs: Tensor | tuple[Tensor, ...], targets: Tensor, *, batch_size: int | None = None
) -> dict[str, float | int]:
    """Metrics of ``model`` in eval mode, on chunks of ``batch_size`` moved to the model's device.

    ``inputs`` is a tensor or a tuple of tensors (the model's one argument), dim 0 indexing examples.
    """
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        logits = torch.cat([model(_to(chunk, device)) for chunk in _chunks(inputs, batch_size)])
    finally:
        model.train(was_training)
    return metrics_from_logits(logits, targets)
