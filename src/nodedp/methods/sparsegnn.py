"""SparseGNN (structured subsampling): DP-SGD on Poisson roots' thinned rooted subgraphs, `sparse-sage`, `sparse-gin`.

Each step samples roots from the training nodes independently at p1 = B / |train| (``poisson_batches``); each root
grows its subgraph r hops along incoming arcs of the prepared graph (``prepare_structured_graph``: symmetrised, every
out-degree capped to the public K_out), keeping each in-arc with probability p2 under the fan-out caps
(``StructuredSampler``). One example per root, loss on the root, flat clipping to C, one Gaussian on the sum divided
by the expected batch size, empty steps executed: the suite's one loop. The plan (``nodedp.plans.sparsegnn``)
calibrates σ by SG-latest's PLD. Inference reads the full graph (``full_graph_predict``), as the public code's
evaluation does; it is not private. Reference mode, model and deviations: docs/design/methods.md, section
`nodedp.methods.sparsegnn`.
"""

from __future__ import annotations

from torch import Tensor

from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.sparsegnn import SparseGnnHparams
from nodedp.data import remove_cross_split_edges
from nodedp.methods.gnn import full_graph_predict
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.plans import PublicInputs
from nodedp.plans.dpsgd import privacy_from_record
from nodedp.plans.sparsegnn import plan_sparsegnn
from nodedp.structure.structured_subsampling import StructuredSampler, gather_structured, prepare_structured_graph
from nodedp.structure.subgraphs import trim_padding
from nodedp.train import make_generator, poisson_batches, resolve_device, seed_everything

__all__ = ["run_sparsegnn"]

# The sampler's own stream (a CPU generator), apart from the batches': XOR-ed into the run's seed.
_SAMPLER_SALT = 0x51A7
# The preprocessing's per-arc hashes: XOR-ed into the run's seed.
_PREPARE_SALT = 0x9E37


def run_sparsegnn(inputs: RunInputs, spec: RunSpec, hp: SparseGnnHparams, *, layer: str) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    planned = plan_sparsegnn(PublicInputs.from_run(inputs, spec), spec, hp)  # before any private data is read
    ledger, params = planned.ledger, planned.parts["params"]
    (record,) = ledger.mechanisms

    edges = graph.edge_index
    if split.setting == "inductive":  # training subgraphs and every part's inference see only their own part
        edges = remove_cross_split_edges(edges, split)
    arcs = prepare_structured_graph(
        edges,
        num_nodes=graph.num_nodes,
        out_degree_bound=hp.out_degree_bound,
        seed=spec.seed ^ _PREPARE_SALT,
        in_degree_cap=planned.parts["in_degree_cap"],
    )
    sampler = StructuredSampler(arcs, num_nodes=graph.num_nodes, radius=hp.radius, edge_keep=hp.edge_keep)
    sampler_generator = make_generator(spec.seed ^ _SAMPLER_SALT)

    x, y = graph.x.to(device), graph.y.to(device)
    gnn = SubgraphGNN(
        graph.num_features,
        hp.hidden_dim,
        inputs.num_classes,
        layer=layer,
        num_layers=hp.num_layers,
        activation="relu",
    )
    model = GraphReadout(gnn, x, edges.to(device)).to(device)
    train_nodes = split.train

    def example_inputs(idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        nodes, adj = trim_padding(*sampler.expand(train_nodes[idx.cpu()], sampler_generator))
        return gather_structured(nodes, adj, x)

    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=example_inputs,
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=poisson_batches(
            train_nodes.numel(), sampling_rate=params["sampling_rate"], steps=params["steps"], generator=generator
        ),
        privacy=privacy_from_record(record, expected_batch_size=float(params["expected_batch_size"])),
        ledger=ledger,
        generator=generator,
        device=device,
        predict=full_graph_predict(gnn, split, device),
    )
