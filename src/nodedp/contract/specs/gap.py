"""`gap`, `gap-edge`, `gap-nodp` (GAP, ``nodedp.methods.gap``): hyperparameters and registry entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.specs.aggregation_perturbation import ApHparams, ReferenceMode, register_levels

__all__ = ["GapHparams", "GapNodeHparams"]


@dataclass(frozen=True)
class GapHparams(ApHparams):
    encoder_layers: int = 2
    encoder_epochs: int = 10
    head_layers: int = 1  # the classifier's head MLP (ProGAP's head is one linear layer)

    def check(self) -> None:
        super().check()
        if min(self.encoder_layers, self.encoder_epochs, self.head_layers) < 1:
            raise ValueError("encoder_layers, encoder_epochs and head_layers must be ≥ 1")


@dataclass(frozen=True)
class GapNodeHparams(ReferenceMode, GapHparams):
    """`gap` (node level): GapHparams plus the reference mode (``accounting``)."""


register_levels(
    "gap",
    description="GAP, encoder + K cached NAP hops + classifier",
    hparams=GapHparams,
    node_hparams=GapNodeHparams,
    run="nodedp.methods.gap:run_gap",
    plan="nodedp.plans.aggregation_perturbation:plan_gap",
)
