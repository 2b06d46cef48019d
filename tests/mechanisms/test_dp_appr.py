from __future__ import annotations

import math

import pytest
import torch

from nodedp.accounting import dp_appr_em_records, dp_appr_gm_record
from nodedp.mechanisms import (
    cap_row_occurrences,
    clip_appr_entries,
    clip_appr_rows,
    clip_columns_l1,
    dp_appr_em,
    dp_appr_gm,
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _appr(m: int, n: int, *, seed: int) -> torch.Tensor:
    """Sparse-ish non-negative rows with distinct values, like APPR vectors."""
    g = _gen(seed)
    values = torch.rand(m, n, generator=g)
    return values * (torch.rand(m, n, generator=g) < 0.3)


@pytest.mark.parametrize("option", ["em0", "em1"])
def test_em_rows_have_exactly_k_nonzeros(option: str) -> None:
    appr = _appr(50, 40, seed=0)
    eps_value = 1.0 if option == "em1" else None
    out = dp_appr_em(appr, k=5, epsilon=0.5, clip=0.1, option=option, generator=_gen(1), epsilon_value=eps_value)
    assert out.shape == appr.shape and out.dtype == appr.dtype
    assert ((out != 0).sum(dim=1) == 5).all()


def test_em0_values_are_one_over_k() -> None:
    out = dp_appr_em(_appr(20, 30, seed=2), k=4, epsilon=1.0, clip=0.1, option="em0", generator=_gen(3))
    assert torch.allclose(out[out != 0], torch.full(((out != 0).sum().item(),), 0.25))


def test_em_with_huge_epsilon_selects_the_true_topk_and_em1_values_are_near_the_clipped_ones() -> None:
    appr = torch.rand(30, 25, generator=_gen(4)) * 0.09  # below C2, so no clipping ties
    out = dp_appr_em(appr, k=3, epsilon=1e7, clip=0.1, option="em1", generator=_gen(5), epsilon_value=1e7)
    true = appr.topk(3, dim=1).indices.sort(dim=1).values
    chosen = (out != 0).nonzero()[:, 1].view(30, 3).sort(dim=1).values
    assert torch.equal(chosen, true)
    assert torch.allclose(out.gather(1, true), appr.gather(1, true), atol=1e-4)


def test_em_with_tiny_epsilon_selects_near_uniformly() -> None:
    appr = torch.zeros(20000, 5)
    appr[:, 0] = 1.0  # a clear winner that tiny ε must not reveal
    out = dp_appr_em(appr, k=1, epsilon=1e-4, clip=1.0, option="em0", generator=_gen(6))
    freq = (out != 0).double().mean(dim=0)
    assert torch.allclose(freq, torch.full((5,), 0.2, dtype=torch.float64), atol=0.015)


def test_em_gumbel_scale_gives_the_exponential_mechanism_probabilities() -> None:
    """With Gumbel(C2/ε), top-1 picks j with probability ∝ exp(ε·score_j/C2) (a factor-2 error would show)."""
    clip, epsilon = 0.5, 2.0
    appr = torch.tensor([[0.0, 0.25, 0.5]]).repeat(40000, 1)
    out = dp_appr_em(appr, k=1, epsilon=epsilon, clip=clip, option="em0", generator=_gen(7))
    freq = (out != 0).double().mean(dim=0)
    expected = torch.softmax(epsilon * appr[0].double() / clip, dim=0)
    assert torch.allclose(freq, expected, atol=0.01)


def test_em1_laplace_scale_matches_the_ledger_record() -> None:
    k, clip, eps_value = 2, 0.2, 0.8
    appr = torch.rand(3000, 10, generator=_gen(8)) * 0.3
    out = dp_appr_em(appr, k=k, epsilon=1.0, clip=clip, option="em1", generator=_gen(9), epsilon_value=eps_value)
    noise = (out - clip_appr_entries(appr, clip=clip))[out != 0]
    (_, values) = dp_appr_em_records(option="em1", epsilon=1.0, k=k, m=3000, clip=clip, epsilon_value=eps_value)
    scale = values.dp_event.event.noise_multiplier * values.sensitivity
    assert math.isclose(scale, k * clip / eps_value)
    # E|Laplace(b)| = b; 6000 samples give ~1.3% standard error.
    assert math.isclose(noise.abs().mean().item(), scale, rel_tol=0.06)
    assert abs(noise.mean().item()) < 0.06 * scale


def test_gm_rows_have_k_nonzeros_and_tiny_noise_keeps_the_true_topk() -> None:
    appr = _appr(40, 30, seed=10) + torch.rand(40, 30, generator=_gen(11)) * 1e-3
    out = dp_appr_gm(appr, k=4, noise_multiplier=1e-7, clip=0.5, generator=_gen(12))
    assert ((out != 0).sum(dim=1) == 4).all()
    clipped = clip_appr_rows(appr, clip=0.5)
    true = clipped.topk(4, dim=1).indices
    assert torch.allclose(out.gather(1, true), clipped.gather(1, true), atol=1e-5)


def test_gm_noise_std_matches_the_ledger_record() -> None:
    clip, z, n = 0.4, 0.7, 20
    appr = torch.rand(1000, n, generator=_gen(13))
    out = dp_appr_gm(appr, k=n, noise_multiplier=z, clip=clip, generator=_gen(14))  # k = N keeps every entry
    noise = out - clip_appr_rows(appr, clip=clip)
    record = dp_appr_gm_record(noise_multiplier=z, k=n, m=1000, clip=clip)
    std = record.dp_event.event.noise_multiplier * record.sensitivity
    assert math.isclose(std, z * math.sqrt(2) * clip)
    assert math.isclose(noise.std().item(), std, rel_tol=0.03)


def test_clipped_scores_move_at_most_c2_and_rows_at_most_sqrt2_c1_on_neighbours() -> None:
    """A node change can rewrite a row arbitrarily (entries in [0, 1]); clipping bounds what moves."""
    g = _gen(15)
    c1, c2 = 0.3, 0.05
    for _ in range(200):
        a = torch.rand(1, 50, generator=g) * (torch.rand(1, 50, generator=g) < 0.5)
        b = torch.rand(1, 50, generator=g) * (torch.rand(1, 50, generator=g) < 0.5)
        em_a, em_b = clip_appr_entries(a, clip=c2), clip_appr_entries(b, clip=c2)
        assert (em_a - em_b).abs().max() <= c2
        gm_a, gm_b = clip_appr_rows(a, clip=c1), clip_appr_rows(b, clip=c1)
        assert torch.linalg.vector_norm(gm_a) <= c1 * (1 + 1e-6)
        assert torch.linalg.vector_norm(gm_a - gm_b) <= math.sqrt(2) * c1 * (1 + 1e-6)
    # Disjoint supports reach √2·C1: C1 alone (the paper's sensitivity) would be exceeded.
    a, b = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    gap = torch.linalg.vector_norm(clip_appr_rows(a, clip=c1) - clip_appr_rows(b, clip=c1)).item()
    assert math.isclose(gap, math.sqrt(2) * c1, rel_tol=1e-6)


def test_negative_inputs_are_clamped_so_the_sensitivity_holds() -> None:
    a = torch.tensor([[-5.0, 0.5, 3.0]])
    assert clip_appr_entries(a, clip=1.0).tolist() == [[0.0, 0.5, 1.0]]
    assert (clip_appr_rows(a, clip=1.0) >= 0).all()


def test_cap_row_occurrences_holds_and_only_drops_entries() -> None:
    rows = dp_appr_em(_appr(60, 12, seed=16), k=4, epsilon=1.0, clip=0.1, option="em0", generator=_gen(17))
    capped = cap_row_occurrences(rows, max_rows=5, generator=_gen(18))
    counts_before, counts_after = (rows != 0).sum(dim=0), (capped != 0).sum(dim=0)
    assert (counts_before > 5).any()  # the cap has work to do
    assert torch.equal(counts_after, counts_before.clamp(max=5))
    kept = capped != 0
    assert torch.equal(capped[kept], rows[kept])
    under = counts_before <= 5
    assert torch.equal(capped[:, under], rows[:, under])


def test_cap_row_occurrences_drops_uniformly_at_random() -> None:
    rows = torch.ones(6, 1)
    kept = sum(cap_row_occurrences(rows, max_rows=2, generator=_gen(s)) for s in range(3000)) / 3000
    assert torch.allclose(kept, torch.full((6, 1), 2 / 6), atol=0.04)


def test_clip_columns_l1_bounds_every_column_and_keeps_small_ones() -> None:
    rows = torch.randn(30, 8, generator=_gen(19))
    rows[:, 0] *= 1e-3  # already within τ
    columns = torch.arange(8).repeat(30, 1)
    out = clip_columns_l1(columns, rows, num_columns=8, tau=2.0)
    assert (out.abs().sum(dim=0) <= 2.0 * (1 + 1e-6)).all()
    assert torch.equal(out[:, 0], rows[:, 0])
    assert torch.allclose(out.abs().sum(dim=0)[1:], torch.tensor(2.0))  # the others were over τ: now at it
    # row-wise sparse form: 2 entries per row of a 30 × 8 matrix, the same as its dense column sums
    cols = torch.randint(0, 8, (30, 2), generator=_gen(20))
    cols[:, 1] = (cols[:, 0] + 1) % 8
    vals = torch.rand(30, 2, generator=_gen(21))
    dense = torch.zeros(30, 8).scatter_(1, cols, vals)
    factors = (dense.abs().sum(0) / 0.5).clamp(min=1.0)
    assert torch.allclose(clip_columns_l1(cols, vals, num_columns=8, tau=0.5), vals / factors[cols])
    big = rows.abs().sum(dim=0) > 2.0
    assert torch.allclose(out.abs().sum(dim=0)[big], torch.full((int(big.sum()),), 2.0))
    # scaling, not truncation: each column keeps its direction
    assert torch.allclose(out / out.norm(dim=0), rows / rows.norm(dim=0), atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"option": "em2"}, "valid choices"),
        ({"option": "em1"}, "epsilon_value"),
        ({"option": "em0", "epsilon_value": 1.0}, "no epsilon_value"),
        ({"option": "em0", "k": 0}, "k must be"),
        ({"option": "em0", "epsilon": 0.0}, "epsilon must be"),
    ],
)
def test_em_refuses_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"k": 2, "epsilon": 1.0, "clip": 0.1, "generator": _gen(0)} | kwargs
    with pytest.raises(ValueError, match=match):
        dp_appr_em(torch.rand(3, 4), **args)
