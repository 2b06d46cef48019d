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
their full neighbourhood in the whole graph. The degree bounds shape only the
training subgraphs: evaluation reads the unbounded edges (an inductive split's
cross-part edges dropped), and so does `predict` on another graph
(`nodedp.methods.gnn.full_graph_predict`, the non-private twins' inference):
bounding the given graph there would score nodes on a graph the evaluation
never reads.

Reference mode (`accounting: paper`, run as `dp-*@paper`) sizes the noise as
the paper's public code does for the claimed ε: its accountant
(`paper_epsilon`: Theorem 1's RDP at the orders 1.1, 1.2, ..., 9.9, converted
at δ = 1/(10·N), N training subgraphs) gives the noise multiplier z of one
clip norm (`paper_noise_multiplier`), and the code then clips each parameter
group t to its own C_t and adds noise of std z·C_t to it, as if one clip norm
bounded the whole gradient. Here the groups are the layers, C_l = C/√L, so
the noise is one Gaussian of std z·C/√L over the whole gradient, whose clipped
norm is bounded by √(Σ C_l²) = C: the ledger records that mechanism, with
noise multiplier z/√L (`paper_reference_noise_multiplier`), and its ε is the
suite's honest figure for the paper's noise.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nodedp.accounting import (
    Claim,
    Ledger,
    MechanismRecord,
    UnchargedRead,
    calibrate,
    calibrate_ledger,
    hypergeometric_gaussian_epsilon,
    hypergeometric_gaussian_params,
    max_occurrences,
)
from nodedp.data import bound_out_degree, remove_cross_split_edges
from nodedp.methods.base import RunInputs, RunResult, RunSpec, degree_bound_of
from nodedp.methods.dpsgd import privacy_from_record
from nodedp.methods.gnn import full_graph_predict
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.specs.dp_gnn import CLIPPINGS, DpGnnHparams  # noqa: F401  (re-exported: the registry's)
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

# The paper's accountant as its public code runs it (differentially_private_gnns/privacy_accountants.py,
# multiterm_dpsgd_privacy_accountant): Theorem 1's RDP at the orders 1.1, 1.2, ..., 9.9 only, converted
# to (ε, δ) by dp_accounting's compute_epsilon at δ = 1/(10·N). The paper itself states no δ.
PAPER_ORDERS: tuple[float, ...] = tuple(round(1 + 0.1 * i, 1) for i in range(1, 90))
PAPER_DELTA_DIVISOR = 10  # δ = 1/(PAPER_DELTA_DIVISOR · N), N training nodes (public code)
# Stop the search for the paper's noise once its ε is within this relative distance below the claim.
_PAPER_TOLERANCE = 1e-4
_PAPER_RULE = (
    "Theorem 1's RDP at orders 1.1-9.9, converted at delta = 1/(10 N), of noise multiplier z "
    "(lambda = z/(2 N(K,r))) for one clip norm; the public code then adds noise z*C_t to each clip group t "
    "clipped to its own C_t, as if one norm bounded the whole gradient, which under-counts its sensitivity "
    "by sqrt(number of groups)"
)
_PAPER_SOURCE = (
    "Daigavane et al., Theorem 1 and Section 6 (Gradient Clipping: per-layer thresholds, lambda = "
    "sigma/(2C N(K,r)) identical for each layer); public code differentially_private_gnns: "
    "privacy_accountants.py (orders, delta = 1/(10 N)), optimizers.py (per-tensor noise std C_t * 2N(K,r) * lambda)"
)


def paper_delta(num_examples: int) -> float:
    """The paper's δ: 1/(10·N) for N training nodes (the public code's accountant; the paper states none)."""
    if isinstance(num_examples, bool) or not isinstance(num_examples, int) or num_examples < 1:
        raise ValueError(f"num_examples must be an integer >= 1, got {num_examples!r}")
    return 1.0 / (PAPER_DELTA_DIVISOR * num_examples)


def paper_epsilon(*, noise_multiplier: float, num_examples: int, max_degree: int, num_layers: int,
                  batch_size: int, steps: int) -> float:
    """The ε the paper's accountant states for ``steps`` DP-GNN steps of noise multiplier z.

    z is σ/C (Theorem 1's noise std over the clip norm; the paper's λ is z/(2·N(K, r))); the curve is
    Theorem 1's at ``PAPER_ORDERS``, converted at ``paper_delta(num_examples)``.
    """
    return hypergeometric_gaussian_epsilon(
        num_examples=num_examples, max_occurrences=max_occurrences(max_degree=max_degree, num_layers=num_layers),
        batch_size=batch_size, noise_multiplier=noise_multiplier, steps=steps,
        delta=paper_delta(num_examples), orders=PAPER_ORDERS,
    )


def paper_epsilon_floor(num_examples: int) -> float:
    """The least ε the paper's accountant states for any noise whose RDP is not negligible (above δ²).

    At the orders ≤ 9.9 the conversion alone costs min_α [ln(1 − 1/α) + ln(1/(δα))/(α − 1)]; below it, only
    noise so large that the RDP falls under δ² (where the conversion answers ε = 0) would do.
    """
    delta = paper_delta(num_examples)
    return min(math.log1p(-1 / a) - math.log(delta * a) / (a - 1) for a in PAPER_ORDERS)


def paper_noise_multiplier(*, target_epsilon: float, num_examples: int, max_degree: int, num_layers: int,
                           batch_size: int, steps: int) -> float:
    """The paper's noise for a claimed ε: the smallest z = σ/C with ``paper_epsilon`` ≤ ``target_epsilon``.

    z is the noise std per unit clip norm, which the public code applies to every clip group at that group's own
    threshold (std z·C_t). Raises ValueError when the claim is at or below ``paper_epsilon_floor``: the
    accountant then certifies it only for noise that leaves nothing to learn.
    """
    floor = paper_epsilon_floor(num_examples)
    if not target_epsilon > floor:
        raise ValueError(
            f"the paper's accountant (orders 1.1-9.9, delta = 1/(10*{num_examples})) cannot state epsilon = "
            f"{target_epsilon:g} for any useful noise: its conversion alone costs epsilon = {floor:.4g}"
        )
    return calibrate(
        target_epsilon=target_epsilon, tolerance=_PAPER_TOLERANCE,
        epsilon_of_sigma=lambda z: paper_epsilon(noise_multiplier=z, num_examples=num_examples,
                                                 max_degree=max_degree, num_layers=num_layers,
                                                 batch_size=batch_size, steps=steps),
    )


def paper_reference_noise_multiplier(*, target_epsilon: float, num_examples: int, max_degree: int, num_layers: int,
                                     batch_size: int, steps: int, num_groups: int) -> float:
    """The noise multiplier the paper's noise actually has over the whole gradient: z/√L.

    With ``num_groups`` = L groups clipped to C_t = C/√L each and noise std z·C_t on each (z from
    ``paper_noise_multiplier``), the whole gradient carries one Gaussian of std z·C/√L, while its clipped norm
    is bounded by √(Σ C_t²) = C: relative to that bound, the multiplier is z/√L.
    """
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        raise ValueError(f"num_groups must be an integer >= 1, got {num_groups!r}")
    z = paper_noise_multiplier(target_epsilon=target_epsilon, num_examples=num_examples, max_degree=max_degree,
                               num_layers=num_layers, batch_size=batch_size, steps=steps)
    return z / math.sqrt(num_groups)


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
        # A public choice: C split equally over the L layers (reference mode always clips layer-wise).
        if hp.clipping == "layerwise" or hp.accounting == "paper":
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

    # Algorithm 1 is the identity for train in-degrees ≤ ⌊K/2⌋, the out-degree sampling for out-degrees ≤ K:
    # the "in-degree" bound's guarantee states both (DegreeBound.condition).
    degree_bound = degree_bound_of(bounded)

    claim = None
    if hp.accounting == "paper":
        claim = Claim(epsilon=spec.target_epsilon, delta=paper_delta(num_examples), rule=_PAPER_RULE,
                      source=_PAPER_SOURCE)

    def ledger_of(z: float) -> Ledger:
        return Ledger(
            level="node", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
            mechanisms=(record_of(z),), accountant=spec.accountant, uncharged=uncharged,
            degree_bound=degree_bound, claim=claim,
        )

    if claim is None:
        z = calibrate_ledger(target_epsilon=spec.target_epsilon, ledger_of=ledger_of)
    else:  # the paper's noise std z·C_l on each layer: z/√L relative to the whole gradient's bound C
        assert layer_clips is not None
        z = paper_reference_noise_multiplier(
            target_epsilon=spec.target_epsilon, num_examples=num_examples, max_degree=max_degree,
            num_layers=hp.num_layers, batch_size=hp.batch_size, steps=steps, num_groups=len(layer_clips),
        )
    ledger = ledger_of(z)
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
        predict=full_graph_predict(gnn, split, device),  # the evaluation's full-graph pass (module docstring)
    )
