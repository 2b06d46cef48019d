"""``check_config``: every check of a grid beyond its schema, in the order the workflow runs them (declared
graphs, method names and hyperparameters, studies, size limits), before any job."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodedp.config.limits import check_public_limits
from nodedp.config.read import ConfigError
from nodedp.config.studies import audit_plan, check_regime, check_sweeps
from nodedp.config.variants import grid_blocks, known_methods, method_choices, resolve_method


def declare_datasets(config: Mapping[str, Any]) -> list[str]:
    """Register the datasets the config declares (``datasets:``, ``nodedp.data.user``) after checking each
    declaration and its file(s); their names. Raises ConfigError naming the field, or the file and its problem."""
    from nodedp.data.constants import DatasetFormatError
    from nodedp.data.user import DeclarationError
    from nodedp.data.user import declare_datasets as declare

    try:
        return [dataset.name for dataset in declare(config.get("datasets"))]
    except (DeclarationError, DatasetFormatError) as err:
        raise ConfigError(str(err)) from None


def _unknown_dataset(field: str, dataset: str, declared: list[str]) -> ConfigError:
    from nodedp.data import DATASETS

    registered = sorted(name for name, info in DATASETS.items() if info.kind != "file")
    return ConfigError(
        f"{field}: unknown dataset {dataset!r}; valid: registered {registered}; declared under `datasets:` "
        f"{sorted(declared)} (docs/datasets.md: declare your own graph there)"
    )


def check_config(config: Mapping[str, Any], *, graphs_dir: str | Path | None = None) -> None:
    """Raise ConfigError naming the field when the (schema-validated) config cannot run. Registers the datasets
    it declares (``declare_datasets``) first. ``graphs_dir`` (the workflow's ``resources/graphs``) holds already
    built graphs, whose ``meta.json`` gives the sizes that synthetic specs and declared files give before a graph
    is built (``public_size``)."""
    from nodedp.contract.registry import get_method
    from nodedp.data import dataset_names

    declared = declare_datasets(config)
    known = known_methods(config)
    for study, spec in config["studies"].items():
        for dataset in spec["datasets"]:
            if dataset not in dataset_names():
                raise _unknown_dataset(f"studies.{study}.datasets", dataset, declared)
        for method in spec["methods"]:
            if method not in known:
                raise ConfigError(f"studies.{study}.methods: unknown method {method!r}; {method_choices(config)}")
        for eps in spec["epsilons"]:
            if not (isinstance(eps, (int, float)) and 0 < eps < math.inf):
                raise ConfigError(f"studies.{study}.epsilons: {eps!r} is not a finite ε > 0")
    # The grid's own entries first (the field to fix), then every name a study trains (tuned blocks included).
    studied = [
        (f"studies.{study}.methods: {name}", name)
        for study, spec in config["studies"].items()
        for name in spec["methods"]
    ]
    for field, name in [(f"methods.{name}", name) for name in grid_blocks(config)] + studied:
        base, hparams = resolve_method(config, name)
        try:
            info = get_method(base)
            info.parse_hparams(hparams)
            if info.private:  # an accountant the method's pair has no curve for, refused before any job
                info.resolve_accountant(config.get("privacy", {}).get("accountant", "auto"))
        except ValueError as err:
            raise ConfigError(f"{field}: {err}") from None
    for study, spec in config["studies"].items():
        check_sweeps(config, study, spec)
        check_regime(config, study)
        if "audit" in spec:
            audit_plan(config, study)  # raises on an audit the study cannot run
    check_public_limits(config, graphs_dir=graphs_dir)
