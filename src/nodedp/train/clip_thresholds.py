"""Clipping thresholds from a percentile of per-example gradient norms at initialization.

DP-GNN's recipe (Daigavane et al.): C, or each layer's C_l, is the given
percentile of the per-example gradient norms of the untrained model. This
reads private training data without noise, so a run using it is not fully
accounted: its ledger must record an ``UnchargedRead``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from torch import Tensor, nn

from nodedp.train.loop import LOSSES
from nodedp.train.per_sample import PerSampleGradients

__all__ = ["percentile_clip_norms"]


def percentile_clip_norms(
    model: nn.Module,
    batch_fn: Callable[[Tensor], tuple[Any, Tensor]],
    indices: Tensor,
    *,
    percentile: float,
    layerwise: bool,
    loss: str = "cross_entropy",
) -> dict[str, float] | float:
    """The ``percentile`` (in (0, 100], numpy's linear interpolation) of the examples' gradient norms.

    ``batch_fn(indices)`` gives the examples' (inputs, targets) as for ``train_model``.
    Returns {layer name: C_l} when ``layerwise`` (names as in
    ``trainable_layer_names``), else one C for the whole gradient. The
    model is used in training mode, as the loop clips it, and left unchanged
    (no parameter or ``.grad`` is written). Thresholds must be > 0: a layer
    whose gradients are all zero at initialization raises.
    """
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {percentile}")
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose from {sorted(LOSSES)}")
    if indices.numel() == 0:
        raise ValueError("need at least one example to estimate clipping thresholds")
    was_training = model.training
    model.train()
    per_sample = PerSampleGradients(model)
    try:
        inputs, targets = batch_fn(indices)
        with per_sample.capture():
            out = model(inputs)
        per_sample.backward(LOSSES[loss](out, targets))
        norms = per_sample.layer_norms() if layerwise else {"": per_sample.norms()}
    finally:
        per_sample.remove()
        model.train(was_training)
    thresholds = {
        name: float(np.percentile(n.detach().cpu().double().numpy(), percentile)) for name, n in norms.items()
    }
    zero = sorted(name or "the whole gradient" for name, c in thresholds.items() if not c > 0)
    if zero:
        raise ValueError(f"the {percentile}th percentile of gradient norms is 0 for {zero}: no usable threshold")
    return thresholds if layerwise else thresholds[""]
