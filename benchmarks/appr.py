"""Throughput of the compiled push APPR solver against the per-source ISTA loop, in one run.

    python benchmarks/appr.py [--dataset csbm-homophilous | --graph-dir DIR | --nodes N]
        [--sources all|N] [--reference-sample 50] [--repeat 3] [--threads 2]
        [--rho 1e-4 --alpha 0.25 --tol 1e-4] [--fresh-jit]

Builds the graph (a synthetic dataset from code; a downloaded one from
``--graph-dir``, e.g. resources/graphs/cora-ml of a workflow run; or, with
``--nodes``, a CSBM graph with csbm-homophilous's parameters and N nodes) and
solves the ℓ1-regularized PageRank problem for ``--sources`` (all nodes, or N
of them drawn with seed 0) with ``nodedp.structure.appr_push`` (numba push).
The per-source ISTA loop (``nodedp.structure.appr_ista_reference``) runs on a
sample of ``--reference-sample`` of those sources only, and its rate is
extrapolated from that sample: the printout says so. Rates are source nodes per
second of wall-clock time; the process CPU time is printed beside them, since
other load on the machine slows wall-clock time. ``appr_push`` runs
``--repeat`` times: the best and the median rate are printed (the speed-up
uses the best).

``--threads`` sets torch's threads and the worker threads of ``appr_push``.
Before any timing, ``appr_push`` is called once on a 3-node graph: that call
compiles its numba kernel, or loads it from numba's on-disk cache, and is
reported separately (with ``--fresh-jit`` the cache goes to a temporary
directory, so the printed time is a full compile).

The push solution is compared with the reference on the sample: they differ
within the solvers' tolerance (see ``nodedp.structure.appr``: each is within
tol·ρ‖√d‖₂ of the optimum in q = D^{-1/2} p), since ISTA and push stop at
different points; the printed bound is twice that.
"""

from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
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
    parser.add_argument("--repeat", type=int, default=3, help="runs of appr_push (best and median reported)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alpha", type=float, default=0.25)
    parser.add_argument("--rho", type=float, default=1e-4)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument(
        "--fresh-jit",
        action="store_true",
        help="compile appr_push's kernel into a temporary numba cache (times a full compile)",
    )
    args = parser.parse_args()
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if args.reference_sample < 1:
        parser.error(f"--reference-sample must be >= 1, got {args.reference_sample}")
    torch.set_num_threads(args.threads)
    jit_cache = tempfile.TemporaryDirectory() if args.fresh_jit else None
    if jit_cache is not None:
        os.environ["NUMBA_CACHE_DIR"] = jit_cache.name  # read when numba is first imported, just below

    from nodedp.data import build_dataset, load_graph
    from nodedp.data.synthetic import CSBMSpec, generate_csbm
    from nodedp.structure import appr_ista_reference
    from nodedp.structure.appr import _undirected

    # The submodule itself (for its kernel's cache stats): the package attribute appr_push is the function.
    push_module = importlib.import_module("nodedp.structure.appr_push")

    def push(*a, **k):
        return push_module.appr_push(*a, num_threads=args.threads, **k)

    tiny = torch.tensor([[0, 1], [1, 2]])
    _, jit_wall, _ = _timed(lambda: push(tiny, num_nodes=3, sources=torch.tensor([0])))
    stats = push_module._push_chunk.stats
    how = "compiled" if stats.cache_misses else "loaded from numba's cache" if stats.cache_hits else "compiled"
    jit_line = f"  push kernel {how} on a 3-node warm-up in {jit_wall:.2f} s (not in the rates below)"

    if args.nodes:
        name = f"csbm-homophilous-like ({args.nodes} nodes)"
        data = generate_csbm(
            CSBMSpec(
                num_nodes=args.nodes,
                num_classes=5,
                avg_degree=12.0,
                homophily=0.75,
                num_features=5,
                feature_signal=2.0,
                degree_exponent=2.5,
                class_weights=None,
                seed=0,
            )
        )
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

    runs = [
        _timed(lambda: push(edge_index, num_nodes=n, sources=sources, **params)) for _ in range(max(args.repeat, 1))
    ]
    out, wall, cpu = min(runs, key=lambda run: run[1])
    median_wall = float(np.median([run[1] for run in runs]))
    reference, r_wall, r_cpu = _timed(lambda: appr_ista_reference(edge_index, num_nodes=n, sources=sample, **params))
    sqrt_d = np.sqrt(np.bincount(_undirected(edge_index, num_nodes=n)[0], minlength=n))  # appr.py's degrees

    rate, r_rate = sources.numel() / wall, sample.numel() / r_wall
    # The sample's rows (the first of out) without densifying all of out.
    rows = sp.csr_matrix(
        (out.values().numpy(), out.col_indices().numpy(), out.crow_indices().numpy()), shape=tuple(out.shape)
    )[: sample.numel()].toarray()
    gap = np.linalg.norm((rows - reference) / sqrt_d, axis=1).max()
    bound = 2 * args.tol * args.rho * np.linalg.norm(sqrt_d)
    print(
        f"{name}: {n} nodes, {edge_index.size(1)} directed edges; α={args.alpha} ρ={args.rho} tol={args.tol}; "
        f"{args.threads} thread(s), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(jit_line)
    print(
        f"  {'push:':11s} {sources.numel():6d} sources in {wall:8.3f} s wall ({cpu:8.3f} s CPU): "
        f"{rate:9.1f} sources/s (best of {len(runs)}; median {sources.numel() / median_wall:.1f}); "
        f"{out.values().numel() / max(sources.numel(), 1):.1f} non-zeros per row"
    )
    print(
        f"  {'reference:':11s} {sample.numel():6d} sources in {r_wall:8.3f} s wall ({r_cpu:8.3f} s CPU): "
        f"{r_rate:9.1f} sources/s (extrapolated from this sample to all {sources.numel()})"
    )
    print(
        f"  speed-up of push vs reference: {rate / r_rate:.1f}× (wall), "
        f"{(r_cpu / max(sample.numel(), 1)) / (cpu / max(sources.numel(), 1)):.1f}× (CPU time per source); "
        f"max ‖Δq‖₂ on the sample {gap:.1e} ({'within' if gap <= bound else 'EXCEEDS'} the bound "
        f"2·tol·ρ‖√d‖₂ = {bound:.1e})"
    )
    if jit_cache is not None:
        jit_cache.cleanup()


if __name__ == "__main__":
    main()
