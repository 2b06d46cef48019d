"""Throughput of batched APPR-by-ISTA against the per-source ISTA loop, in one run.

    python benchmarks/appr.py [--dataset csbm-homophilous | --graph-dir DIR | --nodes N]
        [--sources all|N] [--reference-sample 50] [--repeat 3] [--threads 2] [--rho 1e-4 --alpha 0.25 --tol 1e-4]

Builds the graph (a synthetic dataset from code; a downloaded one from
``--graph-dir``, e.g. resources/graphs/cora-ml of a workflow run; or, with
``--nodes``, a CSBM graph with csbm-homophilous's parameters and N nodes) and
solves the ℓ1-regularized PageRank problem for ``--sources`` (all nodes, or N
of them drawn with seed 0) with ``nodedp.structure.appr_ista``. The per-source
loop (``appr_ista_reference``) runs on a sample of ``--reference-sample`` of
those sources only, and its rate is extrapolated from that sample: the
printout says so. Both rates are source nodes per second of wall-clock time;
the process CPU time is printed beside them, since other load on the machine
slows wall-clock time. ``appr_ista`` runs ``--repeat`` times: the best and the
median rate are printed (the speed-up uses the best). The two solutions are
compared on the sample; they differ within the solvers' tolerance (see
``nodedp.structure.appr``), since ISTA stops early and ``appr_ista`` solves its
support exactly.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    graph = parser.add_mutually_exclusive_group()
    graph.add_argument("--dataset", default="csbm-homophilous")
    graph.add_argument("--graph-dir", help="an existing canonical graph directory (needed for downloaded datasets)")
    graph.add_argument("--nodes", type=int, help="a CSBM graph with csbm-homophilous's parameters and this many nodes")
    parser.add_argument("--sources", default="all", help="'all' or how many source nodes (seeded sample)")
    parser.add_argument("--reference-sample", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="runs of appr_ista (best and median reported)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alpha", type=float, default=0.25)
    parser.add_argument("--rho", type=float, default=1e-4)
    parser.add_argument("--tol", type=float, default=1e-4)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from nodedp.data import build_dataset, load_graph
    from nodedp.data.synthetic import CSBMSpec, generate_csbm
    from nodedp.structure import appr_ista, appr_ista_reference

    if args.nodes:
        name = f"csbm-homophilous-like ({args.nodes} nodes)"
        data = generate_csbm(CSBMSpec(num_nodes=args.nodes, num_classes=5, avg_degree=12.0, homophily=0.75,
                                      num_features=5, feature_signal=2.0, degree_exponent=2.5,
                                      class_weights=None, seed=0))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            graph_dir = Path(args.graph_dir) if args.graph_dir else Path(tmp) / "graph"
            if not args.graph_dir:
                build_dataset(args.dataset, graph_dir)
            data = load_graph(graph_dir)
        name = graph_dir.name if args.graph_dir else args.dataset
    n, edge_index = data.num_nodes, data.edge_index
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    sources = order if args.sources == "all" else order[: int(args.sources)]
    sample = sources[: args.reference_sample]
    params = {"alpha": args.alpha, "rho": args.rho, "tol": args.tol}

    runs = [_timed(lambda: appr_ista(edge_index, num_nodes=n, sources=sources, **params))
            for _ in range(max(args.repeat, 1))]
    batched, b_wall, b_cpu = min(runs, key=lambda run: run[1])
    median_wall = float(np.median([run[1] for run in runs]))
    reference, r_wall, r_cpu = _timed(lambda: appr_ista_reference(edge_index, num_nodes=n, sources=sample, **params))
    diff = np.abs(batched.to_dense()[: sample.numel()].numpy() - reference).max() if sample.numel() else 0.0

    b_rate, r_rate = sources.numel() / b_wall, sample.numel() / r_wall
    print(f"{name}: {n} nodes, {edge_index.size(1)} directed edges; α={args.alpha} ρ={args.rho} tol={args.tol}; "
          f"torch threads {args.threads}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  batched appr_ista:      {sources.numel():6d} sources in {b_wall:8.2f} s wall ({b_cpu:8.2f} s CPU): "
          f"{b_rate:9.1f} sources/s (best of {len(runs)}; median {sources.numel() / median_wall:.1f}); "
          f"{batched.values().numel() / max(sources.numel(), 1):.1f} non-zeros per row")
    print(f"  per-source reference:   {sample.numel():6d} sources in {r_wall:8.2f} s wall ({r_cpu:8.2f} s CPU): "
          f"{r_rate:9.1f} sources/s (extrapolated from this sample to all {sources.numel()})")
    print(f"  speed-up: {b_rate / r_rate:.1f}× (wall), {(r_cpu / max(sample.numel(), 1)) / (b_cpu / sources.numel()):.1f}× "
          f"(CPU time per source); max |difference| on the sample: {diff:.1e}")


if __name__ == "__main__":
    main()
