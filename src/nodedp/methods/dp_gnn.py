"""DP-GNN (Daigavane et al.): DP-SGD/DP-Adam on degree-bounded r-hop subgraphs.

`dp-gcn`, `dp-gin`, `dp-gat`, `dp-sage`. The in-degree is bounded to the
dataset's public K by the structure stage (Algorithm 1, `bound_in_degree`);
every training node's r-hop subgraph is built once from those edges
(Algorithms 2-3); each step takes exactly m subgraphs uniformly without
replacement (what Theorem 1's hypergeometric distribution assumes), clips each
per-subgraph gradient (the whole gradient to one threshold C, or each layer's
to C_l with C = √(Σ C_l²)) and adds one Gaussian of std z·C over the whole
gradient, z calibrated with Theorem 1 (`calibrate_dp_gnn`).

Thresholds are public (from the config; layer-wise, C split equally,
C_l = C/√L) unless `clip_percentile` asks for the paper's recipe: the
percentile of per-subgraph gradient norms at initialization, on `batch_size`
training subgraphs. That reads private data without charge, and the ledger
records it as an uncharged read (the run is not fully accounted).

Inference is not private, as in the paper: validation and test nodes use
their full neighbourhood in the whole graph.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from nodedp.accounting import (
    Ledger,
    MechanismRecord,
    UnchargedRead,
    calibrate_ledger,
    hypergeometric_gaussian_params,
    max_occurrences,
)
from nodedp.data import bound_out_degree, remove_cross_split_edges
from nodedp.methods.base import MethodInfo, OptimHparams, RunInputs, RunResult, RunSpec, degree_bound_of
from nodedp.methods.dpsgd import privacy_from_record
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.registry import register_method
from nodedp.models import GraphReadout, SubgraphGNN
from nodedp.structure import gather_features, sample_subgraphs
from nodedp.train import (
    fixed_size_batches,
    percentile_clip_norms,
    resolve_device,
    seed_everything,
    total_clip_norm,
    trainable_layer_names,
)

CLIPPINGS = ("flat", "layerwise")


@dataclass(frozen=True)
class DpGnnHparams(OptimHparams):
    epochs: int = 20
    lr: float = 0.003
    hidden_dim: int = 64
    num_layers: int = 1  # r: GNN layers, and the depth of each training subgraph
    batch_size: int = 256  # m: subgraphs per step, sampled without replacement
    # K, the public in-degree bound; 0: the dataset's (the workflow builds the artifact at this bound)
    in_degree_bound: int = 0
    clip_norm: float = 1.0  # C, the bound on a whole clipped gradient (unless clip_percentile > 0)
    clipping: str = "flat"  # "flat": the whole gradient to C; "layerwise": each layer l to C_l
    # > 0: thresholds are this percentile of gradient norms at init (uncharged, see the module
    # docstring); 0: from clip_norm. A number, not None: hyperparameters are typed by their defaults.
    clip_percentile: float = 0.0

    def check(self) -> None:
        super().check()
        if self.num_layers not in (1, 2):
            raise ValueError(f"num_layers (r) must be 1 or 2, got {self.num_layers}")
        if min(self.hidden_dim, self.batch_size) < 1 or not self.clip_norm > 0:
            raise ValueError("hidden_dim and batch_size must be ≥ 1, clip_norm > 0")
        if self.in_degree_bound < 0:
            raise ValueError(f"in_degree_bound (K) must be ≥ 1, or 0 for the dataset's; got {self.in_degree_bound}")
        if self.clipping not in CLIPPINGS:
            raise ValueError(f"unknown clipping {self.clipping!r}; choose from {list(CLIPPINGS)}")
        if not 0 <= self.clip_percentile <= 100:
            raise ValueError(
                f"clip_percentile must be in (0, 100], or 0 for thresholds from clip_norm; got {self.clip_percentile}"
            )


def run_dp_gnn(inputs: RunInputs, spec: RunSpec, hp: DpGnnHparams, *, layer: str) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    bounded = inputs.structure["in-degree"]
    max_degree = int(bounded["bound"])
    if hp.in_degree_bound and hp.in_degree_bound != max_degree:
        raise ValueError(
            f"in_degree_bound is {hp.in_degree_bound} but the in-degree artifact was bounded to K={max_degree}; "
            f"build it with `bound-degree --bound {hp.in_degree_bound}` (the workflow does)"
        )
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

    x, y = graph.x.to(device), graph.y.to(device)
    full_edges = graph.edge_index
    if split.setting == "inductive":  # each part sees only its own edges at inference too
        full_edges = remove_cross_split_edges(full_edges, split)
    gnn = SubgraphGNN(graph.num_features, hp.hidden_dim, inputs.num_classes, layer=layer, num_layers=hp.num_layers)
    model = GraphReadout(gnn, x, full_edges.to(device)).to(device)
    train_nodes = split.train.to(device)

    def example_inputs(idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return gather_features(subgraphs, x, idx)

    uncharged: tuple[UnchargedRead, ...] = ()
    layer_clips: dict[str, float] | None = None
    if hp.clip_percentile > 0:
        idx = torch.randperm(num_examples, generator=generator, device=generator.device)[: hp.batch_size].to(device)

        def estimate(layerwise: bool) -> dict[str, float] | float:
            return percentile_clip_norms(model, lambda i: (example_inputs(i), y[train_nodes[i]]), idx,
                                         percentile=hp.clip_percentile, layerwise=layerwise)

        if hp.clipping == "layerwise":
            layer_clips = estimate(True)
            clip = total_clip_norm(layer_clips)
        else:
            clip = estimate(False)
        uncharged = (UnchargedRead(
            name=f"clip-thresholds:{spec.method}",
            touches=("features", "labels", "edges"),
            reason=(
                f"{hp.clipping} clipping thresholds are the {hp.clip_percentile:g}th percentile of per-subgraph "
                f"gradient norms at initialization on {hp.batch_size} training subgraphs, read without noise "
                "(the paper's recipe); the thresholds are not covered by the recorded ε"
            ),
        ),)
    else:
        clip = hp.clip_norm
        if hp.clipping == "layerwise":  # a public choice: C split equally over the L layers
            layers = trainable_layer_names(model)
            layer_clips = {name: clip / math.sqrt(len(layers)) for name in layers}
            clip = total_clip_norm(layer_clips)  # = clip_norm up to rounding

    clipped = "each per-subgraph gradient is clipped to C"
    if layer_clips is not None:
        clipped = "each layer l of a per-subgraph gradient is clipped to C_l, so the whole gradient to C = √(Σ C_l²)"

    def record_of(z: float) -> MechanismRecord:
        params = hypergeometric_gaussian_params(
            num_examples=num_examples, max_degree=max_degree, num_layers=hp.num_layers,
            batch_size=hp.batch_size, noise_multiplier=z, clip_norm=clip, steps=steps,
        )
        if layer_clips is not None:
            params["layer_clip_norms"] = layer_clips  # C = √(Σ C_l²) is params["clip_norm"]
        return MechanismRecord(
            name=f"dp-sgd:{spec.method}",
            kind="hypergeometric_gaussian",
            touches=("features", "labels", "edges"),
            params=params,
            sensitivity=2 * clip * occurrences,
            sensitivity_reason=(
                f"in-degree bounded to K={max_degree} by sampling edges (Algorithm 1), so one node is in at most "
                f"N(K,r)={occurrences} of the {num_examples} r={hp.num_layers} training subgraphs (Lemma 1); "
                f"{clipped}, so a node changes the sum by at most 2·C·ρ, "
                "ρ ~ Hypergeometric(N, N(K,r), m) of them in a batch (Theorem 1)"
            ),
            dp_event=None,
            caveat=(
                "as in the paper's proof, neighbouring graphs are compared on the same sampled edge lists: "
                "re-running Algorithm 1 without a node changes its out-neighbours' keep probabilities K/(2|RE_v|)"
            ),
        )

    # Algorithm 1 is the identity for train in-degrees ≤ ⌊K/2⌋ (the artifact counts the nodes over),
    # and the out-degree sampling below for out-degrees ≤ K: both must hold for the unconditional class.
    in_bound = degree_bound_of(bounded)
    out_over = int((torch.bincount(bounded["edge_index"][0], minlength=graph.num_nodes) > max_degree).sum())

    def ledger_of(z: float) -> Ledger:
        return Ledger(
            level="node", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
            mechanisms=(record_of(z),), accountant=spec.accountant, uncharged=uncharged,
            degree_bound=dataclasses.replace(in_bound, nodes_over=in_bound.nodes_over + out_over),
        )

    ledger = ledger_of(calibrate_ledger(target_epsilon=spec.target_epsilon, ledger_of=ledger_of))
    (record,) = ledger.mechanisms
    ledger.check()

    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=example_inputs,
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=fixed_size_batches(num_examples, batch_size=hp.batch_size, steps=steps, generator=generator),
        total=steps,
        privacy=privacy_from_record(record, expected_batch_size=hp.batch_size, layer_clip_norms=layer_clips),
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
            auto_accountant="pld",
        )
    )
