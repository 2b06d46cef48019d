"""Time one training epoch of a DP-GNN method against its non-private twin on the same graph.

    python benchmarks/epoch_time.py [--dataset csbm-homophilous] [--private dp-gcn --twin gcn]
        [--graph-dir DIR] [--epochs 5 --rounds 3 --threads 2]

Builds the dataset's graph (synthetic ones from code; a downloaded one from
``--graph-dir``, e.g. resources/graphs/cora of a workflow run), its protocol's
split (seed 0) and the in-degree-bounded edges, then runs both methods through
the registry exactly as `python -m nodedp train` does, alternating them for
``--rounds`` rounds so that background load hits both alike. Per round it takes
the training loop's own time (setup, calibration and evaluation excluded) over
the epochs; it prints the median seconds per epoch and their ratio. An epoch
of the private method is ⌈N/m⌉ steps of m subgraphs; of the twin, one
full-batch step on the whole graph.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="csbm-homophilous")
    parser.add_argument("--graph-dir", help="an existing canonical graph directory (needed for downloaded datasets)")
    parser.add_argument("--private", default="dp-gcn")
    parser.add_argument("--twin", default="gcn")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--in-degree-bound", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from nodedp.accounting import resolve_delta
    from nodedp.contract.base import RunInputs, RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.data import bound_in_degree, build_dataset, load_graph, make_split
    from nodedp.io import read_json

    with tempfile.TemporaryDirectory() as tmp:
        graph_dir = Path(args.graph_dir) if args.graph_dir else Path(tmp) / "graph"
        if not args.graph_dir:
            build_dataset(args.dataset, graph_dir)
        meta = read_json(graph_dir / "meta.json")
        graph = load_graph(graph_dir)
        split = make_split(graph_dir, seed=0)
    kept = bound_in_degree(
        graph.edge_index, num_nodes=graph.num_nodes, train_nodes=split.train, max_degree=args.in_degree_bound, seed=0
    )
    structure = {"in-degree": {"kind": "in-degree", "bound": args.in_degree_bound, "seed": 0, "edge_index": kept}}
    inputs = RunInputs(graph=graph, split=split, num_classes=meta["num_classes"], structure=structure)

    per_epoch: dict[str, list[float]] = {args.private: [], args.twin: []}
    for round_ in range(args.rounds):
        for name in per_epoch:
            info = get_method(name)
            hp = info.parse_hparams(
                {"epochs": args.epochs, **({"in_degree_bound": args.in_degree_bound} if info.private else {})}
            )
            spec = RunSpec(
                dataset=meta["name"],
                method=name,
                seed=round_,
                target_epsilon=args.epsilon if info.private else float("inf"),
                target_delta=resolve_delta("auto", num_private_units=graph.num_nodes) if info.private else 0.0,
                device="cpu" if not torch.cuda.is_available() else "cuda",
            )
            result = info.run(inputs, spec, hp)
            per_epoch[name].append(result.train_seconds / args.epochs)

    medians = {name: statistics.median(times) for name, times in per_epoch.items()}
    print(
        f"{meta['name']}: {graph.num_nodes} nodes, {split.train.numel()} training nodes, "
        f"{args.epochs} epochs × {args.rounds} rounds, {args.threads} threads"
    )
    for name, median in medians.items():
        print(
            f"  {name:>10}: {median * 1000:8.1f} ms/epoch (median; rounds: "
            f"{', '.join(f'{t * 1000:.1f}' for t in per_epoch[name])})"
        )
    print(f"  ratio {args.private}/{args.twin}: {medians[args.private] / medians[args.twin]:.1f}×")


if __name__ == "__main__":
    main()
