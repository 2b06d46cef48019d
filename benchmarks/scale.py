"""Time and peak memory of the data stages on an ogbn-products-sized graph.

    python benchmarks/scale.py [--nodes 2449029 --edges 61859140 --features 100 --classes 47]

Builds a synthetic undirected graph of that size (a configuration model with
capped Pareto expected degrees, no self-loops or repeats; ``--edges`` counts
undirected edges as OGB does, and both directions are stored, in random column
order: 123.7M columns, mean degree 50.5, as ogbn-products in the canonical
format; float32 N(0, 1) features) and runs each stage in a fresh process, so
that every stage's peak RSS (``ru_maxrss`` of its process, torch included) is
its own: save_graph (with graph_stats and the SHA-256), load_graph (checksum
and validation), random_split (+ save_split), bound_in_degree (K = 10 over the
75% training nodes) and bound_out_degree (D = 50). "setup" is the peak after
loading the stage's inputs (the graph's arrays from .npy files, or nothing),
so "peak - setup" is what the stage itself adds. The files (~2x the graph's
size on disk) go to ``--workdir`` if given (and stay), else to a temporary
folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the parent process never needs torch
    import torch

_IN_DEGREE_BOUND = 10
_OUT_DEGREE_BOUND = 50
_CHUNK = 1 << 22  # feature values drawn per chunk
_PARETO_EXPONENT = 2.5  # degree propensity tail, P(theta > t) ~ t^-(exponent - 1)


def _peak_rss_gib() -> float:
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**30 if sys.platform == "darwin" else 2**20)


def _undirected_pairs(rng: np.random.Generator, *, num_nodes: int, num_pairs: int) -> np.ndarray:
    """``num_pairs`` distinct sorted keys u * N + v (u < v) of a configuration model.

    Expected degrees are Pareto-tailed and capped at the structural cutoff
    sqrt(N * d) (11,122 for ogbn-products, mean degree d = 50.5), as hubs in
    real graphs are. Each round gives every node a multinomial
    share of the missing endpoint stubs and pairs the stubs at random;
    self-loops and repeats are dropped and drawn again in the next round.
    """
    theta = (1.0 - rng.random(num_nodes)) ** (-1.0 / (_PARETO_EXPONENT - 1.0))
    mean_degree = 2 * num_pairs / num_nodes
    weights = np.minimum(theta / theta.mean(), np.sqrt(num_nodes * mean_degree) / mean_degree)
    weights /= weights.sum()
    keys = np.empty(0, dtype=np.int64)
    while keys.size < num_pairs:
        draws = int((num_pairs - keys.size) * 1.02) + 16
        stubs = np.repeat(np.arange(num_nodes), rng.multinomial(2 * draws, weights))
        rng.shuffle(stubs)
        u, v = stubs[:draws], stubs[draws:]
        keys = np.concatenate([keys, (np.minimum(u, v) * num_nodes + np.maximum(u, v))[u != v]])
        del stubs, u, v
        # sort + neighbour comparison: np.unique is much slower on 10^7 keys.
        keys.sort()
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    # Drop a random surplus, not the largest keys, so no node range is favoured.
    surplus = rng.choice(keys.size, size=keys.size - num_pairs, replace=False)
    return np.delete(keys, surplus)


def generate(args: argparse.Namespace) -> None:
    """Write x.npy, y.npy and edge_index.npy of the synthetic graph into the workdir."""
    rng = np.random.default_rng(args.seed)
    keys = _undirected_pairs(rng, num_nodes=args.nodes, num_pairs=args.edges)
    num_pairs = keys.size
    edge_index = np.empty((2, 2 * num_pairs), dtype=np.int64)
    np.floor_divide(keys, args.nodes, out=edge_index[0, :num_pairs])
    np.remainder(keys, args.nodes, out=edge_index[1, :num_pairs])
    del keys
    edge_index[0, num_pairs:] = edge_index[1, :num_pairs]
    edge_index[1, num_pairs:] = edge_index[0, :num_pairs]
    # Random column order: loaders do not promise sorted edges, and sorted
    # input would flatter every sort below.
    order = rng.permutation(2 * num_pairs)
    for row in range(2):
        edge_index[row] = edge_index[row][order]
    del order
    np.save(args.workdir / "edge_index.npy", edge_index)
    del edge_index
    # Every class present: the first C nodes take one class each.
    y = rng.integers(0, args.classes, size=args.nodes, dtype=np.int64)
    y[: args.classes] = np.arange(args.classes)
    np.save(args.workdir / "y.npy", y)
    x = np.lib.format.open_memmap(
        args.workdir / "x.npy", mode="w+", dtype=np.float32, shape=(args.nodes, args.features)
    )
    rows = max(1, _CHUNK // args.features)
    for start in range(0, args.nodes, rows):
        x[start : start + rows] = rng.standard_normal((min(rows, args.nodes - start), args.features), dtype=np.float32)
    x.flush()


def _load_array(args: argparse.Namespace, name: str) -> torch.Tensor:
    import torch

    return torch.from_numpy(np.load(args.workdir / f"{name}.npy"))


def _stages(args: argparse.Namespace) -> dict[str, tuple[Callable[[], Any], Callable[[Any], str]]]:
    """Stage name -> (setup, run): setup loads the inputs, run(inputs) does the timed work."""
    import torch
    from torch_geometric.data import Data

    from nodedp.data.degree import bound_in_degree, bound_out_degree
    from nodedp.data.graph import load_graph, save_graph
    from nodedp.data.splits import load_split, random_split, save_split

    graph_dir = args.workdir / "graph"
    split_path = args.workdir / "split.pt"

    def save_setup() -> Data:
        return Data(x=_load_array(args, "x"), y=_load_array(args, "y"), edge_index=_load_array(args, "edge_index"))

    def save_run(data: Data) -> str:
        meta = save_graph(data, graph_dir, name="scale", source={"kind": "synthetic", "generator": "scale.py"})
        size = (graph_dir / "graph.pt").stat().st_size / 2**30
        return f"graph.pt {size:.2f} GiB, undirected={meta['is_undirected']}, max in-degree {meta['degree']['in']['max']:.0f}"

    def load_run(_: None) -> str:
        data = load_graph(graph_dir)
        return f"{data.num_nodes} nodes, {data.edge_index.size(1)} edge columns"

    def split_run(_: None) -> str:
        split = random_split(args.nodes, seed=args.seed)
        save_split(split, split_path)
        return f"{split.train.numel()} train nodes"

    def in_setup() -> tuple[torch.Tensor, torch.Tensor]:
        return _load_array(args, "edge_index"), load_split(split_path, num_nodes=args.nodes).train

    def in_run(inputs: tuple[torch.Tensor, torch.Tensor]) -> str:
        edge_index, train = inputs
        kept = bound_in_degree(
            edge_index, num_nodes=args.nodes, train_nodes=train, max_degree=_IN_DEGREE_BOUND, seed=args.seed
        )
        top = int(torch.bincount(kept[1], minlength=args.nodes).max())
        return f"kept {kept.size(1)} edges, max in-degree {top} <= {_IN_DEGREE_BOUND}"

    def out_run(edge_index: torch.Tensor) -> str:
        kept = bound_out_degree(edge_index, num_nodes=args.nodes, max_degree=_OUT_DEGREE_BOUND, seed=args.seed)
        top = int(torch.bincount(kept[0], minlength=args.nodes).max())
        return f"kept {kept.size(1)} edges, max out-degree {top} <= {_OUT_DEGREE_BOUND}"

    def nothing() -> None:
        return None

    return {
        "save_graph": (save_setup, save_run),
        "load_graph": (nothing, load_run),
        "random_split": (nothing, split_run),
        "bound_in_degree": (in_setup, in_run),
        "bound_out_degree": (lambda: _load_array(args, "edge_index"), out_run),
    }


def run_stage(args: argparse.Namespace) -> None:
    """In the child process: run one stage and print its figures as one JSON line."""
    if args.stage == "generate":
        setup_peak, start = _peak_rss_gib(), time.perf_counter()
        generate(args)
        note = f"{args.nodes} nodes, {args.edges} undirected edges, {args.features} features"
    else:
        setup, run = _stages(args)[args.stage]
        inputs = setup()
        setup_peak, start = _peak_rss_gib(), time.perf_counter()
        note = run(inputs)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "setup_gib": setup_peak, "peak_gib": _peak_rss_gib(), "note": note}))


STAGES = ("generate", "save_graph", "load_graph", "random_split", "bound_in_degree", "bound_out_degree")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2_449_029)
    parser.add_argument("--edges", type=int, default=61_859_140, help="undirected edges, as OGB counts them")
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--classes", type=int, default=47)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, help="keep the graph files here (default: a temporary folder)")
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # internal: one stage, in a child
    args = parser.parse_args()
    if args.stage:
        run_stage(args)
        return

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="nodedp-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    common = [f"--{key}={getattr(args, key)}" for key in ("nodes", "edges", "features", "classes", "seed")]
    print(f"{'stage':<18} {'wall s':>8} {'setup GiB':>10} {'peak GiB':>9} {'stage GiB':>10}  note", flush=True)
    try:
        for stage in STAGES:
            child = subprocess.run(
                [sys.executable, __file__, "--stage", stage, f"--workdir={workdir}", *common],
                check=False,
                capture_output=True,
                text=True,
            )
            if child.returncode:
                sys.exit(f"stage {stage} failed (exit {child.returncode}):\n{child.stderr}")
            row = json.loads(child.stdout.strip().splitlines()[-1])
            print(
                f"{stage:<18} {row['seconds']:>8.1f} {row['setup_gib']:>10.2f} {row['peak_gib']:>9.2f} "
                f"{row['peak_gib'] - row['setup_gib']:>10.2f}  {row['note']}",
                flush=True,
            )
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
