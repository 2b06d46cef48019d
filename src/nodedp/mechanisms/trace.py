"""What a run's mechanisms drew, as they drew it: the noise trace the audit reads beside the ledger.

A ledger records what the plan says a mechanism adds; a bug between the plan and the draw (a noise std divided
on its way to the sampler, a stage trained with another configuration) leaves the ledger right and the run
wrong. The draw sites report themselves here: NAP at each noisy query, the one training loop at each private
step, with the std they pass to the sampler and the sensitivity they clip to. Nothing is kept unless a caller
opened a trace (``trace_noise``), so runs outside an audit pay one context-variable read per draw.

The audit (``nodedp.audit.run``) opens a trace around the training it audits and draws its white-box release
audits with the executed parameters (``executed_params``): a run that adds less noise than its ledger states is
caught there at the ledger's ε, whatever its ledger says. Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Draw", "NoiseTrace", "new_source", "note_draw", "trace_noise"]


@dataclass
class Draw:
    """Consecutive draws of one mechanism instance with the same std and parameters: ``count`` of them."""

    mechanism: str  # "nap" or "dp-sgd"
    source: int  # the drawing object's serial (``new_source``): one DP-SGD stage, one NAP
    std: float  # the std passed to the sampler
    params: Mapping[str, Any]  # what the draw's sensitivity is made of (R and D; C)
    count: int = 1


@dataclass
class NoiseTrace:
    """Every draw reported while the trace was open, in order, consecutive repeats merged."""

    draws: list[Draw] = field(default_factory=list)

    def note(self, mechanism: str, source: int, std: float, params: Mapping[str, Any]) -> None:
        last = self.draws[-1] if self.draws else None
        key = (mechanism, source, float(std), dict(params))
        if last is not None and (last.mechanism, last.source, last.std, dict(last.params)) == key:
            last.count += 1
            return
        self.draws.append(Draw(mechanism, source, float(std), dict(params)))

    def stages(self, mechanism: str) -> list[list[Draw]]:
        """The draws of ``mechanism`` grouped by the object that drew them, in order of its first draw."""
        grouped: dict[int, list[Draw]] = {}
        for draw in self.draws:
            if draw.mechanism == mechanism:
                grouped.setdefault(draw.source, []).append(draw)
        return list(grouped.values())


# Serials of drawing objects: an object's id may be reused once it is freed (one stage's loop after another's).
_SOURCES = itertools.count()


def new_source() -> int:
    """A serial for a drawing object (a DP-SGD stage, a NAP), unique within the process."""
    return next(_SOURCES)


_TRACE: ContextVar[NoiseTrace | None] = ContextVar("nodedp_noise_trace", default=None)


@contextmanager
def trace_noise() -> Iterator[NoiseTrace]:
    """Record every NAP and DP-SGD draw made inside the block (this thread's, or this task's)."""
    trace = NoiseTrace()
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def note_draw(mechanism: str, source: int, *, std: float, **params: Any) -> None:
    """Report one draw of ``mechanism`` by the object of serial ``source`` (``new_source``) with noise std ``std``
    (a no-op unless a trace is open)."""
    trace = _TRACE.get()
    if trace is not None:
        trace.note(mechanism, source, std, params)
