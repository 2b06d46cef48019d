"""HeterPoisson's plan (``nodedp.methods.heterpoisson``): Poisson roots, 1-hop subgraphs, the per-node mixture PLD.

From public inputs only: q = B / |train|, T = epochs · ⌈|train| / B⌉ steps, M, the public degree bound D, C, and σ
calibrated to the target ε by ``nodedp.accounting.heter_poisson`` (the mixture at d = D, both orientations).
Reference mode (``heterpoisson@paper``): the public code's σ (its quantile-grid RDP at the worst d = |train|,
δ = |train|^-1.1) and its sampler (keep probability M/d(u) on private degrees, partial root removal, random fill);
the record is the same mixture at d = |train| by the suite's PLD, and the reads that no finite ε covers are stated
as uncharged. Details: docs/design/methods.md, section `nodedp.plans.heterpoisson`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from nodedp.accounting import Claim, DegreeBound, Ledger, MechanismRecord, UnchargedRead
from nodedp.accounting.heter_poisson import calibrate_heter_poisson, paper_noise_multiplier
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.heterpoisson import HeterPoissonHparams
from nodedp.plans import Plan, PublicInputs

__all__ = ["heter_poisson_params", "paper_delta", "plan_heterpoisson", "public_code_reads"]

_PAPER_RULE = (
    "RDP of the per-node mixture at keep probability q·M/d, integrated on a 10^6-point quantile grid (|x| <= 5.6, "
    "renormalised), at the worst d = |train| of its scan, orders 1.1-10.9 and 12-29, Balle et al.'s conversion at "
    "delta = |train|^-1.1; sigma by bisection on [0.001, 100] to width 0.01"
)
_PAPER_SOURCE = (
    "HeterPoisson public code zihangxiang/PNPiGNNs (HP-v2): privacy/mix.py@5786ca85 (accountant), "
    "privacy/sampling.py and datasets/utils.py (sampler, collate)"
)


def paper_delta(num_train: int) -> float:
    """The public code's δ = |train|^-1.1."""
    return float(num_train) ** -1.1


def heter_poisson_params(
    public: PublicInputs, hp: HeterPoissonHparams, *, degree_bound: int, noise_multiplier: float
) -> dict[str, Any]:
    """The ledger record's params: what ``nodedp.accounting.heter_poisson`` reads, and what the loop executes
    (each subgraph's gradient clipped to ``example_clip_norm`` = C/2, noise std σ·C on the sum)."""
    n = public.num_train
    if not 1 <= hp.batch_size <= n:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {n}] (training nodes)")
    return {
        "sampling": "poisson",
        "sampling_rate": hp.batch_size / n,
        "neighbours": hp.neighbours,
        "degree_bound": degree_bound,
        "noise_multiplier": noise_multiplier,
        "noise_std": noise_multiplier * hp.clip_norm,
        "clip_norm": hp.clip_norm,
        "example_clip_norm": hp.clip_norm / 2,
        "num_examples": n,
        "expected_batch_size": hp.batch_size,
        "steps": hp.epochs * math.ceil(n / hp.batch_size),
        "epochs": hp.epochs,
    }


def public_code_reads(method: str) -> tuple[UnchargedRead, ...]:
    """What the public code's sampler reads of the private graph that no mixture term pays for."""
    return (
        UnchargedRead(
            name=f"private-degrees:{method}",
            touches=("edges",),
            reason=(
                "the public code keeps a listed node u with probability M/d(u), d(u) its private in-degree: "
                "removing x changes d(w) for every w it points to, hence subgraphs that do not contain x, and an "
                "isolated root gets M random fill nodes (removing x can isolate a root); no finite epsilon covers "
                "these reads (spec §2.7, items 3-5), and the recorded epsilon, the mixture at d = |train|, takes "
                "them as given"
            ),
        ),
        UnchargedRead(
            name=f"partial-root-removal:{method}",
            touches=("edges",),
            reason=(
                "the collate rule drops a sampled root only from subgraphs earlier in the shuffled batch, so a root "
                "also appears in later ones, which the mixture's root term (shift 1/2, nowhere else) does not "
                "count (spec §2.7, item 2)"
            ),
        ),
    )


def plan_heterpoisson(public: PublicInputs, spec: RunSpec, hp: HeterPoissonHparams) -> Plan:
    """The run's ledger and what it executes (``parts``): ``params`` (the record's), ``degree_bound`` (the public
    D the sampler enforces; None in reference mode, whose sampler bounds nothing)."""
    if spec.accountant != "pld":
        raise ValueError(
            f"{spec.method}: its per-node mixture is accounted by a PLD only (accountant 'pld' or 'auto'), "
            f"got accountant {spec.accountant!r}"
        )
    n = public.num_train
    paper = hp.accounting == "paper"
    # Reference mode bounds nothing: its record is the mixture at d = |train|, the public code's worst d.
    bound = n if paper else int(public.degree_bounds(dataclasses.asdict(hp))["degree"])
    trial = heter_poisson_params(public, hp, degree_bound=bound, noise_multiplier=1.0)
    claim = None
    if paper:
        delta = paper_delta(n)
        sigma = paper_noise_multiplier(
            sampling_rate=trial["sampling_rate"],
            neighbours=hp.neighbours,
            degree_bound=n,
            degree=n,  # the scan's pick wherever checked (docs/design/accountant-heterpoisson.md)
            steps=trial["steps"],
            target_epsilon=spec.target_epsilon,
            target_delta=delta,
        )
        claim = Claim(epsilon=spec.target_epsilon, delta=delta, rule=_PAPER_RULE, source=_PAPER_SOURCE)
    else:
        sigma = calibrate_heter_poisson(trial, target_epsilon=spec.target_epsilon, target_delta=spec.target_delta)
    params = {**trial, "noise_multiplier": sigma, "noise_std": sigma * hp.clip_norm}
    ledger = Ledger(
        level="node",
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        mechanisms=(_record(spec, params),),
        accountant="pld",
        uncharged=public_code_reads(spec.method) if paper else (),
        degree_bound=None if paper else DegreeBound(kind="degree", bound=bound, identity_bound=bound),
        claim=claim,
    )
    ledger.check()
    return Plan(ledger, {"params": params, "degree_bound": None if paper else bound})


def _record(spec: RunSpec, params: dict[str, Any]) -> MechanismRecord:
    d = params["degree_bound"]
    return MechanismRecord(
        name=f"dp-sgd:{spec.method}",
        kind="heter_poisson_gaussian",
        touches=("features", "labels", "edges"),
        params=params,
        sensitivity=params["clip_norm"] * d,
        sensitivity_reason=(
            "one example per sampled root (the root and its kept listed nodes), clipped to C/2; removing x moves "
            "its own example by C/2 if it is a root (and it is then in no other subgraph of the step) or each of "
            f"the ≤ D = {d} subgraphs listing it by ≤ C; the count is Bin(D, q·min(1, M/D)) "
            "(docs/design/accountant-heterpoisson.md)"
        ),
        dp_event=None,
    )
