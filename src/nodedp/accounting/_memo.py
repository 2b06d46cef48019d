"""A bounded memo for the accountants' pure functions of raw parameters.

A training process asks for the same ε many times: calibration's search tries the same noises for every seed of
an ε, and a ledger's composition is read by its check, its metrics and its JSON. The key must spell every input
(an event's or a record's repr does: every field, floats exact); the value is recomputed, never stored on disk.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """At most ``size`` results, the least recently used dropped first."""

    def __init__(self, size: int = 4096) -> None:
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._size = size

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = compute()
        self._values[key] = value
        if len(self._values) > self._size:
            self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        self._values.clear()
