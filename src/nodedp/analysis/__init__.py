"""From finished runs to paper artifacts: collection, bootstrap summaries, tables, figures.

Names load their module on first access (PEP 562), so that importing one module of the package (the
workflow's planning reads ``paper_tables.PAPER_TABLES``) does not import matplotlib or dp_accounting.
"""

from __future__ import annotations

import importlib
from typing import Any

# submodule -> the public names it provides here
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "bootstrap": ("bootstrap_ci", "summarize"),
    "collect": ("InvalidRunError", "collect_runs", "write_runs"),
    "figures": ("plot_accuracy_vs_epsilon",),
    "tables": ("write_tables",),
}
_HOME = {name: module for module, names in _SUBMODULES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
