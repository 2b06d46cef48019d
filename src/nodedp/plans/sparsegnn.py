"""SparseGNN's plan (``nodedp.methods.sparsegnn``): Poisson roots, thinned rooted subgraphs, SG-latest's PLD.

From public inputs only: p1 = B / |train| (roots per step), T = epochs · ⌈|train| / B⌉ steps, the hyperparameters
r, p2, K_out, C, and σ calibrated to the target ε by ``nodedp.accounting.structured`` (union factor χ = 2, node
substitution). Reference mode (``sparse-<layer>@paper``): σ as the public code's comparison figures size it (χ = 1,
δ = |train|^-1.01), the record the suite's χ = 2 at that σ, the claim beside it. A substitution-DP run is also
add/remove-DP at the same (ε, δ) (docs/privacy.md, "Neighbouring relations"); the record states its relation.
Details: docs/design/methods.md, section `nodedp.plans.sparsegnn`.
"""

from __future__ import annotations

import math
from typing import Any

from nodedp.accounting import Claim, DegreeBound, Ledger, MechanismRecord
from nodedp.accounting.structured import calibrate_structured
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.sparsegnn import SparseGnnHparams
from nodedp.plans import Plan, PublicInputs

__all__ = ["PAPER_IN_DEGREE_CAP", "paper_delta", "plan_sparsegnn", "structured_params"]

# The public code's reference preprocessing caps every in-degree at 10 before the out-degree cap K_out.
PAPER_IN_DEGREE_CAP = 10
# The union factor χ: 2 covers the union graph g ∪ g' of a substitution (SG-latest); the public code's comparison
# figures (numerics/compare.py) use 1.
SUITE_UNION_FACTOR, PAPER_UNION_FACTOR = 2, 1
_PAPER_RULE = (
    "SG-latest's double-mixture PLD with the union factor chi = 1 (valid only if the degree bound holds on the "
    "union of the two graphs), delta = |train|^-1.01, node substitution"
)
_PAPER_SOURCE = (
    "SparseGNN public code KevinJ-30/markovian_dp: src/privacy/accounting.py@af51bff5 as used by numerics/compare.py "
    "(the repository's comparison figures); delta and preprocessing from scripts/run_experiment.py (in-degree cap 10)"
)


def paper_delta(num_train: int) -> float:
    """The public code's δ = |train|^-1.01."""
    return float(num_train) ** -1.01


def structured_params(
    public: PublicInputs, hp: SparseGnnHparams, *, union_factor: int, noise_multiplier: float
) -> dict[str, Any]:
    """The ledger record's params: what ``nodedp.accounting.structured`` reads, and what the loop executes."""
    n = public.num_train
    if not 1 <= hp.batch_size <= n:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {n}] (training nodes)")
    steps = hp.epochs * math.ceil(n / hp.batch_size)
    return {
        "sampling": "poisson",
        "sampling_rate": hp.batch_size / n,
        "edge_keep": hp.edge_keep,
        "radius": hp.radius,
        "out_degree_bound": hp.out_degree_bound,
        "union_factor": union_factor,
        "noise_multiplier": noise_multiplier,
        "noise_std": noise_multiplier * hp.clip_norm,
        "clip_norm": hp.clip_norm,
        "num_examples": n,
        "expected_batch_size": hp.batch_size,
        "steps": steps,
        "epochs": hp.epochs,
        "relation": "substitution",
    }


def _record(spec: RunSpec, params: dict[str, Any]) -> MechanismRecord:
    k_out, radius, chi = params["out_degree_bound"], params["radius"], params["union_factor"]
    affected = 1 + chi * sum(k_out**hop for hop in range(1, radius + 1))
    return MechanismRecord(
        name=f"dp-sgd:{spec.method}",
        kind="structured_gaussian",
        touches=("features", "labels", "edges"),
        params=params,
        sensitivity=2.0 * params["clip_norm"] * affected,
        sensitivity_reason=(
            f"one example per sampled root (its thinned r-hop subgraph along incoming arcs), clipped to C; "
            f"substituting a node changes the examples of the roots whose subgraph can hold it in g or g': "
            f"itself and at most chi·K_out^l at hop l on the union graph (chi = {chi}, every out-degree <= "
            f"K_out = {k_out}), ≤ {affected} in all, each by ≤ 2C; J ~ Bern(p1) + Σ_l Bin(chi·K_out^l, b_l) of "
            "them in a step (the path-bound count law, docs/design/accountant-sparsegnn.md)"
        ),
        dp_event=None,
    )


def plan_sparsegnn(public: PublicInputs, spec: RunSpec, hp: SparseGnnHparams) -> Plan:
    """The run's ledger and what it executes (``parts``): ``params`` (the record's: p1, T, r, p2, K_out, σ, C),
    ``in_degree_cap`` (None, or the public code's 10 in reference mode)."""
    if spec.accountant != "pld":
        raise ValueError(
            f"{spec.method}: its structured-subsampling pair is accounted by a PLD only (accountant 'pld' or "
            f"'auto'), got accountant {spec.accountant!r}"
        )
    paper = hp.accounting == "paper"
    claim = None
    if paper:
        delta = paper_delta(public.num_train)
        trial = structured_params(public, hp, union_factor=PAPER_UNION_FACTOR, noise_multiplier=1.0)
        sigma = calibrate_structured(trial, target_epsilon=spec.target_epsilon, target_delta=delta)
        claim = Claim(epsilon=spec.target_epsilon, delta=delta, rule=_PAPER_RULE, source=_PAPER_SOURCE)
    else:
        trial = structured_params(public, hp, union_factor=SUITE_UNION_FACTOR, noise_multiplier=1.0)
        sigma = calibrate_structured(trial, target_epsilon=spec.target_epsilon, target_delta=spec.target_delta)
    params = structured_params(public, hp, union_factor=SUITE_UNION_FACTOR, noise_multiplier=sigma)
    in_cap = PAPER_IN_DEGREE_CAP if paper else None
    identity = hp.out_degree_bound if in_cap is None else min(hp.out_degree_bound, in_cap)
    ledger = Ledger(
        level="node",
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        mechanisms=(_record(spec, params),),
        accountant="pld",
        degree_bound=DegreeBound(kind="degree", bound=hp.out_degree_bound, identity_bound=identity),
        claim=claim,
    )
    ledger.check()
    return Plan(ledger, {"params": params, "in_degree_cap": in_cap})
