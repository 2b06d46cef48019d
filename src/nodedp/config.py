"""Checks on config.yaml beyond its JSON schema, and method variants; shared by the workflow and the CLI.

A method name's *block* is the suite's tuned block (``TUNED``) with the grid's ``methods:`` entry on top; a
*variant* is a block with a ``base:`` key (``dp-gcn-2hop: {base: dp-gcn, num_layers: 2}``); a *reference* name
ends in ``@paper`` (the paper's own accounting sizes the noise). Checks, in the order the workflow runs them:
``read_config`` (YAML, with file and line), ``check_schema`` (one line naming the field), ``check_config``
(hyperparameters, δ < 1/N, batch sizes against public sizes). Details: docs/design/config.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nodedp.contract.naming import REFERENCE_SUFFIX

__all__ = [
    "SCHEMA",
    "TUNED",
    "ConfigError",
    "PublicSize",
    "audit_plan",
    "check_config",
    "check_run_name",
    "check_schema",
    "check_size_limits",
    "declare_datasets",
    "known_methods",
    "load_plugins",
    "method_block",
    "method_variants",
    "public_size",
    "read_config",
    "regime_study",
    "resolve_method",
    "size_limits",
    "tuned_blocks",
    "variant_overrides",
]

BASE_KEY = "base"
# The grid's JSON schema, in a checkout (the workflow passes its own copy).
# The suite's tuned hyperparameters, one block per method or named variant, beneath every grid's `methods:`.
TUNED = Path(__file__).resolve().parent / "methods" / "tuned.yaml"
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


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


@functools.lru_cache(maxsize=1)
def tuned_blocks() -> Mapping[str, Mapping[str, Any]]:
    """The suite's tuned blocks (``TUNED``), name -> hyperparameters, read once (read-only)."""
    import yaml

    data = yaml.safe_load(TUNED.read_text(encoding="utf-8")) or {}
    return MappingProxyType({name: MappingProxyType(dict(block or {})) for name, block in data.items()})


def _grid_blocks(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config.get("methods") or {}


def method_block(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A name's block as configured: its tuned block with the grid's ``methods:`` entry on top, key by key
    (empty for a name in neither)."""
    grid = _grid_blocks(config).get(name)
    return {**(tuned_blocks().get(name) or {}), **(grid if isinstance(grid, Mapping) else {})}


def _block_names(config: Mapping[str, Any]) -> list[str]:
    """Every name with a block: the tuned ones, then the grid's own."""
    tuned = tuned_blocks()
    return [*tuned, *(name for name in _grid_blocks(config) if name not in tuned)]


def method_variants(config: Mapping[str, Any]) -> dict[str, str]:
    """Variant name -> its base method id, for every block (tuned or the grid's) with a ``base`` key."""
    blocks = {name: method_block(config, name) for name in _block_names(config)}
    return {name: block[BASE_KEY] for name, block in blocks.items() if BASE_KEY in block}


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


def _choices(config: Mapping[str, Any]) -> str:
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
            raise ConfigError(f"unknown method {name!r}; {_choices(config)}")
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


@dataclass(frozen=True)
class PublicSize:
    """What is public about a dataset's size before any job runs: its nodes, its private edges (an
    undirected edge once; ``None`` until the graph is built) and its training nodes (``None`` for an
    official split). ``source`` says where the numbers come from."""

    num_nodes: int
    num_edges: int | None
    num_train: int | None
    source: str


def public_size(dataset: str, *, graphs_dir: str | Path | None = None) -> PublicSize | None:
    """A dataset's size from its built ``meta.json`` under ``graphs_dir`` when there is one, else from its
    synthetic spec (a synthetic graph is made from code: its spec is public) or its declared file's shape (the
    rows of its arrays); ``None`` when none says. The training nodes follow the protocol's random split
    fractions (as ``random_split`` rounds them)."""
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol
    from nodedp.io import read_json

    info = get_dataset(dataset)
    meta_path = Path(graphs_dir) / dataset / "meta.json" if graphs_dir is not None else None
    meta = None
    if meta_path is not None and meta_path.is_file():
        try:
            meta = read_json(meta_path)
        except (OSError, ValueError):  # unreadable: the job that reads it names the problem
            meta = None
    if isinstance(meta, dict) and isinstance(meta.get("num_nodes"), int) and isinstance(meta.get("num_edges"), int):
        num_nodes, source = meta["num_nodes"], str(meta_path)
        num_edges = meta["num_edges"] // 2 if meta.get("is_undirected") else meta["num_edges"]
        protocol = (meta.get("source") or {}).get("protocol", info.protocol)
    elif info.kind == "file" and info.size is not None:
        num_nodes, num_edges, source = info.size.nodes, None, f"the shape of {info.source['path']}"
        protocol = info.protocol
    else:
        params = info.source.get("params", {}) if info.kind == "synthetic" else {}
        if "num_nodes" not in params:
            return None
        num_nodes, num_edges, source = int(params["num_nodes"]), None, f"the {dataset} spec"
        protocol = info.protocol
    split = get_protocol(protocol).split
    num_train = round(split.train * num_nodes) if split.kind == "random" else None
    return PublicSize(num_nodes=num_nodes, num_edges=num_edges, num_train=num_train, source=source)


def _batch_field(config: Mapping[str, Any], name: str, base: str) -> str:
    """Where a method's batch_size is set: its own block, its base's (the grid's entry, else the tuned one), or
    the method's default."""
    grid, tuned = _grid_blocks(config), tuned_blocks()
    for block_name in (name, name.removesuffix(REFERENCE_SUFFIX), base):
        if "batch_size" in (grid.get(block_name) or {}):
            return f"methods.{block_name}.batch_size"
        if "batch_size" in (tuned.get(block_name) or {}):
            return f"methods.{block_name}.batch_size (the suite's tuned setting, nodedp/methods/tuned.yaml)"
    return f"methods.{name}.batch_size (the default of {base})"


def size_limits(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """What the grid's runs on ``dataset`` ask of its size, as JSON-able data for ``check_size_limits``: a
    numeric δ (``None`` for 'auto') with the first node-level and the first edge-level run (δ must lie below 1/N
    of the nodes, or of the edges), and the run drawing the largest batch of training nodes (the training set
    must hold it). A run is its study and method (and, for the batch, its size and the field that sets it)."""
    from nodedp.contract.registry import get_method

    delta = (config.get("privacy") or {}).get("delta", "auto")
    limits: dict[str, Any] = {
        "dataset": dataset,
        "delta": delta if isinstance(delta, (int, float)) else None,
        "node": None,
        "edge": None,
        "batch": None,
    }
    for study, spec in config["studies"].items():
        if dataset not in spec["datasets"]:
            continue
        for method in spec["methods"]:
            base, hparams = resolve_method(config, method)
            info = get_method(base)
            if info.level in ("node", "edge") and limits[info.level] is None:
                limits[info.level] = {"study": study, "method": method}
            if info.batch_of_training_nodes:
                batch = info.parse_hparams(hparams).batch_size
                if limits["batch"] is None or batch > limits["batch"]["size"]:
                    limits["batch"] = {
                        "study": study,
                        "method": method,
                        "size": batch,
                        "field": _batch_field(config, method, base),
                    }
    return limits


def check_size_limits(limits: Mapping[str, Any], size: PublicSize) -> None:
    """Raise ConfigError, naming the field, where ``size`` cannot hold what ``limits`` (``size_limits``) asks:
    before any job against a dataset's public size, and in the split job against the split it has just cut."""
    from nodedp.accounting import default_delta

    dataset, delta = limits["dataset"], limits["delta"]
    for level, unit, units in (("node", "nodes", size.num_nodes), ("edge", "edges", size.num_edges)):
        run = limits[level]
        if delta is not None and run is not None and units is not None and not delta < 1 / units:
            raise ConfigError(
                f"privacy.delta: {delta:g} is not below 1/N = 1/{units} for {run['method']} on {dataset} "
                f"(study {run['study']}; {units} {unit}, from {size.source}); use 'auto' "
                f"({default_delta(units):g}) or a smaller δ"
            )
    batch = limits["batch"]
    if batch is not None and size.num_train is not None and batch["size"] > size.num_train:
        raise ConfigError(
            f"{batch['field']}: {batch['size']} is more than the {size.num_train} training nodes of {dataset} "
            f"(study {batch['study']}; its split of {size.num_nodes} nodes, from {size.source}); use a batch_size "
            f"of at most {size.num_train}"
        )


def _check_public_limits(config: Mapping[str, Any], *, graphs_dir: str | Path | None) -> None:
    """What a dataset's public size decides before any job (``check_size_limits``); a dataset not built yet
    whose size nothing public gives is checked by its split job instead (``nodedp split --check-limits``)."""
    for dataset in dict.fromkeys(d for spec in config["studies"].values() for d in spec["datasets"]):
        size = public_size(dataset, graphs_dir=graphs_dir)
        if size is not None:
            check_size_limits(size_limits(config, dataset), size)


def _check_sweeps(config: Mapping[str, Any], study: str, spec: Mapping[str, Any]) -> None:
    """A sweep's hyperparameter must be numeric in at least two of the study's private methods' settings."""
    import dataclasses

    from nodedp.contract.registry import get_method

    for parameter in spec.get("sweeps") or []:
        values = set()
        fields: set[str] = set()
        for method in spec["methods"]:
            base, hparams = resolve_method(config, method)
            if not get_method(base).private:
                continue
            parsed = get_method(base).parse_hparams(hparams)
            fields |= {f.name for f in dataclasses.fields(parsed)}
            value = getattr(parsed, parameter, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.add(value)
        if len(values) < 2:
            raise ConfigError(
                f"studies.{study}.sweeps: {parameter!r} takes {len(values)} numeric value(s) over the "
                f"study's private methods; a sweep needs variants setting it to at least two values "
                f"(their hyperparameters: {sorted(fields)})"
            )


def regime_study(config: Mapping[str, Any], study: str) -> str | None:
    """The study whose runs feed ``study``'s regime figure: ``regime: true`` its own, ``regime: <study>`` that one's
    (a headline study drawing the size sweep of another); None without ``regime``."""
    value = config["studies"][study].get("regime")
    if value is None or value is False:
        return None
    return study if value is True else str(value)


def _check_regime(config: Mapping[str, Any], study: str) -> None:
    source = regime_study(config, study)
    if source is None:
        return
    if source not in config["studies"]:
        raise ConfigError(
            f"studies.{study}.regime: no study {source!r} to draw from; true (this study) or one of "
            f"{sorted(config['studies'])}"
        )
    methods = config["studies"][source]["methods"]
    if "dp-mlp" not in methods:
        raise ConfigError(
            f"studies.{study}.regime: the figure is each graph method minus dp-mlp, but study {source!r} has no dp-mlp "
            f"(its methods: {methods})"
        )


def audit_plan(config: Mapping[str, Any], study: str) -> dict[str, Any]:
    """A study's ``audit:`` block with its defaults filled in: datasets, methods (its node-level private ones,
    reference runs included), epsilons, seeds (its first), canaries (0: the default count), confidence (0.95).
    Raises ConfigError naming the field when an audited dataset or method is not the study's, or a method has no
    node-level ε to audit (the canaries are nodes)."""
    from nodedp.contract.registry import get_method

    spec = config["studies"][study]
    audit = spec.get("audit") or {}
    field = f"studies.{study}.audit"

    def node_private(name: str) -> bool:
        info = get_method(resolve_method(config, name)[0])
        return info.private and info.level == "node"

    plan: dict[str, Any] = {
        "datasets": list(audit.get("datasets") or spec["datasets"]),
        "methods": list(audit.get("methods") or [m for m in spec["methods"] if node_private(m)]),
        "epsilons": list(audit.get("epsilons") or spec["epsilons"]),
        "seeds": list(audit.get("seeds") or spec["seeds"][:1]),
        "canaries": int(audit.get("canaries", 0)),
        "confidence": float(audit.get("confidence", 0.95)),
    }
    for key in ("datasets", "methods"):
        foreign = [v for v in plan[key] if v not in spec[key]]
        if foreign:
            raise ConfigError(f"{field}.{key}: {foreign} not among the study's {key} {spec[key]}")
    bad = [m for m in plan["methods"] if not node_private(m)]
    if bad:
        raise ConfigError(
            f"{field}.methods: {bad} have no node-level ε to audit; audited: node-level private "
            f"methods of the study ({[m for m in spec['methods'] if node_private(m)]})"
        )
    if not plan["methods"]:
        raise ConfigError(f"{field}: the study has no node-level private method to audit")
    if plan["canaries"] and plan["canaries"] < 20:
        raise ConfigError(
            f"{field}.canaries: {plan['canaries']} is too few for a bound (at least 20, or 0 for the default)"
        )
    return plan


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
                raise ConfigError(f"studies.{study}.methods: unknown method {method!r}; {_choices(config)}")
        for eps in spec["epsilons"]:
            if not (isinstance(eps, (int, float)) and 0 < eps < math.inf):
                raise ConfigError(f"studies.{study}.epsilons: {eps!r} is not a finite ε > 0")
    # The grid's own entries first (the field to fix), then every name a study trains (tuned blocks included).
    studied = [
        (f"studies.{study}.methods: {name}", name)
        for study, spec in config["studies"].items()
        for name in spec["methods"]
    ]
    for field, name in [(f"methods.{name}", name) for name in _grid_blocks(config)] + studied:
        base, hparams = resolve_method(config, name)
        try:
            get_method(base).parse_hparams(hparams)
        except ValueError as err:
            raise ConfigError(f"{field}: {err}") from None
    for study, spec in config["studies"].items():
        _check_sweeps(config, study, spec)
        _check_regime(config, study)
        if "audit" in spec:
            audit_plan(config, study)  # raises on an audit the study cannot run
    _check_public_limits(config, graphs_dir=graphs_dir)
