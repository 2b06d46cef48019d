"""`dp-gcn`, `dp-gin`, `dp-gat`, `dp-sage` (DP-GNN, ``nodedp.methods.dp_gnn``): hyperparameters and registry
entries."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method
from nodedp.contract.specs.gnn import LAYERS

__all__ = ["CLIPPINGS", "DpGnnHparams"]

CLIPPINGS = ("flat", "layerwise")


@dataclass(frozen=True)
class DpGnnHparams(OptimHparams):
    epochs: int = 20
    lr: float = 0.003
    hidden_dim: int = 64
    num_layers: int = 1  # r: GNN layers, and the depth of each training subgraph
    batch_size: int = 256  # m: subgraphs per step, sampled without replacement
    # K, the public in-degree bound; 0: the dataset's (the workflow builds the artifact at this bound)
    in_degree_bound: int = 0
    clip_norm: float = 1.0  # C, the bound on a whole clipped gradient (unless clip_percentile > 0)
    clipping: str = "flat"  # "flat": the whole gradient to C; "layerwise": each layer l to C_l
    # > 0: thresholds are this percentile of gradient norms at init (uncharged, see nodedp.methods.dp_gnn's
    # docstring); 0: from clip_norm. A number, not None: hyperparameters are typed by their defaults.
    clip_percentile: float = 0.0
    # "suite": z calibrated to the target ε by the suite's accountant; "paper": the reference mode (see
    # nodedp.methods.dp_gnn): the public code's noise for the claimed ε, layer-wise clipping at C_l = C/√L
    # whatever `clipping` says, and the ledger's ε the actual one. Set by the run name (`dp-gcn@paper`), not by hand.
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if self.num_layers not in (1, 2):
            raise ValueError(f"num_layers (r) must be 1 or 2, got {self.num_layers}")
        if min(self.hidden_dim, self.batch_size) < 1 or not self.clip_norm > 0:
            raise ValueError("hidden_dim and batch_size must be ≥ 1, clip_norm > 0")
        if self.in_degree_bound < 0:
            raise ValueError(f"in_degree_bound (K) must be ≥ 1, or 0 for the dataset's; got {self.in_degree_bound}")
        if self.clipping not in CLIPPINGS:
            raise ValueError(f"unknown clipping {self.clipping!r}; choose from {list(CLIPPINGS)}")
        if not 0 <= self.clip_percentile <= 100:
            raise ValueError(
                f"clip_percentile must be in (0, 100], or 0 for thresholds from clip_norm; got {self.clip_percentile}"
            )
        if self.accounting == "paper" and self.clip_percentile > 0:
            raise ValueError(
                "accounting 'paper' clips each layer to C/√L; the paper's percentile thresholds (clip_percentile) "
                "are an uncharged read of their own: run them in suite mode"
            )


for _layer in LAYERS:
    register_method(
        MethodInfo(
            name=f"dp-{_layer}",
            description=f"DP-GNN ({_layer.upper()} layers): DP-SGD/DP-Adam on in-degree-bounded r-hop subgraphs",
            private=True,
            level="node",
            hparams=DpGnnHparams,
            run=lazy_run("nodedp.methods.dp_gnn:run_dp_gnn", layer=_layer),
            plan=f"nodedp.plans.dp_gnn:plan_dp_{_layer}",
            reference_floor="nodedp.accounting.dp_gnn_paper:paper_epsilon_floor",
            needs=("in-degree",),
            auto_accountant="pld",
            batch_of_training_nodes=True,
        )
    )
