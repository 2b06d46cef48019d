"""RunInputs with a degree-bounded structure artifact, as the workflow's bound_degree rule builds it."""

from __future__ import annotations

from nodedp.data import degree_artifact
from nodedp.methods import RunInputs


def with_bound(inputs: RunInputs, kind: str, bound: int, *, seed: int = 0) -> RunInputs:
    """``inputs`` plus the ``kind`` artifact ("in-degree", "out-degree" or "degree") at public bound ``bound``."""
    graph, split = inputs.graph, inputs.split
    artifact = degree_artifact(graph.edge_index, kind=kind, bound=bound, seed=seed, num_nodes=graph.num_nodes,
                               train_nodes=split.train)
    return RunInputs(graph=graph, split=split, num_classes=inputs.num_classes, structure={kind: artifact})
