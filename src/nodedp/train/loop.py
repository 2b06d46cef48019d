"""The one training loop: DP-SGD / DP-Adam, or plain minibatch training.

A private step is the Gaussian mechanism on the sum of per-example clipped
gradients: clip every example's whole gradient (all trainable parameters) to
ℓ2 ≤ C, sum, add N(0, σ²) to every coordinate of the concatenated gradient,
divide by the *expected* batch size, and hand the result to the optimizer
(post-processing). σ is absolute (noise multiplier × sensitivity): the caller
calibrates it with ``nodedp.accounting``; nothing here accounts privacy.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from nodedp.mechanisms.clipping import clip_factors
from nodedp.mechanisms.noise import gaussian_noise_like
from nodedp.train.per_sample import PerSampleGradients, split_flat

__all__ = ["OptimConfig", "PrivacyConfig", "TrainStats", "train_model", "build_optimizer"]


@dataclass(frozen=True)
class PrivacyConfig:
    """DP-SGD parameters of a run; ``privacy=None`` means non-private training."""

    clip_norm: float  # C: each example's whole gradient is clipped to ℓ2 ≤ C
    noise_std: float  # absolute std of the Gaussian added to the SUM of clipped gradients
    expected_batch_size: float  # the noisy sum is divided by this, never by the realised size

    def __post_init__(self) -> None:
        if not (math.isfinite(self.clip_norm) and self.clip_norm > 0):
            raise ValueError(f"clip_norm must be finite and > 0, got {self.clip_norm}")
        if not (math.isfinite(self.noise_std) and self.noise_std >= 0):
            raise ValueError(f"noise_std must be finite and >= 0, got {self.noise_std}")
        if not (math.isfinite(self.expected_batch_size) and self.expected_batch_size > 0):
            raise ValueError(f"expected_batch_size must be finite and > 0, got {self.expected_batch_size}")


_OPTIMIZERS = ("sgd", "adam", "adamw")


@dataclass(frozen=True)
class OptimConfig:
    optimizer: str  # "sgd" | "adam" | "adamw"
    lr: float
    weight_decay: float = 0.0
    momentum: float = 0.0  # SGD only

    def __post_init__(self) -> None:
        if self.optimizer not in _OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose from {list(_OPTIMIZERS)}")
        if not self.lr >= 0:
            raise ValueError(f"lr must be >= 0, got {self.lr}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.momentum != 0 and self.optimizer != "sgd":
            raise ValueError(f"momentum applies to 'sgd' only, got {self.momentum} with {self.optimizer!r}")


@dataclass(frozen=True)
class TrainStats:
    steps: int
    examples_seen: int  # sum of realised batch sizes
    seconds: float
    clipped_fraction: float | None  # share of examples whose gradient norm exceeded C; None if non-private
    final_loss: float  # mean per-example loss of the last non-empty batch (nan if none)
    noise_std: float  # std of the Gaussian added to each gradient-sum coordinate (0 if non-private)


def build_optimizer(params: Iterable[nn.Parameter], config: OptimConfig) -> torch.optim.Optimizer:
    params = list(params)
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)


def _cross_entropy(out: Tensor, y: Tensor) -> Tensor:
    return F.cross_entropy(out, y, reduction="none")


# name -> per-example loss [B]
_LOSSES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {"cross_entropy": _cross_entropy}


def train_model(
    model: nn.Module,
    *,
    batch_fn: Callable[[Tensor], tuple[Tensor, Tensor]],
    batches: Iterable[Tensor],
    optim: OptimConfig,
    privacy: PrivacyConfig | None,
    generator: torch.Generator,
    device: torch.device | str,
    loss: str = "cross_entropy",
    progress: bool | str = False,
    total: int | None = None,
    on_step: Callable[[int], None] | None = None,
) -> TrainStats:
    """Train ``model`` in place, one optimizer step per batch of example indices.

    ``batch_fn(indices)`` returns (inputs, targets) of those examples, dim 0
    indexing examples, on ``device``; it is not called for an empty batch.
    Noise is drawn from ``generator`` (put it on ``device`` to avoid a copy per
    step); other randomness (dropout) comes from torch's global RNG, see
    ``seed_everything``. ``on_step(step)`` runs after each optimizer step,
    while ``p.grad`` still holds the (privatized) gradient that was applied.
    ``progress`` shows a tqdm bar on stderr, a string naming it; ``total`` is
    its length when ``batches`` has none.

    The clipped fraction and losses in the returned stats are computed on
    private data without noise: diagnostics, not DP releases.
    """
    if loss not in _LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose from {sorted(_LOSSES)}")
    loss_fn = _LOSSES[loss]
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    optimizer = build_optimizer(params, optim)
    per_sample = PerSampleGradients(model) if privacy is not None else None
    noise_shape = params[0].new_empty(sum(p.numel() for p in params))  # the concatenated gradient

    steps = examples = 0
    clipped = torch.zeros((), device=device)
    last_losses: Tensor | None = None
    bar = tqdm(batches, total=total, desc=progress if isinstance(progress, str) else None,
               disable=not progress, file=sys.stderr)
    start = time.perf_counter()
    try:
        for indices in bar:
            optimizer.zero_grad(set_to_none=True)
            size = indices.numel()
            losses: Tensor | None = None
            if per_sample is None:
                if size > 0:
                    inputs, targets = batch_fn(indices)
                    losses = loss_fn(model(inputs), targets)
                    losses.mean().backward()
            else:
                # The Gaussian mechanism on the whole gradient vector: one draw over
                # all coordinates (sensitivity C), never per-tensor budgets.
                noisy = gaussian_noise_like(noise_shape, std=privacy.noise_std, generator=generator)
                if size > 0:
                    inputs, targets = batch_fn(indices)
                    with per_sample.capture():
                        out = model(inputs)
                    losses = loss_fn(out, targets)
                    per_sample.backward(losses)
                    norms = per_sample.norms()
                    clipped += (norms > privacy.clip_norm).sum()
                    per_sample.write_clipped_sum(clip_factors(norms, max_norm=privacy.clip_norm), onto=noisy)
                else:  # empty Poisson batch: the clipped sum is zero, the noise is not
                    for p, grad in split_flat(noisy, params).items():
                        p.grad = grad
                noisy.div_(privacy.expected_batch_size)  # the gradients are views of it
            if losses is not None:
                last_losses = losses.detach()
            if per_sample is not None or size > 0:
                optimizer.step()
            steps += 1
            examples += size
            if on_step is not None:
                on_step(steps - 1)
    finally:
        bar.close()
        if per_sample is not None:
            per_sample.remove()
    if torch.device(device).type == "cuda":  # time the work, not its launch
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    return TrainStats(
        steps=steps,
        examples_seen=examples,
        seconds=seconds,
        clipped_fraction=(clipped.item() / examples if examples else 0.0) if privacy is not None else None,
        final_loss=last_losses.mean().item() if last_losses is not None else math.nan,
        noise_std=privacy.noise_std if privacy is not None else 0.0,
    )
