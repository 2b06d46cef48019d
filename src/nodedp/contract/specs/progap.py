"""`progap`, `progap-edge`, `progap-nodp` (ProGAP, ``nodedp.methods.progap``): hyperparameters and registry
entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.specs.aggregation_perturbation import ApHparams, ReferenceMode, register_levels

__all__ = ["ProgapNodeHparams"]


@dataclass(frozen=True)
class ProgapNodeHparams(ReferenceMode, ApHparams):
    """`progap` (node level): ApHparams plus the reference mode (``accounting``)."""


register_levels(
    "progap",
    description="ProGAP, progressive stages over cached NAP outputs",
    hparams=ApHparams,
    node_hparams=ProgapNodeHparams,
    run="nodedp.methods.progap:run_progap",
    plan="nodedp.plans.aggregation_perturbation:plan_progap",
)
