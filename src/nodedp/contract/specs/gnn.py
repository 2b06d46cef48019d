"""`gcn`, `gin`, `gat`, `sage` (``nodedp.methods.gnn``): hyperparameters and registry entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["LAYERS", "GnnHparams"]

# The GNN layers of ``nodedp.models.SubgraphGNN`` (its ``LAYERS``), named here without torch: each is a
# non-private method here and a DP-GNN method (``nodedp.contract.specs.dp_gnn``).
LAYERS = ("gcn", "gin", "gat", "sage")


@dataclass(frozen=True)
class GnnHparams(OptimHparams):
    weight_decay: float = 5e-4
    hidden_dim: int = 64
    num_layers: int = 1  # r, as the DP-GNN paper's 1-layer transductive models

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.num_layers) < 1:
            raise ValueError("hidden_dim and num_layers must be ≥ 1")


for _layer in LAYERS:
    register_method(
        MethodInfo(
            name=_layer,
            description=f"non-private {_layer.upper()} (DP-GNN's model, full batch on the whole graph)",
            private=False,
            level="none",
            hparams=GnnHparams,
            run=lazy_run("nodedp.methods.gnn:run_gnn", layer=_layer),
        )
    )
