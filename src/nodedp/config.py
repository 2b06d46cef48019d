"""Checks on config.yaml beyond its JSON schema, and method variants; shared by the workflow and the CLI.

A *variant* is a named configuration of a registered method: an entry of
``methods:`` with a ``base:`` key, e.g. ``dp-gcn-2hop: {base: dp-gcn,
num_layers: 2}``. Its hyperparameters are the base method's block with the
variant's keys on top; its runs live under its own name, so a study can hold
the same method in several settings (the paper's 1- and 2-layer DP-GCN).

A *reference* name is a method or variant name with the suffix ``@paper``
(``dpar-em0@paper``): the same hyperparameters, with the noise sized by the
paper's own accounting (``accounting: paper``) and its claimed and actual ε in
the ledger. An entry ``methods: {dpar-em0@paper: {...}}`` may add the paper's
own hyperparameters on top. ``accounting`` is set by the name only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["ConfigError", "check_config", "known_methods", "method_variants", "resolve_method"]

BASE_KEY = "base"
REFERENCE_SUFFIX = "@paper"  # a reference-mode run: the paper's accounting (module docstring)
# Hyperparameters that override a dataset's public degree bounds for a method's structure artifacts.
DEGREE_BOUND_KEYS = {"in-degree": "in_degree_bound", "out-degree": "out_degree_bound", "degree": "max_degree"}


class ConfigError(ValueError):
    pass


def method_variants(config: Mapping[str, Any]) -> dict[str, str]:
    """Variant name -> its base method id, for every ``methods:`` entry with a ``base`` key."""
    return {
        name: block[BASE_KEY]
        for name, block in (config.get("methods") or {}).items()
        if isinstance(block, Mapping) and BASE_KEY in block
    }


def known_methods(config: Mapping[str, Any]) -> list[str]:
    """Every name a study may list: registered methods, variants, and their ``@paper`` reference names."""
    from nodedp.methods import get_method, method_names

    variants = method_variants(config)
    names = sorted([*method_names(), *variants])
    reference = [f"{n}{REFERENCE_SUFFIX}" for n in names
                 if variants.get(n, n) in method_names() and get_method(variants.get(n, n)).has_reference_mode]
    return sorted([*names, *reference])


def resolve_method(config: Mapping[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    """(registered method id, hyperparameters as configured) of a method, variant or reference name."""
    from nodedp.methods import get_method, method_names

    blocks = config.get("methods") or {}
    block = dict(blocks.get(name) or {})
    if "accounting" in block:
        raise ConfigError(f"methods.{name}: 'accounting' is set by the name alone; run the paper's accounting "
                          f"as '{name.removesuffix(REFERENCE_SUFFIX)}{REFERENCE_SUFFIX}'")
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
            valid = sorted([*method_names(), *method_variants(config)])
            raise ConfigError(f"unknown method {name!r}; valid: {valid}")
        return name, block
    if name in method_names():
        raise ConfigError(f"methods.{name}: a registered method cannot have a '{BASE_KEY}'; name the variant differently")
    if base not in method_names():
        raise ConfigError(f"methods.{name}.{BASE_KEY}: {base!r} is not a registered method; valid: {method_names()}")
    return base, {**(blocks.get(base) or {}), **block}


def check_config(config: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the field when the (schema-validated) config cannot run."""
    from nodedp.data import dataset_names
    from nodedp.methods import get_method

    known = known_methods(config)
    for study, spec in config["studies"].items():
        for dataset in spec["datasets"]:
            if dataset not in dataset_names():
                raise ConfigError(f"studies.{study}.datasets: unknown dataset {dataset!r}; valid: {dataset_names()}")
        for method in spec["methods"]:
            if method not in known:
                raise ConfigError(f"studies.{study}.methods: unknown method {method!r}; valid: {known}")
        for eps in spec["epsilons"]:
            if not (isinstance(eps, (int, float)) and 0 < eps < math.inf):
                raise ConfigError(f"studies.{study}.epsilons: {eps!r} is not a finite ε > 0")
    for name in config.get("methods") or {}:
        base, hparams = resolve_method(config, name)
        try:
            get_method(base).parse_hparams(hparams)
        except ValueError as err:
            raise ConfigError(f"methods.{name}: {err}") from None
