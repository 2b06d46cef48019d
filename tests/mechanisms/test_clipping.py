from __future__ import annotations

import pytest
import torch

from nodedp.mechanisms import clip_factors, clip_rows


def test_clip_factors_scale_norms_to_at_most_c() -> None:
    norms = torch.tensor([0.0, 0.5, 1.0, 3.0, 1e6])
    factors = clip_factors(norms, max_norm=1.0)
    assert torch.all(norms * factors <= 1.0)
    assert factors[:2].tolist() == [1.0, 1.0]  # below C: unchanged (and finite at 0)
    assert factors[3].item() == pytest.approx(1 / 3)
    assert (norms[4] * factors[4]).item() == pytest.approx(1.0)


def test_clip_rows_bounds_every_row_and_keeps_direction() -> None:
    x = torch.randn(20, 7, generator=torch.Generator().manual_seed(0)) * torch.linspace(0.01, 5, 20)[:, None]
    clipped = clip_rows(x, max_norm=2.0)
    norms, new_norms = x.norm(dim=1), clipped.norm(dim=1)
    assert torch.all(new_norms <= 2.0)
    small = norms <= 2.0
    assert torch.equal(clipped[small], x[small])
    torch.testing.assert_close(new_norms[~small], torch.full_like(new_norms[~small], 2.0))
    cosine = torch.nn.functional.cosine_similarity(clipped, x, dim=1)
    torch.testing.assert_close(cosine, torch.ones(20))


def test_clip_rows_uses_last_dimension() -> None:
    x = torch.full((2, 3, 4), 10.0)
    assert torch.allclose(clip_rows(x, max_norm=1.0).norm(dim=-1), torch.ones(2, 3))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_invalid_max_norm(bad: float) -> None:
    with pytest.raises(ValueError, match="max_norm"):
        clip_factors(torch.ones(2), max_norm=bad)
