"""How unstable degree bounding is under one node removal, per dataset: a markdown table.

    python benchmarks/bounding_stability.py --graph-dir DIR [DIR ...] [--sample 200] [--hubs 20]
        [--seed 0] [--split-seed 0] [--in-degree-bound K] [--json OUT]

Each DIR is a canonical graph directory (``python -m nodedp graph --dataset ID
--out DIR``; the dataset id is read from its meta.json). The bounds are the
ones the workflow uses: the dataset's public D (out-degree, and NIP-GNN's
undirected D_max) and K (in-degree; ``--in-degree-bound`` overrides it, as the
DP-GNN methods' ``in_degree_bound`` does in config.yaml). The training nodes
are those of the protocol's split at ``--split-seed`` (inductive protocols
drop cross-split edges first, as ``bound-degree`` does). For every kind,
``nodedp.data.stability.bounding_report`` removes ``--sample`` uniformly drawn
nodes plus the ``--hubs`` highest-degree ones, re-runs the bounding with the
same seed, and counts the changed released units against the accountant's.
Columns: % nodes over the bound; max (mean) changed units / accountant's count.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from nodedp.data import get_dataset, load_graph, load_graph_meta, make_split, remove_cross_split_edges
from nodedp.data.stability import bounding_report


def _cell(unit: dict) -> str:
    return f"{unit['max']:.4g} ({unit['mean']:.3g}) / {unit['accountant']:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph-dir", nargs="+", required=True)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--hubs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--in-degree-bound", type=int, default=0, help="K; 0: the dataset's")
    parser.add_argument("--json", type=Path, default=None, help="also write every report here")
    args = parser.parse_args()

    reports, rows = {}, []
    for directory in args.graph_dir:
        meta = load_graph_meta(directory)
        info = get_dataset(meta["name"])
        graph = load_graph(directory)
        split = make_split(directory, seed=args.split_seed)
        edges = remove_cross_split_edges(graph.edge_index, split) if split.setting == "inductive" else graph.edge_index
        k = args.in_degree_bound or info.in_degree_bound
        start = time.perf_counter()
        report = bounding_report(
            edges,
            num_nodes=graph.num_nodes,
            train_nodes=split.train,
            bounds={"in-degree": k, "out-degree": info.out_degree_bound},
            seed=args.seed,
            sample=args.sample,
            sample_seed=args.seed,
            hubs=args.hubs,
        )
        seconds = time.perf_counter() - start
        reports[meta["name"]] = report
        out, inn, und = report["out-degree"], report["in-degree"], report.get("degree")
        rows.append(
            f"| {meta['name']} | {info.out_degree_bound} | {100 * out['frac_over_bound']:.1f} | {_cell(out['rows'])} "
            f"| {_cell(out['l2'])} | {k} | {100 * inn['frac_over_bound']:.1f} ({100 * inn['frac_sampled']:.1f}) "
            f"| {_cell(inn['subgraphs_r1'])} | {_cell(inn['subgraphs_r2'])} "
            + (
                f"| {100 * und['frac_over_bound']:.1f} | {_cell(und['pairs'])} | {_cell(und['l1'])} |"
                if und
                else "| – | – | – |"
            )
            + f" {seconds:.0f} s |"
        )
    print(
        "| dataset | D | % out-deg > D | NAP rows | NAP ℓ2 (R = √D) | K | % in-deg > K (> K/2) "
        "| DP-GNN subgraphs r=1 | r=2 | % deg > D | NIP pairs | NIP ‖ΔH‖₁ | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\ncells: max (mean) over {args.sample} uniform removals + {args.hubs} hubs (max only) / accountant's count")
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
