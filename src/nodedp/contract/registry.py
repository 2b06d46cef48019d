"""The method registry: every method id the workflow and the CLI accept.

The suite's own entries come from the spec modules in ``nodedp.contract.specs`` (found there, no list to edit),
imported when the registry is first read.
Methods from elsewhere come from plugin modules: the entry points of group ``nodedp.methods`` of installed packages,
the modules named in ``$NODEDP_PLUGINS``, and those a grid names under ``plugins:`` (``nodedp.config``). They are
imported when the registry is first read (``get_method``, ``method_names``); docs/adding-a-method.md is the recipe.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable

from nodedp.contract.base import MethodInfo

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "PluginError",
    "UnknownMethodError",
    "get_method",
    "load_plugins",
    "method_names",
    "plugin_of",
    "register_method",
]

ENTRY_POINT_GROUP = "nodedp.methods"  # [project.entry-points."nodedp.methods"] name = "package.module"
PLUGINS_ENV = "NODEDP_PLUGINS"  # module names, separated by commas
HOW_PLUGINS_ARE_FOUND = (
    f"a method from outside nodedp is registered by its spec module, imported as a plugin: name it under "
    f"`plugins:` in config.yaml, in ${PLUGINS_ENV}, or as an entry point of group '{ENTRY_POINT_GROUP}' of an "
    "installed package (docs/adding-a-method.md)"
)

_METHODS: dict[str, MethodInfo] = {}
_LOADED: dict[str, str] = {}  # plugin module -> where it was named
_PLUGIN_OF: dict[str, str] = {}  # method id -> the plugin module whose import registered it (the suite's: absent)
_IMPORTING: list[str] = []  # the plugin modules being imported, innermost last
_DISCOVERED = False


class UnknownMethodError(ValueError):
    pass


class PluginError(ValueError, ImportError):
    """A plugin module named in a config, ``$NODEDP_PLUGINS`` or an entry point that cannot be imported (a
    ValueError too, so that the CLI and the workflow report it in one line, as any bad input)."""


def register_method(info: MethodInfo, *, force: bool = False) -> MethodInfo:
    if info.name in _METHODS and not force:
        raise ValueError(f"method {info.name!r} is already registered (pass force=True to replace it)")
    _METHODS[info.name] = info
    if _IMPORTING:
        _PLUGIN_OF[info.name] = _IMPORTING[0]
    return info


def plugin_of(name: str) -> str | None:
    """The plugin module (as named in ``plugins:``, ``$NODEDP_PLUGINS`` or an entry point) whose import registered
    method ``name``; None for the suite's own methods. A run records it, so that a reader without the plugin
    learns which module to load."""
    _discover()
    return _PLUGIN_OF.get(name)


def get_method(name: str) -> MethodInfo:
    _discover()
    try:
        return _METHODS[name]
    except KeyError:
        raise UnknownMethodError(
            # the short hint first: `verify` cuts a reason at 160 characters
            f"unknown method {name!r} (from a plugin? import its spec module: `plugins:` in the config, "
            f"${PLUGINS_ENV} or an entry point; docs/adding-a-method.md); valid choices: {method_names()}"
            + (f"; plugins loaded: {', '.join(sorted(_LOADED))}" if _LOADED else "")
        ) from None


def method_names() -> list[str]:
    _discover()
    return sorted(_METHODS)


def load_plugins(modules: Iterable[str], *, source: str, search_cwd: bool = True) -> None:
    """Import each plugin module (a spec module that registers its methods), once; ``source`` says where it was
    named, for the error when it cannot be imported. ``search_cwd``: the current directory is searched after
    ``sys.path``, as ``python -m nodedp`` searches it, so that every process of a workflow (the Snakefile's, its
    jobs, the warm worker's) finds a plugin package kept in the workspace."""
    for module in modules:
        if module in _LOADED:
            continue
        if not isinstance(module, str) or not all(part.isidentifier() for part in module.split(".")):
            raise PluginError(f"{source}: {module!r} is not a Python module name (e.g. mymethods.specs)")
        cwd = os.getcwd()
        if search_cwd and cwd not in sys.path and "" not in sys.path:
            sys.path.append(cwd)
        _IMPORTING.append(module)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            missing = err.name or ""
            if not (module == missing or module.startswith(f"{missing}.")):
                raise  # the plugin itself imports something missing: its own traceback says what
            raise PluginError(
                f"{source}: cannot import the plugin module {module!r} (no module named {err.name!r}): install "
                "its package, or run from the folder that holds it (or put that folder on PYTHONPATH)"
            ) from None
        finally:
            _IMPORTING.pop()
        _LOADED[module] = source


def _discover() -> None:
    """Import the plugin modules of installed packages' entry points and of ``$NODEDP_PLUGINS``, once."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True  # first: a plugin's own import of the registry must not start another round
    from importlib.metadata import entry_points

    try:
        from nodedp.contract import specs  # noqa: F401  (the suite's own entries register themselves)

        for point in entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(point.dist, "name", None) or "an installed package"
            where = f"entry point {point.name!r} of {dist} (group {ENTRY_POINT_GROUP!r})"
            load_plugins([point.module], source=where, search_cwd=False)
        names = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
        load_plugins(names, source=f"${PLUGINS_ENV}")
    except BaseException:
        _DISCOVERED = False  # the next read tries again (and fails the same way) instead of missing the rest
        raise
