"""RunInputs with a degree-bounded structure artifact, as the workflow's bound_degree rule builds it, and the
graphs that extend an input with appended nodes that the predict tests read."""

from __future__ import annotations

import torch
from torch_geometric.data import Data

from nodedp.audit.canaries import plant_canaries
from nodedp.contract.base import RunInputs
from nodedp.data import degree_artifact
from nodedp.train import metrics_from_logits

# Small settings every method takes where it has the field: one epoch, one hop, a tiny model, degree bounds of 3
# (a plan uses the public bound its hyperparameters set, else the dataset's).
QUICK_HPARAMS = {
    "epochs": 1,
    "batch_size": 64,
    "hidden_dim": 8,
    "encoder_epochs": 1,
    "hops": 1,
    "out_degree_bound": 3,
    "in_degree_bound": 3,
    "max_degree": 3,
}


def with_bound(inputs: RunInputs, kind: str, bound: int, *, seed: int = 0) -> RunInputs:
    """``inputs`` plus the ``kind`` artifact ("in-degree", "out-degree" or "degree") at public bound ``bound``."""
    graph, split = inputs.graph, inputs.split
    artifact = degree_artifact(
        graph.edge_index, kind=kind, bound=bound, seed=seed, num_nodes=graph.num_nodes, train_nodes=split.train
    )
    return RunInputs(graph=graph, split=split, num_classes=inputs.num_classes, structure={kind: artifact})


def extended_graph(inputs: RunInputs, *, degree_bound: int, extra: int = 6, isolated: bool = False) -> Data:
    """The input graph plus ``extra`` appended nodes, each wired to ≤ 3 training nodes whose degrees stay within
    ``degree_bound`` (so a bounding at it keeps their edges): the audit's canaries (``plant_canaries``), all of
    them present; ``isolated``: the same nodes without their edges."""
    plan = plant_canaries(
        inputs.graph,
        inputs.split,
        m=extra,
        degree_bound=degree_bound,
        canary_degree=3,
        num_classes=inputs.num_classes,
        seed=1,
    )
    edges = inputs.graph.edge_index if isolated else plan.graph.edge_index
    return Data(x=plan.graph.x, y=plan.graph.y, edge_index=edges)


def accuracy_on(logits: torch.Tensor, graph: Data, nodes: torch.Tensor) -> float:
    """Accuracy of ``logits`` on ``nodes`` against ``graph``'s labels, as the evaluator computes it."""
    return metrics_from_logits(logits.cpu()[nodes], graph.y[nodes])["accuracy"]


def within_hops(edge_index: torch.Tensor, start: torch.Tensor, *, num_nodes: int, hops: int) -> torch.Tensor:
    """[num_nodes] bool: the nodes at most ``hops`` edges (either direction) from ``start``."""
    reached = torch.zeros(num_nodes, dtype=torch.bool)
    reached[start] = True
    src, dst = edge_index
    for _ in range(hops):
        reached = reached.index_fill(0, dst[reached[src]], True).index_fill(0, src[reached[dst]], True)
    return reached
