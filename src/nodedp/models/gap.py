"""GAP and ProGAP models: MLPs over cached (noisy) aggregations, with concatenation jumping knowledge.

No privacy logic here: the graph enters only through cached aggregations, so each node's logits read its own rows
and examples stay independent (normalization "group" or "none"; BatchNorm is refused by ``PerSampleGradients``).
Architectures: docs/design/models.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models.mlp import layer_widths

__all__ = ["NORMALIZATIONS", "GAPClassifier", "GAPEncoder", "ProGAP", "ProGAPStage", "StageMLP"]

NORMALIZATIONS = ("group", "batch", "none")


def _check_normalization(kind: str) -> None:
    if kind not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {kind!r}; choose from {list(NORMALIZATIONS)}")


def _normalization(kind: str, width: int) -> list[nn.Module]:
    if kind == "group":
        return [nn.GroupNorm(1, width)]  # one group: per-example statistics only
    if kind == "batch":
        return [nn.BatchNorm1d(width)]
    return []


def _dropout(rate: float) -> list[nn.Module]:
    return [nn.Dropout(rate)] if rate > 0 else []


def _activation_block(kind: str, width: int, dropout: float) -> list[nn.Module]:
    """SeLU, normalization, dropout: the order of the ProGAP reference MLP."""
    return [nn.SELU(), *_normalization(kind, width), *_dropout(dropout)]


def _combine_block(kind: str, width: int, dropout: float) -> nn.Sequential:
    """After GAP's L2 row normalization: normalization, dropout, SeLU (the GAP reference order)."""
    return nn.Sequential(*_normalization(kind, width), *_dropout(dropout), nn.SELU())


def _check_inputs(inputs: Sequence[Tensor], count: int, owner: str) -> None:
    if isinstance(inputs, Tensor) or len(inputs) != count:
        got = "a tensor" if isinstance(inputs, Tensor) else f"{len(inputs)} tensors"
        raise ValueError(f"{owner} takes a tuple of {count} tensors [B, d] (one per hop), got {got}")


@torch.no_grad()
def _embed_eval(module: nn.Module, x: Tensor) -> Tensor:
    """Row-normalized ``module(x)`` in eval mode (no dropout, no batch statistics), mode restored."""
    was_training = module.training
    module.eval()
    try:
        return F.normalize(module(x), p=2, dim=-1)
    finally:
        module.train(was_training)


class StageMLP(nn.Module):
    """``num_layers`` linear layers (in_dim -> hidden_dim ... -> out_dim), each followed by SeLU,
    normalization and dropout, except the last one when ``plain_last``.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        *,
        hidden_dim: int = 16,
        num_layers: int = 1,
        normalization: str = "group",
        dropout: float = 0.0,
        plain_last: bool = True,
    ) -> None:
        super().__init__()
        widths = layer_widths(in_dim, hidden_dim, out_dim, num_layers=num_layers, dropout=dropout)
        _check_normalization(normalization)
        layers: list[nn.Module] = []
        for i in range(num_layers):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i < num_layers - 1 or not plain_last:
                layers += _activation_block(normalization, widths[i + 1], dropout)
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x)


class GAPEncoder(nn.Module):
    """GAP's encoder: an MLP pre-trained through a linear head; ``embed`` gives X^(0) for aggregation.

    forward: x [B, in_dim] -> logits [B, num_classes], via
    encoder -> L2 row normalization -> normalization, dropout, SeLU -> head.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        *,
        hidden_dim: int = 16,
        num_layers: int = 2,
        normalization: str = "group",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.encoder = StageMLP(
            in_dim,
            hidden_dim,
            hidden_dim=hidden_dim,
            num_layers=num_layers,
            normalization=normalization,
            dropout=dropout,
        )
        self.post = _combine_block(normalization, hidden_dim, dropout)
        self.head = nn.Linear(hidden_dim, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.post(F.normalize(self.encoder(x), p=2, dim=-1)))

    def embed(self, x: Tensor) -> Tensor:
        """[N, hidden] row-normalized encoder output (eval mode, no gradient): GAP's X^(0)."""
        return _embed_eval(self.encoder, x)


class GAPClassifier(nn.Module):
    """GAP's classifier on the cached hops: forward takes (X^(0), X̃^(1), ..., X̃^(K)), each [B, in_dim].

    One base MLP per hop, concatenation, L2 row normalization, normalization,
    dropout, SeLU, head MLP -> logits [B, num_classes].
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        *,
        hops: int,
        hidden_dim: int = 16,
        base_layers: int = 1,
        head_layers: int = 1,
        normalization: str = "group",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if hops < 0:
            raise ValueError(f"hops must be >= 0, got {hops}")
        self.base = nn.ModuleList(
            StageMLP(
                in_dim,
                hidden_dim,
                hidden_dim=hidden_dim,
                num_layers=base_layers,
                normalization=normalization,
                dropout=dropout,
            )
            for _ in range(hops + 1)
        )
        width = (hops + 1) * hidden_dim
        self.post = _combine_block(normalization, width, dropout)
        self.head = StageMLP(
            width,
            num_classes,
            hidden_dim=hidden_dim,
            num_layers=head_layers,
            normalization=normalization,
            dropout=dropout,
        )

    def forward(self, inputs: Sequence[Tensor]) -> Tensor:
        _check_inputs(inputs, len(self.base), type(self).__name__)
        h = torch.cat([mlp(x) for mlp, x in zip(self.base, inputs)], dim=-1)
        return self.head(self.post(F.normalize(h, p=2, dim=-1)))


class ProGAPStage(nn.Module):
    """Submodel M_s of ProGAP (Eq. 10): forward takes (X̃^(0), ..., X̃^(s)) and returns logits.

    ``bases`` are base_0..base_s (shared with the ``ProGAP`` container); only
    base_s and ``head`` are trainable: the earlier bases are frozen and kept in
    eval mode even while this stage trains, so their outputs, and the caches
    built from them, cannot change.
    """

    def __init__(self, bases: Sequence[StageMLP], head: nn.Linear) -> None:
        super().__init__()
        if not bases:
            raise ValueError("a ProGAP stage needs at least one base MLP")
        self.bases = nn.ModuleList(bases)
        self.head = head
        for i, base in enumerate(self.bases):
            base.requires_grad_(i == len(self.bases) - 1)
        self.head.requires_grad_(True)

    @property
    def index(self) -> int:
        """s: the number of cached aggregations this stage reads besides X."""
        return len(self.bases) - 1

    def train(self, mode: bool = True) -> ProGAPStage:
        super().train(mode)
        for base in self.bases[:-1]:
            base.eval()  # frozen: no dropout, no BatchNorm statistic updates
        return self

    def forward(self, inputs: Sequence[Tensor]) -> Tensor:
        _check_inputs(inputs, len(self.bases), f"ProGAP stage {self.index}")
        h = torch.cat([base(x) for base, x in zip(self.bases, inputs)], dim=-1)  # JK: concatenation
        return self.head(F.normalize(h, p=2, dim=-1))

    def embed(self, aggregate: Tensor) -> Tensor:
        """X^(s) = base_s(X̃^(s)) [N, hidden], row-normalized (eval mode, no gradient): NAP's input for stage s+1."""
        return _embed_eval(self.bases[-1], aggregate)


class ProGAP(nn.Module):
    """All depth+1 stages of ProGAP: base MLPs base_0..base_K and one linear head per stage.

    base_0 maps the features (in_dim) to hidden_dim; base_k, k ≥ 1, maps a
    NAP aggregate of X^(k-1) (hidden_dim) to hidden_dim. Every base layer,
    the last included, is followed by SeLU, normalization and dropout, as in
    the reference code. Inference uses ``stage(depth)``.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        *,
        depth: int,
        hidden_dim: int = 16,
        base_layers: int = 1,
        normalization: str = "group",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        self.base = nn.ModuleList(
            StageMLP(
                in_dim if s == 0 else hidden_dim,
                hidden_dim,
                hidden_dim=hidden_dim,
                num_layers=base_layers,
                normalization=normalization,
                dropout=dropout,
                plain_last=False,
            )
            for s in range(depth + 1)
        )
        self.heads = nn.ModuleList(nn.Linear((s + 1) * hidden_dim, num_classes) for s in range(depth + 1))

    @property
    def num_stages(self) -> int:
        return len(self.base)

    def stage(self, s: int) -> ProGAPStage:
        """Submodel M_s, sharing this container's modules; freezes base_0..base_{s-1}, unfreezes base_s and head_s."""
        if not 0 <= s < self.num_stages:
            raise ValueError(f"stage must be in [0, {self.num_stages - 1}], got {s}")
        return ProGAPStage([cast(StageMLP, m) for m in self.base[: s + 1]], cast(nn.Linear, self.heads[s]))
