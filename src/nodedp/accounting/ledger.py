"""The privacy ledger: every mechanism a run applied to private data, and its total cost.

Each run writes its ledger next to its metrics. The composed ε is recomputed from the recorded mechanisms
(DpEvents, RDP curves of ``RDP_CURVES`` kinds, pure-ε terms; under "rdp" or "pld"), amplified for a node
sample, never trusted from the stored number, and a ledger over its target fails. ``check`` and
``verify_ledger_dict`` rebuild every record's cost from its raw params (``nodedp.accounting.rebuild``) first.
Composition, node sampling, uncharged reads, guarantee classes and reference mode: docs/design/accounting.md.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from dp_accounting.dp_event import DpEvent
from dp_accounting.privacy_accountant import UnsupportedEventError
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from nodedp.accounting._checks import VERIFY_RTOL
from nodedp.accounting._memo import Memo
from nodedp.accounting.constants import ACCOUNTANTS
from nodedp.accounting.events import compose, epsilon_of, event_from_dict, event_to_dict
from nodedp.accounting.gumbel import gumbel_topk_rdp_of_params
from nodedp.accounting.heter_poisson import check_heter_poisson_params, heter_poisson_pld_of_params
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_rdp_of_params,
    poisson_occurrence_gaussian_rdp_of_params,
)
from nodedp.accounting.mixture_pld import MIXTURE_PLD_KINDS, mixture_pld_of_params
from nodedp.accounting.orders import RDP_ORDERS
from nodedp.accounting.pld import epsilon_pld, pld_of_event
from nodedp.accounting.rebuild import check_record
from nodedp.accounting.structured import check_structured_params, structured_pld_of_params

# (ε, δ) of each composition on the node sample (Ledger._composed_on_sample), by its records, accountant and δ.
_COMPOSED: Memo[tuple[float, float]] = Memo()

MECHANISM_KINDS: tuple[str, ...] = (
    "subsampled_gaussian",
    "gaussian",
    "laplace",
    "randomized_response",
    "exponential",
    "gumbel_topk",
    "hypergeometric_gaussian",
    "poisson_occurrence_gaussian",
    "structured_gaussian",
    "heter_poisson_gaussian",
)
TOUCHABLE: tuple[str, ...] = ("features", "labels", "edges")
# Kinds whose cost is an RDP curve computed from the record's params (not a DpEvent).
RDP_CURVES: Mapping[str, Callable[[Mapping[str, Any], Sequence[float]], np.ndarray]] = MappingProxyType(
    {
        "hypergeometric_gaussian": hypergeometric_gaussian_rdp_of_params,
        "poisson_occurrence_gaussian": poisson_occurrence_gaussian_rdp_of_params,
        "gumbel_topk": gumbel_topk_rdp_of_params,
    }
)
# Kinds whose cost is a privacy loss distribution built from the record's params, with no RDP curve (accountant
# "pld" only): SparseGNN's double mixture (``nodedp.accounting.structured``), HeterPoisson's per-node mixture
# (``nodedp.accounting.heter_poisson``). Each maps to (its PLD, a check of its params that builds nothing).
PLD_CURVES: Mapping[str, tuple[Callable[[Mapping[str, Any]], Any], Callable[[Mapping[str, Any]], None]]] = (
    MappingProxyType(
        {
            "structured_gaussian": (structured_pld_of_params, check_structured_params),
            "heter_poisson_gaussian": (heter_poisson_pld_of_params, check_heter_poisson_params),
        }
    )
)
LEVELS: tuple[str, ...] = ("node", "edge", "none")
# How a method bounds degrees by sampling edges: in-degree (DP-GNN), out-degree (GAP, ProGAP, DPDGC),
# every incident edge (NIP-GNN's undirected bound).
DEGREE_BOUND_KINDS: tuple[str, ...] = ("in-degree", "out-degree", "degree")
# What a run's ε guarantees (docs/design/accounting.md), from strongest to weakest; "none": not private.
GUARANTEE_CLASSES: tuple[str, ...] = ("unconditional", "conditional", "edge", "none")

# A composed ε above target·(1 + this) is an overrun, not floating-point noise.
_BUDGET_SLACK = 1e-9
# Recomputed and stored ε must agree to this relative precision.


def amplify_epsilon(epsilon: float, *, rate: float) -> float:
    """ln(1 + q(e^ε − 1)), also for ε too large for e^ε (= ε + ln(q + (1 − q)e^{−ε}))."""
    if epsilon == math.inf:
        return math.inf
    if epsilon > 30:
        return epsilon + math.log(rate + (1 - rate) * math.exp(-epsilon))
    return math.log1p(rate * math.expm1(epsilon))


class PrivacyBudgetExceeded(ValueError):
    """A run's composed ε exceeds its target (or its stored ε cannot be reproduced)."""


def _float_to_json(value: float) -> float | str:
    # JSON has no infinity; the string keeps the file strict (allow_nan=False).
    return "inf" if value == math.inf else value


def _float_from_json(value: float | str) -> float:
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number or 'inf', got {value!r}")
    return float(value)


@dataclass(frozen=True)
class MechanismRecord:
    """One mechanism applied to private data.

    Its cost is exactly one of ``dp_event``, ``pure_epsilon``, or (for kinds in
    ``RDP_CURVES``, which take neither) the kind's RDP curve of ``params``.
    """

    name: str
    kind: str
    touches: tuple[str, ...]
    params: Mapping[str, Any]
    sensitivity: float | None
    sensitivity_reason: str
    dp_event: DpEvent | None
    pure_epsilon: float | None = None
    caveat: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a mechanism record needs a name")
        if self.kind not in MECHANISM_KINDS:
            raise ValueError(f"{self.name}: unknown mechanism kind {self.kind!r}; valid kinds: {list(MECHANISM_KINDS)}")
        touches = tuple(self.touches)
        if not touches or not set(touches) <= set(TOUCHABLE) or len(set(touches)) != len(touches):
            raise ValueError(
                f"{self.name}: touches must be a non-empty subset of {list(TOUCHABLE)} without repeats, got {touches}"
            )
        object.__setattr__(self, "touches", touches)
        try:
            # A JSON round trip makes params JSON-safe and equal to what from_dict reads back.
            params = json.loads(json.dumps(dict(self.params), allow_nan=False))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{self.name}: params must be JSON-serialisable with finite numbers: {err}") from err
        object.__setattr__(self, "params", MappingProxyType(params))
        if self.sensitivity is not None and not (math.isfinite(self.sensitivity) and self.sensitivity >= 0):
            raise ValueError(f"{self.name}: sensitivity must be a finite number >= 0 or None, got {self.sensitivity}")
        if not self.sensitivity_reason:
            raise ValueError(f"{self.name}: sensitivity_reason must say why the sensitivity holds")
        if self.kind in RDP_CURVES:
            if self.dp_event is not None or self.pure_epsilon is not None:
                raise ValueError(
                    f"{self.name}: kind {self.kind!r} is accounted by its own RDP curve of params; "
                    "give neither dp_event nor pure_epsilon"
                )
            RDP_CURVES[self.kind](self.params, (2.0,))  # evaluating the curve validates its params
        elif self.kind in PLD_CURVES:
            if self.dp_event is not None or self.pure_epsilon is not None:
                raise ValueError(
                    f"{self.name}: kind {self.kind!r} is accounted by its own PLD of params; "
                    "give neither dp_event nor pure_epsilon"
                )
            PLD_CURVES[self.kind][1](self.params)
        elif (self.dp_event is None) == (self.pure_epsilon is None):
            raise ValueError(
                f"{self.name}: give exactly one of dp_event and pure_epsilon (the mechanism's cost); "
                f"only kinds {list(RDP_CURVES) + list(PLD_CURVES)} take neither"
            )
        if self.dp_event is not None and not isinstance(self.dp_event, DpEvent):
            raise TypeError(f"{self.name}: dp_event must be a DpEvent, got {type(self.dp_event).__name__}")
        if self.pure_epsilon is not None and not (math.isfinite(self.pure_epsilon) and self.pure_epsilon >= 0):
            raise ValueError(f"{self.name}: pure_epsilon must be a finite number >= 0, got {self.pure_epsilon}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "touches": list(self.touches),
            "params": dict(self.params),
            "sensitivity": self.sensitivity,
            "sensitivity_reason": self.sensitivity_reason,
            "dp_event": None if self.dp_event is None else event_to_dict(self.dp_event),
            "pure_epsilon": self.pure_epsilon,
            "caveat": self.caveat,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MechanismRecord:
        return cls(
            name=d["name"],
            kind=d["kind"],
            touches=tuple(d["touches"]),
            params=d["params"],
            sensitivity=d["sensitivity"],
            sensitivity_reason=d["sensitivity_reason"],
            dp_event=None if d["dp_event"] is None else event_from_dict(d["dp_event"]),
            pure_epsilon=d.get("pure_epsilon"),
            caveat=d.get("caveat"),
        )


@dataclass(frozen=True)
class DegreeBound:
    """The public degree bound a method enforced by sampling edges: public settings only, no count of the input."""

    kind: str  # one of DEGREE_BOUND_KINDS
    bound: int  # the public bound the sampling enforces (K or D)
    identity_bound: int  # within this degree the sampling keeps every edge (D; ⌊K/2⌋ for DP-GNN's Algorithm 1)

    def __post_init__(self) -> None:
        if self.kind not in DEGREE_BOUND_KINDS:
            raise ValueError(f"unknown degree bound kind {self.kind!r}; valid choices: {list(DEGREE_BOUND_KINDS)}")
        for name in ("bound", "identity_bound"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise ValueError(f"degree bound {name} must be an integer >= 0, got {value!r}")
            object.__setattr__(self, name, int(value))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "bound": self.bound, "identity_bound": self.identity_bound}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DegreeBound:
        """Inverse of ``to_dict``; an older ledger's ``nodes_over`` (a count of its input) is not read."""
        return cls(kind=d["kind"], bound=d["bound"], identity_bound=d["identity_bound"])

    def condition(self) -> str:
        """The public condition under which the sampling keeps every edge."""
        if self.kind == "in-degree":  # DP-GNN: Algorithm 1, then its roots' out-edges sampled to K
            return (
                f"training in-degrees are all <= {self.identity_bound} and out-degrees all <= {self.bound} "
                f"(there the sampling to in-degree <= {self.bound} and then out-degree <= {self.bound} "
                "keeps every edge)"
            )
        return (
            f"{self.kind}s are all <= {self.identity_bound} (there the sampling to {self.kind} <= {self.bound} "
            "keeps every edge)"
        )


@dataclass(frozen=True)
class Claim:
    """What a paper's own accounting states for a reference-mode run's noise (docs/design/accounting.md)."""

    epsilon: float  # the ε the paper's rule gives this noise (the grid's ε of the run)
    delta: float  # the paper's δ (0 where it claims pure ε-DP)
    rule: str  # how the paper arrives at ε, e.g. "ε·q' per part, parts not composed"
    source: str  # where the rule is from (paper section, public code)

    def __post_init__(self) -> None:
        if isinstance(self.epsilon, bool) or not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"a claim needs a finite ε > 0, got {self.epsilon!r}")
        if isinstance(self.delta, bool) or not 0 <= self.delta < 1:
            raise ValueError(f"a claim needs a δ in [0, 1) (0: the paper claims pure ε-DP), got {self.delta!r}")
        if not self.rule or not self.source:
            raise ValueError("a claim needs its rule and its source")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "rule": self.rule, "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Claim:
        return cls(epsilon=d["epsilon"], delta=d["delta"], rule=d["rule"], source=d["source"])


# What each level's neighbours differ in, and what the plan takes as public: the noise, sampling rates, step
# counts and sizes (DP-GNN's N, DPAR's M = ⌈q'·|train|⌉) are computed from these counts, the same for both graphs.
_RELATIONS = {
    "node": (
        "add or remove one node with its features, label and edges; the node count and the training-set "
        "size are public (the plan's noise, sampling rates, step counts and sizes are computed from them "
        "and are the same for both graphs)"
    ),
    "edge": "add or remove one edge; the nodes, with their count and the training set, are the same for both graphs",
}

# A ledger whose records are accounted under node substitution (a record's params["relation"]: SparseGNN's).
SUBSTITUTION_RELATION = (
    "replace one node's features, label and edges by another's (node substitution; the node count and the "
    "training-set size are public); the same (ε, δ) holds under adding or removing one node: removing a node "
    "is, in distribution, substituting it by an isolated node whose example's clipped gradient is 0, which "
    "the substitution analysis covers (docs/privacy.md, Neighbouring relations)"
)


# What no ledger covers, said in every private ledger's "holds" (ledgers written before it lack it: with_current_text).
NOT_PRIVATE = (
    "; not private: inference and evaluation, which read the whole graph (every node's prediction, the validation "
    "and test scores)"
)


def current_guarantee(guarantee: Any) -> Any:
    """A stated guarantee (a ledger's or its metrics.json's) as this version words it: a private one written before
    its "holds" named what is not private (``NOT_PRIVATE``) gets that sentence, so that it verifies and compares
    like a new one. Only wording: no number or class changes. Anything else is returned as given."""
    if not isinstance(guarantee, Mapping) or guarantee.get("class") in (None, "none"):
        return guarantee
    holds = guarantee.get("holds")
    if isinstance(holds, str) and not holds.endswith(NOT_PRIVATE):
        return {**guarantee, "holds": holds + NOT_PRIVATE}
    return guarantee


def with_current_text(d: Mapping[str, Any]) -> dict[str, Any]:
    """A ledger dict with its guarantee worded as this version words it (``current_guarantee``)."""
    return {**d, "guarantee": current_guarantee(d["guarantee"])} if "guarantee" in d else dict(d)


@dataclass(frozen=True)
class UnchargedRead:
    """A read of private data that no mechanism pays for: the ledger's ε does not cover it."""

    name: str
    touches: tuple[str, ...]
    reason: str  # what was read and why it is not charged

    def __post_init__(self) -> None:
        if not self.name or not self.reason:
            raise ValueError(f"an uncharged read needs a name and a reason, got {self.name!r}, {self.reason!r}")
        touches = tuple(self.touches)
        if not touches or not set(touches) <= set(TOUCHABLE) or len(set(touches)) != len(touches):
            raise ValueError(
                f"{self.name}: touches must be a non-empty subset of {list(TOUCHABLE)} without repeats, got {touches}"
            )
        object.__setattr__(self, "touches", touches)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "touches": list(self.touches), "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UnchargedRead:
        return cls(name=d["name"], touches=tuple(d["touches"]), reason=d["reason"])


@dataclass(frozen=True)
class Ledger:
    """A run's privacy contract: its level, target (ε, δ), accountant and mechanisms."""

    level: str
    target_epsilon: float
    target_delta: float
    mechanisms: tuple[MechanismRecord, ...]
    accountant: str = "rdp"
    uncharged: tuple[UnchargedRead, ...] = ()
    node_sample_rate: float = (
        1.0  # q: the mechanisms ran on a Poisson node sample of rate q (docs/design/accounting.md)
    )
    degree_bound: DegreeBound | None = None  # the degree bound the mechanisms' sensitivities rest on, if any
    claim: Claim | None = None  # reference mode: the paper's own figure for this noise (docs/design/accounting.md)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"unknown privacy level {self.level!r}; valid levels: {list(LEVELS)}")
        if self.accountant not in ACCOUNTANTS:
            raise ValueError(f"unknown accountant {self.accountant!r}; valid choices: {list(ACCOUNTANTS)}")
        mechanisms = tuple(self.mechanisms)
        for record in mechanisms:
            if not isinstance(record, MechanismRecord):
                raise TypeError(f"mechanisms must be MechanismRecords, got {type(record).__name__}")
        object.__setattr__(self, "mechanisms", mechanisms)
        uncharged = tuple(self.uncharged)
        for read in uncharged:
            if not isinstance(read, UnchargedRead):
                raise TypeError(f"uncharged must hold UnchargedReads, got {type(read).__name__}")
        object.__setattr__(self, "uncharged", uncharged)
        rate = self.node_sample_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
            raise ValueError(f"node_sample_rate must be a number in (0, 1], got {rate!r}")
        object.__setattr__(self, "node_sample_rate", float(rate))
        if self.degree_bound is not None and not isinstance(self.degree_bound, DegreeBound):
            raise TypeError(f"degree_bound must be a DegreeBound or None, got {type(self.degree_bound).__name__}")
        if self.degree_bound is not None and self.level != "node":
            raise ValueError(f"a degree bound qualifies node-level guarantees only; this ledger is {self.level!r}")
        if self.claim is not None:
            if not isinstance(self.claim, Claim):
                raise TypeError(f"claim must be a Claim or None, got {type(self.claim).__name__}")
            if not self.private or self.claim.epsilon != self.target_epsilon:
                raise ValueError(
                    f"a claim belongs to a private ledger whose target is the claimed ε; got level "
                    f"{self.level!r}, target ε = {self.target_epsilon}, claimed {self.claim.epsilon}"
                )
            if not self.claim.delta < self.node_sample_rate:
                raise ValueError(
                    f"claimed δ = {self.claim.delta:g} must be below node_sample_rate = {self.node_sample_rate:g}"
                )
        if not self.private:
            if self.target_epsilon != math.inf or self.target_delta != 0 or mechanisms or uncharged:
                raise ValueError(
                    "a non-private ledger (level 'none') has target ε = inf, δ = 0, no mechanisms "
                    "and no uncharged reads; "
                    "use Ledger.non_private()"
                )
            return
        if not (math.isfinite(self.target_epsilon) and self.target_epsilon > 0):
            raise ValueError(f"a private ledger needs a finite target_epsilon > 0, got {self.target_epsilon}")
        if not 0 <= self.target_delta < 1:
            raise ValueError(f"target_delta must be in [0, 1), got {self.target_delta}")
        if not self.target_delta < self.node_sample_rate:
            raise ValueError(
                f"target_delta = {self.target_delta:g} must be below node_sample_rate = {self.node_sample_rate:g}: "
                "the mechanisms on the sample are accounted at δ/q, which must be < 1"
            )

    @property
    def private(self) -> bool:
        return self.level != "none"

    @property
    def reference(self) -> bool:
        """Whether the noise was sized by a paper's own accounting (``claim``), not calibrated to the target."""
        return self.claim is not None

    @property
    def fully_accounted(self) -> bool:
        """Whether every read of private data is charged (no uncharged reads)."""
        return not self.uncharged

    @property
    def guarantee_class(self) -> str:
        """One of ``GUARANTEE_CLASSES`` (docs/design/accounting.md): a function of the plan, never of the data."""
        if not self.private:
            return "none"
        if self.level == "edge":
            return "edge"
        return "unconditional" if self.degree_bound is None and not self.uncharged else "conditional"

    def guarantee(self) -> dict[str, Any]:
        """The guarantee stated as data: class, neighbouring relation, degree bound and what holds where."""
        bound = self.degree_bound
        if not self.private:
            holds = "no privacy guarantee (non-private baseline)"
        elif bound is None:
            holds = f"({self.level}-level DP) for every pair of neighbouring graphs"
        else:
            holds = (
                f"node-level DP for every pair of neighbouring graphs whose {bound.condition()}; for other "
                "pairs, conditionally on the sampled edge list (neighbours compared on the same sampled "
                "edges), as in the papers"
            )
        if self.private and self.uncharged:
            holds += (
                "; it does not cover the uncharged reads ("
                + ", ".join(r.name for r in self.uncharged)
                + "), whose outputs it takes as given"
            )
        if self.private:
            holds += NOT_PRIVATE
        return {
            "class": self.guarantee_class,
            "relation": SUBSTITUTION_RELATION if self.relation == "substitution" else _RELATIONS.get(self.level),
            "degree_bound": None if bound is None else bound.to_dict(),
            "holds": holds,
        }

    @property
    def relation(self) -> str:
        """The neighbouring relation its records are accounted under: "substitution" where a record says so
        (``params["relation"]``), else "add/remove" (every other method's)."""
        if any(m.params.get("relation") == "substitution" for m in self.mechanisms):
            return "substitution"
        return "add/remove"

    @classmethod
    def non_private(cls) -> Ledger:
        """The ledger of a non-private baseline: ε = ∞, nothing recorded."""
        return cls(level="none", target_epsilon=math.inf, target_delta=0.0, mechanisms=())

    def composed(self) -> tuple[float, float]:
        """(ε, δ) of the whole composition; (inf, 0) when non-private.

        DpEvents are composed by the accountant at ``target_delta``; with
        RDP-curve mechanisms (rdp accountant only) their curves add to the
        events' RDP before the one conversion. Pure-ε terms add to ε with δ
        unchanged (basic composition). δ is 0 when every mechanism is pure-ε.
        With a ``node_sample_rate`` q < 1 that is done at δ/q and amplified
        (docs/design/accounting.md).
        """
        return self.composed_at(self.target_delta)

    def composed_at(self, delta: float) -> tuple[float, float]:
        """``composed`` at another δ (a reference run's ε at its paper's δ)."""
        if not self.private:
            return math.inf, 0.0
        q = self.node_sample_rate
        if not 0 <= delta < q:
            raise ValueError(f"δ = {delta:g} must be in [0, node_sample_rate = {q:g})")
        epsilon, spent = self._composed_on_sample(delta / q)
        if q == 1.0:
            return epsilon, spent
        return amplify_epsilon(epsilon, rate=q), delta if spent > 0 else 0.0

    def actual_claim_epsilon(self) -> float | None:
        """A reference run's ε at its paper's δ, under the suite's accountant; None without a claim."""
        return None if self.claim is None else self.composed_at(self.claim.delta)[0]

    def composed_on_sample(self) -> tuple[float, float]:
        """(ε_in, δ_in): the composition on the node sample, before amplification (= ``composed`` when q = 1)."""
        if not self.private:
            return math.inf, 0.0
        return self._composed_on_sample(self.target_delta / self.node_sample_rate)

    def _composed_on_sample(self, target_delta: float) -> tuple[float, float]:
        # A pure function of the records (their repr spells every parameter), the accountant and δ: calibration
        # composes the same candidate ledgers for every seed of an ε, and a ledger is read several times.
        key = (repr(self.mechanisms), self.accountant, float(target_delta))
        return _COMPOSED.get(key, lambda: self._compose_on_sample(target_delta))

    def _compose_on_sample(self, target_delta: float) -> tuple[float, float]:
        events = [r.dp_event for r in self.mechanisms if r.dp_event is not None]
        curves = [r for r in self.mechanisms if r.kind in RDP_CURVES]
        own_plds = [r for r in self.mechanisms if r.kind in PLD_CURVES]
        pure = math.fsum(r.pure_epsilon for r in self.mechanisms if r.pure_epsilon is not None)
        if not events and not curves and not own_plds:
            return pure, 0.0
        if target_delta <= 0:
            raise ValueError("this ledger holds DpEvents or RDP curves, which need a target_delta in (0, 1); it is 0")
        if own_plds and self.accountant != "pld":
            raise ValueError(
                f"mechanism kinds {sorted({r.kind for r in own_plds})} are accounted by their own PLD only "
                f"(no RDP curve); use accountant 'pld', not {self.accountant!r}"
            )
        if self.accountant == "pld":
            kinds = sorted({r.kind for r in curves} - set(MIXTURE_PLD_KINDS))
            if kinds:
                raise ValueError(
                    f"mechanism kinds {kinds} are accounted by their own RDP curves and have no PLD; "
                    "use accountant 'rdp'"
                )
            plds = [pld_of_event(e) for e in events] + [mixture_pld_of_params(r.kind, r.params) for r in curves]
            plds += [PLD_CURVES[r.kind][0](r.params) for r in own_plds]
            return epsilon_pld(plds, delta=target_delta) + pure, target_delta
        if not curves:
            event = events[0] if len(events) == 1 else compose(events)
            return epsilon_of(event, delta=target_delta, accountant=self.accountant) + pure, target_delta
        rdp = sum((RDP_CURVES[r.kind](r.params, RDP_ORDERS) for r in curves), start=_events_rdp(events))
        epsilon = float(compute_epsilon(list(RDP_ORDERS), list(rdp), target_delta)[0])
        return epsilon + pure, target_delta

    def check(self) -> None:
        """Raise unless the ledger is a valid spend within its target."""
        if not self.private:
            return
        if not self.mechanisms:
            raise ValueError(f"a private ({self.level}-level) ledger must record at least one mechanism")
        for record in self.mechanisms:
            check_record(record)  # every cost rebuilt from its raw params, never trusted
        epsilon, _ = self.composed()
        if self.claim is not None:
            return  # reference mode: its ε may exceed the claimed one; that is what it measures
        if not epsilon <= self.target_epsilon * (1 + _BUDGET_SLACK):
            names = ", ".join(r.name for r in self.mechanisms)
            raise PrivacyBudgetExceeded(
                f"composed ε = {epsilon:.6g} exceeds the target ε = {self.target_epsilon:g} "
                f"(δ = {self.target_delta:g}, accountant {self.accountant!r}; mechanisms: {names})"
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (``inf`` as the string "inf"), with the composed ε and δ."""
        epsilon, delta = self.composed()
        return {
            "private": self.private,
            "level": self.level,
            "accountant": self.accountant,
            "epsilon": _float_to_json(epsilon),
            "delta": delta,
            "target": {"epsilon": _float_to_json(self.target_epsilon), "delta": self.target_delta},
            "mechanisms": [record.to_dict() for record in self.mechanisms],
            "uncharged": [read.to_dict() for read in self.uncharged],
            "fully_accounted": self.fully_accounted,
            "node_sample_rate": self.node_sample_rate,
            "guarantee": self.guarantee(),
            "claim": None
            if self.claim is None
            else {**self.claim.to_dict(), "actual_epsilon": _float_to_json(self.composed_at(self.claim.delta)[0])},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Ledger:
        """Inverse of ``to_dict``; the stored "epsilon", "delta" and "fully_accounted" are ignored
        (they are derived). A dict without "uncharged" (older ledgers) has none, and
        one without "node_sample_rate" ran on the whole graph."""
        return cls(
            level=d["level"],
            target_epsilon=_float_from_json(d["target"]["epsilon"]),
            target_delta=float(d["target"]["delta"]),
            mechanisms=tuple(MechanismRecord.from_dict(m) for m in d["mechanisms"]),
            accountant=d["accountant"],
            uncharged=tuple(UnchargedRead.from_dict(u) for u in d.get("uncharged", ())),
            node_sample_rate=d.get("node_sample_rate", 1.0),
            degree_bound=None
            if (d.get("guarantee") or {}).get("degree_bound") is None
            else DegreeBound.from_dict(d["guarantee"]["degree_bound"]),
            claim=None if d.get("claim") is None else Claim.from_dict(d["claim"]),
        )


def _events_rdp(events: Sequence[DpEvent]) -> np.ndarray:
    """The composed RDP of ``events`` at ``RDP_ORDERS``, as the rdp accountant computes it."""
    accountant = RdpAccountant(orders=list(RDP_ORDERS))
    for event in events:
        try:
            accountant.compose(event)
        except UnsupportedEventError as err:
            raise ValueError(f"the 'rdp' accountant cannot account {type(event).__name__}: {err}") from err
    return accountant.rdp


def verify_ledger_dict(d: Mapping[str, Any]) -> float:
    """Recompute a stored ledger's ε from its mechanisms; raise if it overspends or disagrees.

    Returns the recomputed ε (inf for a non-private ledger). Raises
    ``PrivacyBudgetExceeded`` when that ε exceeds the target (unless the ledger
    carries a reference-mode ``claim``) or differs from the stored "epsilon" (or a
    claim's stored "actual_epsilon") by more than a relative 1e-6, and ``ValueError`` (or
    ``KeyError``) for a malformed ledger or a stored "fully_accounted" that
    contradicts its uncharged reads (absent in older ledgers: accepted).
    """
    ledger = Ledger.from_dict(d)
    if d.get("private") is not ledger.private:
        raise ValueError(f"ledger says private = {d.get('private')!r} but its level is {ledger.level!r}")
    if "fully_accounted" in d and d["fully_accounted"] is not ledger.fully_accounted:
        raise ValueError(
            f"ledger says fully_accounted = {d['fully_accounted']!r} but it records "
            f"{len(ledger.uncharged)} uncharged read(s)"
        )
    if ledger.private and "guarantee" not in d:
        raise ValueError("ledger states no guarantee (written before guarantee classes existed): rerun the cell")
    if "nodes_over" in ((d.get("guarantee") or {}).get("degree_bound") or {}):
        raise ValueError(
            "ledger states nodes_over, a count of its private input, and a guarantee class derived "
            "from it (written before guarantees were a function of the plan): rerun the cell"
        )
    d = with_current_text(d)
    if "guarantee" in d and d["guarantee"] != ledger.guarantee():
        raise ValueError(
            f"ledger states the guarantee {d['guarantee']!r}, but its degree bound and level give "
            f"{ledger.guarantee()!r}"
        )
    ledger.check()
    epsilon, delta = ledger.composed()
    if d["delta"] != delta:
        raise PrivacyBudgetExceeded(f"stored δ = {d['delta']!r} does not match the composed δ = {delta!r}")
    stored = _float_from_json(d["epsilon"])
    if epsilon == math.inf or stored == math.inf:
        agree = epsilon == stored
    else:
        agree = math.isclose(epsilon, stored, rel_tol=VERIFY_RTOL, abs_tol=1e-12)
    if not agree:
        raise PrivacyBudgetExceeded(
            f"stored ε = {stored!r} does not match the ε recomputed from the mechanisms, {epsilon!r}"
        )
    if ledger.claim is not None:
        actual, stored = ledger.composed_at(ledger.claim.delta)[0], _float_from_json(d["claim"]["actual_epsilon"])
        if not (actual == stored or math.isclose(actual, stored, rel_tol=VERIFY_RTOL, abs_tol=1e-12)):
            raise PrivacyBudgetExceeded(
                f"stored ε at the claimed δ = {stored!r} does not match the ε recomputed "
                f"from the mechanisms, {actual!r}"
            )
    return epsilon


def write_ledger(ledger: Ledger, path: str | os.PathLike[str]) -> Path:
    """Write ``ledger.to_dict()`` as JSON atomically, with an ordinary file's permissions (``nodedp.io``)."""
    from nodedp.io import atomic_write

    text = json.dumps(ledger.to_dict(), indent=2, allow_nan=False) + "\n"
    return atomic_write(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_ledger(path: str | os.PathLike[str]) -> Ledger:
    return Ledger.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
