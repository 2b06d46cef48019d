"""Mechanisms as ``dp_accounting`` DpEvents, their JSON form, and their ε.

A DpEvent is an immutable value that holds exactly what accounting needs; an
accountant turns a (composed) event into ε at a given δ. All events are
accounted under add/remove-one adjacency (a private unit, here a node with
everything attached to it, is present or absent), which is what Poisson
sampling in DP-SGD assumes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import attr
import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import PrivacyAccountant, UnsupportedEventError
from dp_accounting.rdp import RdpAccountant

from nodedp.accounting._checks import check_delta, check_positive
from nodedp.accounting._memo import Memo
from nodedp.accounting.constants import ACCOUNTANTS
from nodedp.accounting.orders import RDP_ORDERS
from nodedp.accounting.pld import epsilon_pld, pld_of_event


def _drop_nonconvergence_notice(record: logging.LogRecord) -> bool:
    # dp_accounting logs this for every fractional order whose series it cannot sum
    # (small orders at large sampling rates) and then leaves the order out: ε can only
    # come out larger (conservative). Calibration evaluates ε dozens of times, so the
    # notice would fill every run's log; other absl messages pass.
    return "_compute_log_a_frac failed to converge" not in record.getMessage()


logging.getLogger("absl").addFilter(_drop_nonconvergence_notice)

# Every DpEvent class that dp_accounting defines can be written and read back.
_EVENT_TYPES: dict[str, type[dp_event.DpEvent]] = {
    name: cls
    for name, cls in vars(dp_event).items()
    if isinstance(cls, type) and issubclass(cls, dp_event.DpEvent) and cls is not dp_event.DpEvent
}


def gaussian_event(*, noise_multiplier: float) -> dp_event.GaussianDpEvent:
    """One Gaussian mechanism with noise std = ``noise_multiplier`` × L2 sensitivity."""
    check_positive(noise_multiplier, "noise_multiplier")
    return dp_event.GaussianDpEvent(float(noise_multiplier))


def subsampled_gaussian_event(*, noise_multiplier: float, sampling_rate: float, steps: int) -> dp_event.DpEvent:
    """``steps`` rounds of a Gaussian mechanism on a Poisson sample of rate ``sampling_rate`` (DP-SGD)."""
    check_positive(noise_multiplier, "noise_multiplier")
    if isinstance(sampling_rate, bool) or not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    sampled = dp_event.PoissonSampledDpEvent(float(sampling_rate), dp_event.GaussianDpEvent(float(noise_multiplier)))
    return dp_event.SelfComposedDpEvent(sampled, int(steps))


def compose(events: Sequence[dp_event.DpEvent]) -> dp_event.ComposedDpEvent:
    """Sequential (possibly adaptive) composition of ``events``."""
    events = list(events)
    for event in events:
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"compose takes DpEvents, got {type(event).__name__}")
    return dp_event.ComposedDpEvent(events)


def _encode(value: Any, where: str) -> Any:
    if isinstance(value, dp_event.DpEvent):
        return event_to_dict(value)
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}; a DpEvent field must be finite to be written as JSON")
        return float(value)
    if isinstance(value, list | tuple):
        return [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{where} has type {type(value).__name__}, which has no JSON form")


def event_to_dict(event: dp_event.DpEvent) -> dict[str, Any]:
    """A JSON-safe dict ``{"type": class name, field: value, ...}``, nested events as dicts.

    Sequences become lists, so ``event_from_dict`` returns list fields (what
    ``compose`` builds) even where the original held a tuple.
    """
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"expected a DpEvent, got {type(event).__name__}")
    name = type(event).__name__
    if _EVENT_TYPES.get(name) is not type(event):
        raise ValueError(f"{name} is not a dp_accounting DpEvent; known: {sorted(_EVENT_TYPES)}")
    out: dict[str, Any] = {"type": name}
    for field in attr.fields(type(event)):
        out[field.name] = _encode(getattr(event, field.name), f"{name}.{field.name}")
    return out


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return event_from_dict(value)
    if isinstance(value, list):
        return [_decode(item) for item in value]
    return value


def event_from_dict(d: dict[str, Any]) -> dp_event.DpEvent:
    """Inverse of ``event_to_dict``."""
    if not isinstance(d, dict) or "type" not in d:
        raise ValueError(f"an event dict needs a 'type' key, got {d!r}")
    name = d["type"]
    cls = _EVENT_TYPES.get(name)
    if cls is None:
        raise ValueError(f"unknown DpEvent type {name!r}; known: {sorted(_EVENT_TYPES)}")
    expected = {field.name for field in attr.fields(cls)}
    given = set(d) - {"type"}
    if given != expected:
        raise ValueError(f"{name} takes fields {sorted(expected)}, got {sorted(given)}")
    return cls(**{key: _decode(d[key]) for key in expected})


def _make_accountant(accountant: str) -> PrivacyAccountant:
    if accountant == "rdp":
        return RdpAccountant(orders=list(RDP_ORDERS))
    if accountant == "pld":
        return PLDAccountant()
    raise ValueError(f"unknown accountant {accountant!r}; valid choices: {list(ACCOUNTANTS)}")


def epsilon_of(event: dp_event.DpEvent, *, delta: float, accountant: str = "rdp") -> float:
    """ε of ``event`` at ``delta`` under ``accountant`` ("rdp" or "pld"); ∞ for non-private events.

    "pld" uses the suite's one discretisation grid (``nodedp.accounting.pld``), the same as the
    ledger's PLD composition, so a noise calibrated here is accounted to the same ε there.
    """
    check_delta(delta)
    # A pure function of the event's parameters, which its repr spells (nodedp.accounting._memo).
    return _EPSILONS.get((repr(event), float(delta), accountant), lambda: _epsilon_of(event, delta, accountant))


def _epsilon_of(event: dp_event.DpEvent, delta: float, accountant: str) -> float:
    if accountant == "pld":
        return epsilon_pld([pld_of_event(event)], delta=delta)
    acct = _make_accountant(accountant)
    try:
        acct.compose(event)
    except UnsupportedEventError as err:
        raise ValueError(f"the {accountant!r} accountant cannot account {type(event).__name__}: {err}") from err
    return float(acct.get_epsilon(delta))


_EPSILONS: Memo[float] = Memo()  # epsilon_of's results
