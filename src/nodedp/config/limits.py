"""Size limits a grid's hyperparameters meet against a dataset's public size: δ < 1/N, batch sizes within the
training set (``PublicSize``, from the dataset registry or a built graph's meta.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodedp.config.read import ConfigError
from nodedp.config.variants import grid_blocks, resolve_method, tuned_blocks
from nodedp.contract.naming import REFERENCE_SUFFIX


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
    grid, tuned = grid_blocks(config), tuned_blocks()
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
    must hold it), and every reference-mode run whose paper's accountant cannot state every claim
    (``MethodInfo.reference_floor``) with its study's smallest ε. A run is its study and method (and, for the batch, its size and the field that
    sets it)."""
    from nodedp.contract.registry import get_method

    delta = (config.get("privacy") or {}).get("delta", "auto")
    limits: dict[str, Any] = {
        "dataset": dataset,
        "delta": delta if isinstance(delta, (int, float)) else None,
        "node": None,
        "edge": None,
        "batch": None,
        "claims": [],
    }
    for study, spec in config["studies"].items():
        if dataset not in spec["datasets"]:
            continue
        for method in spec["methods"]:
            base, hparams = resolve_method(config, method)
            info = get_method(base)
            if info.level in ("node", "edge") and limits[info.level] is None:
                limits[info.level] = {"study": study, "method": method}
            if info.reference_floor is not None and getattr(info.parse_hparams(hparams), "accounting", "") == "paper":
                claim = {"study": study, "method": method, "base": base, "epsilon": min(spec["epsilons"])}
                limits["claims"].append(claim)
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
    if size.num_train is not None:
        _check_claims(limits, size)


def _check_claims(limits: Mapping[str, Any], size: PublicSize) -> None:
    """Refuse a claimed ε at or below what the method's accountant can state on the dataset's training nodes."""
    from nodedp.contract.registry import get_method
    from nodedp.plans import reference_floor_of

    for run in limits.get("claims", ()):
        floor = reference_floor_of(get_method(run["base"]))(size.num_train)
        if not run["epsilon"] > floor:
            raise ConfigError(
                f"studies.{run['study']}.epsilons: {run['epsilon']:g} is a claim {run['method']} cannot state on "
                f"{limits['dataset']} ({size.num_train} training nodes, from {size.source}): its accountant's "
                f"conversion alone costs ε = {floor:.4g}; claim more than that, or move the method to a study "
                "whose ε are all above it"
            )


def check_public_limits(config: Mapping[str, Any], *, graphs_dir: str | Path | None) -> None:
    """What a dataset's public size decides before any job (``check_size_limits``); a dataset not built yet
    whose size nothing public gives is checked by its split job instead (``nodedp split --check-limits``)."""
    for dataset in dict.fromkeys(d for spec in config["studies"].values() for d in spec["datasets"]):
        size = public_size(dataset, graphs_dir=graphs_dir)
        if size is not None:
            check_size_limits(size_limits(config, dataset), size)
