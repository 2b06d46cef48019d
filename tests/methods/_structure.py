"""RunInputs with a degree-bounded structure artifact, as the workflow's bound_degree rule builds it."""

from __future__ import annotations

from nodedp.data import bound_in_degree, bound_out_degree, bound_undirected_degree
from nodedp.methods import RunInputs


def with_bound(inputs: RunInputs, kind: str, bound: int, *, seed: int = 0) -> RunInputs:
    """``inputs`` plus the ``kind`` artifact ("in-degree", "out-degree" or "degree") at public bound ``bound``."""
    graph, split = inputs.graph, inputs.split
    common = {"num_nodes": graph.num_nodes, "max_degree": bound, "seed": seed}
    if kind == "in-degree":
        kept = bound_in_degree(graph.edge_index, train_nodes=split.train, **common)
    else:
        kept = {"out-degree": bound_out_degree, "degree": bound_undirected_degree}[kind](graph.edge_index, **common)
    return RunInputs(graph=graph, split=split, num_classes=inputs.num_classes,
                     structure={kind: {"kind": kind, "bound": bound, "seed": seed, "edge_index": kept}})
