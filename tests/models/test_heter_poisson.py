"""HeterPoisson's G_net: the spec's block, padding that changes nothing, and per-example gradients in the one loop."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from nodedp.models.heter_poisson import GNet, GNetBlock


def _batch(b: int = 4, s: int = 5, f: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, s, f, generator=g)
    mask = torch.ones(b, s, dtype=torch.bool)
    mask[1, 3:] = False  # a subgraph of 3 members
    mask[2, 1:] = False  # an isolated root
    x = x * mask[..., None]
    return x, torch.zeros(b, s, s), mask


def _spec_block(block: GNetBlock, x, mask):
    """The spec's block for one subgraph of real rows x [n, F], written out as it reads."""
    a = x.sum(0) / x.size(0)
    z = F.elu(a)
    a = F.elu((z - z.mean()) / (z.std() + 1e-6))
    a = block.post_process(a)
    residual = (
        F.pad(x, (0, block.hidden_dim - block.in_dim)) if block.hidden_dim > block.in_dim else block.post_process(x)
    )
    return F.elu(a + residual)


@pytest.mark.parametrize("hidden", [8, 2])  # H > F: zero-padded residual; H ≤ F: W on every row
def test_a_block_is_the_spec_s_on_each_subgraph_s_real_rows(hidden):
    torch.manual_seed(0)
    x, _, mask = _batch()
    block = GNetBlock(3, hidden)
    out = block(x, mask)
    for i in range(x.size(0)):
        real = mask[i]
        torch.testing.assert_close(out[i, real], _spec_block(block, x[i, real], mask[i, real]))
        assert torch.all(out[i, ~real] == 0)


def test_padding_changes_no_root_s_logits():
    torch.manual_seed(1)
    model = GNet(3, 8, 4, num_blocks=2)
    x, adj, mask = _batch()
    wide_x = torch.cat([x, torch.randn(4, 3, 3)], dim=1)  # garbage in the padding columns
    wide_mask = torch.cat([mask, torch.zeros(4, 3, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(model((x, adj, mask)), model((wide_x, torch.zeros(4, 8, 8), wide_mask)))


def test_g_net_trains_privately_through_the_one_loop():
    from nodedp.train import OptimConfig, PrivacyConfig, train_model

    torch.manual_seed(2)
    model = GNet(3, 8, 2)
    x, adj, mask = _batch(b=16)
    y = torch.randint(2, (16,))
    before = [p.detach().clone() for p in model.parameters()]
    stats = train_model(
        model,
        batch_fn=lambda idx: ((x[idx], adj[idx], mask[idx]), y[idx]),
        batches=[torch.arange(16), torch.arange(8)],
        optim=OptimConfig(optimizer="adam", lr=0.01),
        privacy=PrivacyConfig(clip_norm=0.5, noise_std=1.0, expected_batch_size=12.0),
        generator=torch.Generator().manual_seed(0),
        device="cpu",
    )
    assert stats.steps == 2 and stats.noise_std == 1.0
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="num_blocks"):
        GNet(3, 8, 2, num_blocks=0)
    with pytest.raises(ValueError, match="hidden_dim"):
        GNetBlock(3, 0)
