"""From finished runs to paper artifacts: collection, bootstrap summaries, tables, figures."""

from __future__ import annotations

from nodedp.analysis.bootstrap import bootstrap_ci, summarize
from nodedp.analysis.collect import InvalidRunError, collect_runs, write_runs
from nodedp.analysis.figures import plot_accuracy_vs_epsilon
from nodedp.analysis.tables import write_tables

__all__ = [
    "InvalidRunError",
    "bootstrap_ci",
    "collect_runs",
    "plot_accuracy_vs_epsilon",
    "summarize",
    "write_runs",
    "write_tables",
]
