"""Checks on config.yaml beyond its JSON schema (method hyperparameters), shared by the workflow and the CLI."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class ConfigError(ValueError):
    pass


def check_config(config: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the field when the (schema-validated) config cannot run."""
    from nodedp.data import dataset_names
    from nodedp.methods import get_method, method_names

    for study, spec in config["studies"].items():
        for dataset in spec["datasets"]:
            if dataset not in dataset_names():
                raise ConfigError(f"studies.{study}.datasets: unknown dataset {dataset!r}; valid: {dataset_names()}")
        for method in spec["methods"]:
            if method not in method_names():
                raise ConfigError(f"studies.{study}.methods: unknown method {method!r}; valid: {method_names()}")
        for eps in spec["epsilons"]:
            if not (isinstance(eps, (int, float)) and 0 < eps < math.inf):
                raise ConfigError(f"studies.{study}.epsilons: {eps!r} is not a finite ε > 0")
    for method, values in (config.get("methods") or {}).items():
        try:
            get_method(method).parse_hparams(values)
        except ValueError as err:
            raise ConfigError(f"methods.{method}: {err}") from None
