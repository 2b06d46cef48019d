"""`sparse-sage`, `sparse-gin` (SparseGNN, ``nodedp.methods.sparsegnn``): hyperparameters and registry entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["SPARSE_LAYERS", "SparseGnnHparams"]

# SparseSAGE (mean over in-neighbours plus a root weight) and SparseGIN (sum pooling), the spec's two variants.
SPARSE_LAYERS = ("sage", "gin")
# The rooted subgraphs are dense [B, S, S] batches: r = 3 pads each to 1 + 20 + 200 + 1000 columns at the spec's
# caps, too wide for the suite's dense format (nodedp.structure.structured_subsampling.MAX_RADIUS).
RADII = (1, 2)


@dataclass(frozen=True)
class SparseGnnHparams(OptimHparams):
    # The spec's main study (§1.6): 20 epochs, Adam, weight decay 0, hidden 128, dropout between layers aside
    # (the suite's DP models run without dropout), 2 message-passing layers for r ≤ 2, C = 1.
    epochs: int = 20
    lr: float = 0.01
    hidden_dim: int = 128
    num_layers: int = 2  # message-passing layers (the spec: 2 for r ∈ {1, 2})
    batch_size: int = 256  # B: the expected number of roots per step (p1 = B / |train|)
    radius: int = 1  # r: hops each rooted subgraph grows along incoming arcs
    edge_keep: float = 0.1  # p2: each in-arc of a frontier node kept with this probability (then the fan-out caps)
    out_degree_bound: int = 5  # K_out: every node keeps ≤ K_out of its out-arcs (public; enters the accountant)
    clip_norm: float = 1.0  # C: each rooted subgraph's gradient clipped to C (flat)
    # "suite": σ calibrated to the target by SG-latest (union factor χ = 2, sound under node substitution);
    # "paper": the public code's comparison accountant (χ = 1, δ = |train|^-1.01) and its in-degree cap of 10,
    # the ledger's ε the actual one (χ = 2 at that σ). Set by the run name (`sparse-sage@paper`).
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.batch_size, self.num_layers, self.out_degree_bound) < 1:
            raise ValueError("hidden_dim, batch_size, num_layers and out_degree_bound (K_out) must be ≥ 1")
        if self.radius not in RADII:
            raise ValueError(
                f"radius (r) must be one of {list(RADII)}, got {self.radius} (r = 3 subgraphs are too wide for "
                "the dense batches)"
            )
        if not 0 < self.edge_keep <= 1:
            raise ValueError(f"edge_keep (p2) must be in (0, 1], got {self.edge_keep}")
        if not self.clip_norm > 0:
            raise ValueError(f"clip_norm must be > 0, got {self.clip_norm}")


for _layer in SPARSE_LAYERS:
    register_method(
        MethodInfo(
            name=f"sparse-{_layer}",
            description=(
                f"SparseGNN ({_layer.upper()} layers): DP-SGD on Poisson roots' thinned rooted subgraphs, "
                "structured-subsampling PLD (node substitution)"
            ),
            private=True,
            level="node",
            hparams=SparseGnnHparams,
            run=lazy_run("nodedp.methods.sparsegnn:run_sparsegnn", layer=_layer),
            plan="nodedp.plans.sparsegnn:plan_sparsegnn",
            auto_accountant="pld",
            accountants=("pld",),
            batch_of_training_nodes=True,
        )
    )
