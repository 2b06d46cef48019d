"""`dpar-em0`, `dpar-em1`, `dpar-gm`, `dpar-features`, `dpar-nodp` (DPAR, ``nodedp.methods.dpar``, whose
docstring explains the two stages): hyperparameters, the DP-APPR artifact's settings and registry entries.

``appr_spec`` keys the DP-APPR artifact; the workflow's planning reads it for every DPAR run, hence here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodedp.accounting.constants import EM_VALUE_SHARE
from nodedp.contract.base import MethodInfo, OptimHparams, lazy_run
from nodedp.contract.registry import register_method

__all__ = ["APPR_KEYS", "ARTIFACT_KIND", "FEATURES", "OPTIONS", "DparHparams", "appr_spec"]

ARTIFACT_KIND = "dp-appr"
OPTIONS: dict[str, str] = {
    "dpar-em0": "em0",
    "dpar-em1": "em1",
    "dpar-gm": "gm",
    "dpar-features": "features",
    "dpar-nodp": "nodp",
}
# §4's Features baseline: Algorithm 2 with one-hot APPR rows, no DP-APPR (nodedp.methods.dpar's docstring).
FEATURES = "features"


@dataclass(frozen=True)
class DparHparams(OptimHparams):
    # DP-SGD and the model (the paper's §4 defaults)
    epochs: int = 200
    lr: float = 0.005
    weight_decay: float = 1e-4
    hidden_dim: int = 32
    dropout: float = 0.1
    batch_size: int = 60  # expected Poisson batch: rate γ = batch_size / (q'·|train|)
    clip_norm: float = 1.0  # C
    tau: float = 1.0  # column ℓ1 bound of the training matrix (Algorithm 2, line 3)
    power_steps: int = 2  # P, inference
    # DP-APPR: these keys (``APPR_KEYS``) name the structure artifact
    k: int = 2  # K non-zeros per DP-APPR row
    num_sources: int = 70  # M; 0: ⌈q'·|train|⌉
    ratio: float = 0.5  # share of ε_in DP-APPR spends
    sample_rate: float = 0.09  # q'
    max_rows: int = 2  # a column is kept in at most this many DP-APPR rows
    em_clip: float = 0.001  # C2 (EM: entries into [0, C2])
    gm_clip: float = 0.01  # C1 (GM: rows to ℓ2 ≤ C1)
    value_share: float = EM_VALUE_SHARE  # em1: share of DP-APPR's ε for the Laplace values
    alpha: float = 0.25  # APPR teleport
    rho: float = 1e-4  # APPR sparsity (ℓ1 weight)
    tol: float = 1e-4  # APPR optimality tolerance
    # "suite": noise calibrated to the target by the suite's accountant; "paper" (reference mode, runs named
    # dpar-*@paper): noise sized as DPAR's own accounting would for the target ε (nodedp.methods.dpar's docstring)
    accounting: str = "suite"

    def check(self) -> None:
        super().check()
        if min(self.hidden_dim, self.batch_size, self.k) < 1 or self.power_steps < 0:
            raise ValueError("hidden_dim, batch_size and k must be ≥ 1, power_steps ≥ 0")
        if self.num_sources < 0 or self.max_rows < 1:
            raise ValueError(
                f"num_sources must be ≥ 0 (0: ⌈q'·|train|⌉) and max_rows ≥ 1, got "
                f"{self.num_sources} and {self.max_rows}"
            )
        for name in ("clip_norm", "tau", "em_clip", "gm_clip", "rho", "tol"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("ratio", "value_share", "alpha", "dropout"):
            value = getattr(self, name)
            if not (0 < value < 1 or (name == "dropout" and value == 0)):
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        if not 0 < self.sample_rate <= 1:
            raise ValueError(f"sample_rate (q') must be in (0, 1], got {self.sample_rate}")


_SHARED_KEYS = ("k", "num_sources", "sample_rate", "max_rows", "alpha", "rho", "tol")
# The hyperparameters each option's DP-APPR artifact depends on (besides graph, split, seed, ε and δ).
APPR_KEYS: dict[str, tuple[str, ...]] = {
    "em0": (*_SHARED_KEYS, "ratio", "em_clip"),
    "em1": (*_SHARED_KEYS, "ratio", "em_clip", "value_share"),
    "gm": (*_SHARED_KEYS, "ratio", "gm_clip"),
    "nodp": _SHARED_KEYS,
    FEATURES: ("sample_rate",),  # the node sample only: no DP-APPR, and all of ε goes to DP-SGD
}


def appr_spec(method: str, hp: DparHparams) -> dict[str, Any]:
    """What the DP-APPR artifact of ``method`` depends on besides the graph, split, seed and (ε, δ)."""
    if method not in OPTIONS:
        raise ValueError(f"unknown DPAR method {method!r}; valid choices: {list(OPTIONS)}")
    option = OPTIONS[method]
    if option == "nodp" and hp.accounting == "paper":
        raise ValueError(f"{method} is not private: it has no paper reference mode")
    spec = {"option": option, **{key: getattr(hp, key) for key in APPR_KEYS[option]}}
    # Reference artifacts are distinct; suite artifacts keep the digests they had before reference mode.
    return {**spec, "accounting": "paper"} if hp.accounting == "paper" else spec


for _method, _option in OPTIONS.items():
    register_method(
        MethodInfo(
            name=_method,
            description=(
                "DPAR without privacy: top-K APPR + SGD (PPRGo)"
                if _option == "nodp"
                else "DPAR's Features baseline (§4): one-hot APPR rows, DP-SGD on the node sample, no DP-APPR"
                if _option == FEATURES
                else f"DPAR ({_option.upper()}): DP top-K APPR + DP-SGD on PPR-weighted neighbourhoods"
            ),
            private=_option != "nodp",
            level="node" if _option != "nodp" else "none",
            hparams=DparHparams,
            run=lazy_run("nodedp.methods.dpar:run_dpar", method=_method),
            needs=(ARTIFACT_KIND,),
            # the run's ledger from public inputs (nodedp.plans.dpar; the artifact's: plan_dp_appr)
            plan=None if _option == "nodp" else f"nodedp.plans.dpar:plan_{_method.replace('-', '_')}",
        )
    )
