"""One audited training run: plant canaries, train the method once on the private graph, score every canary,
and turn the scores into empirical lower bounds on ε beside the ledger's (or a reference run's paper's) ε.

Structure artifacts are built on the private graph as the workflow builds them for a cell; canaries are wired
within the identity bound of every bounding the method runs. Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch

from nodedp.audit.canaries import CanaryPlan, default_canary_count, plant_canaries
from nodedp.audit.executed import executed_params
from nodedp.audit.releases import RELEASES, ReleaseDraw
from nodedp.audit.statistics import (
    OneRunBound,
    ThresholdBound,
    attack_auc,
    clopper_pearson_epsilon,
    epsilon_one_run,
    tpr_at_fpr,
)
from nodedp.mechanisms.trace import trace_noise

__all__ = ["AuditResult", "audit_run", "canary_degree_bound", "canary_scores", "method_trainer"]


@dataclass(frozen=True)
class AuditResult:
    method: str
    claimed_epsilon: float  # the ε the run states: the ledger's composed ε, or a reference run's paper claim
    ledger_epsilon: float  # the suite's ε of the run at ``delta`` (= claimed_epsilon unless a reference run)
    delta: float  # the δ of the claim, at which the bounds are taken
    accounting: str  # "suite", or "paper" for a reference run audited against its paper's claim
    guarantee: str  # the ledger's guarantee class (unconditional, conditional, edge)
    canaries: int
    included: int
    canary_degree_bound: int  # every canary edge is within this degree (kept by the method's bounding)
    one_run: OneRunBound
    threshold: ThresholdBound
    auc: float
    tpr_at_1pct_fpr: float
    test_accuracy: float
    wall_seconds: float
    # Every canary's score and inclusion bit, in canary order: a report pools the canaries of several seeds'
    # audits into one bound (each canary's inclusion touches one run only, so the runs together are one
    # mechanism on all their canaries).
    scores: tuple[float, ...] = ()
    inclusion: tuple[bool, ...] = ()
    # What was scored: "model" (the trained model's predictions), "nap-release" (the run's NAP noise on the
    # graph that reaches its sensitivity, ``nodedp.audit.nap``) or "dpsgd-release" (its DP-SGD noise against a
    # Dirac canary, ``nodedp.audit.dpsgd``); a model audit carries its run's release audits where its ledger
    # records those mechanisms.
    target: str = "model"
    # The run's white-box release audits (``nodedp.audit.releases``), by release name, where its ledger records
    # releases they cover; a release audit's ``label`` names it in the tables.
    releases: Mapping[str, AuditResult] = field(default_factory=dict)
    label: str | None = None
    # "one-run": canaries share one run, the one-run bound is ε̂; "runs": one canary per independent run (a
    # DP-SGD release), the Clopper–Pearson threshold bound is valid and is ε̂.
    bound: str = "one-run"
    # A release audit's draw: the parameters the run executed where its noise trace covers the record
    # (``nodedp.audit.executed``: noise std, and what the sensitivity is made of), empty where it was drawn with
    # the record's own.
    executed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def lower_bound(self) -> float:
        """ε̂: the one-run bound, or for independent runs the threshold bound."""
        return self.threshold.epsilon if self.bound == "runs" else self.one_run.epsilon

    @property
    def violated(self) -> bool:
        """Whether ε̂ (``lower_bound``) exceeds the claimed ε: the method or its ledger (or, for a reference
        run, its paper's accounting) is wrong, with the bound's confidence."""
        return self.lower_bound > self.claimed_epsilon

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "claimed_epsilon": self.claimed_epsilon,
            "ledger_epsilon": self.ledger_epsilon,
            "delta": self.delta,
            "accounting": self.accounting,
            "guarantee": self.guarantee,
            "canaries": self.canaries,
            "included": self.included,
            "canary_degree_bound": self.canary_degree_bound,
            "epsilon_lower_one_run": self.one_run.epsilon,
            "confidence": self.one_run.confidence,
            "one_run_guesses": self.one_run.guesses,
            "one_run_correct": self.one_run.correct,
            "epsilon_lower_threshold": self.threshold.epsilon,
            "auc": self.auc,
            "tpr_at_1pct_fpr": self.tpr_at_1pct_fpr,
            "test_accuracy": self.test_accuracy,
            "wall_seconds": self.wall_seconds,
            "violated": self.violated,
            "scores": list(self.scores),
            "inclusion": list(self.inclusion),
            "target": self.target,
            "releases": {name: release.as_dict() for name, release in self.releases.items()},
            "label": self.label,
            "bound": self.bound,
            "executed": dict(self.executed),
            "epsilon_lower": self.lower_bound,
        }


def canary_scores(logits: torch.Tensor, canaries: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The log-probability each canary's row of ``logits`` gives its own label (higher: more likely trained on)."""
    if logits.dim() != 2 or logits.size(0) <= int(canaries.max()):
        raise ValueError(f"logits of shape {tuple(logits.shape)} do not cover canary ids up to {int(canaries.max())}")
    log_probs = torch.log_softmax(logits.float().cpu(), dim=1)
    return log_probs[canaries.cpu(), labels.cpu()]


def canary_degree_bound(needs: tuple[str, ...], bounds: Mapping[str, int]) -> int:
    """The degree canaries are wired within: the smallest identity bound of the degree boundings the method runs
    (``nodedp.data.identity_bound``), else the out-degree bound D (methods that read no edges: any bound does)."""
    from nodedp.data import BOUND_KINDS, identity_bound

    kinds = [kind for kind in needs if kind in BOUND_KINDS]
    if not kinds:
        return int(bounds["out-degree"])
    return min(identity_bound(kind, int(bounds[kind])) for kind in kinds)


def method_trainer(
    info: Any, spec: Any, hparams: Any, *, bounds: Mapping[str, int], num_classes: int, dataset: str | None = None
) -> Callable[[Any, Any], Any]:
    """``train(graph, split) -> RunResult``: the method ``info`` (a registry entry) run once on ``graph``, with
    the structure artifacts it needs built on that graph as the workflow builds them for the cell ``spec``
    (degree bounding at ``bounds`` with the cell's seed, inductive splits without their cross-split edges;
    DP-APPR at the cell's ε, δ and seed, ``dataset`` naming the paper's δ for a reference run)."""
    from nodedp.contract.base import RunInputs
    from nodedp.data import degree_artifact, remove_cross_split_edges

    def train(graph: Any, split: Any) -> Any:
        structure: dict[str, Any] = {}
        for kind in info.needs:
            if kind == "dp-appr":
                from nodedp.methods.dpar import build_dp_appr

                cell = dataclasses.replace(spec, method=info.name, dataset=dataset or "")
                structure[kind] = build_dp_appr(graph, split, cell, hparams)
                continue
            edges = graph.edge_index
            if split.setting == "inductive":
                edges = remove_cross_split_edges(edges, split)
            structure[kind] = degree_artifact(
                edges,
                kind=kind,
                bound=int(bounds[kind]),
                seed=spec.seed,
                num_nodes=graph.num_nodes,
                train_nodes=split.train,
            )
        return info.run(
            RunInputs(graph=graph, split=split, num_classes=num_classes, structure=structure), spec, hparams
        )

    return train


def audit_run(
    inputs: Any,
    spec: Any,
    hparams: Any,
    *,
    method: str,
    bounds: Mapping[str, int],
    m: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    own_column: float = 3.0,
    dataset: str | None = None,
    releases: bool = True,
) -> AuditResult:
    """Audit ``method`` (a registry id) on ``inputs`` (``RunInputs`` of the original graph and split): plant
    ``m`` canaries (default ``default_canary_count`` at the run's δ) within ``canary_degree_bound``, train once
    with ``spec`` and ``hparams`` (the method's parsed hyperparameters) on the private graph, its structure built at
    the public ``bounds`` (``nodedp.contract.structure.structure_bounds``), score every canary and bound ε.
    ``own_column`` > 0 (default 3): each canary in a feature column of its own, scored against the zero input
    (``plant_canaries``; the design that caught DP-SGD with its noise divided by 10); 0: planted rows.
    ``releases``: also audit white-box every release its ledger records (``nodedp.audit.releases``: NAP over
    ``RELEASE_RUNS`` synthetic canaries, DP-SGD over ``RELEASE_RUNS`` simulated runs, ...) into
    ``AuditResult.releases``, NAP and DP-SGD drawn as the run drew them (its noise trace,
    ``nodedp.audit.executed``)."""
    from nodedp.contract.registry import get_method

    info = get_method(method)
    if not info.private:
        raise ValueError(f"method {method!r} is not private: there is no ε to audit")
    if info.level != "node":
        raise ValueError(
            f"method {method!r} is {info.level}-level private; the canaries are nodes (node-level audits only)"
        )
    start = time.perf_counter()
    graph, split = inputs.graph, inputs.split
    m = default_canary_count(graph.num_nodes, spec.target_delta) if m is None else m
    bound = canary_degree_bound(info.needs, bounds)
    plan = plant_canaries(
        graph, split, m=m, degree_bound=bound, num_classes=inputs.num_classes, seed=seed, own_column=own_column
    )
    private_graph, private_split, _ = plan.private_graph()
    train = method_trainer(info, spec, hparams, bounds=bounds, num_classes=inputs.num_classes, dataset=dataset)
    with trace_noise() as trace:  # what the run's NAP and DP-SGD drew, as drawn (nodedp.mechanisms.trace)
        result = train(private_graph, private_split)
    if result.predict is None:
        raise ValueError(f"method {method!r} does not offer inference on another graph (RunResult.predict)")
    scores = _planted_scores(plan, result.predict, own_column)
    audit = _Audit(result.ledger, method, float(result.test["accuracy"]), confidence, seed)
    audited = _release_audits(audit, bound, executed_params(result.ledger, trace)) if releases else {}
    return audit.bounded(
        scores.numpy(),
        plan.included.numpy(),
        target="model",
        degree_bound=bound,
        start=start,
        releases=audited,
    )


def _planted_scores(plan: CanaryPlan, predict: Callable[..., Any], own_column: float) -> torch.Tensor:
    """Every canary's score, on the graph holding every canary laid out as an extension of the training input,
    every canary read alike whatever its bit (``CanaryPlan.scoring_graph``); with ``own_column`` > 0, less its
    score against the zero input."""
    scoring, parts, ids = plan.scoring_graph()
    scores = canary_scores(predict(scoring, parts), ids, plan.labels)
    if own_column > 0:
        baseline, parts, ids = plan.scoring_graph(baseline=True)
        scores = scores - canary_scores(predict(baseline, parts), ids, plan.labels)
    return scores


def _release_audits(
    audit: _Audit, degree_bound: int, executed: Mapping[str, Mapping[str, Any]]
) -> dict[str, AuditResult]:
    """The white-box audits of every release the run's ledger records (``nodedp.audit.releases``), by name; a
    record the run's noise trace covers is drawn with the parameters the run executed (``executed``, from
    ``nodedp.audit.executed``), the others with the record's."""
    draw = ReleaseDraw(audit.ledger, _claimed(audit.ledger)[1], audit.confidence, audit.seed)
    audited = {}
    for release in RELEASES:
        records = release.records(audit.ledger)
        for record in records:
            # Several records of one kind (a DP-SGD stage each): named by the last part of the record's name.
            part = record.name.rsplit(":", 1)[-1] if len(records) > 1 else ""
            start = time.perf_counter()
            drawn = executed.get(record.name)
            if drawn is not None:  # the release as the run drew it: the record's parameters, executed ones over them
                record = SimpleNamespace(name=record.name, kind=record.kind, params={**record.params, **drawn})
            scores, bits = release.scores(draw, record)
            audited[f"{release.name}:{part}" if part else release.name] = audit.bounded(
                scores.numpy(),
                bits.numpy(),
                target=f"{release.name}-release",
                degree_bound=int(record.params.get("max_degree") or degree_bound),
                start=start,
                bound_kind=release.bound,
                label=f"{release.label} ({part})" if part else release.label,
                executed=dict(drawn or {}),
            )
    return audited


def _claimed(ledger: Any) -> tuple[float, float, float]:
    """(ε, δ) the run states and the suite's ε there: the ledger's composed (ε, δ), or for a reference run its
    paper's claim and the actual ε at the claim's δ."""
    if ledger.claim is not None:
        return ledger.claim.epsilon, ledger.claim.delta, ledger.actual_claim_epsilon()
    epsilon, delta = ledger.composed()
    return epsilon, delta, epsilon


@dataclass(frozen=True)
class _Audit:
    """What every bound of one audited run shares: the run's ledger, its method and test accuracy, the
    confidence and the seed."""

    ledger: Any
    method: str
    test_accuracy: float
    confidence: float
    seed: int

    def bounded(
        self,
        scores: Any,
        included: Any,
        *,
        target: str,
        degree_bound: int,
        start: float,
        bound_kind: str = "one-run",
        releases: Mapping[str, AuditResult] | None = None,
        label: str | None = None,
        executed: Mapping[str, Any] | None = None,
    ) -> AuditResult:
        """The bounds of one audit from its scores and inclusion bits, against the ε the run's ledger states
        (a reference run's paper claim, at the paper's δ)."""
        ledger, confidence, seed = self.ledger, self.confidence, self.seed
        claimed, delta, ledger_epsilon = _claimed(ledger)
        if not math.isfinite(claimed):
            raise ValueError(f"method {self.method!r}: its ledger states ε = {claimed}; nothing to audit")
        return AuditResult(
            method=self.method,
            claimed_epsilon=claimed,
            ledger_epsilon=ledger_epsilon,
            delta=delta,
            accounting="paper" if ledger.claim is not None else "suite",
            guarantee=ledger.guarantee_class,
            canaries=len(scores),
            included=int(included.sum()),
            canary_degree_bound=degree_bound,
            one_run=epsilon_one_run(scores, included, delta=delta, confidence=confidence, seed=seed),
            threshold=clopper_pearson_epsilon(scores, included, delta=delta, confidence=confidence),
            auc=attack_auc(scores, included),
            tpr_at_1pct_fpr=tpr_at_fpr(scores, included, fpr=0.01),
            test_accuracy=self.test_accuracy,
            wall_seconds=time.perf_counter() - start,
            scores=tuple(float(v) for v in scores),
            inclusion=tuple(bool(v) for v in included),
            target=target,
            releases=dict(releases or {}),
            label=label,
            bound=bound_kind,
            executed=dict(executed or {}),
        )
