"""Lazy package exports (PEP 562): a package names its public names by submodule and loads a submodule at the
first access of one of them, so that importing the package (planning, the listing verbs) pays for no torch,
torch_geometric, dp_accounting or scipy it does not use; every name still imports as before."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, submodules: Mapping[str, tuple[str, ...]], namespace: MutableMapping[str, Any]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package`` whose public names live in ``submodules``
    (submodule -> names); ``namespace`` is the package's ``globals()``, where a loaded name stays."""
    home = {name: module for module, names in submodules.items() for name in names}
    exported = sorted(home)

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        namespace[name] = value  # once loaded, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return exported, __getattr__, __dir__
