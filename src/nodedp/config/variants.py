"""Method blocks and variants. A method name's *block* is the suite's tuned block (``TUNED``) with the grid's
``methods:`` entry on top; a *variant* is a block with a ``base:`` key (``dp-gcn-2hop: {base: dp-gcn, num_layers:
2}``); a *reference* name ends in ``@paper`` (the paper's own accounting sizes the noise)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nodedp.config.read import ConfigError, load_plugins
from nodedp.contract.naming import REFERENCE_SUFFIX

BASE_KEY = "base"


# The suite's tuned hyperparameters, one block per method or named variant, beneath every grid's `methods:`.
TUNED = Path(__file__).resolve().parents[1] / "methods" / "tuned.yaml"


@functools.lru_cache(maxsize=1)
def tuned_blocks() -> Mapping[str, Mapping[str, Any]]:
    """The suite's tuned blocks (``TUNED``), name -> hyperparameters, read once (read-only)."""
    import yaml

    data = yaml.safe_load(TUNED.read_text(encoding="utf-8")) or {}
    return MappingProxyType({name: MappingProxyType(dict(block or {})) for name, block in data.items()})


def grid_blocks(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config.get("methods") or {}


def method_block(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A name's block as configured: its tuned block with the grid's ``methods:`` entry on top, key by key
    (empty for a name in neither)."""
    grid = grid_blocks(config).get(name)
    return {**(tuned_blocks().get(name) or {}), **(grid if isinstance(grid, Mapping) else {})}


def _block_names(config: Mapping[str, Any]) -> list[str]:
    """Every name with a block: the tuned ones, then the grid's own."""
    tuned = tuned_blocks()
    return [*tuned, *(name for name in grid_blocks(config) if name not in tuned)]


def method_variants(config: Mapping[str, Any]) -> dict[str, str]:
    """Variant name -> its base method id, for every block (tuned or the grid's) with a ``base`` key."""
    blocks = {name: method_block(config, name) for name in _block_names(config)}
    return {name: block[BASE_KEY] for name, block in blocks.items() if BASE_KEY in block}


def known_methods(config: Mapping[str, Any]) -> list[str]:
    """Every name a study may list: registered methods, variants, and their ``@paper`` reference names."""
    from nodedp.contract.registry import get_method, method_names

    load_plugins(config)
    variants = method_variants(config)
    names = sorted([*method_names(), *variants])
    reference = [
        f"{n}{REFERENCE_SUFFIX}"
        for n in names
        if variants.get(n, n) in method_names() and get_method(variants.get(n, n)).has_reference_mode
    ]
    return sorted([*names, *reference])


def method_choices(config: Mapping[str, Any]) -> str:
    """The names a study may list, for an error: registered methods, then variants (tuned and the grid's)."""
    from nodedp.contract.registry import HOW_PLUGINS_ARE_FOUND, get_method, method_names

    with_mode = [n for n in method_names() if get_method(n).has_reference_mode]
    return (
        f"valid: methods {sorted(method_names())}; variants {sorted(method_variants(config))} "
        f"(nodedp/methods/tuned.yaml and the grid's `methods:` entries with `base:`); either with "
        f"'{REFERENCE_SUFFIX}' where its method has a reference mode ({', '.join(with_mode)}); "
        f"{HOW_PLUGINS_ARE_FOUND}"
    )


def resolve_method(config: Mapping[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    """(registered method id, hyperparameters as configured) of a method, variant or reference name: its block
    (``method_block``: tuned, the grid's keys on top), on top of its base's block for a variant."""
    from nodedp.contract.registry import get_method, method_names

    load_plugins(config)
    block = method_block(config, name)
    if "accounting" in block:
        raise ConfigError(
            f"methods.{name}: 'accounting' is set by the name alone; run the paper's accounting "
            f"as '{name.removesuffix(REFERENCE_SUFFIX)}{REFERENCE_SUFFIX}'"
        )
    if name.endswith(REFERENCE_SUFFIX):
        if BASE_KEY in block:
            raise ConfigError(f"methods.{name}: a reference name takes its method from its prefix; drop '{BASE_KEY}'")
        base, hparams = resolve_method(config, name.removesuffix(REFERENCE_SUFFIX))
        if not get_method(base).has_reference_mode:
            with_mode = [n for n in method_names() if get_method(n).has_reference_mode]
            raise ConfigError(f"{name}: method {base!r} has no paper reference mode; methods with one: {with_mode}")
        return base, {**hparams, **block, "accounting": "paper"}
    base = block.pop(BASE_KEY, None)
    if base is None:
        if name not in method_names():
            raise ConfigError(f"unknown method {name!r}; {method_choices(config)}")
        return name, block
    if name in method_names():
        raise ConfigError(
            f"methods.{name}: a registered method cannot have a '{BASE_KEY}'; name the variant differently"
        )
    if base not in method_names():
        raise ConfigError(f"methods.{name}.{BASE_KEY}: {base!r} is not a registered method; valid: {method_names()}")
    return base, {**method_block(config, base), **block}


def check_run_name(name: str, *, base: str, reference: bool, epsilon: float) -> None:
    """Refuse a run whose name says another method than it is (``train``, ``verify`` and ``collect`` alike): a name
    that is a registered method id (``@paper`` aside) must have that id as its base; ``@paper`` ends the name
    exactly when the run is in reference mode (the paper's accounting); a private base runs at a finite ε, a
    non-private one at ε = ∞ only. Raises ValueError naming the rule broken."""
    from nodedp.contract.registry import get_method, method_names

    stem = name.removesuffix(REFERENCE_SUFFIX)
    if stem in method_names() and stem != base:
        raise ValueError(
            f"run name {name!r} is the registered method {stem!r}, but the run is method {base!r}: "
            f"name it {base!r}, or a variant name that is no registered method"
        )
    if reference != name.endswith(REFERENCE_SUFFIX):
        raise ValueError(
            f"run name {name!r}: a run with its paper's accounting (reference mode) is named "
            f"'<method>{REFERENCE_SUFFIX}', and only such a run; this run is "
            + ("in reference mode" if reference else "accounted by the suite")
        )
    get_method(base).check_epsilon(epsilon)


def variant_overrides(config: Mapping[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Variant name -> (its base method id, the keys it sets on top of the base's block)."""
    return {
        name: (base, {k: v for k, v in method_block(config, name).items() if k != BASE_KEY})
        for name, base in method_variants(config).items()
    }
