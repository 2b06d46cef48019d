"""Batch samplers. Which one a method uses is what its privacy accountant must assume.

Each yields LongTensors of example indices, drawn on the generator's device.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor


def _check_count(name: str, value: int, *, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def poisson_batches(
    num_examples: int, *, sampling_rate: float, steps: int, generator: torch.Generator
) -> Iterator[Tensor]:
    """Each step includes every example independently with probability ``sampling_rate``.

    Batches can be empty; the training loop still adds noise for them.
    """
    _check_count("num_examples", num_examples, minimum=0)
    _check_count("steps", steps, minimum=0)
    if not 0.0 < sampling_rate <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")
    for _ in range(steps):
        draws = torch.rand(num_examples, generator=generator, device=generator.device)
        yield torch.nonzero(draws < sampling_rate).squeeze(1)


def fixed_size_batches(
    num_examples: int, *, batch_size: int, steps: int, generator: torch.Generator
) -> Iterator[Tensor]:
    """Each step draws exactly ``batch_size`` distinct examples uniformly (without replacement)."""
    _check_count("steps", steps, minimum=0)
    _check_count("batch_size", batch_size, minimum=1)
    if batch_size > num_examples:
        raise ValueError(f"batch_size {batch_size} exceeds num_examples {num_examples}")
    for _ in range(steps):
        yield torch.randperm(num_examples, generator=generator, device=generator.device)[:batch_size]


def shuffled_epochs(num_examples: int, *, batch_size: int, epochs: int, generator: torch.Generator) -> Iterator[Tensor]:
    """Plain minibatching: each epoch visits every example once in a fresh random order."""
    _check_count("num_examples", num_examples, minimum=1)
    _check_count("batch_size", batch_size, minimum=1)
    _check_count("epochs", epochs, minimum=0)
    for _ in range(epochs):
        order = torch.randperm(num_examples, generator=generator, device=generator.device)
        yield from order.split(batch_size)
