from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import MLP
from nodedp.train import percentile_clip_norms


def _setup() -> tuple[nn.Module, Tensor, Tensor]:
    torch.manual_seed(0)
    model = MLP(4, 6, 3).double()
    x = torch.randn(20, 4, dtype=torch.float64)
    return model, x, torch.randint(0, 3, (20,))


def _brute_force_norms(model: nn.Module, x: Tensor, y: Tensor, idx: Tensor) -> dict[str, np.ndarray]:
    """{layer name: per-example gradient norms} and "" for the whole gradient, one backward per example."""
    layers = {name: m for name, m in model.named_modules() if next(m.parameters(recurse=False), None) is not None}
    rows: dict[str, list[float]] = {name: [] for name in ["", *layers]}
    for i in idx.tolist():
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for name, module in layers.items():
            rows[name].append(torch.cat([p.grad.flatten() for p in module.parameters(recurse=False)]).norm().item())
        rows[""].append(torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item())
    model.zero_grad(set_to_none=True)
    return {name: np.array(v) for name, v in rows.items()}


@pytest.mark.parametrize("percentile", [75.0, 50.0, 100.0])
def test_percentile_equals_numpy_on_brute_force_norms(percentile: float) -> None:
    model, x, y = _setup()
    idx = torch.tensor([3, 0, 7, 11, 19, 5, 2])
    expected = _brute_force_norms(model, x, y, idx)
    flat = percentile_clip_norms(model, lambda i: (x[i], y[i]), idx, percentile=percentile, layerwise=False)
    assert flat == pytest.approx(np.percentile(expected[""], percentile), rel=1e-9)
    layers = percentile_clip_norms(model, lambda i: (x[i], y[i]), idx, percentile=percentile, layerwise=True)
    assert list(layers) == ["layers.0", "layers.2"]
    for name, value in layers.items():
        assert value == pytest.approx(np.percentile(expected[name], percentile), rel=1e-9)


def test_leaves_the_model_untouched() -> None:
    model, x, y = _setup()
    model.eval()
    before = [p.detach().clone() for p in model.parameters()]
    percentile_clip_norms(model, lambda i: (x[i], y[i]), torch.arange(5), percentile=75, layerwise=True)
    assert not model.training and not model._forward_hooks and not model.layers[0]._forward_hooks
    assert all(p.grad is None and p.requires_grad for p in model.parameters())
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def test_invalid_arguments() -> None:
    model, x, y = _setup()
    with pytest.raises(ValueError, match=r"percentile must be in \(0, 100\]"):
        percentile_clip_norms(model, lambda i: (x[i], y[i]), torch.arange(5), percentile=0, layerwise=False)
    with pytest.raises(ValueError, match="at least one example"):
        percentile_clip_norms(model, lambda i: (x[i], y[i]), torch.arange(0), percentile=75, layerwise=False)
    model.layers[2].weight.data.zero_()  # no gradient flows back to layers.0
    with pytest.raises(ValueError, match=r"is 0 for \['layers.0'\]"):
        percentile_clip_norms(model, lambda i: (x[i], y[i]), torch.arange(5), percentile=75, layerwise=True)
