"""Batch samplers. Which one a method uses is what its privacy accountant must assume.

Each returns its ``Batches``: LongTensors of example indices, drawn on the generator's device as they are
iterated, and their number (``len``), so that the loop and its progress bar know the steps without being told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor


class Batches:
    """A sampler's steps: iterating draws the batches (from the sampler's generator, in order); ``len`` is how
    many there are, known before any is drawn."""

    def __init__(self, steps: int, draw: Callable[[], Iterator[Tensor]]) -> None:
        self._steps, self._draw = steps, draw

    def __len__(self) -> int:
        return self._steps

    def __iter__(self) -> Iterator[Tensor]:
        return self._draw()


def _check_count(name: str, value: int, *, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def poisson_batches(num_examples: int, *, sampling_rate: float, steps: int, generator: torch.Generator) -> Batches:
    """Each step includes every example independently with probability ``sampling_rate``.

    Batches can be empty; the training loop still adds noise for them.
    """
    _check_count("num_examples", num_examples, minimum=0)
    _check_count("steps", steps, minimum=0)
    if not 0.0 < sampling_rate <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")

    def draw() -> Iterator[Tensor]:
        for _ in range(steps):
            draws = torch.rand(num_examples, generator=generator, device=generator.device)
            yield torch.nonzero(draws < sampling_rate).squeeze(1)

    return Batches(steps, draw)


def fixed_size_batches(num_examples: int, *, batch_size: int, steps: int, generator: torch.Generator) -> Batches:
    """Each step draws exactly ``batch_size`` distinct examples uniformly (without replacement)."""
    _check_count("steps", steps, minimum=0)
    _check_count("batch_size", batch_size, minimum=1)
    if batch_size > num_examples:
        raise ValueError(f"batch_size {batch_size} exceeds num_examples {num_examples}")

    def draw() -> Iterator[Tensor]:
        for _ in range(steps):
            yield torch.randperm(num_examples, generator=generator, device=generator.device)[:batch_size]

    return Batches(steps, draw)


def shuffled_epochs(num_examples: int, *, batch_size: int, epochs: int, generator: torch.Generator) -> Batches:
    """Plain minibatching: each epoch visits every example once in a fresh random order."""
    _check_count("num_examples", num_examples, minimum=1)
    _check_count("batch_size", batch_size, minimum=1)
    _check_count("epochs", epochs, minimum=0)

    def draw() -> Iterator[Tensor]:
        for _ in range(epochs):
            order = torch.randperm(num_examples, generator=generator, device=generator.device)
            yield from order.split(batch_size)

    return Batches(epochs * -(-num_examples // batch_size), draw)


def full_batches(num_examples: int, *, epochs: int, device: torch.device | str | None = None) -> Batches:
    """Full-batch training: every example at every one of ``epochs`` steps (no randomness)."""
    _check_count("epochs", epochs, minimum=0)
    everything = torch.arange(num_examples, device=device)
    return Batches(epochs, lambda: (everything for _ in range(epochs)))
