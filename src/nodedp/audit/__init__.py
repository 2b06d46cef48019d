"""Empirical privacy audits: canary scores in, lower bounds on ε and attack metrics out.

``statistics`` is torch-free (numpy and scipy only); the one-run bound follows Steinke, Nasr &
Jagielski (2023), "Privacy Auditing with One (1) Training Run". ``canaries`` plants the canary nodes
(torch, imported from ``nodedp.audit.canaries`` directly, so the statistics stay torch-free).
"""

from __future__ import annotations

from nodedp.audit import statistics
from nodedp.audit.statistics import *  # noqa: F403 (the package face: the statistics' names)

__all__ = list(statistics.__all__)
