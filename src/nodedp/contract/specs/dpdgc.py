"""`dpdgc` and `dpdgc-nodp` (DPDGC, ``nodedp.methods.dpdgc``): hyperparameters and registry entries."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["DpdgcHparams"]


@dataclass(frozen=True)
class DpdgcHparams(OptimHparams):
    # The public Cora script (train_scripts/real/DPDGC-node.sh): hidden 64, batch 64, 100 + 100 epochs, Adam 1e-3.
    epochs: int = 100  # classifier
    lr: float = 0.001
    encoder_epochs: int = 100  # 0: no encoder training (random table), encoder_share must be 0
    encoder_lr: float = 0.001
    encoder_weight_decay: float = 1e-5
    hidden_dim: int = 64
    base_layers: int = 2
    mix_layers: int = 2
    dropout: float = 0.0
    batch_size: int = 64  # expected Poisson batch, both DP-SGD stages
    clip_norm: float = 1.0  # C, both DP-SGD stages
    row_clip: float = 0.0  # R: released rows clipped to ℓ2 ≤ R; 0: R = √D
    encoder_share: float = 0.4
    emb_share: float = 0.15
    # Divide the released embedding by its noise std (post-processing; ours, not the paper's): LINKX's
    # residual adds x̃_A unweighted, so at node-level noise it would swamp the feature channel.
    standardize_embedding: bool = False
    # "suite": every noise calibrated to the target by the suite's accountant; "paper": the public code's noise
    # for the claimed ε (nodedp.methods.dpdgc, ``public_code_noise``), the ledger recording what it actually spends.
    accounting: str = "suite"
    # Reference mode: the D in the public code's noise factors; 0: the enforced bound (the structure's D).
    # The public scripts run D = 100 on every dataset.
    paper_max_degree: int = 0

    def check(self) -> None:
        super().check()
        if self.paper_max_degree < 0:
            raise ValueError(f"need paper_max_degree ≥ 0 (0: the enforced D), got {self.paper_max_degree}")
        if min(self.hidden_dim, self.base_layers, self.mix_layers, self.batch_size) < 1:
            raise ValueError("hidden_dim, base_layers, mix_layers and batch_size must be ≥ 1")
        if self.encoder_epochs < 0 or not self.encoder_lr > 0 or self.encoder_weight_decay < 0:
            raise ValueError(
                f"need encoder_epochs ≥ 0, encoder_lr > 0 and encoder_weight_decay ≥ 0, got "
                f"{self.encoder_epochs}, {self.encoder_lr}, {self.encoder_weight_decay}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 ≤ dropout < 1, got {self.dropout}")
        if not self.clip_norm > 0 or not (math.isfinite(self.row_clip) and self.row_clip >= 0):
            raise ValueError(f"need clip_norm > 0 and row_clip ≥ 0 (0: √D), got {self.clip_norm}, {self.row_clip}")
        if not 0 < self.emb_share < 1 or not 0 <= self.encoder_share < 1:
            raise ValueError(
                f"need 0 < emb_share < 1 and 0 ≤ encoder_share < 1, got {self.emb_share}, {self.encoder_share}"
            )
        if self.encoder_share + self.emb_share >= 1:
            raise ValueError(
                f"encoder_share + emb_share must be < 1 (the classifier gets the rest), got "
                f"{self.encoder_share} + {self.emb_share}"
            )
        if (self.encoder_epochs == 0) != (self.encoder_share == 0):
            raise ValueError(
                f"encoder_share must be 0 exactly when encoder_epochs is 0 (no encoder training), got "
                f"encoder_epochs {self.encoder_epochs} and encoder_share {self.encoder_share}"
            )

    def encoder_optim(self):
        return dataclasses.replace(self.optim_config(), lr=self.encoder_lr, weight_decay=self.encoder_weight_decay)


for _name, _private in (("dpdgc", True), ("dpdgc-nodp", False)):
    register_method(
        MethodInfo(
            name=_name,
            description=(
                "DPDGC: DP-SGD adjacency encoder with normalized embeddings, one DP-Emb release, "
                "DP-SGD LINKX classifier"
                if _private
                else "DPDGC without privacy: the same three stages, no noise, SGD"
            ),
            private=_private,
            level="node" if _private else "none",
            hparams=DpdgcHparams,
            run=lazy_run("nodedp.methods.dpdgc:run_dpdgc", private=_private),
            auto_accountant="pld",
            needs=("out-degree",),
            plan="nodedp.plans.dpdgc:plan_dpdgc" if _private else None,
            batch_of_training_nodes=True,  # in both modes
        )
    )
