"""PPRGo: weighted aggregation of MLP outputs, power iteration, per-row gradients."""

from __future__ import annotations

import pytest
import torch

from nodedp.models import PPRGo, power_iteration
from nodedp.train import PerSampleGradients


def test_forward_is_the_weighted_sum_of_the_mlp_over_each_rows_nodes() -> None:
    torch.manual_seed(0)
    model = PPRGo(5, 4, 3)
    x, w = torch.randn(6, 2, 5), torch.rand(6, 2)
    expected = torch.stack([sum(w[i, k] * model.mlp(x[i, k]) for k in range(2)) for i in range(6)])
    assert torch.allclose(model((x, w)), expected, atol=1e-6)
    with pytest.raises(ValueError, match=r"x \[B, K, F\]"):
        model((x[:, 0], w))


def test_power_iteration_matches_the_dense_recursion() -> None:
    torch.manual_seed(1)
    n, alpha = 7, 0.25
    edges = torch.tensor([[0, 1, 1, 2, 3, 4, 2, 5], [1, 0, 2, 1, 4, 3, 5, 2]])  # node 6 isolated
    h = torch.randn(n, 3)
    a = torch.zeros(n, n)
    a[edges[0], edges[1]] = 1.0
    walk = a / a.sum(1, keepdim=True).clamp(min=1)
    q = h
    for _ in range(2):
        q = (1 - alpha) * walk @ q + alpha * h
    assert torch.allclose(power_iteration(h, edges, alpha=alpha, steps=2), q, atol=1e-6)
    assert torch.allclose(power_iteration(h, edges, alpha=alpha, steps=0), h)
    assert torch.allclose(q[6], alpha * h[6])  # an isolated node keeps α·H


def test_per_row_gradient_norms_equal_a_brute_force_loop() -> None:
    torch.manual_seed(2)
    model = PPRGo(5, 4, 3)
    x, w, y = torch.randn(6, 2, 5), torch.rand(6, 2), torch.randint(0, 3, (6,))
    hooks = PerSampleGradients(model)
    with hooks.capture():
        out = model((x, w))
    hooks.backward(torch.nn.functional.cross_entropy(out, y, reduction="none"))
    norms = hooks.norms()
    hooks.remove()
    for i in range(6):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model((x[i : i + 1], w[i : i + 1])), y[i : i + 1]).backward()
        brute = torch.cat([p.grad.flatten() for p in model.parameters()]).norm()
        assert norms[i] == pytest.approx(float(brute), rel=1e-5)


def test_power_iteration_in_chunks_of_edges_equals_it_at_once(monkeypatch) -> None:
    from nodedp.mechanisms import edge_sum

    gen = torch.Generator().manual_seed(4)
    edges = torch.randint(0, 50, (2, 400), generator=gen)
    h = torch.randn(50, 3, generator=gen)
    whole = power_iteration(h, edges, alpha=0.2, steps=3)
    monkeypatch.setattr(edge_sum, "MESSAGES_PER_CHUNK", 7 * 3)  # 7 edges a chunk
    torch.testing.assert_close(power_iteration(h, edges, alpha=0.2, steps=3), whole, rtol=0, atol=1e-6)
