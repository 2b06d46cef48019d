"""The data stage's verbs: list the datasets, check a config, download, build a graph, cut a split, and report a
graph's distance from its degree bounds (`stability`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from nodedp.cli.common import AddVerb, add_progress_option, note

if TYPE_CHECKING:  # the verbs import what they use when they run
    from nodedp.data.splits import Split


def cmd_datasets(args: argparse.Namespace) -> None:
    from nodedp.data import DATASETS

    for name in sorted(DATASETS):
        info = DATASETS[name]
        print(f"{name:24s} {info.kind:10s} {info.description}")


def add_datasets(verb: AddVerb) -> None:
    verb("datasets", cmd_datasets, "list the dataset registry")


def cmd_check_config(args: argparse.Namespace) -> None:
    from nodedp.config.check import check_config
    from nodedp.config.limits import public_size
    from nodedp.config.read import SCHEMA, ConfigError, check_schema, read_config

    config = read_config(args.config)  # a YAML error names the file and line
    schema = Path(args.schema) if args.schema else SCHEMA
    if not schema.is_file():
        raise ConfigError(f"no config schema at {schema}; name one with --schema, or leave it out for nodedp's own")
    try:
        check_schema(config, schema)
        check_config(config, graphs_dir=Path(args.graphs))
    except ConfigError as err:
        raise ConfigError(f"{args.config}: {err}") from None
    print(f"{args.config}: OK; studies {', '.join(config['studies'])}: {count_cells(config)} training cell(s)")
    unsized = sorted(
        {
            d
            for study in config["studies"].values()
            for d in study["datasets"]
            if public_size(d, graphs_dir=Path(args.graphs)) is None
        }
    )
    if unsized:
        print(
            "not built yet, so their δ, batch sizes and reference-mode claims are checked when the workflow cuts "
            f"their splits (before any training): {', '.join(unsized)}"
        )


def count_cells(config: dict) -> int:
    """The training cells (dataset, method, ε, seed) of a config's studies, each counted once."""
    from nodedp.config.variants import resolve_method
    from nodedp.contract.registry import get_method

    cells = set()
    for study in config["studies"].values():
        for method in study["methods"]:
            private = get_method(resolve_method(config, method)[0]).private
            cells |= {
                (d, method, e, s)
                for d in study["datasets"]
                for e in (study["epsilons"] if private else ["inf"])
                for s in study["seeds"]
            }
    return len(cells)


def add_check_config(verb: AddVerb) -> None:
    p = verb(
        "check-config",
        cmd_check_config,
        "check a config file as the workflow does before any job: YAML syntax, schema, methods and "
        "hyperparameters, δ, batch sizes and reference-mode claims (the least ε a paper's accountant can state) "
        "against the datasets' public sizes",
    )
    p.add_argument("config", nargs="?", default="config.yaml", help="the config file (default: config.yaml)")
    p.add_argument(
        "--graphs",
        default="resources/graphs",
        help="folder of built graphs, whose meta.json give the sizes of downloaded datasets "
        "(default: resources/graphs, the workflow's)",
    )
    p.add_argument(
        "--schema", default=None, help="another JSON schema (default: nodedp's own, shipped with the package)"
    )


def cmd_download(args: argparse.Namespace) -> None:
    from nodedp.cli.common import VerbFailure
    from nodedp.data import get_dataset
    from nodedp.data.download import DownloadError, fetch_files, resolve_mirror

    info = get_dataset(args.dataset)
    if info.kind != "download":
        raise ValueError(f"dataset {args.dataset!r} is {info.kind}: it has nothing to download")
    out = Path(args.out)
    lock = Path(args.lock) if args.lock else None
    try:
        paths = fetch_files(info.files, out, mirror=resolve_mirror(args.mirror), lock_path=lock, progress=args.progress)
    except DownloadError as err:  # the network's fault, not the input's: one line on the console, no traceback
        raise VerbFailure(f"{err} [dataset {args.dataset}: {info.description}]") from None
    left_out = len(info.files) - len(paths)
    print(f"{args.dataset}: {len(paths)} file(s) in {out}" + (f"; {left_out} optional not served" if left_out else ""))


def add_download(verb: AddVerb) -> None:
    p = verb("download", cmd_download, "fetch a dataset's upstream files (checksums verified; mirror: $NODEDP_MIRROR)")
    p.add_argument("--dataset", required=True, help="a downloaded dataset id (see `datasets`)")
    p.add_argument("--out", required=True, help="download directory (appears complete or not at all)")
    p.add_argument(
        "--mirror",
        default=None,
        help="base URL that serves https://HOST/PATH as MIRROR/HOST/PATH (default: $NODEDP_MIRROR)",
    )
    p.add_argument(
        "--lock", default=None, help="checksum lock file for unpinned files (default: checksums.lock.json beside --out)"
    )
    add_progress_option(p)


def cmd_graph(args: argparse.Namespace) -> None:
    from nodedp.data import build_dataset

    note(f"building {args.dataset}" + (f" from {args.raw}" if args.raw else " from its spec"))
    meta = build_dataset(args.dataset, Path(args.out), raw_dir=Path(args.raw) if args.raw else None)
    print(json.dumps({k: meta[k] for k in ("name", "num_nodes", "num_edges", "num_classes")}))


def add_graph(verb: AddVerb) -> None:
    p = verb("graph", cmd_graph, "build a dataset into the canonical format (graph.pt + meta.json)")
    p.add_argument("--dataset", required=True, help="a dataset id (see `datasets`)")
    p.add_argument("--raw", default=None, help="download directory of a downloaded dataset (from `download`)")
    p.add_argument("--out", required=True, help="output directory")


def cmd_split(args: argparse.Namespace) -> None:
    from nodedp.data import make_split, save_split

    split = make_split(Path(args.graph), seed=args.seed, setting=args.setting, fractions=args.fractions)
    if args.check_limits is not None:  # before saving: no split is left for a grid that cannot train on it
        check_split_limits(json.loads(args.check_limits), split, graph=Path(args.graph))
    save_split(split, Path(args.out))
    print(f"{split.setting} split: {split.train.numel()} train / {split.val.numel()} val / {split.test.numel()} test")


def check_split_limits(limits: dict, split: Split, *, graph: Path) -> None:
    """The grid's size checks (``nodedp.config.limits.size_limits``, with the config file(s) under ``config``) against
    the graph's meta.json and the training nodes of the split just cut: what a planner could not check before the
    dataset was built."""
    from nodedp.config.limits import PublicSize, check_size_limits
    from nodedp.config.read import ConfigError
    from nodedp.io import read_json

    meta = read_json(graph / "meta.json")
    size = PublicSize(
        num_nodes=meta["num_nodes"],
        num_edges=meta["num_edges"] // 2 if meta.get("is_undirected") else meta["num_edges"],
        num_train=split.train.numel(),
        source=f"{graph / 'meta.json'} and its {split.setting} split of seed {split.seed}",
    )
    try:
        check_size_limits(limits, size)
    except ConfigError as err:
        where = limits.get("config")
        raise ConfigError(f"{where}: {err}" if where else str(err)) from None


def add_split(verb: AddVerb) -> None:
    p = verb("split", cmd_split, "store a train/val/test split as the dataset's protocol says")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument(
        "--setting", default=None, choices=["transductive", "inductive"], help="override the protocol's setting"
    )
    p.add_argument("--seed", type=int, required=True, help="seed of a random split (an official split ignores it)")
    p.add_argument(
        "--fractions",
        type=float,
        nargs=3,
        default=None,
        metavar=("TRAIN", "VAL", "TEST"),
        help="override the protocol's random fractions",
    )
    p.add_argument("--out", required=True, help="output .pt file")
    p.add_argument(
        "--check-limits",
        default=None,
        metavar="JSON",
        help="what the grid's runs ask of the dataset's size (the workflow's, from the config: δ, "
        "the largest batch of training nodes), checked on the split before it is saved",
    )


def cmd_stability(args: argparse.Namespace) -> None:
    from nodedp.data import get_dataset, load_graph_meta, load_graph_tensors, load_split, remove_cross_split_edges
    from nodedp.data.stability import bounding_report
    from nodedp.io import write_json

    graph_dir = Path(args.graph)
    meta = load_graph_meta(graph_dir)
    graph = load_graph_tensors(graph_dir)
    num_nodes = graph["x"].size(0)
    split = load_split(Path(args.split), num_nodes=num_nodes)
    edges = graph["edge_index"]
    if split.setting == "inductive":  # as bound-degree does
        edges = remove_cross_split_edges(edges, split)
    info = get_dataset(meta["name"])
    # Every removal re-runs the whole bounding: on large graphs a smaller sample keeps the work ~ 2·10⁷ edges.
    sample = args.sample or max(20, min(200, int(2e7 // max(1, edges.size(1)))))
    note(f"{meta['name']}: re-running each degree bounding without each of {sample} + {args.hubs} node(s)")
    bounds = {"in-degree": info.in_degree_bound, "out-degree": info.out_degree_bound}
    report = bounding_report(
        edges,
        num_nodes=num_nodes,
        train_nodes=split.train,
        bounds=bounds,
        seed=args.seed,
        sample=sample,
        hubs=args.hubs,
    )
    write_json(
        Path(args.out),
        {
            "about": "analysis of the dataset (counts of the input graph), never part of a run",
            "dataset": meta["name"],
            "split": args.split,
            "sample": sample,
            "hubs": args.hubs,
            "seed": args.seed,
            "kinds": report,
        },
    )
    # The report's counts are the private graph's: they stay in its file (kept with the data), never in the log.
    print(f"{meta['name']}: stability report of {', '.join(report)} in {args.out} (counts of the private graph)")


def add_stability(verb: AddVerb) -> None:
    p = verb(
        "stability",
        cmd_stability,
        "how far a graph is from its public degree bounds and how much one node removal moves the bounding",
    )
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt): its training nodes feed DP-GNN's Algorithm 1")
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        help="nodes removed one at a time, drawn uniformly (0: 200, fewer on graphs over 10⁵ edges)",
    )
    p.add_argument("--hubs", type=int, default=20, help="plus this many highest-degree nodes (count in max only)")
    p.add_argument("--seed", type=int, default=0, help="the bounding's seed")
    p.add_argument("--out", required=True, help="output JSON (beside the graph's meta.json in the workflow)")
