"""GAP and ProGAP's plans (``nodedp.methods.aggregation_perturbation``): K NAP queries and, at node level, one
Poisson-sampled DP-SGD stage after another, one noise multiplier z shared by all (ProGAP Thm. 4.2).

Public inputs only: the out-degree bound D, undirectedness, N and |train|. Registered planners: ``plan_gap`` /
``plan_progap`` (node level), ``plan_gap_edge`` / ``plan_progap_edge``; the non-private twins have the empty ledger
and their runs ask ``plan_gap(..., level="none")`` for their parts. Details and reference mode:
docs/design/methods.md, section `nodedp.plans.aggregation_perturbation`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from nodedp.accounting import Claim, DegreeBound, Ledger, MechanismRecord, calibrate_gap, nap_event
from nodedp.accounting.gap import gap_paper_delta, gap_paper_noise
from nodedp.contract.base import RunSpec
from nodedp.plans import Plan, PublicInputs
from nodedp.plans.dpsgd import dpsgd_record

__all__ = [
    "nap_sensitivity_of",
    "plan_aggregation_perturbation",
    "plan_gap",
    "plan_gap_edge",
    "plan_progap",
    "plan_progap_edge",
]

OUT_DEGREE = "out-degree"


def nap_sensitivity_of(*, level: str, max_degree: int | None, row_clip: float, undirected: bool) -> float:
    """NAP's ℓ2 sensitivity as the plan charges it: √(D + R²) at node level, √2 (undirected) or 1 at edge level.
    The run's ``NAP`` (``nodedp.mechanisms.nap_sensitivity``) must give the same number; it checks."""
    if level == "node":
        assert max_degree is not None, "node level needs the out-degree bound D"
        return math.sqrt(max_degree + row_clip**2)
    return math.sqrt(2.0) if undirected else 1.0


def plan_aggregation_perturbation(
    public: PublicInputs, spec: RunSpec, hp: Any, *, level: str, stage_epochs: Sequence[int], name: str
) -> Plan:
    """The ledger and what the run executes: ``parts`` holds ``level``, ``row_clip`` (R; inf: not clipped),
    ``max_degree`` (D; None off node level), ``undirected``, ``nap_noise_multiplier``, ``sampling_rate``,
    ``stage_steps`` and ``nap_queries`` (K).

    ``stage_epochs``: epochs of each DP-SGD stage (GAP: encoder and classifier; ProGAP: K + 1 stages); node level
    only.
    """
    undirected = public.undirected()
    max_degree, degree_bound = None, None
    if level == "node":
        max_degree = int(public.degree_bounds(dataclasses.asdict(hp))[OUT_DEGREE])
        # Out-degree sampling keeps every edge of a node within D (``nodedp.data.degree.identity_bound``).
        degree_bound = DegreeBound(kind=OUT_DEGREE, bound=max_degree, identity_bound=max_degree)
    row_clip = hp.row_clip or (math.sqrt(max_degree) if max_degree is not None else math.inf)
    parts: dict[str, Any] = {
        "level": level,
        "row_clip": row_clip,
        "max_degree": max_degree,
        "undirected": undirected,
        "nap_noise_multiplier": 0.0,
        "sampling_rate": None,
        "stage_steps": (),
        "nap_queries": hp.hops,
    }
    if level == "none":
        return Plan(Ledger.non_private(), parts)

    q, stage_steps = _stage_schedule(public, hp, level=level, stage_epochs=stage_epochs)
    paper = getattr(hp, "accounting", "suite") == "paper"
    sensitivity = nap_sensitivity_of(level=level, max_degree=max_degree, row_clip=row_clip, undirected=undirected)
    z, nap_z, claim = _noise(
        public,
        spec,
        hp,
        level=level,
        name=name,
        paper=paper,
        sampling_rate=q,
        stage_steps=stage_steps,
        max_degree=max_degree,
        sensitivity=sensitivity,
    )
    records = [
        _nap_record(
            hp,
            level=level,
            name=name,
            paper=paper,
            nap_z=nap_z,
            sensitivity=sensitivity,
            row_clip=row_clip,
            max_degree=max_degree,
            undirected=undirected,
        )
    ]
    if q is not None:
        records += _stage_records(
            hp,
            name=name,
            z=z,
            sampling_rate=q,
            num_train=public.num_train,
            stage_steps=stage_steps,
            stage_epochs=stage_epochs,
        )
    ledger = Ledger(
        level=level,
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        mechanisms=tuple(records),
        accountant=spec.accountant,
        degree_bound=degree_bound,
        claim=claim,
    )
    ledger.check()
    parts.update(nap_noise_multiplier=nap_z, sampling_rate=q, stage_steps=stage_steps)
    return Plan(ledger, parts)


def _stage_schedule(
    public: PublicInputs, hp: Any, *, level: str, stage_epochs: Sequence[int]
) -> tuple[float | None, tuple[int, ...]]:
    """The DP-SGD stages' Poisson rate q = B/|train| and steps per stage at node level; (None, ()) elsewhere."""
    if level != "node":
        return None, ()
    n = public.num_train
    if not 1 <= hp.batch_size <= n:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {n}] (training nodes)")
    q = hp.batch_size / n
    return q, tuple(max(1, math.ceil(e / q)) for e in stage_epochs)


def _noise(
    public: PublicInputs,
    spec: RunSpec,
    hp: Any,
    *,
    level: str,
    name: str,
    paper: bool,
    sampling_rate: float | None,
    stage_steps: tuple[int, ...],
    max_degree: int | None,
    sensitivity: float,
) -> tuple[float, float, Claim | None]:
    """(z, NAP's noise multiplier at the charged Δ, the papers' claim or None): calibrated to the target by the
    suite's accountant, or in reference mode the papers' z with NAP drawing std z·√D."""
    claim = None
    if paper:
        if level != "node":
            raise ValueError(f"{name}: the papers' accounting (reference mode) is implemented at node level only")
        assert sampling_rate is not None and max_degree is not None  # node level
        claim_delta = gap_paper_delta(public.num_nodes)
        noise = gap_paper_noise(
            target_epsilon=spec.target_epsilon,
            delta=claim_delta,
            hops=hp.hops,
            stage_steps=stage_steps,
            sampling_rate=sampling_rate,
            max_degree=max_degree,
        )
        z = noise.noise_multiplier
        # NAP draws the papers' std z·√D; at the true Δ its multiplier is z·√D/Δ < z.
        nap_z = noise.nap_noise_std / sensitivity
        claim = Claim(
            epsilon=spec.target_epsilon,
            delta=claim_delta,
            rule=(
                f"one noise multiplier z for the K NAP queries and every DP-SGD stage, calibrated by RDP to "
                f"ε at δ = {claim_delta:g}, with NAP's sensitivity taken as √D (noise std z·√D), which omits "
                "the removed node's own aggregated row"
            ),
            source=(
                "ProGAP Theorem 4.2 (Eq. 11, NAP node-level (α, Dα/2σ_AP²)-RDP by GAP's Lemma 3) and §5.3 "
                "(δ below 1/N); public GAP/ProGAP code: NAP sensitivity sqrt(max_degree), "
                "delta 'auto' = 1/10**len(str(N))"
            ),
        )
    else:
        z = calibrate_gap(
            target_epsilon=spec.target_epsilon,
            target_delta=spec.target_delta,
            hops=hp.hops,
            stage_steps=stage_steps,
            sampling_rate=sampling_rate,
            accountant=spec.accountant,
        )
        nap_z = z
    if not (math.isfinite(nap_z) and nap_z > 0):
        raise ValueError(f"{name}: a {level}-level NAP needs a noise multiplier > 0, got {nap_z!r}")
    return z, nap_z, claim


def _nap_record(
    hp: Any,
    *,
    level: str,
    name: str,
    paper: bool,
    nap_z: float,
    sensitivity: float,
    row_clip: float,
    max_degree: int | None,
    undirected: bool,
) -> MechanismRecord:
    """The K NAP queries' record, with why Δ holds at this level."""
    noise_std = nap_z * sensitivity  # what the run's NAP draws (``NAP.noise_std``)
    if level == "node":
        reason = (
            f"out-degrees bounded to D={max_degree} by sampling edges and aggregated rows clipped to R={row_clip:g}: "
            f"removing a node changes its ≤ D out-neighbours' rows by ≤ 1 each (a unit vector; clipping is "
            f"1-Lipschitz) and its own row by ≤ R, so Δ = √(D + R²) = {sensitivity:.6g} per query "
            "(the public GAP/ProGAP code uses √D, omitting the node's own row)"
        )
        if paper:
            reason += f"; reference mode: noise std z·√D = {noise_std:.6g} (the papers' rule), charged at this Δ"
        caveat = (
            "as in the papers, neighbouring graphs are compared on the same sampled edge lists: re-running the "
            "out-degree sampling without a node could let its in-neighbours keep other edges instead"
        )
    else:
        reason = (
            f"one {'undirected edge is two directed edges, each' if undirected else 'directed edge'} changes "
            f"one aggregated row by ≤ 1 (a unit vector): Δ = {sensitivity:.6g} per query"
        )
        caveat = None
    return MechanismRecord(
        name=f"nap:{name}",
        kind="gaussian",
        touches=("features", "edges") if level == "node" else ("edges",),
        params={
            "mechanism": "nap",
            "level": level,
            "noise_multiplier": nap_z,
            "noise_std": noise_std,
            "queries": hp.hops,
            "row_clip": row_clip if math.isfinite(row_clip) else None,  # None: rows not clipped
            "max_degree": max_degree,
            "undirected": undirected,
        },
        sensitivity=sensitivity,
        sensitivity_reason=reason,
        dp_event=nap_event(noise_multiplier=nap_z, hops=hp.hops),
        caveat=caveat,
    )


def _stage_records(
    hp: Any,
    *,
    name: str,
    z: float,
    sampling_rate: float,
    num_train: int,
    stage_steps: tuple[int, ...],
    stage_epochs: Sequence[int],
) -> list[MechanismRecord]:
    """One Poisson-sampled DP-SGD record per node-level stage, all at the shared noise multiplier z."""
    return [
        dpsgd_record(
            name=f"dp-sgd:{name}:stage{i}",
            touches=("features", "labels"),
            noise_multiplier=z,
            clip_norm=hp.clip_norm,
            sampling_rate=sampling_rate,
            num_examples=num_train,
            batch_size=hp.batch_size,
            steps=steps,
            epochs=stage_epochs[i],
            sensitivity_reason=(
                "each training node is one example: its own features, label and cached NAP rows "
                "(already private releases); adding or removing it changes the clipped sum by ≤ C"
            ),
        )
        for i, steps in enumerate(stage_steps)
    ]


def plan_gap(public: PublicInputs, spec: RunSpec, hp: Any, *, level: str = "node") -> Plan:
    """GAP: two DP-SGD stages at node level, the encoder's (``encoder_epochs``) and the classifier's (``epochs``)."""
    return plan_aggregation_perturbation(
        public, spec, hp, level=level, stage_epochs=[hp.encoder_epochs, hp.epochs], name=spec.method
    )


def plan_gap_edge(public: PublicInputs, spec: RunSpec, hp: Any) -> Plan:
    return plan_gap(public, spec, hp, level="edge")


def plan_progap(public: PublicInputs, spec: RunSpec, hp: Any, *, level: str = "node") -> Plan:
    """ProGAP: K + 1 DP-SGD stages of ``epochs`` each at node level."""
    return plan_aggregation_perturbation(
        public, spec, hp, level=level, stage_epochs=[hp.epochs] * (hp.hops + 1), name=spec.method
    )


def plan_progap_edge(public: PublicInputs, spec: RunSpec, hp: Any) -> Plan:
    return plan_progap(public, spec, hp, level="edge")
