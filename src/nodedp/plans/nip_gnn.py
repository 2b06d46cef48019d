"""NIP-GNN's plan (``nodedp.methods.nip_gnn``): its pure-ε ledger from public inputs and what the run releases.

Public: ε = ε_A + ε_B + ε_C, the degree bound D_max, s = s_min(ε_B, D_max), the label mechanism, the records' order,
the ``exact`` parts' uncharged reads and the reference claim. Not public (``NipReleased``): NAP's budget weights
(post-processing of the edge release) and, in reference mode, D_p; a run passes them (``released=``), a verifier
reads them off the stated ledger (``released_inputs``), and the plan checks them.
Details: docs/design/methods.md, section `nodedp.plans.nip_gnn`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from nodedp.accounting import (
    Claim,
    DegreeBound,
    Ledger,
    MechanismRecord,
    UnchargedRead,
    min_keep_parameter,
    nip_aggregation_record,
    nip_edge_record,
    nip_label_record,
    split_budget,
)
from nodedp.accounting.nip import nip_paper_noise, nip_reference_epsilon
from nodedp.accounting.nip_bounds import worst_case_budget_ratio
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.nip_gnn import EXACT_PARTS, NipHparams, exact_parts
from nodedp.plans import Plan, PublicInputs

__all__ = ["NipNoise", "NipReleased", "nip_noise", "plan_nip_gnn", "reference_reads", "released_inputs"]

_BOUND_CAVEAT = (
    "as in the paper, neighbouring graphs are compared on the same degree-bounded edge set: "
    "removing a node can change the sampled set by up to D_max + deg(v) edges near it"
)
_REFERENCE_RULE = (
    "ε = ε_A + ε_B + ε_C (Theorem 5): NAP's Laplace 2·D_max/(ε_A·β_u) with Eq. 11's β is ε_A-DP "
    "(Theorem 3), s = 2/(e^{ε_B/2D_max} + 1) is ε_B-DP (Theorem 4), label RR at ε_C (Eq. 13); "
    "D_max the private graph's maximum degree, pure ε"
)
_REFERENCE_SOURCE = "NIP-GNN §4.2-4.3 (Eq. 9, 11-13, Lemma 1, Theorems 3-5), Appendix A.2, §5.1; no public code"


@dataclass(frozen=True)
class NipNoise:
    """The noise the run draws: ε's parts, the edge randomization's s and the D its scales use."""

    epsilon_a: float  # NAP
    epsilon_b: float  # edges
    epsilon_c: float  # labels
    s: float  # keep parameter of the edge randomization
    max_degree: int  # D_max, the public bound enforced
    noise_degree: int  # the D of the Laplace scales 2·D/ε_u and of s: D_max (reference mode: D_p)


@dataclass(frozen=True)
class NipReleased:
    """What the plan takes beyond public inputs (docs/design/methods.md): NAP's budgets, computed from the edge release,
    and in reference mode the private maximum degree D_p (an uncharged read)."""

    largest_budget_weights: tuple[float, ...] = ()
    worst_case_ratio_before_scaling: float = 1.0
    budget_scale: float = 1.0
    paper_max_degree: int | None = None


def _max_degree(public: PublicInputs, hp: NipHparams) -> int:
    return int(public.degree_bounds(dataclasses.asdict(hp))["degree"])


def nip_noise(public: PublicInputs, spec: RunSpec, hp: NipHparams, *, paper_max_degree: int | None = None) -> NipNoise:
    """ε's parts, s and the noise's D: public, but for D_p in reference mode (``paper_max_degree``)."""
    max_degree = _max_degree(public, hp)
    shares = (hp.share_a, hp.share_b, hp.share_c)
    if hp.accounting == "paper":
        if paper_max_degree is None:
            raise ValueError(
                "a reference plan (nip-gnn@paper) needs the paper's D_max, the private graph's maximum "
                "degree D_p (an uncharged read): pass released=NipReleased(paper_max_degree=...)"
            )
        if (
            isinstance(paper_max_degree, bool)
            or not isinstance(paper_max_degree, int)
            or not 1 <= paper_max_degree <= max_degree
        ):
            raise ValueError(
                f"the paper's D_max must be an integer in [1, D_max = {max_degree}], got {paper_max_degree!r}"
            )
        noise = nip_paper_noise(
            spec.target_epsilon, shares, max_degree=paper_max_degree, num_classes=public.num_classes
        )
        return NipNoise(noise.epsilon_a, noise.epsilon_b, noise.epsilon_c, noise.s, max_degree, paper_max_degree)
    eps_a, eps_b, eps_c = split_budget(spec.target_epsilon, shares)
    return NipNoise(eps_a, eps_b, eps_c, min_keep_parameter(eps_b, max_degree), max_degree, max_degree)


def reference_reads(method: str, *, resample: bool) -> tuple[UnchargedRead, ...]:
    """What a reference run reads of the private graph without charge (``nodedp.methods.nip_gnn``)."""
    reads = [
        UnchargedRead(
            name=f"max-degree:{method}",
            touches=("edges",),
            reason=(
                "the paper's D_max is the private graph's maximum degree D_p, read without noise (Lemma 1, "
                "Theorem 4; §5.1 bounds no degrees): it sets the Laplace scales 2·D_p/ε_u, the edge randomization's "
                "s, Eq. 11's budgets and their re-bounding. The recorded ε takes D_p as given (noise at D_p costed "
                "over all graphs with degrees ≤ the enforced bound); it does not cover this read, for which no "
                "finite ε exists (a neighbour with another maximum degree gets Laplace noise of another scale, an "
                "unbounded privacy loss)"
            ),
        )
    ]
    if resample:
        reads.append(
            UnchargedRead(
                name=f"resampling-degrees:{method}",
                touches=("edges",),
                reason=(
                    "Eq. 12's resampling probabilities 2D_u/(D_u + N − N·s + D_u·s) read every node's private "
                    "degree D_u before randomization (Theorem 4's proof leaves the sampling out); no finite ε "
                    "covers this read (an isolated node keeps none of its randomized edges, p_u = 0, while with "
                    "one edge in a neighbouring graph it keeps them with probability > 0), and the recorded ε "
                    "does not"
                ),
            )
        )
    return tuple(reads)


def _uniform_budgets(num_nodes: int, max_degree: int) -> NipReleased:
    """β = 1 (`budgets: uniform`): public. Their worst-case ratio is ≤ 1, so unscaled in either mode (as
    ``scale_budgets_to_worst_case`` and ``paper_budgets`` leave them)."""
    largest = (1.0,) * min(num_nodes, max_degree + 1)
    ratio = worst_case_budget_ratio(largest, max_degree=max_degree)
    if ratio > 1:  # cannot happen: (D + min(N, D + 1) − 1)/(2D) ≤ 1
        raise AssertionError(f"uniform budgets with worst-case ratio {ratio} > 1")
    return NipReleased(largest_budget_weights=largest, worst_case_ratio_before_scaling=ratio, budget_scale=1.0)


def _budgets(public: PublicInputs, hp: NipHparams, max_degree: int, released: NipReleased | None) -> NipReleased:
    """NAP's budgets as the ledger records them: public when uniform, else the released ones, checked."""
    if hp.budgets == "uniform":
        planned = _uniform_budgets(public.num_nodes, max_degree)
        if (
            released is not None
            and released.largest_budget_weights
            and (
                tuple(released.largest_budget_weights),
                released.worst_case_ratio_before_scaling,
                released.budget_scale,
            )
            != (planned.largest_budget_weights, planned.worst_case_ratio_before_scaling, planned.budget_scale)
        ):
            raise ValueError("uniform budgets are β = 1 (ratio 1, scale 1); the run's are not")
        return planned
    if released is None or not released.largest_budget_weights:
        raise ValueError(
            f"NAP's {hp.budgets!r} budgets are computed from the edge release (post-processing), not "
            "from public inputs: pass released=NipReleased(largest_budget_weights=..., "
            "worst_case_ratio_before_scaling=..., budget_scale=...) (a verifier: released_inputs of "
            "the stated ledger)"
        )
    largest = tuple(float(w) for w in released.largest_budget_weights)
    expected = min(public.num_nodes, max_degree + 1)
    if len(largest) != expected:
        raise ValueError(
            f"largest_budget_weights lists {len(largest)} budgets; the plan records the "
            f"min(N, D_max + 1) = {expected} largest (N = {public.num_nodes}, D_max = {max_degree})"
        )
    if any(not (math.isfinite(w) and w > 0) for w in largest) or list(largest) != sorted(largest, reverse=True):
        raise ValueError("largest_budget_weights must be finite, > 0 and in descending order")
    if hp.accounting == "paper":
        # Eq. 11 unscaled: the ratio before scaling is theirs, the scale 1
        ratio = worst_case_budget_ratio(largest, max_degree=max_degree)
        if released.budget_scale != 1.0 or not math.isclose(
            released.worst_case_ratio_before_scaling, ratio, rel_tol=1e-12
        ):
            raise ValueError(
                f"a reference run's budgets are unscaled: budget_scale 1 and ratio {ratio!r}, got "
                f"{released.budget_scale!r} and {released.worst_case_ratio_before_scaling!r}"
            )
    return NipReleased(
        largest_budget_weights=largest,
        worst_case_ratio_before_scaling=float(released.worst_case_ratio_before_scaling),
        budget_scale=float(released.budget_scale),
    )


def plan_nip_gnn(public: PublicInputs, spec: RunSpec, hp: NipHparams, released: NipReleased | None = None) -> Plan:
    """NIP-GNN's ledger (docs/design/methods.md). ``parts``: "noise" (``NipNoise``), "actual" (reference mode's
    ``NipActualEpsilon``, else None), "exact" (the diagnosis parts)."""
    paper = hp.accounting == "paper"
    noise = nip_noise(public, spec, hp, paper_max_degree=None if released is None else released.paper_max_degree)
    max_degree, eps_a, eps_b, eps_c = noise.max_degree, noise.epsilon_a, noise.epsilon_b, noise.epsilon_c
    exact = exact_parts(hp.exact)
    shares = (hp.share_a, hp.share_b, hp.share_c)
    # NAP's record only where NAP runs: with `exact` "features" its budgets play no part in the ledger
    budgets = (
        _budgets(public, hp, max_degree, released)
        if "features" not in exact
        else _uniform_budgets(public.num_nodes, max_degree)
    )
    claim: Claim | None = None
    uncharged: tuple[UnchargedRead, ...] = ()
    actual = None
    if paper:
        # what ran, costed over every graph with degrees ≤ the enforced bound (given D_p)
        actual = nip_reference_epsilon(
            spec.target_epsilon,
            shares,
            paper_max_degree=noise.noise_degree,
            enforced_bound=max_degree,
            largest_budget_weights=budgets.largest_budget_weights,
        )
        records = _release_records(spec, hp, noise, budgets, actual)
        claim = Claim(epsilon=spec.target_epsilon, delta=0.0, rule=_REFERENCE_RULE, source=_REFERENCE_SOURCE)
        uncharged = reference_reads(spec.method, resample=hp.resample)
    else:
        records = _release_records(spec, hp, noise, budgets, None)
    records = (*records, nip_label_record(epsilon_c=eps_c, num_classes=public.num_classes, method=spec.method))
    if exact:  # diagnosis: the parts released exactly spend nothing and are read uncharged
        records, uncharged = _drop_exact_parts(records, exact, method=spec.method)
    ledger = Ledger(
        level="node",
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        accountant=spec.accountant,
        # undirected bounding keeps every edge of a node within D_max (nodedp.data.degree.identity_bound)
        degree_bound=DegreeBound(kind="degree", bound=max_degree, identity_bound=max_degree),
        mechanisms=records,
        uncharged=uncharged,
        claim=claim,
    )
    ledger.check()
    expected = spec.target_epsilon if actual is None else actual.total
    if exact:  # suite mode only (NipHparams.check): the parts that ran
        expected = math.fsum(
            eps for part, eps in (("features", eps_a), ("edges", eps_b), ("labels", eps_c)) if part not in exact
        )
    if not math.isclose(ledger.composed()[0], expected, rel_tol=1e-12):
        raise AssertionError("NIP-GNN's parts must add up to the target ε (reference mode: the actual ε) exactly")
    return Plan(ledger, {"noise": noise, "actual": actual, "exact": exact})


def _release_records(
    spec: RunSpec, hp: NipHparams, noise: Any, budgets: Any, actual: Any
) -> tuple[MechanismRecord, ...]:
    """The edge release's and NAP's records: at ε_B and ε_A of the target, or (reference mode, ``actual`` given) at
    what the paper's noise spends at the enforced bound."""
    reference = actual is not None
    return (
        nip_edge_record(
            epsilon_b=actual.edges if reference else noise.epsilon_b,
            s=noise.s,
            max_degree=noise.max_degree,
            method=spec.method,
            caveat=_BOUND_CAVEAT,
        ),
        nip_aggregation_record(
            epsilon_a=actual.epsilon_a_at_bound if reference else noise.epsilon_a,
            max_degree=noise.max_degree,
            budget_scheme=("uniform" if hp.budgets == "uniform" else "paper") if reference else hp.budgets,
            largest_budget_weights=budgets.largest_budget_weights,
            worst_case_ratio_before_scaling=budgets.worst_case_ratio_before_scaling,
            budget_scale=budgets.budget_scale,
            method=spec.method,
            caveat=_BOUND_CAVEAT,
            reference=reference,
        ),
    )


def _drop_exact_parts(
    records: tuple[MechanismRecord, ...], exact: Any, *, method: str
) -> tuple[tuple[MechanismRecord, ...], tuple[UnchargedRead, ...]]:
    """Diagnosis: the records of the parts not in ``exact`` (edges, features, labels: the order built), and an
    uncharged read for each part released exactly."""
    parts = dict(zip(("edges", "features", "labels"), records, strict=True))  # the order built above
    kept = tuple(record for part, record in parts.items() if part not in exact)
    uncharged = tuple(
        UnchargedRead(
            name=f"exact-{part}:{method}",
            touches=(part,),
            reason=f"diagnosis run (`exact`): {EXACT_PARTS[part]}",
        )
        for part in exact
    )
    return kept, uncharged


def released_inputs(
    ledger: Mapping[str, Any], public: PublicInputs, spec: RunSpec, hp: NipHparams
) -> NipReleased | None:
    """What a stated ledger says of the values the plan cannot derive (docs/design/methods.md), for a verifier to pass
    as ``released``: the NAP record's budgets, and in reference mode D_p (from its ε_A·D_max/D_p). The plan
    checks them and re-derives everything else; None where the ledger has no NAP record."""
    nap = [r for r in ledger.get("mechanisms", ()) if str(r.get("name", "")).startswith("nip-aggregation:")]
    if len(nap) != 1:
        return None
    params = nap[0].get("params", {})
    paper_max_degree = None
    if hp.accounting == "paper":
        eps_a = split_budget(spec.target_epsilon, (hp.share_a, hp.share_b, hp.share_c))[0]
        paper_max_degree = round(_max_degree(public, hp) * eps_a / float(params["epsilon_a"]))
    return NipReleased(
        largest_budget_weights=tuple(params.get("largest_budget_weights", ())),
        worst_case_ratio_before_scaling=float(params.get("worst_case_ratio_before_scaling", 1.0)),
        budget_scale=float(params.get("budget_scale", 1.0)),
        paper_max_degree=paper_max_degree,
    )


# What a verifier reads off a stated ledger and passes back (nodedp.verify): name -> reader(ledger, public, spec, hp).
cast(Any, plan_nip_gnn).run_supplied = {"released": released_inputs}
