"""How a cell is named: a reference-mode run's suffix and the ε of a run's folder. The workflow's planner, the
config checks and the CLI name cells the same way."""

from __future__ import annotations

import math

__all__ = ["REFERENCE_SUFFIX", "format_epsilon"]

REFERENCE_SUFFIX = "@paper"  # a reference-mode run: the paper's accounting (nodedp.contract.base, ACCOUNTING_MODES)


def format_epsilon(eps: float) -> str:
    """The `eps~{eps}` path component: `inf` for non-private, else the shortest form that reads back as exactly
    ``eps`` (``:g`` where it does, e.g. 8 and 0.5; else Python's round-trip repr, e.g. 1.2345678): two ε never
    share a folder, and a cell trains at the ε its grid gives."""
    if math.isinf(eps):
        return "inf"
    short = f"{float(eps):g}"
    return short if float(short) == float(eps) else repr(float(eps))
