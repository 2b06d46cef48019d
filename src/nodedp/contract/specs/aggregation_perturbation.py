"""What GAP and ProGAP share (``nodedp.methods.aggregation_perturbation``): hyperparameters, the reference mode
and the registration of a family's three privacy levels."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["ApHparams", "ReferenceMode", "register_levels"]


@dataclass(frozen=True)
class ApHparams(OptimHparams):
    hops: int = 2  # K: NAP queries (aggregation hops / ProGAP stages after the first)
    hidden_dim: int = 16
    base_layers: int = 1
    dropout: float = 0.0
    epochs: int = 10  # per stage (GAP: the classifier)
    batch_size: int = 256  # expected batch size of node-level DP-SGD (Poisson sampling)
    clip_norm: float = 1.0  # C, per-example clipping of node-level DP-SGD
    # R: aggregated rows are clipped to ℓ2 ≤ R; at node level Δ = √(D + R²). 0: R = √D (Δ = √(2D)).
    row_clip: float = 0.0
    normalization: str = "auto"  # "auto": group at node level, batch otherwise; or group | batch | none
    # D, public (node level): the out-degree bound of the NAP graph; 0: the dataset's (the workflow bounds to it)
    out_degree_bound: int = 0

    def check(self) -> None:
        super().check()
        if self.out_degree_bound < 0:
            raise ValueError(f"out_degree_bound (D) must be ≥ 1, or 0 for the dataset's; got {self.out_degree_bound}")
        if self.hops < 1:
            raise ValueError(f"hops (K) must be ≥ 1, got {self.hops}")
        if min(self.hidden_dim, self.base_layers, self.batch_size) < 1:
            raise ValueError("hidden_dim, base_layers and batch_size must be ≥ 1")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 ≤ dropout < 1, got {self.dropout}")
        if not self.clip_norm > 0 or not (math.isfinite(self.row_clip) and self.row_clip >= 0):
            raise ValueError(f"need clip_norm > 0 and row_clip ≥ 0 (0: √D), got {self.clip_norm}, {self.row_clip}")
        if self.normalization not in ("auto", "group", "batch", "none"):
            raise ValueError(f"unknown normalization {self.normalization!r}; choose from auto, group, batch, none")

    def normalization_for(self, level: str) -> str:
        if self.normalization == "auto":
            return "group" if level == "node" else "batch"
        if level == "node" and self.normalization == "batch":
            raise ValueError("node-level DP-SGD needs per-example normalization: 'group' or 'none', not 'batch'")
        return self.normalization


@dataclass(frozen=True)
class ReferenceMode:
    """Mixed into the node-level hyperparameters only (``gap``, ``progap``): their reference mode."""

    # "suite": z calibrated to the target with the suite's accountant; "paper": the papers' rule (z at their
    # δ, NAP std z·√D), the ledger recording the actual ε beside the claim (nodedp.contract.base.ACCOUNTING_MODES).
    accounting: str = "suite"


_LEVEL_SUFFIXES = (
    ("", "node", "node-level DP: out-degree bounded NAP, DP-Adam stages"),
    ("-edge", "edge", "edge-level DP: NAP over all edges, non-private stages"),
    ("-nodp", "none", "non-private: NAP without noise"),
)


def register_levels(family: str, *, description: str, hparams: type, node_hparams: type, run: str, plan: str) -> None:
    """Register `family` (node level), `family-edge` and `family-nodp`; ``run`` is the "module:function" of
    ``run(inputs, spec, hp, level=...)``, imported when a run starts (``nodedp.contract.base.LazyRun``); ``plan``
    the "module:function" of the node level's planner (``nodedp.plans``), the edge level's being the same name
    with ``_edge`` (``nodedp.plans.aggregation_perturbation``: ``plan_gap``, ``plan_gap_edge``); the non-private
    twin needs none.

    ``node_hparams``: the node level's, ``hparams`` with ``ReferenceMode`` (only it has a reference mode).
    """
    for suffix, level, what in _LEVEL_SUFFIXES:
        register_method(
            MethodInfo(
                name=f"{family}{suffix}",
                description=f"{description}; {what}",
                private=level != "none",
                level=level,
                hparams=node_hparams if level == "node" else hparams,
                run=lazy_run(run, level=level),
                needs=("out-degree",) if level == "node" else (),
                plan={"node": plan, "edge": f"{plan}_edge", "none": None}[level],
                batch_of_training_nodes=level == "node",
            )
        )
