"""A plain multi-layer perceptron (no privacy logic)."""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["MLP", "layer_widths"]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "selu": nn.SELU, "tanh": nn.Tanh}
_NORMALIZATIONS = (None, "group", "layer")


def _normalization(kind: str | None, width: int) -> list[nn.Module]:
    if kind is None:
        return []
    if kind == "group":
        # One group, as ProGAP's node-level setting (BatchNorm would mix examples).
        return [nn.GroupNorm(1, width)]
    return [nn.LayerNorm(width)]


def layer_widths(in_dim: int, hidden_dim: int, out_dim: int, *, num_layers: int, dropout: float) -> list[int]:
    """The widths in_dim, hidden_dim, ..., out_dim of ``num_layers`` linear layers; refuses fewer than one layer
    and a dropout rate outside [0, 1)."""
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    return [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]


class MLP(nn.Module):
    """``num_layers`` linear layers; each hidden one is followed by normalization, activation, dropout.

    ``num_layers=1`` is a linear model. Inputs are [N, in_dim] (``"layer"``
    normalization also accepts [N, ..., in_dim]).
    """

    def __init__(
        self,
        in_dim: int,
        hidden_dim: int,
        out_dim: int,
        *,
        num_layers: int = 2,
        dropout: float = 0.0,
        activation: str = "relu",
        normalization: str | None = None,
    ) -> None:
        super().__init__()
        widths = layer_widths(in_dim, hidden_dim, out_dim, num_layers=num_layers, dropout=dropout)
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(_ACTIVATIONS)}")
        if normalization not in _NORMALIZATIONS:
            raise ValueError(f"unknown normalization {normalization!r}; choose from {list(_NORMALIZATIONS)}")
        layers: list[nn.Module] = []
        for i in range(num_layers):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i < num_layers - 1:
                layers += _normalization(normalization, hidden_dim)
                layers.append(_ACTIVATIONS[activation]())
                if dropout > 0:
                    layers.append(nn.Dropout(dropout))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x)

    def as_sequential(self) -> nn.Sequential:
        """The layers whose application in order is ``forward``: a DP-SGD step may read them as a chain
        (``nodedp.train.linear_chain``). A subclass whose forward does more must not offer this."""
        return self.layers
