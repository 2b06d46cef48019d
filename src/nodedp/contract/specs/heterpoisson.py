"""`heterpoisson` (HeterPoisson, ``nodedp.methods.heterpoisson``): hyperparameters and registry entry."""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["HeterPoissonHparams"]


@dataclass(frozen=True)
class HeterPoissonHparams(OptimHparams):
    # The spec's run scripts (§2.6): lr 0.01, Adam, C = 1, one G_net block, hidden 128; their expected batch of
    # 4096 roots exceeds small graphs' training sets, so the default batch is the suite's 256.
    epochs: int = 9
    lr: float = 0.01
    hidden_dim: int = 128
    num_blocks: int = 1  # K: G_net's blocks (the public code's runs: 1)
    batch_size: int = 256  # the expected number of roots per step (q = batch_size / |train|)
    neighbours: int = 1  # M: a listed node is kept with probability min(1, M/D) in training
    test_neighbours: int = 10  # M_test: neighbours each node keeps at inference (not private)
    # D, the public degree bound (every node lists and is listed by ≤ D nodes); 0: the dataset's (the workflow
    # builds the undirected bounding at D)
    max_degree: int = 0
    clip_norm: float = 1.0  # C: each subgraph's gradient is clipped to C/2 (the spec's convention), noise σ·C
    # "suite": the sound sampler and σ from the suite's PLD at d = D; "paper": the public code's sampler (keep
    # probability M/d on private degrees, partial root removal, random fill for isolated roots) and σ from its
    # quantile-grid RDP at δ = |train|^-1.1. Set by the run name (`heterpoisson@paper`).
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.batch_size, self.num_blocks, self.neighbours, self.test_neighbours) < 1:
            raise ValueError("hidden_dim, batch_size, num_blocks, neighbours (M) and test_neighbours must be ≥ 1")
        if self.max_degree < 0:
            raise ValueError(f"max_degree (D) must be ≥ 1, or 0 for the dataset's; got {self.max_degree}")
        if not self.clip_norm > 0:
            raise ValueError(f"clip_norm must be > 0, got {self.clip_norm}")


register_method(
    MethodInfo(
        name="heterpoisson",
        description=(
            "HeterPoisson (S&P 2024): DP-SGD on Poisson roots' 1-hop subgraphs of neighbours kept at rate M/D, "
            "per-node mixture PLD"
        ),
        private=True,
        level="node",
        hparams=HeterPoissonHparams,
        run=lazy_run("nodedp.methods.heterpoisson:run_heterpoisson"),
        plan="nodedp.plans.heterpoisson:plan_heterpoisson",
        needs=("degree",),
        auto_accountant="pld",
        accountants=("pld",),
        batch_of_training_nodes=True,
    )
)
