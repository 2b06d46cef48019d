"""`edgerand`: randomized response on the adjacency, then a non-private GNN (Wu et al. 2022).

The edge-level baseline of the GAP/ProGAP papers. The adjacency is released
once with every pair's entry flipped with probability 1/(1 + e^ε) (pure
ε-edge-DP, `nodedp.mechanisms.edge_rr`); the GNN (the `gcn` twin's model,
full batch) trains and predicts on that released graph only, so training and
inference are post-processing. Features and labels are public at edge level.
O(N²) time: meant for graphs of a few thousand nodes. The ledger is ``nodedp.plans.edgerand``'s plan, made from
public inputs (N, undirectedness) before any edge is read.
"""

from __future__ import annotations

import torch

from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.gnn import GnnHparams
from nodedp.mechanisms.edge_rr import flip_probability, randomize_adjacency
from nodedp.methods.gnn import run_gnn
from nodedp.plans import PublicInputs
from nodedp.plans.edgerand import plan_edgerand


def run_edgerand(inputs: RunInputs, spec: RunSpec, hp: GnnHparams) -> RunResult:
    graph = inputs.graph
    planned = plan_edgerand(PublicInputs.from_run(inputs, spec, direction=True), spec, hp)  # before reading any edge
    ledger, undirected = planned.ledger, planned.parts["undirected"]
    if ledger.mechanisms[0].params["flip_probability"] != flip_probability(spec.target_epsilon):
        raise RuntimeError("the plan's flip probability is not the one randomized response draws with")

    def released(generator: torch.Generator) -> torch.Tensor:
        return randomize_adjacency(
            graph.edge_index,
            num_nodes=graph.num_nodes,
            epsilon=spec.target_epsilon,
            undirected=undirected,
            generator=generator,
        )

    return run_gnn(inputs, spec, hp, layer="gcn", edges=released, ledger=ledger)
