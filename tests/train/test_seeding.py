from __future__ import annotations

import random

import numpy as np
import torch

from nodedp.train import make_generator, resolve_device, seed_everything


def test_seed_everything_fixes_every_global_rng_and_returns_a_seeded_generator():
    def draws():
        gen = seed_everything(7)
        return random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen).item()

    first, second = draws(), draws()
    assert first == second
    seed_everything(8)
    assert random.random() != first[0]


def test_make_generator_is_deterministic_per_seed():
    a = torch.randn(5, generator=make_generator(3))
    b = torch.randn(5, generator=make_generator(3))
    c = torch.randn(5, generator=make_generator(4))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
