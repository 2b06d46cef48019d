"""`mlp` and `dp-mlp` (``nodedp.methods.mlp``): hyperparameters and registry entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["DpMlpHparams", "MlpHparams"]


@dataclass(frozen=True)
class MlpHparams(OptimHparams):
    epochs: int = 50
    lr: float = 0.005
    weight_decay: float = 5e-4
    hidden_dim: int = 64
    num_layers: int = 2
    dropout: float = 0.5
    batch_size: int = 256

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.num_layers, self.batch_size) < 1:
            raise ValueError("hidden_dim, num_layers and batch_size must be ≥ 1")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 ≤ dropout < 1, got {self.dropout}")


@dataclass(frozen=True)
class DpMlpHparams(MlpHparams):
    # DP noise already regularises: no dropout or weight decay by default.
    dropout: float = 0.0
    epochs: int = 20
    lr: float = 0.01
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    # "suite": σ calibrated to the target with the suite's accountant at its δ; "paper": as GAP/ProGAP's public
    # code sizes its DP-MLP baseline (RDP at the papers' δ), the ledger holding the claim (base.ACCOUNTING_MODES).
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if not self.clip_norm > 0:
            raise ValueError(f"clip_norm must be > 0, got {self.clip_norm}")


register_method(
    MethodInfo(
        name="mlp",
        description="non-private MLP on node features (no edges)",
        private=False,
        level="none",
        hparams=MlpHparams,
        run=lazy_run("nodedp.methods.mlp:run_mlp"),
    )
)
register_method(
    MethodInfo(
        name="dp-mlp",
        description="MLP on node features trained with Poisson-sampled DP-SGD/DP-Adam",
        private=True,
        level="node",
        hparams=DpMlpHparams,
        run=lazy_run("nodedp.methods.mlp:run_mlp"),
        plan="nodedp.plans.mlp:plan_mlp",
        batch_of_training_nodes=True,
    )
)
