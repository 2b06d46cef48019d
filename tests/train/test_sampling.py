from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch

from nodedp.train import (
    fixed_size_batches,
    full_batches,
    make_generator,
    poisson_batches,
    shuffled_epochs,
)


def test_poisson_inclusion_rate_is_q_for_every_example() -> None:
    n, q, steps = 200, 0.2, 500
    counts = torch.zeros(n)
    for batch in poisson_batches(n, sampling_rate=q, steps=steps, generator=make_generator(0)):
        assert batch.dtype == torch.long
        assert torch.equal(batch, torch.unique(batch))  # distinct, sorted
        counts[batch] += 1
    rates = counts / steps
    assert rates.mean().item() == pytest.approx(q, abs=0.005)
    # Binomial(500, 0.2) per example: sd of a rate ≈ 0.018; 6 sd leaves no room for bias.
    assert (rates - q).abs().max().item() < 0.11


def test_poisson_batches_can_be_empty() -> None:
    batches = list(poisson_batches(3, sampling_rate=0.01, steps=50, generator=make_generator(0)))
    assert len(batches) == 50
    assert any(b.numel() == 0 for b in batches)
    assert all(b.dtype == torch.long for b in batches)


def test_fixed_size_batches_are_exact_distinct_and_uniform() -> None:
    n, m, steps = 50, 10, 1000
    counts = torch.zeros(n)
    for batch in fixed_size_batches(n, batch_size=m, steps=steps, generator=make_generator(1)):
        assert batch.numel() == m and torch.unique(batch).numel() == m
        assert batch.min() >= 0 and batch.max() < n
        counts[batch] += 1
    assert (counts / steps - m / n).abs().max().item() < 0.06  # sd ≈ 0.013


def test_shuffled_epochs_visit_every_example_once_per_epoch() -> None:
    batches = list(shuffled_epochs(10, batch_size=4, epochs=3, generator=make_generator(2)))
    assert [b.numel() for b in batches] == [4, 4, 2] * 3
    for epoch in range(3):
        seen = torch.cat(batches[3 * epoch : 3 * epoch + 3])
        assert torch.equal(seen.sort().values, torch.arange(10))
    assert not torch.equal(torch.cat(batches[:3]), torch.cat(batches[3:6]))  # reshuffled


@pytest.mark.parametrize(
    "sample",
    [
        lambda g: poisson_batches(100, sampling_rate=0.3, steps=5, generator=g),
        lambda g: fixed_size_batches(100, batch_size=7, steps=5, generator=g),
        lambda g: shuffled_epochs(100, batch_size=7, epochs=2, generator=g),
    ],
    ids=["poisson", "fixed", "epochs"],
)
def test_samplers_are_determined_by_the_seed(
    sample: Callable[[torch.Generator], Iterator[torch.Tensor]],
) -> None:
    first = list(sample(make_generator(5)))
    again = list(sample(make_generator(5)))
    other = list(sample(make_generator(6)))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, other))


def test_invalid_arguments_are_refused_before_any_batch_is_drawn() -> None:
    g = make_generator(0)
    with pytest.raises(ValueError, match="sampling_rate"):
        poisson_batches(10, sampling_rate=0.0, steps=1, generator=g)
    with pytest.raises(ValueError, match="exceeds"):
        fixed_size_batches(5, batch_size=6, steps=1, generator=g)
    with pytest.raises(ValueError, match="batch_size"):
        shuffled_epochs(5, batch_size=0, epochs=1, generator=g)


@pytest.mark.parametrize(
    ("sampler", "steps"),
    [
        (lambda g: poisson_batches(10, sampling_rate=0.3, steps=7, generator=g), 7),
        (lambda g: fixed_size_batches(10, batch_size=3, steps=5, generator=g), 5),
        (lambda g: shuffled_epochs(10, batch_size=3, epochs=2, generator=g), 8),  # 4 batches an epoch, the last of 1
        (lambda g: full_batches(10, epochs=3), 3),
    ],
)
def test_batches_know_their_number_before_drawing_and_draw_that_many(sampler, steps) -> None:
    g = make_generator(0)
    batches = sampler(g)
    state = g.get_state()
    assert len(batches) == steps and torch.equal(g.get_state(), state)  # counted, nothing drawn yet
    assert len(list(batches)) == steps
