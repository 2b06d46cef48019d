"""The method registry: every method id the workflow and the CLI accept."""

from __future__ import annotations

from nodedp.methods.base import MethodInfo

_METHODS: dict[str, MethodInfo] = {}


class UnknownMethodError(ValueError):
    pass


def register_method(info: MethodInfo, *, force: bool = False) -> MethodInfo:
    if info.name in _METHODS and not force:
        raise ValueError(f"method {info.name!r} is already registered (pass force=True to replace it)")
    _METHODS[info.name] = info
    return info


def get_method(name: str) -> MethodInfo:
    try:
        return _METHODS[name]
    except KeyError:
        raise UnknownMethodError(f"unknown method {name!r}; valid choices: {method_names()}") from None


def method_names() -> list[str]:
    return sorted(_METHODS)
