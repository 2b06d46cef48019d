"""Reading a grid: its YAML (a syntax error is one line with file, line and column), its JSON schema (shipped
with the package: one line naming the field) and the plugin modules it names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().with_name("config.schema.yaml")  # package data: an installed nodedp checks too


class ConfigError(ValueError):
    pass


def read_config(path: str | Path) -> dict[str, Any]:
    """A grid file as a dict. A YAML syntax error is one line: file, line, column and the problem."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the config ({err.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context, context_mark = getattr(err, "context", None), getattr(err, "context_mark", None)
        if context and context_mark is not None and (mark is None or context_mark.line != mark.line):
            problem += f" ({context} from line {context_mark.line + 1})"
        raise ConfigError(f"{where}: YAML syntax error: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config is a YAML mapping (studies:, methods:, ...), got {type(data).__name__}")
    try:
        load_plugins(data)  # its methods are registered before anything reads the registry
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return data


def _field(path) -> str:
    """``studies.demo.seeds[0]`` from a JSON schema error's path."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def check_schema(config: Mapping[str, Any], schema: str | Path | Mapping[str, Any] = SCHEMA) -> None:
    """Raise ConfigError with the config's most relevant schema violation, one line naming the field
    (Snakemake's own validation prints the whole schema after it)."""
    import jsonschema
    import yaml

    if not isinstance(schema, Mapping):
        schema = yaml.safe_load(Path(schema).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    message = error.message
    if error.validator in ("oneOf", "anyOf") and "description" in error.schema:
        message = f"{error.instance!r} is not valid: expected {error.schema['description']}"
    raise ConfigError(f"{_field(error.absolute_path)}: {message}")


def load_plugins(config: Mapping[str, Any]) -> None:
    """Import the plugin modules the grid names under ``plugins:`` (spec modules registering methods from outside
    nodedp, docs/adding-a-method.md), and name them in ``$NODEDP_PLUGINS`` too, so that the processes the workflow
    starts (its jobs) register them as well. Raises ConfigError naming a module that cannot be imported."""
    import os

    from nodedp.contract.registry import PLUGINS_ENV, PluginError
    from nodedp.contract.registry import load_plugins as load

    modules = config.get("plugins") or []
    if not modules:
        return
    if not isinstance(modules, list):
        raise ConfigError(f"plugins: a list of Python module names, got {modules!r}")
    try:
        load(modules, source="plugins")
    except PluginError as err:
        raise ConfigError(str(err)) from None
    named = [m for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    os.environ[PLUGINS_ENV] = ",".join(dict.fromkeys([*named, *modules]))
