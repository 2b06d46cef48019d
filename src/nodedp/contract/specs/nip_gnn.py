"""`nip-gnn` (NIP-GNN, ``nodedp.methods.nip_gnn``): hyperparameters, the diagnosis parts and its registry entry."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.accounting.constants import BUDGET_SCHEMES
from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["AGGREGATIONS", "EXACT_PARTS", "NipHparams", "exact_parts"]

AGGREGATIONS = ("aca", "plain")
# The parts a diagnosis run (`exact`) may release without their mechanism, and what each reads uncharged.
EXACT_PARTS: dict[str, str] = {
    "features": "NAP's sum aggregation of the features without its Laplace noise (ε_A not spent)",
    "edges": "the degree-bounded private graph itself, not randomized or resampled (ε_B not spent)",
    "labels": "the true training labels, no randomized response (ε_C not spent)",
}


def exact_parts(value: str) -> tuple[str, ...]:
    """The parts named by an `exact` hyperparameter ("" or a comma-separated subset of ``EXACT_PARTS``)."""
    parts = tuple(p.strip() for p in value.split(",")) if value.strip() else ()
    unknown = [p for p in parts if p not in EXACT_PARTS]
    if unknown or len(set(parts)) != len(parts):
        raise ValueError(
            f"exact must be a comma-separated subset of {list(EXACT_PARTS)} without repeats, got {value!r}"
        )
    if len(parts) == len(EXACT_PARTS):
        raise ValueError(
            "exact may not name every part: at least one mechanism must run (the run would not be private at all)"
        )
    return parts


@dataclass(frozen=True)
class NipHparams(OptimHparams):
    epochs: int = 100
    lr: float = 1e-3
    batch_size: int = 64
    hidden_dim: int = 64
    hops: int = 2  # K, ACA hops
    tau: float = 1.0  # ACA's τ_k, in units of the median ‖M_u − H̄⁰_u‖ at hop k
    max_degree: int = 0  # D_max, public; 0: the dataset's (the workflow bounds the graph to it)
    share_a: float = 0.5  # shares of ε for NAP (A), edges (B), labels (C): the paper gives none
    share_b: float = 0.25
    share_c: float = 0.25
    budgets: str = "capped"  # "capped" | "paper" (Eq. 11 as printed) | "uniform" ("w/o A-a")
    resample: bool = True  # degree-preserving resampling ("w/o D-s" when false)
    aggregation: str = "aca"  # "aca" | "plain" ("w/o A-r")
    tnie_layers: int = 2  # T
    tnie_lambda: float = 1.0
    tnie_phi: float = 0.0
    # Diagnosis only: parts released without their mechanism (nodedp.methods.nip_gnn); "" for the method itself.
    exact: str = ""
    # "suite": noise calibrated to the target ε by the suite's analysis; "paper": sized as the paper would for it
    # (private D_max, Eq. 11 unscaled, Eq. 12 on private degrees), the ledger recording the claim and the actual ε.
    # Set by the run name only (`nip-gnn@paper`, nodedp.config).
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if self.budgets not in BUDGET_SCHEMES:
            raise ValueError(f"unknown budgets {self.budgets!r}; choose from {list(BUDGET_SCHEMES)}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {self.aggregation!r}; choose from {list(AGGREGATIONS)}")
        if min(self.share_a, self.share_b, self.share_c) <= 0:
            raise ValueError("share_a, share_b and share_c must be > 0 (each part of ε is spent)")
        if self.tau < 0:
            raise ValueError(f"tau must be >= 0, got {self.tau}")
        if exact_parts(self.exact) and self.accounting != "suite":
            raise ValueError("exact (a diagnosis) runs under the suite's accounting only, not in reference mode")
        if min(self.batch_size, self.hidden_dim, self.tnie_layers) < 1 or self.hops < 0 or self.max_degree < 0:
            raise ValueError("batch_size, hidden_dim, tnie_layers ≥ 1; hops ≥ 0; max_degree ≥ 0 (0: the dataset's)")


register_method(
    MethodInfo(
        name="nip-gnn",
        description="NIP-GNN: influence-adaptive Laplace NAP, randomized edges and labels, ACA; pure ε",
        private=True,
        level="node",
        hparams=NipHparams,
        run=lazy_run("nodedp.methods.nip_gnn:run_nip_gnn"),
        needs=("degree",),
        plan="nodedp.plans.nip_gnn:plan_nip_gnn",
    )
)
