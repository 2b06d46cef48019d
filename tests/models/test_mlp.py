from __future__ import annotations

import pytest
import torch
from torch import nn

from nodedp.models import MLP


def test_one_layer_is_a_linear_model() -> None:
    model = MLP(4, 32, 3, num_layers=1, dropout=0.5, activation="tanh", normalization="layer")
    assert [type(m) for m in model.modules() if not isinstance(m, (MLP, nn.Sequential))] == [nn.Linear]
    x1, x2 = torch.randn(5, 4), torch.randn(5, 4)
    zero = model(torch.zeros(5, 4))
    torch.testing.assert_close(model(x1 + x2), model(x1) + model(x2) - zero)  # affine


@pytest.mark.parametrize("num_layers", [2, 3])
def test_layer_widths_and_output_shape(num_layers: int) -> None:
    model = MLP(7, 16, 3, num_layers=num_layers)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == ([(7, 16)] + [(16, 16)] * (num_layers - 2) + [(16, 3)])
    assert model(torch.randn(10, 7)).shape == (10, 3)


@pytest.mark.parametrize(("name", "kind"), [("relu", nn.ReLU), ("selu", nn.SELU), ("tanh", nn.Tanh)])
def test_activation(name: str, kind: type[nn.Module]) -> None:
    model = MLP(4, 8, 2, num_layers=3, activation=name)
    assert sum(isinstance(m, kind) for m in model.modules()) == 2


def test_normalizations_normalize_each_example() -> None:
    torch.manual_seed(0)
    for normalization, kind in [("group", nn.GroupNorm), ("layer", nn.LayerNorm)]:
        model = MLP(4, 8, 2, normalization=normalization)
        norm = next(m for m in model.modules() if isinstance(m, kind))
        hidden = norm(model.layers[0](torch.randn(6, 4) * 100))
        torch.testing.assert_close(hidden.mean(1), torch.zeros(6), atol=1e-5, rtol=0)
        assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def test_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    model = MLP(4, 64, 2, dropout=0.5)
    x = torch.randn(3, 4)
    assert not torch.equal(model(x), model(x))
    model.eval()
    assert torch.equal(model(x), model(x))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"activation": "gelu"}, "relu"),
        ({"normalization": "batch"}, "group"),
        ({"num_layers": 0}, "num_layers"),
        ({"dropout": 1.0}, "dropout"),
    ],
)
def test_invalid_choices_name_the_valid_ones(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MLP(4, 8, 2, **kwargs)
