"""From finished runs to paper artifacts: collection, bootstrap summaries, tables, figures.

Names load their module on first access (PEP 562), so that importing one module of the package (the
workflow's planning reads ``paper_tables.PAPER_TABLES``) does not import matplotlib or dp_accounting.
"""

from __future__ import annotations

from nodedp._lazy import lazy_exports

# submodule -> the public names it provides here
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "accuracy_figure": ("plot_accuracy_vs_epsilon",),
    "bootstrap": ("bootstrap_ci", "summarize"),
    "collect": ("InvalidRunError", "collect_runs", "write_runs"),
    "tables": ("write_tables",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _SUBMODULES, globals())
