"""DP-GNN (Daigavane et al.): DP-SGD/DP-Adam on degree-bounded r-hop subgraphs.

`dp-gcn`, `dp-gin`, `dp-gat`, `dp-sage`. The in-degree is bounded to the
dataset's public K by the structure stage (Algorithm 1, `bound_in_degree`);
every training node's r-hop subgraph is built once from those edges
(Algorithms 2-3); each step takes exactly m subgraphs uniformly without
replacement (what Theorem 1's hypergeometric distribution assumes), clips each
per-subgraph gradient (the whole gradient, one threshold C) and adds Gaussian
noise of std z·C, z calibrated with Theorem 1 (`calibrate_dp_gnn`).

Inference is not private, as in the paper: validation and test nodes use
their full neighbourhood in the whole graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodedp.accounting import (
    Ledger,
    MechanismRecord,
    calibrate_dp_gnn,
    hypergeometric_gaussian_params,
    max_occurrences,
)
from nodedp.data import bound_out_degree, remove_cross_split_edges
from nodedp.methods.base import MethodInfo, OptimHparams, RunInputs, RunResult, RunSpec
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.registry import register_method
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.structure import gather_features, sample_subgraphs
from nodedp.train import PrivacyConfig, fixed_size_batches, resolve_device, seed_everything


@dataclass(frozen=True)
class DpGnnHparams(OptimHparams):
    epochs: int = 20
    lr: float = 0.003
    hidden_dim: int = 64
    num_layers: int = 1  # r: GNN layers, and the depth of each training subgraph
    batch_size: int = 256  # m: subgraphs per step, sampled without replacement
    clip_norm: float = 1.0

    def check(self) -> None:
        super().check()
        if self.num_layers not in (1, 2):
            raise ValueError(f"num_layers (r) must be 1 or 2, got {self.num_layers}")
        if min(self.hidden_dim, self.batch_size) < 1 or not self.clip_norm > 0:
            raise ValueError("hidden_dim and batch_size must be ≥ 1, clip_norm > 0")


def run_dp_gnn(inputs: RunInputs, spec: RunSpec, hp: DpGnnHparams, *, layer: str) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    bounded = inputs.structure["in-degree"]
    max_degree = int(bounded["bound"])
    # Algorithm 1 bounds in-degrees (how many subgraphs a node joins); padding every
    # subgraph to N(K,r) nodes also needs its root's kept out-edges bounded to K. Dropping
    # edges only shrinks subgraphs, so Lemma 1's occurrence bound still holds.
    kept = bound_out_degree(bounded["edge_index"], num_nodes=graph.num_nodes, max_degree=max_degree,
                            seed=int(bounded["seed"]))
    subgraphs = sample_subgraphs(
        kept, roots=split.train, num_nodes=graph.num_nodes, num_layers=hp.num_layers, max_degree=max_degree,
    )
    num_examples = split.train.numel()
    if not 1 <= hp.batch_size <= num_examples:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {num_examples}] (training nodes)")
    steps = max(1, math.ceil(hp.epochs * num_examples / hp.batch_size))
    occurrences = max_occurrences(max_degree=max_degree, num_layers=hp.num_layers)
    z = calibrate_dp_gnn(
        target_epsilon=spec.target_epsilon, target_delta=spec.target_delta, num_examples=num_examples,
        max_occurrences=occurrences, batch_size=hp.batch_size, steps=steps,
    )
    record = MechanismRecord(
        name=f"dp-sgd:{spec.method}",
        kind="hypergeometric_gaussian",
        touches=("features", "labels", "edges"),
        params=hypergeometric_gaussian_params(
            num_examples=num_examples, max_degree=max_degree, num_layers=hp.num_layers,
            batch_size=hp.batch_size, noise_multiplier=z, clip_norm=hp.clip_norm, steps=steps,
        ),
        sensitivity=2 * hp.clip_norm * occurrences,
        sensitivity_reason=(
            f"in-degree bounded to K={max_degree} by sampling edges (Algorithm 1), so one node is in at most "
            f"N(K,r)={occurrences} of the {num_examples} r={hp.num_layers} training subgraphs (Lemma 1); "
            "each per-subgraph gradient is clipped to C, so a node changes the sum by at most 2·C·ρ, "
            "ρ ~ Hypergeometric(N, N(K,r), m) of them in a batch (Theorem 1)"
        ),
        dp_event=None,
        caveat=(
            "as in the paper's proof, neighbouring graphs are compared on the same sampled edge lists: "
            "re-running Algorithm 1 without a node changes its out-neighbours' keep probabilities K/(2|RE_v|)"
        ),
    )
    ledger = Ledger(
        level="node", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
        mechanisms=(record,), accountant=spec.accountant,
    )
    ledger.check()

    x, y = graph.x.to(device), graph.y.to(device)
    full_edges = graph.edge_index
    if split.setting == "inductive":  # each part sees only its own edges at inference too
        full_edges = remove_cross_split_edges(full_edges, split)
    gnn = SubgraphGNN(graph.num_features, hp.hidden_dim, inputs.num_classes, layer=layer, num_layers=hp.num_layers)
    model = GraphReadout(gnn, x, full_edges.to(device)).to(device)
    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=lambda idx: gather_features(subgraphs, x, idx),
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=fixed_size_batches(num_examples, batch_size=hp.batch_size, steps=steps, generator=generator),
        total=steps,
        privacy=PrivacyConfig(clip_norm=hp.clip_norm, noise_std=z * hp.clip_norm, expected_batch_size=hp.batch_size),
        ledger=ledger,
        generator=generator,
        device=device,
    )


for _layer in ("gcn", "gin", "gat", "sage"):
    register_method(
        MethodInfo(
            name=f"dp-{_layer}",
            description=f"DP-GNN ({_layer.upper()} layers): DP-SGD/DP-Adam on in-degree-bounded r-hop subgraphs",
            private=True,
            level="node",
            hparams=DpGnnHparams,
            run=lambda inputs, spec, hp, _l=_layer: run_dp_gnn(inputs, spec, hp, layer=_l),
            needs=("in-degree",),
        )
    )
