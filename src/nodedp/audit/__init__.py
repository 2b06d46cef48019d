"""Empirical privacy audits: canary scores in, lower bounds on ε and attack metrics out.

``statistics`` is torch-free (numpy and scipy only); the one-run bound follows Steinke, Nasr &
Jagielski (2023), "Privacy Auditing with One (1) Training Run". ``canaries`` plants the canary nodes
(torch, imported from ``nodedp.audit.canaries`` directly, so the statistics stay torch-free).
"""

from __future__ import annotations

from nodedp.audit.statistics import (
    OneRunBound,
    ThresholdBound,
    attack_auc,
    clopper_pearson_epsilon,
    default_guess_grid,
    epsilon_from_counts,
    epsilon_one_run,
    one_run_p_value,
    tpr_at_fpr,
)

__all__ = [
    "OneRunBound",
    "ThresholdBound",
    "attack_auc",
    "clopper_pearson_epsilon",
    "default_guess_grid",
    "epsilon_from_counts",
    "epsilon_one_run",
    "one_run_p_value",
    "tpr_at_fpr",
]
