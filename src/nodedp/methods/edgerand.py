"""`edgerand`: randomized response on the adjacency, then a non-private GNN (Wu et al. 2022).

The edge-level baseline of the GAP/ProGAP papers. The adjacency is released
once with every pair's entry flipped with probability 1/(1 + e^ε) (pure
ε-edge-DP, `nodedp.mechanisms.edge_rr`); the GNN (the `gcn` twin's model,
full batch) trains and predicts on that released graph only, so training and
inference are post-processing. Features and labels are public at edge level.
O(N²) time: meant for graphs of a few thousand nodes.
"""

from __future__ import annotations

import torch

from nodedp.accounting import Ledger, MechanismRecord
from nodedp.mechanisms.edge_rr import flip_probability, randomize_adjacency
from nodedp.methods.base import RunInputs, RunResult, RunSpec
from nodedp.methods.gnn import GnnHparams, run_gnn


def run_edgerand(inputs: RunInputs, spec: RunSpec, hp: GnnHparams) -> RunResult:
    graph = inputs.graph
    undirected = bool(graph.is_undirected())
    record = MechanismRecord(
        name=f"edge-rr:{spec.method}",
        kind="randomized_response",
        touches=("edges",),
        params={"mechanism": "edge_rr", "flip_probability": flip_probability(spec.target_epsilon),
                "num_nodes": graph.num_nodes,
                "pairs": "unordered" if undirected else "ordered"},
        sensitivity=1.0,
        sensitivity_reason=(
            "one edge is one adjacency entry (an unordered pair on this undirected graph); each entry is "
            "flipped independently w.p. p = 1/(1+e^ε), a likelihood ratio of (1−p)/p = e^ε"
        ),
        dp_event=None,
        pure_epsilon=spec.target_epsilon,
    )
    ledger = Ledger(level="edge", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
                    mechanisms=(record,), accountant=spec.accountant)
    ledger.check()

    def released(generator: torch.Generator) -> torch.Tensor:
        return randomize_adjacency(graph.edge_index, num_nodes=graph.num_nodes, epsilon=spec.target_epsilon,
                                   undirected=undirected, generator=generator)

    return run_gnn(inputs, spec, hp, layer="gcn", edges=released, ledger=ledger)
