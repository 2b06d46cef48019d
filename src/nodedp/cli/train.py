"""The training stage's verbs: list the methods (`methods`), and train one method on one cell (`train`) or on
several in one process (`train-cells`), each cell writing its ledger.json and metrics.json."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from nodedp.cli.cells import add_cell_list_options, flag_cell, loaded_graph, parse_cells, run_cells
from nodedp.cli.common import (
    AddVerb,
    add_device_options,
    add_settings_options,
    add_stage_timings_option,
    method_settings,
    note,
    parse_epsilon,
    recorded_stages,
    target_delta,
)
from nodedp.cli.structure import check_structure, load_structure

CELL_KEYS = {
    "graph": "canonical graph directory",
    "epsilon": "target ε (a number, or 'inf' for a non-private method)",
    "seed": "an integer",
    "split": "the stored split (.pt)",
    "structure": "a list of structure artifacts (.pt)",
    "out": "the run directory",
    "log": "optional: a file that gets the cell's output",
}
METHOD_HELP = "a method id (see `methods`); with --config also a variant named in its `methods:`"


def cmd_methods(args: argparse.Namespace) -> None:
    from nodedp.config.read import read_config
    from nodedp.contract.registry import get_method, method_names

    config = read_config(args.config) if args.config else {}
    if args.verbose:
        print(
            "hyperparameters: a config's `methods:` entry (config), on top of the suite's tuned block in "
            "nodedp/methods/tuned.yaml (tuned), key by key; a key set in neither takes the method's default\n"
        )
    for name in method_names():
        info = get_method(name)
        print(f"{name:12s} {info.level:5s} {info.description}")
        if args.verbose:
            print_hyperparameters(config, name, info)
    print_variants(config, args.config, verbose=args.verbose)


def print_hyperparameters(config: dict, name: str, info) -> None:
    """Each hyperparameter of method ``name``: its default, or the value set and where (config or tuned)."""
    import dataclasses

    from nodedp.config.variants import resolve_method

    grid = config.get("methods") or {}
    configured, defaults = resolve_method(config, name)[1], info.hparams()
    for f in dataclasses.fields(info.hparams):
        default = getattr(defaults, f.name)
        if f.name not in configured:
            print(f"    {f.name} = {default!r}")
            continue
        where = "config" if f.name in (grid.get(name) or {}) else "tuned"
        print(f"    {f.name} = {configured[f.name]!r}  ({where}; default {default!r})")


def print_variants(config: dict, config_path: str | None, *, verbose: bool) -> None:
    """The variants of the tuned settings and of the config: name, base method, the keys set on top."""
    from nodedp.config.variants import resolve_method, variant_overrides

    source = "nodedp/methods/tuned.yaml" + (f" and {config_path}" if config_path else "")
    print(f"\nvariants in {source} (a base method with keys on top; `methods:` entries with `base:`):")
    for name, (base, keys) in sorted(variant_overrides(config).items()):
        overrides = ", ".join(f"{k}={v!r}" for k, v in keys.items()) or "(none: the base's block)"
        print(f"{name:24s} base {base:12s} {overrides}")
        if verbose:
            for key, value in sorted(resolve_method(config, name)[1].items()):
                print(f"    {key} = {value!r}")


def add_methods(verb: AddVerb) -> None:
    p = verb("methods", cmd_methods, "list the method registry and its variants (the suite's tuned ones, a config's)")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print each method's hyperparameters (tuned, the config's, or the default) and each variant's",
    )
    p.add_argument(
        "--config",
        default=None,
        help="resolve with this config file's `methods:` on top of the tuned settings, and list the "
        "variants it defines (name, base method, keys set on top)",
    )


def cmd_train(args: argparse.Namespace) -> None:
    train_cells(args, [flag_cell(args, CELL_KEYS)])


def add_train(verb: AddVerb) -> None:
    p = verb("train", cmd_train, "train and evaluate one method on one cell; writes metrics.json and ledger.json")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt)")
    p.add_argument("--structure", nargs="*", default=[], help="DP structure artifacts the method needs")
    p.add_argument("--method", required=True, help=METHOD_HELP)
    p.add_argument("--name", help="the name the run is recorded under (a variant's name; default: --method)")
    p.add_argument("--epsilon", type=parse_epsilon, required=True, help="target ε ('inf' for non-private methods)")
    p.add_argument("--seed", type=int, required=True, help="seed of initialisation, sampling and noise")
    add_settings_options(p)
    add_device_options(p)
    p.add_argument("--out", required=True, help="run directory")
    add_stage_timings_option(p, "per stage (structure: everything but training and evaluation)")


def cmd_train_cells(args: argparse.Namespace) -> None:
    train_cells(args, parse_cells(args.cells, CELL_KEYS))


def add_train_cells(verb: AddVerb) -> None:
    p = verb(
        "train-cells",
        cmd_train_cells,
        "train one method on several cells in one process (what each training job of the workflow runs): "
        "Python, torch and each graph are loaded once, and each cell writes the metrics.json and ledger.json "
        "that `train` would write for it alone",
    )
    name_help = "the name the runs are recorded under (a variant's name; default: --method)"
    add_cell_list_options(p, CELL_KEYS, method_help=METHOD_HELP, name_help=name_help)
    add_settings_options(p)
    add_device_options(p)


def train_cells(args: argparse.Namespace, cells: list[dict]) -> None:
    """Train one method on each cell in turn, in this process: each graph is read once, every cell trains on a
    fresh copy of it with its own seed, so a cell's metrics and ledger are those a process of its own writes."""
    settings = [method_settings(args, cell["epsilon"]) for cell in cells]  # every cell checked before any trains
    run_cells(args, cells, settings, train_cell)


def train_cell(args: argparse.Namespace, cell: dict, settings: tuple) -> None:
    """One cell: train, check the ledger against the run, write ledger.json then metrics.json, print a line."""
    from nodedp.contract.base import RunInputs, RunSpec
    from nodedp.data import load_split
    from nodedp.io import write_json

    started = time.perf_counter()
    method, name, info, hp, delta, accountant = settings  # method_settings(args, cell["epsilon"])
    structure = load_structure(cell["structure"])
    check_structure(method, info.needs, structure)

    meta, graph = loaded_graph(str(cell["graph"]))
    graph = graph.clone()  # a method may change its input in place: the next cell gets the graph as read
    split = load_split(Path(cell["split"]), num_nodes=graph.num_nodes)
    note(
        f"{meta['name']}: {graph.num_nodes} nodes, {split.train.numel()} training; training {name} "
        f"at ε = {cell['epsilon']:g}, seed {cell['seed']}"
    )
    spec = RunSpec(
        dataset=meta["name"],
        method=name,
        seed=cell["seed"],
        target_epsilon=cell["epsilon"],
        target_delta=target_delta(info, meta, delta),
        accountant=info.resolve_accountant(accountant),
        device=args.device,
        progress=args.progress,
    )
    inputs = RunInputs(graph=graph, split=split, num_classes=meta["num_classes"], structure=structure, meta=meta)
    result = recorded_stages(args, lambda: info.run(inputs, spec, hp), device=args.device)
    check_run_ledger(result.ledger, spec, hp)
    spent = result.ledger.composed()  # (ε, δ)
    out = Path(cell["out"])
    out.mkdir(parents=True, exist_ok=True)
    metrics = run_metrics(args, result, spec, settings, spent=spent, setting=split.setting, started=started)
    # The ledger first: metrics.json is what marks a run complete.
    write_json(out / "ledger.json", result.ledger.to_dict())
    write_json(out / "metrics.json", metrics)
    print(
        f"{spec.method} on {spec.dataset} seed {spec.seed}: test accuracy {result.test['accuracy']:.4f}; "
        f"{spent_text(result.ledger, spec, spent, private=info.private)}"
    )


def check_run_ledger(ledger, spec, hp) -> None:
    """A run's ledger targets the run's (ε, δ), records a paper's claim exactly when the run uses its accounting,
    and passes its own checks."""
    if (ledger.target_epsilon, ledger.target_delta) != (spec.target_epsilon, spec.target_delta):
        raise ValueError(
            f"{spec.method}: ledger target ({ledger.target_epsilon}, {ledger.target_delta}) "
            f"differs from the run's ({spec.target_epsilon}, {spec.target_delta})"
        )
    if (ledger.claim is not None) != (getattr(hp, "accounting", "suite") == "paper"):
        raise ValueError(
            f"{spec.method}: a run with the paper's accounting must record the paper's claim in its ledger, "
            "and only such a run"
        )
    ledger.check()


def run_metrics(
    args: argparse.Namespace, result, spec, settings: tuple, *, spent: tuple[float, float], setting: str, started: float
) -> dict:
    """A run's metrics.json: the cell, what its ledger ``spent`` (ε, δ), accuracies, timings, hyperparameters and
    provenance."""
    import dataclasses

    import torch

    from nodedp.provenance import provenance

    method, _, info, hp, _, _ = settings
    ledger = result.ledger
    epsilon, spent_delta = spent
    metrics: dict[str, Any] = {
        "dataset": spec.dataset,
        "method": spec.method,
        "base_method": method,
        "seed": spec.seed,
        "private": info.private,
        "level": ledger.level,
        "setting": setting,
        "target_epsilon": spec.target_epsilon if info.private else None,
        "target_delta": spec.target_delta if info.private else None,
        "epsilon": epsilon if info.private else None,
        "delta": spent_delta if info.private else None,
        "accountant": ledger.accountant,  # the ledger's own (a reference run may fall back to rdp)
        "guarantee": ledger.guarantee(),  # what ε guarantees, and under which condition (the ledger's own)
        # Reference mode: the paper's claimed (ε, δ) for this noise and the actual ε at that δ (the ledger's).
        "claim": ledger.to_dict()["claim"],
        "val": dict(result.val),
        "test": dict(result.test),
        "timings": {"train_s": result.train_seconds, "total_s": time.perf_counter() - started},
        "hyperparameters": dataclasses.asdict(hp),
        "details": dict(result.details),
        "device": str(torch.device("cuda" if torch.cuda.is_available() and args.device != "cpu" else "cpu")),
        "version": provenance(),
    }
    from nodedp.contract.registry import plugin_of

    if plugin_of(method):  # a method from outside nodedp: the module a reader must load to re-derive the run
        metrics["plugin"] = plugin_of(method)
    return metrics


def spent_text(ledger, spec, spent: tuple[float, float], *, private: bool) -> str:
    """What a run ``spent`` (ε, δ), for its closing line: ε against the target, or the paper's claim and the
    actual ε."""
    epsilon, spent_delta = spent
    text = f"ε = {epsilon:.4f} ≤ {spec.target_epsilon} (δ = {spent_delta:g})" if private else "non-private"
    if ledger.claim is not None:
        text = (
            f"reference mode: the paper claims ε = {ledger.claim.epsilon:g} at δ = {ledger.claim.delta:g}; "
            f"actual ε = {ledger.actual_claim_epsilon():.4g} there, {epsilon:.4g} at δ = {spent_delta:g}"
        )
    return text
