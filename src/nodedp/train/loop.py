"""The one training loop: DP-SGD / DP-Adam, or plain minibatch training.

A private step adds one Gaussian draw N(0, σ²) to the sum of per-example gradients clipped to C (or, layer-wise, to
C_l with C = √(Σ C_l²)), divides by the expected batch size and steps the optimizer. σ is absolute and calibrated
by the caller (``nodedp.accounting``); nothing here accounts privacy. Design: docs/design/engine.md.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from nodedp.mechanisms.clipping import clip_factors
from nodedp.mechanisms.noise import gaussian_noise_
from nodedp.mechanisms.trace import new_source, note_draw
from nodedp.train.per_sample import PerSampleGradients, split_flat, trainable_layer_names
from nodedp.train.stages import stage

__all__ = ["LOSSES", "OptimConfig", "PrivacyConfig", "TrainStats", "build_optimizer", "total_clip_norm", "train_model"]

# Relative tolerance between clip_norm and √(Σ C_l²): rounding, not a different bound.
_CLIP_RTOL = 1e-9


def total_clip_norm(layer_clip_norms: Mapping[str, float]) -> float:
    """C = √(Σ C_l²): the bound on an example's whole gradient after clipping each layer l to C_l."""
    return math.sqrt(math.fsum(c * c for c in layer_clip_norms.values()))


@dataclass(frozen=True)
class PrivacyConfig:
    """DP-SGD parameters of a run; ``privacy=None`` means non-private training."""

    clip_norm: float  # C: bound on the ℓ2 norm of each example's whole clipped gradient
    noise_std: float  # absolute std of the Gaussian added to the SUM of clipped gradients
    expected_batch_size: float  # the noisy sum is divided by this, never by the realised size
    # Layer-wise thresholds {layer name: C_l} (see trainable_layer_names), or None
    # to clip the whole gradient to C. When given, clip_norm must be √(Σ C_l²).
    layer_clip_norms: Mapping[str, float] | None = None
    # The number of steps the ledger charges; the loop refuses to end after any other number.
    steps: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.clip_norm) and self.clip_norm > 0):
            raise ValueError(f"clip_norm must be finite and > 0, got {self.clip_norm}")
        if self.layer_clip_norms is not None:
            layers = {str(k): float(v) for k, v in self.layer_clip_norms.items()}
            bad = {k: v for k, v in layers.items() if not (math.isfinite(v) and v > 0)}
            if not layers or bad:
                raise ValueError(f"layer_clip_norms must map layer names to finite thresholds > 0, got {layers}")
            total = total_clip_norm(layers)
            if not math.isclose(self.clip_norm, total, rel_tol=_CLIP_RTOL):
                raise ValueError(
                    f"clip_norm = {self.clip_norm!r} must be the total bound √(Σ C_l²) = {total!r} "
                    "of the layer-wise thresholds (the sensitivity the noise is calibrated to)"
                )
            object.__setattr__(self, "layer_clip_norms", MappingProxyType(layers))
        if not (math.isfinite(self.noise_std) and self.noise_std >= 0):
            raise ValueError(f"noise_std must be finite and >= 0, got {self.noise_std}")
        if not (math.isfinite(self.expected_batch_size) and self.expected_batch_size > 0):
            raise ValueError(f"expected_batch_size must be finite and > 0, got {self.expected_batch_size}")
        if self.steps is not None and (
            isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1
        ):
            raise ValueError(f"steps must be None or an integer >= 1, got {self.steps!r}")


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
    clipped_fraction: float | None  # share of examples clipped (any layer, if layer-wise); None if non-private
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


# (outputs, targets) -> per-example loss [B]
LossFn = Callable[[Tensor, Tensor], Tensor]
# name -> per-example loss
LOSSES: dict[str, LossFn] = {"cross_entropy": _cross_entropy}


# Adds every example's clipped gradient of a batch (inputs, targets) into each trainable parameter's view.
ClippedSum = Callable[[Any, Tensor, Mapping[nn.Parameter, Tensor]], None]


_COUNT_EVERY = 64


def _count_over(norms: list[Tensor], bound: float) -> Tensor:
    """How many of the norms exceed ``bound``; empties the list."""
    count = torch.cat(norms).gt_(bound).sum()
    norms.clear()
    return count


def train_model(
    model: nn.Module,
    *,
    batch_fn: Callable[[Tensor], tuple[Any, Tensor]],
    batches: Iterable[Tensor],
    optim: OptimConfig,
    privacy: PrivacyConfig | None,
    generator: torch.Generator,
    device: torch.device | str,
    loss: str = "cross_entropy",
    progress: bool | str = False,
    on_step: Callable[[int], None] | None = None,
    clipped_sum: ClippedSum | None = None,
) -> TrainStats:
    """Train ``model`` in place, one optimizer step per batch of example indices.

    ``batch_fn(indices)`` returns (inputs, targets) of those examples, dim 0
    indexing examples, on ``device``; it is not called for an empty batch.
    Noise is drawn from ``generator`` (put it on ``device`` to avoid a copy per
    step); other randomness (dropout) comes from torch's global RNG, see
    ``seed_everything``. ``on_step(step)`` runs after each optimizer step,
    while ``p.grad`` still holds the (privatized) gradient that was applied
    (private runs reuse its memory at the next step: copy what you keep).
    ``progress`` shows a tqdm bar on stderr, a string naming it, as long as
    ``batches`` (a sampler's ``Batches`` says how many steps it holds).

    ``clipped_sum(inputs, targets, grads)`` replaces the generic per-example
    rule of a private step for a model whose per-example gradients it can take
    more cheaply (DPDGC's table over all N nodes, whose batch touches few
    columns): it adds every example's gradient, clipped to ``privacy.clip_norm``,
    into ``grads`` (each trainable parameter's view of the flat buffer). The
    noise, division and step stay this loop's.

    The clipped fraction and losses in the returned stats are computed on
    private data without noise: diagnostics, not DP releases.
    """
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose from {sorted(LOSSES)}")
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    optimizer = build_optimizer(params, optim)
    if clipped_sum is not None and (privacy is None or privacy.layer_clip_norms is not None):
        raise ValueError(
            "clipped_sum serves private steps that clip each example's whole gradient "
            "(privacy given, layer_clip_norms None)"
        )
    step: _PlainStep | _PrivateStep = (
        _PlainStep(model, optimizer, LOSSES[loss])
        if privacy is None
        else _PrivateStep(model, params, privacy, generator, device, loss=loss, clipped_sum=clipped_sum)
    )
    bar = tqdm(
        batches,
        desc=progress if isinstance(progress, str) else None,
        disable=not progress,
        file=sys.stderr,
    )
    tally = _Tally()
    with stage("training"):  # for a StageRecorder (benchmarks/scaling.py); nothing otherwise
        start = time.perf_counter()
        try:
            for indices in bar:
                size = indices.numel()
                tally.record(step(indices, batch_fn), size)
                if privacy is not None or size > 0:
                    optimizer.step()
                if on_step is not None:
                    on_step(tally.steps - 1)
        finally:
            bar.close()
            step.close()
    return _finish(step, tally, privacy, device, start)


@dataclass
class _Tally:
    """What the loop counts: steps taken, examples seen, the last non-empty batch's per-example losses."""

    steps: int = 0
    examples: int = 0
    last_losses: Tensor | None = None

    def record(self, losses: Tensor | None, size: int) -> None:
        if losses is not None:
            self.last_losses = losses.detach()
        self.steps += 1
        self.examples += size


class _PlainStep:
    """A non-private step's gradient: the mean loss of the batch, backpropagated (the caller steps)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: LossFn) -> None:
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn

    def __call__(self, indices: Tensor, batch_fn: Callable[[Tensor], tuple[Any, Tensor]]) -> Tensor | None:
        self.optimizer.zero_grad(set_to_none=True)
        if indices.numel() == 0:
            return None
        inputs, targets = batch_fn(indices)
        losses = self.loss_fn(self.model(inputs), targets)
        losses.mean().backward()
        return losses

    def close(self) -> None:
        pass


class _PrivateStep:
    """A DP-SGD step's gradient: fresh Gaussian noise plus the clipped sum of the batch's per-example gradients,
    divided by the expected batch size, written into the p.grad (views of one flat buffer for the whole run)."""

    def __init__(
        self,
        model: nn.Module,
        params: list[nn.Parameter],
        privacy: PrivacyConfig,
        generator: torch.Generator,
        device: torch.device | str,
        *,
        loss: str,
        clipped_sum: ClippedSum | None,
    ) -> None:
        self.privacy, self.generator, self.params = privacy, generator, params
        self.trace_source = new_source()  # this stage's draws, in a noise trace (nodedp.mechanisms.trace)
        self.loss, self.loss_fn, self.clipped_sum = loss, LOSSES[loss], clipped_sum
        self.per_sample = PerSampleGradients(model) if clipped_sum is None else None
        self.layer_clips = privacy.layer_clip_norms
        if self.layer_clips is not None:
            layers = trainable_layer_names(model)
            if set(self.layer_clips) != set(layers):
                self.close()
                raise ValueError(
                    f"layer_clip_norms must name exactly the model's trainable layers {layers}; "
                    f"got {sorted(self.layer_clips)}"
                )
        self.model = model
        # The concatenated gradient, one buffer for the whole run: each step overwrites it with
        # fresh noise, adds the clipped sum and divides; the p.grad are views of it.
        self.noisy = params[0].new_empty(sum(p.numel() for p in params))
        self.grads = split_flat(self.noisy, params) if clipped_sum is not None else None
        if self.grads is not None:
            for p, grad in self.grads.items():
                p.grad = grad
        self.clipped = torch.zeros((), device=device)
        # Whole-gradient norms of recent steps, counted against C every _COUNT_EVERY steps (three ops a step saved).
        self.pending_norms: list[Tensor] = []

    def __call__(self, indices: Tensor, batch_fn: Callable[[Tensor], tuple[Any, Tensor]]) -> Tensor | None:
        # The Gaussian mechanism on the whole gradient vector: one draw over
        # all coordinates (sensitivity C), never per-tensor budgets. With
        # layer-wise thresholds C is √(Σ C_l²): noise per tensor at its own C_l,
        # as in the public DP-GNN reference code, under-noises by √(#tensors).
        # No zero_grad: every p.grad is set below, to its view of the buffer.
        std = self.privacy.noise_std
        note_draw("dp-sgd", self.trace_source, std=std, clip_norm=self.privacy.clip_norm)
        gaussian_noise_(self.noisy, std=std, generator=self.generator)
        losses: Tensor | None = None
        if indices.numel() > 0 and self.clipped_sum is not None:
            assert self.grads is not None
            self.clipped_sum(*batch_fn(indices), self.grads)
        elif indices.numel() > 0:
            losses = self._add_clipped_sum(*batch_fn(indices))
        else:  # empty Poisson batch: the clipped sum is zero, the noise is not
            for p, grad in split_flat(self.noisy, self.params).items():
                p.grad = grad
        self.noisy.div_(self.privacy.expected_batch_size)  # the gradients are views of it
        return losses

    def _add_clipped_sum(self, inputs: Any, targets: Tensor) -> Tensor:
        """Per-example gradients of the batch, clipped, summed onto the noise; returns the per-example losses."""
        per_sample = self.per_sample
        assert per_sample is not None
        # A Linear–activation chain (an MLP) needs no hooks or autograd: the same tensors, cheaper.
        losses = per_sample.chain_backward(inputs, targets) if self.loss == "cross_entropy" else None
        if losses is None:
            with per_sample.capture():
                out = self.model(inputs)
            losses = self.loss_fn(out, targets)
            per_sample.backward(losses)
        per_sample.write_clipped_sum(self._clip_factors(per_sample), onto=self.noisy)
        return losses

    def _clip_factors(self, per_sample: PerSampleGradients) -> Tensor | dict[str, Tensor]:
        """Each example's clipping factor (one per layer with layer-wise thresholds), counting who is clipped."""
        if self.layer_clips is None:
            norms = per_sample.norms()
            self.pending_norms.append(norms)
            if len(self.pending_norms) == _COUNT_EVERY:
                self.clipped += _count_over(self.pending_norms, self.privacy.clip_norm)
            return clip_factors(norms, max_norm=self.privacy.clip_norm)
        clips = self.layer_clips
        layer_norms = per_sample.layer_norms()
        self.clipped += torch.stack([n > clips[name] for name, n in layer_norms.items()]).any(0).sum()
        return {name: clip_factors(n, max_norm=clips[name]) for name, n in layer_norms.items()}

    def clipped_count(self) -> Tensor:
        """How many examples so far had a gradient over its threshold (a diagnostic on private data)."""
        if self.pending_norms:
            self.clipped += _count_over(self.pending_norms, self.privacy.clip_norm)
        return self.clipped

    def close(self) -> None:
        if self.per_sample is not None:
            self.per_sample.remove()


def _finish(
    step: _PlainStep | _PrivateStep,
    tally: _Tally,
    privacy: PrivacyConfig | None,
    device: torch.device | str,
    start: float,
) -> TrainStats:
    """Check the step count the ledger charges, stop the clock (after the GPU's work) and report."""
    clipped = step.clipped_count() if isinstance(step, _PrivateStep) else None
    if privacy is not None and privacy.steps is not None and tally.steps != privacy.steps:
        raise RuntimeError(
            f"DP-SGD took {tally.steps} steps, but the ledger charges {privacy.steps}: "
            "the guarantee does not cover this run"
        )
    if torch.device(device).type == "cuda":  # time the work, not its launch
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    examples = tally.examples
    return TrainStats(
        steps=tally.steps,
        examples_seen=examples,
        seconds=seconds,
        clipped_fraction=None if clipped is None else (clipped.item() / examples if examples else 0.0),
        final_loss=tally.last_losses.mean().item() if tally.last_losses is not None else math.nan,
        noise_std=privacy.noise_std if privacy is not None else 0.0,
    )
