"""DPDGC (Chien et al., NeurIPS 2023), node level: decoupled graph convolution with a DP embedding.

`dpdgc` and its non-private twin `dpdgc-nodp`, three stages on the out-degree-bounded edges: M1 the adjacency
encoder (DP-Adam, unit-norm embedding table, d = D + 1 occurrences), M2 DP-Emb (one NAP hop on the table,
Δ = √(D + R²)), M3 the LINKX classifier (DP-Adam). The ledger and noise are ``nodedp.plans.dpdgc``'s.
Sensitivities, budget, inference on another graph and reference mode: docs/design/methods.md, section
`nodedp.methods.dpdgc`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from nodedp.accounting import Ledger
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.dpdgc import DpdgcHparams
from nodedp.data import remove_cross_split_edges
from nodedp.mechanisms import NAP, nap_aggregate
from nodedp.mechanisms.clipping import clip_factors
from nodedp.methods.aggregation_perturbation import inference_edges
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import AdjacencyEncoder, LinkxClassifier
from nodedp.models.dpdgc import AdjacencyRows
from nodedp.plans import PublicInputs
from nodedp.plans.dpdgc import (
    dpdgc_ledger_plan,
    dpdgc_schedule,
)
from nodedp.plans.dpdgc import plan_dpdgc as plan_dpdgc_public
from nodedp.plans.dpsgd import privacy_from_record
from nodedp.train import (
    PrivacyConfig,
    make_generator,
    poisson_batches,
    resolve_device,
    seed_everything,
    train_model,
)

__all__ = [
    "adjacency_rows",
    "clipped_gradient_sum",
    "in_neighbours",
    "plan_dpdgc",
    "run_dpdgc",
]

# The frozen head's stream: never the training seed's (it must not correlate with batches or noise).
_HEAD_STREAM = 1 << 41
# The encoder's noise stream off the CPU: its N·h draws a step are made where the table lives (from the run's CPU
# generator they would be drawn on the host and copied over every step).
_ENCODER_NOISE_STREAM = 1 << 42


def in_neighbours(edge_index: Tensor, *, num_nodes: int) -> tuple[Tensor, Tensor]:
    """CSR of in-neighbours: rowptr [N + 1] and the edges' sources ordered by destination."""
    src, dst = edge_index
    rowptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=src.device)
    rowptr[1:] = torch.bincount(dst, minlength=num_nodes).cumsum(0)
    return rowptr, src[torch.argsort(dst, stable=True)]


def adjacency_rows(
    edge_index: Tensor, nodes: Tensor, *, num_nodes: int, csr: tuple[Tensor, Tensor] | None = None
) -> AdjacencyRows:
    """A[nodes] on the columns it touches, A[u, j] = number of edges j -> u (as ``nap_aggregate`` sums them):
    [B, C] for the C distinct in-neighbours of the batch, never [B, N].

    ``csr``: ``in_neighbours(edge_index)``, computed once by callers that ask for many batches."""
    rowptr, src = csr if csr is not None else in_neighbours(edge_index, num_nodes=num_nodes)
    starts, counts = rowptr[nodes], rowptr[nodes + 1] - rowptr[nodes]
    device = src.device
    which = torch.repeat_interleave(torch.arange(nodes.numel(), device=device), counts)
    offsets = torch.arange(which.numel(), device=device) - (counts.cumsum(0) - counts)[which]
    columns, column = torch.unique(src[starts[which] + offsets], return_inverse=True)
    rows = torch.zeros(nodes.numel(), columns.numel(), device=device)
    rows.index_put_((which, column), torch.ones(which.numel(), device=device), accumulate=True)
    return AdjacencyRows(columns, rows)


def clipped_gradient_sum(
    encoder: AdjacencyEncoder,
    rows: AdjacencyRows,
    targets: Tensor,
    *,
    clip_norm: float,
    table_grad: Tensor,
    shift_grad: Tensor,
) -> None:
    """Add Σ_i c_i ∇ℓ_i, each example's whole gradient clipped to ``clip_norm``, to the table's and the shift's
    gradient buffers, in place.

    What ``PerSampleGradients`` computes for the encoder fed dense rows [B, N] (the same operations, up to
    the rounding of a_u Ŵ's sum): example i's table gradient is g_i a_iᵀ (g_i = ∂ℓ_i/∂(a_i Ŵ)), of squared
    norm ‖g_i‖²‖a_i‖² and zero outside the batch's columns, so the clipped sum (c ⊙ G)ᵀA is added to those
    columns only; its shift gradient is ∂ℓ_i/∂z_i.
    """
    with torch.no_grad():
        aggregated = encoder.table(rows)
    aggregated.requires_grad_()
    shifted = encoder.shifted(aggregated)
    losses = F.cross_entropy(encoder.logits(shifted), targets, reduction="none")
    g, g_shift = torch.autograd.grad(losses, [aggregated, shifted], torch.ones_like(losses))
    with torch.no_grad():
        a = rows.counts
        sq_norms = torch.linalg.vecdot(a, a).mul_(torch.linalg.vecdot(g, g)) + torch.linalg.vecdot(g_shift, g_shift)
        factors = clip_factors(sq_norms.sqrt(), max_norm=clip_norm)
        touched = table_grad.index_select(1, rows.columns).addmm_(g.t() * factors, a)
        table_grad.index_copy_(1, rows.columns, touched)
        shift_grad.add_(torch.tensordot(factors, g_shift, dims=1))


@dataclass
class DpdgcPlan:
    """A run's calibrated noise, NAP mechanism (DP-Emb) and ledger, fixed before any training."""

    private: bool
    nap: NAP
    edges: Tensor
    max_degree: int
    row_clip: float
    ledger: Ledger
    sampling_rate: float
    encoder_steps: int
    classifier_steps: int
    encoder_privacy: PrivacyConfig | None
    classifier_privacy: PrivacyConfig | None
    noise: dict[str, float]


def _structure(inputs: RunInputs) -> tuple[Mapping[str, Any], Tensor]:
    """The out-degree artifact and the edges the run reads (inductive: each part's own)."""
    split = inputs.split
    bounded = inputs.structure["out-degree"]
    edges = bounded["edge_index"]
    if split.setting == "inductive":  # each part sees only its own edges (only removes edges)
        edges = remove_cross_split_edges(edges, split)
    return bounded, edges


def _executable(plan, bounded: Mapping[str, Any], edges: Tensor, hp: DpdgcHparams, *, private: bool) -> DpdgcPlan:
    """The ``DpdgcPlan`` that executes a privacy plan (``nodedp.plans.dpdgc``) on the bounded edges; checks that
    the artifact was bounded to the plan's D and keeps every edge within it, as the ledger's degree bound says."""
    schedule = plan.parts["schedule"] if private else plan
    if int(bounded["bound"]) != schedule.max_degree:
        raise ValueError(
            f"the out-degree artifact was bounded to {bounded['bound']}, the plan's public bound is "
            f"{schedule.max_degree}; build it with `bound-degree --kind out-degree --bound "
            f"{schedule.max_degree}` (the workflow does)"
        )
    if not private:
        nap = NAP(level="none", row_clip=schedule.row_clip, noise_multiplier=0.0)
        return DpdgcPlan(
            False,
            nap,
            edges,
            schedule.max_degree,
            schedule.row_clip,
            Ledger.non_private(),
            schedule.sampling_rate,
            schedule.encoder_steps,
            schedule.classifier_steps,
            None,
            None,
            {},
        )
    ledger = plan.ledger
    if "identity_bound" not in bounded or int(bounded["identity_bound"]) != ledger.degree_bound.identity_bound:
        raise ValueError(
            f"the out-degree artifact's identity bound {bounded.get('identity_bound')!r} is not the "
            f"plan's {ledger.degree_bound.identity_bound}; rebuild it with `python -m nodedp "
            "bound-degree` (the workflow's bound_degree rule)"
        )
    nap = NAP(
        level="node",
        row_clip=schedule.row_clip,
        noise_multiplier=plan.parts["emb_noise_multiplier"],
        max_degree=schedule.max_degree,
    )
    noise = {
        **plan.parts["noise"],
        "emb_noise_multiplier": plan.parts["emb_noise_multiplier"],
        "emb_noise_std": nap.noise_std,
        "classifier_noise_multiplier": ledger.mechanisms[-1].params["noise_multiplier"],
    }

    def privacy(record) -> PrivacyConfig:
        return privacy_from_record(record, expected_batch_size=hp.batch_size)

    encoder_privacy = privacy(ledger.mechanisms[0]) if schedule.encoder_steps else None
    return DpdgcPlan(
        True,
        nap,
        edges,
        schedule.max_degree,
        schedule.row_clip,
        ledger,
        schedule.sampling_rate,
        schedule.encoder_steps,
        schedule.classifier_steps,
        encoder_privacy,
        privacy(ledger.mechanisms[-1]),
        noise,
    )


def plan_dpdgc(inputs: RunInputs, spec: RunSpec, hp: DpdgcHparams, *, private: bool) -> DpdgcPlan:
    """The executable plan at the out-degree artifact's bound D (``nodedp.plans.dpdgc.dpdgc_ledger_plan``; it
    reads the training-set size and D only). A run plans at the dataset's public bound instead (``run_dpdgc``)."""
    bounded, edges = _structure(inputs)
    n, max_degree = inputs.split.train.numel(), int(bounded["bound"])
    if not private:
        return _executable(dpdgc_schedule(num_train=n, max_degree=max_degree, hp=hp), bounded, edges, hp, private=False)
    return _executable(
        dpdgc_ledger_plan(num_train=n, max_degree=max_degree, spec=spec, hp=hp), bounded, edges, hp, private=True
    )


@dataclass(frozen=True)
class _Run:
    """One DPDGC run executing its plan: what its encoder (M1) and classifier (M3) share."""

    plan: DpdgcPlan
    inputs: RunInputs
    spec: RunSpec
    hp: DpdgcHparams
    y: Tensor  # the labels, on the device
    generator: torch.Generator
    device: torch.device


def run_dpdgc(inputs: RunInputs, spec: RunSpec, hp: DpdgcHparams, *, private: bool) -> RunResult:
    plan = _run_plan(inputs, spec, hp, private=private)
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph = inputs.graph
    run = _Run(plan, inputs, spec, hp, graph.y.to(device), generator, device)
    edges = plan.edges.to(device)
    encoder = AdjacencyEncoder(
        graph.num_nodes,
        inputs.num_classes,
        hidden_dim=hp.hidden_dim,
        row_clip=plan.row_clip,
        dropout=hp.dropout,
        generator=make_generator(spec.seed + _HEAD_STREAM),
    ).to(device)
    start = time.perf_counter()
    if plan.encoder_steps:
        _train_encoder(run, encoder, edges)
    encoder.normalize_()  # the release needs it whatever happened before
    table, bias = encoder.embedding_table(), encoder.shift.bias.detach()
    embedding = _embedding_of(bias, plan, hp)
    released = embedding(plan.nap(table, edges, generator=generator))  # M2, DP-Emb: the one NAP query
    if plan.nap.calls != 1:
        raise RuntimeError(f"DP-Emb was queried {plan.nap.calls} times, the ledger charges 1")
    result = _train_classifier(run, table=table, released=released, embedding=embedding)
    return dataclasses.replace(
        result,
        train_seconds=time.perf_counter() - start,
        details={
            **result.details,
            **plan.noise,
            "encoder_steps": plan.encoder_steps,
            "max_degree": plan.max_degree,
            "row_clip": plan.row_clip,
            "emb_queries": plan.nap.calls,
            "ledger_accountant": plan.ledger.accountant,
        },
    )


def _run_plan(inputs: RunInputs, spec: RunSpec, hp: DpdgcHparams, *, private: bool) -> DpdgcPlan:
    """Plan, then run: the plan from public sizes and the dataset's public bound D, the artifact checked against
    it."""
    public = PublicInputs.from_run(inputs, spec)
    bounded, edges = _structure(inputs)
    if private:
        return _executable(plan_dpdgc_public(public, spec, hp), bounded, edges, hp, private=True)
    max_degree = int(public.degree_bounds(dataclasses.asdict(hp))["out-degree"])
    return _executable(
        dpdgc_schedule(num_train=public.num_train, max_degree=max_degree, hp=hp), bounded, edges, hp, private=False
    )


def _train_encoder(run: _Run, encoder: AdjacencyEncoder, edges: Tensor) -> None:
    """M1: the adjacency encoder on the training nodes' adjacency rows, Poisson batches, the table projected onto
    the unit sphere after every step; DP-Adam with closed-form per-example gradients when private."""
    plan, inputs, spec, hp, y = run.plan, run.inputs, run.spec, run.hp, run.y
    generator, device = run.generator, run.device
    num_nodes, split = inputs.graph.num_nodes, inputs.split
    train_nodes = split.train.to(device)
    csr = in_neighbours(edges, num_nodes=num_nodes)

    def encoder_batch(idx: Tensor) -> tuple[AdjacencyRows, Tensor]:
        nodes = train_nodes[idx.to(device)]
        return adjacency_rows(edges, nodes, num_nodes=num_nodes, csr=csr), y[nodes]

    batches = poisson_batches(
        split.train.numel(), sampling_rate=plan.sampling_rate, steps=plan.encoder_steps, generator=generator
    )
    noise_generator = generator
    if plan.encoder_privacy is not None and generator.device != device:
        noise_generator = make_generator(spec.seed + _ENCODER_NOISE_STREAM, device=device)
    train_model(
        encoder,
        batch_fn=encoder_batch,
        optim=hp.encoder_optim(),
        privacy=plan.encoder_privacy,
        batches=batches,
        generator=noise_generator,
        device=device,
        progress=spec.progress and f"{spec.method} {spec.dataset} encoder",
        on_step=lambda _step: encoder.normalize_(),
        clipped_sum=None if plan.encoder_privacy is None else _clipped_sum(encoder, plan.encoder_privacy.clip_norm),
    )


def _clipped_sum(encoder: AdjacencyEncoder, clip: float) -> Callable[[Any, Tensor, Any], None]:
    """The encoder's private step: every example's closed-form gradient, clipped to ``clip``, added in."""
    table, shift = encoder.table.weight, encoder.shift.bias
    return lambda rows, targets, grads: clipped_gradient_sum(
        encoder, rows, targets, clip_norm=clip, table_grad=grads[table], shift_grad=grads[shift]
    )


def _embedding_of(bias: Tensor, plan: DpdgcPlan, hp: DpdgcHparams) -> Callable[[Tensor], Tensor]:
    """The classifier's x̃_A from an aggregation of the table (post-processing): the encoder's bias added, and
    with ``standardize_embedding`` divided by DP-Emb's noise std."""

    def embedding(aggregated: Tensor) -> Tensor:
        shifted = aggregated + bias
        return shifted / plan.nap.noise_std if hp.standardize_embedding and plan.nap.noise_std > 0 else shifted

    return embedding


def _train_classifier(
    run: _Run, *, table: Tensor, released: Tensor, embedding: Callable[[Tensor], Tensor]
) -> RunResult:
    """M3: the LINKX classifier on (x_u, x̃_A[u]), Poisson batches, evaluated; ``predict`` recomputes X_A
    noise-free on a given graph (docs/design/methods.md)."""
    plan, inputs, spec, hp, y = run.plan, run.inputs, run.spec, run.hp, run.y
    generator, device = run.generator, run.device
    graph, split = inputs.graph, inputs.split
    num_nodes = graph.num_nodes
    x = graph.x.to(device)
    classifier = LinkxClassifier(
        graph.num_features,
        inputs.num_classes,
        hidden_dim=hp.hidden_dim,
        base_layers=hp.base_layers,
        mix_layers=hp.mix_layers,
        dropout=hp.dropout,
    ).to(device)
    bounded = inputs.structure["out-degree"]

    def predict(other, parts=None) -> Tensor:  # noise-free X_A of the given graph (parts: its split)
        other_edges = inference_edges(
            other, split=split if parts is None else parts, num_nodes=num_nodes, bounded=bounded
        ).to(device)
        extended = torch.cat([table, table.new_zeros(other.num_nodes - num_nodes, table.size(1))])
        aggregated = nap_aggregate(extended, other_edges, num_nodes=other.num_nodes, row_clip=plan.row_clip)
        return classifier((other.x.to(device), embedding(aggregated)))

    return fit_node_classifier(
        classifier,
        inputs_of=lambda nodes: (x[nodes], released[nodes]),
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=poisson_batches(
            split.train.numel(), sampling_rate=plan.sampling_rate, steps=plan.classifier_steps, generator=generator
        ),
        privacy=plan.classifier_privacy,
        ledger=plan.ledger,
        generator=generator,
        device=device,
        predict=predict,
    )
