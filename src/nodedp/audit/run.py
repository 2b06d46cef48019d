"""One audited training run: plant canaries, train the method once on the private graph, score every canary,
and turn the scores into empirical lower bounds on ε beside the ledger's ε.

A canary's score is the trained model's log-probability of the canary's (deliberately wrong) label, from its
inference on the graph holding *every* canary (``RunResult.predict``): a model that memorised an included canary
gives it more. With canaries in feature columns of their own (the default), the score is taken against the same
canary as the zero input, which removes what the model predicts for an input it never saw. The lower bounds
(``nodedp.audit.statistics``) are taken at the ledger's δ, so for a correct method and a correct ledger the one-run
bound must stay at or below the ledger's ε with the stated confidence.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from nodedp.audit.canaries import default_canary_count, plant_canaries
from nodedp.audit.statistics import (
    OneRunBound,
    ThresholdBound,
    attack_auc,
    clopper_pearson_epsilon,
    epsilon_one_run,
    tpr_at_fpr,
)

__all__ = ["AuditResult", "audit_run", "canary_scores"]


@dataclass(frozen=True)
class AuditResult:
    method: str
    claimed_epsilon: float  # what the run's ledger states (its composed ε)
    delta: float  # the ledger's δ, at which the bounds are taken
    canaries: int
    included: int
    one_run: OneRunBound
    threshold: ThresholdBound
    auc: float
    tpr_at_1pct_fpr: float
    test_accuracy: float
    wall_seconds: float

    @property
    def violated(self) -> bool:
        """Whether the one-run lower bound exceeds the ledger's ε: the method or its ledger is wrong."""
        return self.one_run.epsilon > self.claimed_epsilon

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method, "claimed_epsilon": self.claimed_epsilon, "delta": self.delta,
            "canaries": self.canaries, "included": self.included,
            "epsilon_lower_one_run": self.one_run.epsilon, "confidence": self.one_run.confidence,
            "one_run_guesses": self.one_run.guesses, "one_run_correct": self.one_run.correct,
            "epsilon_lower_threshold": self.threshold.epsilon, "auc": self.auc,
            "tpr_at_1pct_fpr": self.tpr_at_1pct_fpr, "test_accuracy": self.test_accuracy,
            "wall_seconds": self.wall_seconds, "violated": self.violated,
        }


def canary_scores(logits: torch.Tensor, canaries: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The log-probability each canary's row of ``logits`` gives its own label (higher: more likely trained on)."""
    if logits.dim() != 2 or logits.size(0) <= int(canaries.max()):
        raise ValueError(f"logits of shape {tuple(logits.shape)} do not cover canary ids up to {int(canaries.max())}")
    log_probs = torch.log_softmax(logits.float().cpu(), dim=1)
    return log_probs[canaries.cpu(), labels.cpu()]


def audit_run(inputs: Any, spec: Any, hparams: Any, *, method: str, degree_bound: int, m: int | None = None,
              seed: int = 0, confidence: float = 0.95, own_column: float = 3.0) -> AuditResult:
    """Audit ``method`` (a registry id) on ``inputs`` (``RunInputs`` of the original graph and split): plant
    ``m`` canaries (default ``default_canary_count``) within ``degree_bound``, train once with ``spec`` and
    ``hparams`` (the method's parsed hyperparameters) on the private graph, score every canary and bound ε.
    ``own_column`` > 0 (default 3): each canary in a feature column of its own, scored against the zero input
    (``plant_canaries``; the design that caught DP-SGD with its noise divided by 10); 0: planted rows."""
    from nodedp.methods import get_method
    from nodedp.methods.base import RunInputs

    info = get_method(method)
    if not info.private:
        raise ValueError(f"method {method!r} is not private: there is no ε to audit")
    if info.needs:
        raise ValueError(f"method {method!r} needs structure artifacts {list(info.needs)}; the audit builds none "
                         "yet (audited so far: methods that read only features and labels)")
    start = time.perf_counter()
    graph, split = inputs.graph, inputs.split
    m = default_canary_count(graph.num_nodes) if m is None else m
    plan = plant_canaries(graph, split, m=m, degree_bound=degree_bound, num_classes=inputs.num_classes, seed=seed,
                          own_column=own_column)
    private_graph, private_split, _ = plan.private_graph()
    result = info.run(RunInputs(graph=private_graph, split=private_split, num_classes=inputs.num_classes), spec,
                      hparams)
    if result.predict is None:
        raise ValueError(f"method {method!r} does not offer inference on another graph (RunResult.predict)")
    scores = canary_scores(result.predict(plan.graph), plan.canaries, plan.labels)
    if own_column > 0:
        scores = scores - canary_scores(result.predict(plan.baseline_graph()), plan.canaries, plan.labels)
    scores = scores.numpy()
    included = plan.included.numpy()
    claimed, delta = result.ledger.composed()
    if not math.isfinite(claimed):
        raise ValueError(f"method {method!r}: its ledger states ε = {claimed}; nothing to audit")
    return AuditResult(
        method=method, claimed_epsilon=claimed, delta=delta, canaries=m, included=int(included.sum()),
        one_run=epsilon_one_run(scores, included, delta=delta, confidence=confidence, seed=seed),
        threshold=clopper_pearson_epsilon(scores, included, delta=delta, confidence=confidence),
        auc=attack_auc(scores, included), tpr_at_1pct_fpr=tpr_at_fpr(scores, included, fpr=0.01),
        test_accuracy=float(result.test["accuracy"]), wall_seconds=time.perf_counter() - start,
    )
