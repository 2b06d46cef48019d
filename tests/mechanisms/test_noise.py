from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from nodedp.mechanisms import gaussian_noise_like, laplace_noise


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_gaussian_matches_normal_distribution() -> None:
    t = torch.empty(50_000, dtype=torch.float64)
    noise = gaussian_noise_like(t, std=2.5, generator=_gen())
    assert noise.shape == t.shape and noise.dtype == t.dtype
    assert stats.kstest(noise.numpy(), stats.norm(scale=2.5).cdf).pvalue > 1e-3
    assert noise.std().item() == pytest.approx(2.5, rel=0.02)


def test_gaussian_keeps_shape_and_is_reproducible() -> None:
    t = torch.zeros(3, 4, 5)
    a = gaussian_noise_like(t, std=1.0, generator=_gen(7))
    assert a.shape == (3, 4, 5)
    assert torch.equal(a, gaussian_noise_like(t, std=1.0, generator=_gen(7)))
    assert not torch.equal(a, gaussian_noise_like(t, std=1.0, generator=_gen(8)))


def test_gaussian_zero_std_is_zero() -> None:
    assert torch.count_nonzero(gaussian_noise_like(torch.ones(10), std=0.0, generator=_gen())) == 0


def test_laplace_matches_laplace_distribution() -> None:
    noise = laplace_noise((50_000,), scale=1.5, generator=_gen(), dtype=torch.float64)
    assert noise.shape == (50_000,) and noise.dtype == torch.float64
    assert stats.kstest(noise.numpy(), stats.laplace(scale=1.5).cdf).pvalue > 1e-3
    assert noise.abs().mean().item() == pytest.approx(1.5, rel=0.02)  # E|X| = scale
    assert torch.isfinite(noise).all()


def test_laplace_reproducible_from_generator() -> None:
    a = laplace_noise((4, 3), scale=1.0, generator=_gen(3))
    assert a.shape == (4, 3)
    assert torch.equal(a, laplace_noise((4, 3), scale=1.0, generator=_gen(3)))
    assert not torch.equal(a, laplace_noise((4, 3), scale=1.0, generator=_gen(4)))


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_invalid_scales_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="std"):
        gaussian_noise_like(torch.zeros(2), std=bad, generator=_gen())
    with pytest.raises(ValueError, match="scale"):
        laplace_noise((2,), scale=bad, generator=_gen())


def test_gaussian_in_place_draws_what_gaussian_noise_like_returns() -> None:
    from nodedp.mechanisms.noise import gaussian_noise_

    for target in (torch.empty(7, 5), torch.empty(5, 7).t()):  # contiguous, and not (drawn then copied in)
        expected = gaussian_noise_like(target, std=0.7, generator=torch.Generator().manual_seed(3))
        out = gaussian_noise_(target, std=0.7, generator=torch.Generator().manual_seed(3))
        assert out is target and torch.equal(target, expected)
    with pytest.raises(ValueError):
        gaussian_noise_(torch.empty(3), std=-1.0, generator=torch.Generator())
