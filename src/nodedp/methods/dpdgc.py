"""DPDGC (Chien et al., NeurIPS 2023), node level: decoupled graph convolution with a DP embedding.

`dpdgc` and its non-private twin `dpdgc-nodp`, in three stages on the
out-degree-bounded edges (the ``out-degree`` structure artifact, public D;
A[u, j] = 1 for a kept edge j -> u, so node j's column holds its ≤ D
out-neighbours):

1. M1, the adjacency encoder (``nodedp.models.AdjacencyEncoder``), trained on
   the training nodes' adjacency rows a_u and labels with Poisson-sampled
   DP-Adam. After every step the embedding table Ŵ (a row per node) is
   projected onto the unit sphere: the column normalization the public code
   intends and never applies (its assignment goes into a ``state_dict()``
   copy). Removing a node v changes v's own example and the rows of its ≤ D
   out-neighbours: d = D + 1 examples, each by ≤ 2C, so the step is the
   Gaussian mixed over ρ ~ Binomial(D + 1, γ) (ledger kind
   ``poisson_occurrence_gaussian``, as DPAR's DP-SGD). The public code charges
   a noise factor 2√(D+1) with single-record amplification, which under-counts.
   A step is ``train_model``'s DP-Adam step with the per-example gradients in
   closed form on the batch's adjacency columns (``clipped_gradient_sum``, its
   ``clipped_sum``): through ``PerSampleGradients`` the table would need dense
   rows [B, N]. What remains
   proportional to N in a step is the mechanism's own: the Gaussian over all
   N·h coordinates of the table's gradient, Adam's update of them and the
   projection, so the encoder costs ~steps·N·h = encoder_epochs·n·N·h/B.
2. M2, DP-Emb: one query X̃_A = clip_R(A Ŵ) + N(0, (z_E·Δ)²), cached, then the
   encoder's bias added (post-processing). This is one NAP hop
   (``nodedp.mechanisms.NAP``) on the released table: removing v moves each of
   its ≤ D out-neighbours' rows by ≤ ‖Ŵ_v‖ = 1 and its own row by ≤ R, so
   Δ = √(D + R²) — a bound the normalization buys (without it ‖Ŵ_v‖, and so
   Δ, is unbounded; the public noise is sized for ‖Ŵ_v‖ = 1e-8 and omits v's
   own row).
3. M3, the classifier (``nodedp.models.LinkxClassifier``) on (x_u, X̃_A[u]),
   DP-Adam, one example per training node (Δ = C).

Budget: ``encoder_share``·ε calibrates M1 alone, ``emb_share``·ε M2 alone,
and M3's noise is calibrated on the whole ledger to the target, so the run
spends ε (RDP composition, one conversion at δ). ``encoder_epochs: 0`` skips
M1 (a random table from the run seed, free) and needs ``encoder_share: 0``.
Model selection is the final model (the public code checkpoints on
validation accuracy, an uncharged read). Inductive splits aggregate over each
part's own edges.

``predict`` runs M3 on another graph (the input with nodes appended): X_A
recomputed as clip_R(A' Ŵ) + bias over that graph's edges read as the run read
its own (``inference_edges``: cross-part edges dropped when inductive, out-degrees
bounded with the artifact's D and seed), without DP-Emb's noise, which protects
the private graph's aggregate, not a graph the caller gives (the audit's). Ŵ is
the trained table (a DP-SGD release); an appended node has no embedding of its
own, so its row of Ŵ is zero and its out-edges add nothing.

Reference mode (``accounting: paper``, run as ``dpdgc@paper``) sizes the
noise as the public code does for the claimed ε (``public_code_noise``; the
paper's text is not part of the spec): one noise scale σ for all three
stages, calibrated so that the RDP composition of two DP-SGD stages (each
node one record: batches drawn without replacement, replace-one neighbours,
Wang et al. 2019 Thm. 27, as the code's autodp computes it) and one
sensitivity-1 Gaussian (DP-Emb) gives ε at the code's δ = 10^-k, k the
number of digits of the training-node count. The code then adds σ·2√(D+1)·C
to the encoder's gradient sums, σ·2·C to the classifier's, and
σ·1e-8·√(2D) to the released X_A (noise sized for embeddings of norm 1e-8);
D there is the enforced bound unless ``paper_max_degree`` names another (the
public scripts use 100). Our implementation runs with that noise (unit-norm embeddings, Poisson
batches, the same records as suite mode), so the ledger's ε is the honest
figure for it; DP-Emb's noise multiplier is then ~1e-8·σ, whose privacy loss
distribution cannot be represented, so such a ledger is accounted by RDP
(``reference_accountant``), and its ε is astronomically large.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant
from torch import Tensor

from nodedp.accounting import (
    RDP_ORDERS,
    Claim,
    Ledger,
    MechanismRecord,
    calibrate,
    calibrate_ledger,
    default_delta,
    nap_event,
    poisson_occurrence_gaussian_params,
)
from nodedp.accounting.hypergeometric import OWN_PLUS_ROWS
from nodedp.data import remove_cross_split_edges
from nodedp.mechanisms import NAP, nap_aggregate
from nodedp.mechanisms.clipping import clip_factors
from nodedp.methods.aggregation_perturbation import inference_edges
from nodedp.methods.base import RunInputs, RunResult, RunSpec, degree_bound_of
from nodedp.methods.dpsgd import dpsgd_record, privacy_from_record
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.specs.dpdgc import DpdgcHparams  # re-exported: the registry's, torch-free
from nodedp.models import AdjacencyEncoder, LinkxClassifier
from nodedp.models.dpdgc import AdjacencyRows
from nodedp.train import (
    PrivacyConfig,
    make_generator,
    poisson_batches,
    resolve_device,
    seed_everything,
    train_model,
)

__all__ = [
    "PLD_MIN_NOISE_MULTIPLIER",
    "PUBLIC_NORM_SCALE",
    "DpdgcHparams",
    "PublicCodeNoise",
    "adjacency_rows",
    "clipped_gradient_sum",
    "in_neighbours",
    "plan_dpdgc",
    "public_code_delta",
    "public_code_epsilon",
    "public_code_noise",
    "public_code_sigma",
    "public_code_steps",
    "reference_accountant",
    "run_dpdgc",
]

_SAME_EDGE_LISTS = ("as in GAP, neighbouring graphs are compared on the same sampled edge lists: re-running the "
                    "out-degree sampling without a node could let its in-neighbours keep other edges instead")
# The frozen head's stream: never the training seed's (it must not correlate with batches or noise).
_HEAD_STREAM = 1 << 41
# The encoder's noise stream off the CPU: its N·h draws a step are made where the table lives (from the run's CPU
# generator they would be drawn on the host and copied over every step).
_ENCODER_NOISE_STREAM = 1 << 42

# --- reference mode: the public code's accounting (module docstring) ---------------------------------------------
# --norm-scale of every public DPDGC script (train_scripts/real/DPDGC-node.sh): DP-Emb's noise is sized for
# embeddings of this norm, which the code's no-op normalization never enforces.
PUBLIC_NORM_SCALE = 1e-8
# Below this noise multiplier a Gaussian's privacy loss distribution is too wide to build: it spans losses up to
# ~1/(2z²) + 10/z on the 1e-3 grid (8·10⁵ points and ~1 s at 0.05; at 1e-8 dp_accounting refuses it, "Maximum
# allowed size exceeded"). A reference ledger holding one is accounted by RDP (``reference_accountant``).
PLD_MIN_NOISE_MULTIPLIER = 0.05
# Stop the search for the public σ once its ε is within this relative distance below the claim (the code's
# own search stops within 1e-3 absolute).
_PUBLIC_TOLERANCE = 1e-4
_PUBLIC_RULE = (
    "one noise scale σ for all three stages, calibrated (autodp, RDP) so that two DP-SGD stages with each node one "
    "record (batches drawn without replacement, replace-one neighbours) and DP-Emb as one sensitivity-1 Gaussian "
    "compose to ε at δ = 10^-(digits of the training-node count); the encoder then adds σ·2√(D+1)·C, the "
    "classifier σ·2·C, and DP-Emb σ·1e-8·√(2D) (sized for embeddings of norm 1e-8)"
)
_PUBLIC_SOURCE = (
    "Chien et al. (NeurIPS 2023), public code (thupchnsky/dp-gnn): core/methods/node/dpdgc/dpdgc_ndp.py "
    "(calibrate, perturb, configure_*_optimizer), core/privacy/algorithms/noisy_sgd.py, "
    "train_scripts/real/DPDGC-node.sh (--norm-scale 1e-8); the paper's text is not in the spec"
)


def public_code_delta(num_train_nodes: int) -> float:
    """The public code's δ ('auto'): 1/10^k, k the number of decimal digits of the training-node count."""
    if isinstance(num_train_nodes, bool) or not isinstance(num_train_nodes, int) or num_train_nodes < 1:
        raise ValueError(f"num_train_nodes must be an integer >= 1, got {num_train_nodes!r}")
    return default_delta(num_train_nodes)  # the suite's 'auto' rule is the same, applied to training nodes


def public_code_steps(*, num_train_nodes: int, batch_size: int, epochs: int) -> int:
    """The steps the public code charges a DP-SGD stage: epochs·N // B."""
    return epochs * num_train_nodes // batch_size


def public_code_epsilon(sigma: float, *, num_train_nodes: int, batch_size: int, encoder_epochs: int, epochs: int,
                        delta: float) -> float:
    """The ε the public code states for noise scale σ (its ``ComposedNoisyMechanism``, via autodp).

    RDP of the encoder's and the classifier's DP-SGD, each ``public_code_steps`` draws of B of the N training
    nodes without replacement under replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Thm. 27, what
    autodp's ``AmplificationBySampling(PoissonSampling=False)`` with the improved bound computes), plus one
    Gaussian of noise multiplier σ (DP-Emb), converted at ``delta`` (dp_accounting at ``RDP_ORDERS``; it
    reproduces autodp's σ to ~1e-5 relative on Cora's sizes). A stage with 0 epochs is free (its ZeroMechanism).
    """
    accountant = RdpAccountant(orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.REPLACE_ONE)
    # Both stages are the same sampled Gaussian (same σ, N and B): their RDP adds as one of the summed steps.
    steps = sum(public_code_steps(num_train_nodes=num_train_nodes, batch_size=batch_size, epochs=e)
                for e in (encoder_epochs, epochs) if e)
    if steps:
        sampled = dp_event.SampledWithoutReplacementDpEvent(num_train_nodes, batch_size,
                                                            dp_event.GaussianDpEvent(sigma))
        accountant.compose(dp_event.SelfComposedDpEvent(sampled, steps))
    accountant.compose(dp_event.GaussianDpEvent(sigma))
    return float(accountant.get_epsilon(delta))


@dataclass(frozen=True)
class PublicCodeNoise:
    """The noise the public code adds for a claimed ε (``public_code_noise``)."""

    sigma: float  # the one noise scale of the three stages
    delta: float  # the code's δ
    encoder_noise_multiplier: float  # encoder DP-SGD noise std / C: 2√(D+1)·σ
    emb_noise_std: float  # DP-Emb noise std per entry: σ·norm_scale·√(2D)
    classifier_noise_multiplier: float  # classifier DP-SGD noise std / C: 2σ


@functools.lru_cache(maxsize=64)  # pure, and each call is a search over a slow RDP curve (~1 s)
def public_code_sigma(*, claimed_epsilon: float, num_train_nodes: int, batch_size: int, encoder_epochs: int,
                      epochs: int) -> float:
    """The public code's one noise scale for ``claimed_epsilon``: the smallest σ with ``public_code_epsilon`` ≤
    the claim (to a relative 1e-4) at the code's δ (``public_code_delta``)."""
    if isinstance(claimed_epsilon, bool) or not (math.isfinite(claimed_epsilon) and claimed_epsilon > 0):
        raise ValueError(f"claimed_epsilon must be a finite number > 0, got {claimed_epsilon!r}")
    if not 1 <= batch_size <= num_train_nodes:
        raise ValueError(f"batch_size {batch_size} must be in [1, {num_train_nodes}] (training nodes)")
    if min(encoder_epochs, epochs) < 0:
        raise ValueError(f"epochs must be >= 0, got {encoder_epochs} and {epochs}")
    delta = public_code_delta(num_train_nodes)
    return calibrate(
        target_epsilon=claimed_epsilon, tolerance=_PUBLIC_TOLERANCE,
        epsilon_of_sigma=lambda s: public_code_epsilon(s, num_train_nodes=num_train_nodes, batch_size=batch_size,
                                                       encoder_epochs=encoder_epochs, epochs=epochs, delta=delta),
    )


def public_code_noise(*, claimed_epsilon: float, num_train_nodes: int, batch_size: int, encoder_epochs: int,
                      epochs: int, max_degree: int, norm_scale: float = PUBLIC_NORM_SCALE) -> PublicCodeNoise:
    """The noise the public DPDGC code adds when asked for ``claimed_epsilon`` (module docstring).

    σ is ``public_code_sigma``. The noise factors are the code's: 2√(D+1) on the encoder (its count of the
    D + 1 rows a node changes), 2 on the classifier (replace-one), and DP-Emb's std σ·norm_scale·√(2D) (its
    sensitivity for embeddings of norm ``norm_scale`` when replacing a node moves 2D rows). Pure: public sizes
    and hyperparameters only.
    """
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    if not (math.isfinite(norm_scale) and norm_scale > 0):
        raise ValueError(f"norm_scale must be a finite number > 0, got {norm_scale!r}")
    sigma = public_code_sigma(claimed_epsilon=float(claimed_epsilon), num_train_nodes=num_train_nodes,
                              batch_size=batch_size, encoder_epochs=encoder_epochs, epochs=epochs)
    return PublicCodeNoise(
        sigma=sigma, delta=public_code_delta(num_train_nodes),
        encoder_noise_multiplier=2.0 * math.sqrt(max_degree + 1) * sigma,
        emb_noise_std=sigma * norm_scale * math.sqrt(2 * max_degree),
        classifier_noise_multiplier=2.0 * sigma,
    )


def reference_accountant(emb_noise_multiplier: float, accountant: str) -> str:
    """A reference ledger's accountant: the run's, or "rdp" where DP-Emb's noise multiplier is below
    ``PLD_MIN_NOISE_MULTIPLIER`` (no PLD of it can be built; RDP bounds it soundly, if more loosely)."""
    return "rdp" if emb_noise_multiplier < PLD_MIN_NOISE_MULTIPLIER else accountant


def in_neighbours(edge_index: Tensor, *, num_nodes: int) -> tuple[Tensor, Tensor]:
    """CSR of in-neighbours: rowptr [N + 1] and the edges' sources ordered by destination."""
    src, dst = edge_index
    rowptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=src.device)
    rowptr[1:] = torch.bincount(dst, minlength=num_nodes).cumsum(0)
    return rowptr, src[torch.argsort(dst, stable=True)]


def adjacency_rows(edge_index: Tensor, nodes: Tensor, *, num_nodes: int,
                   csr: tuple[Tensor, Tensor] | None = None) -> AdjacencyRows:
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


def clipped_gradient_sum(encoder: AdjacencyEncoder, rows: AdjacencyRows, targets: Tensor, *, clip_norm: float,
                         table_grad: Tensor, shift_grad: Tensor) -> None:
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


def plan_dpdgc(inputs: RunInputs, spec: RunSpec, hp: DpdgcHparams, *, private: bool) -> DpdgcPlan:
    """Calibrate M1 and M2 to their shares alone, then M3 on the whole ledger (module docstring)."""
    split = inputs.split
    bounded = inputs.structure["out-degree"]
    edges, max_degree = bounded["edge_index"], int(bounded["bound"])
    if split.setting == "inductive":  # each part sees only its own edges (only removes edges)
        edges = remove_cross_split_edges(edges, split)
    row_clip = hp.row_clip or math.sqrt(max_degree)
    n = split.train.numel()
    if not 1 <= hp.batch_size <= n:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {n}] (training nodes)")
    q = hp.batch_size / n
    encoder_steps = math.ceil(hp.encoder_epochs / q) if hp.encoder_epochs else 0
    classifier_steps = max(1, math.ceil(hp.epochs / q))
    if not private:
        nap = NAP(level="none", row_clip=row_clip, noise_multiplier=0.0)
        return DpdgcPlan(False, nap, edges, max_degree, row_clip, Ledger.non_private(), q, encoder_steps,
                         classifier_steps, None, None, {})

    occurrences = max_degree + 1
    c = hp.clip_norm

    def encoder_record(z: float) -> MechanismRecord:
        return MechanismRecord(
            name=f"dp-sgd:{spec.method}:encoder", kind="poisson_occurrence_gaussian", touches=("edges", "labels"),
            params=poisson_occurrence_gaussian_params(sampling_rate=q, max_rows=max_degree, noise_multiplier=z,
                                                      clip_norm=c, steps=encoder_steps,
                                                      occurrence_rule=OWN_PLUS_ROWS),
            sensitivity=2 * c * occurrences,
            sensitivity_reason=(
                f"a training example is a node's adjacency row (its in-neighbours) and label; removing a node "
                f"removes its own example and changes the rows of its ≤ D = {max_degree} out-neighbours, "
                f"d = D + 1 = {occurrences} examples each clipped to C, so the gradient sum moves by ≤ 2·C·ρ, "
                "ρ ~ Binomial(d, γ) of them in a Poisson batch (the public code's 2C√(D+1) with single-record "
                "amplification under-counts)"),
            dp_event=None,
            caveat=_SAME_EDGE_LISTS,
        )

    def emb_record(z: float) -> MechanismRecord:
        sensitivity = math.sqrt(max_degree + row_clip**2)
        return MechanismRecord(
            name=f"dp-emb:{spec.method}", kind="gaussian", touches=("edges",),
            params={"mechanism": "nap", "level": "node", "noise_multiplier": z, "noise_std": z * sensitivity,
                    "queries": 1, "row_clip": row_clip,
                    "max_degree": max_degree, "embedding_norm": 1.0},
            sensitivity=sensitivity,
            sensitivity_reason=(
                f"X_A = clip_R(A Ŵ) with every embedding Ŵ_j of norm ≤ 1 (normalized before the release) and "
                f"rows clipped to R = {row_clip:g}: removing a node moves its ≤ D = {max_degree} out-neighbours' "
                f"rows by ≤ 1 each and its own row by ≤ R, so Δ = √(D + R²) = {sensitivity:.6g} (the public "
                "code sizes the noise for embeddings of norm 1e-8 it never enforces, and omits the node's own row)"),
            dp_event=nap_event(noise_multiplier=z, hops=1),
            caveat=_SAME_EDGE_LISTS,
        )

    def classifier_record(z: float) -> MechanismRecord:
        return dpsgd_record(
            name=f"dp-sgd:{spec.method}:classifier", touches=("features", "labels"), noise_multiplier=z,
            clip_norm=c, sampling_rate=q, num_examples=n, batch_size=hp.batch_size, steps=classifier_steps,
            epochs=hp.epochs,
            sensitivity_reason=("each training node is one example: its own features, label and released "
                                "embedding row (already private); adding or removing it changes the clipped "
                                "sum by ≤ C"),
        )

    def ledger_of(*records: MechanismRecord, accountant: str = spec.accountant, claim: Claim | None = None) -> Ledger:
        return Ledger(level="node", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
                      mechanisms=records, accountant=accountant, degree_bound=degree_bound_of(bounded), claim=claim)

    eps = spec.target_epsilon
    first: tuple[MechanismRecord, ...] = ()
    noise: dict[str, float] = {}
    if hp.accounting == "paper":  # the public code's noise, the same records (module docstring)
        public = public_code_noise(claimed_epsilon=eps, num_train_nodes=n, batch_size=hp.batch_size,
                                   encoder_epochs=hp.encoder_epochs, epochs=hp.epochs,
                                   max_degree=hp.paper_max_degree or max_degree)
        z_e = public.emb_noise_std / math.sqrt(max_degree + row_clip**2)
        z_c = public.classifier_noise_multiplier
        if encoder_steps:
            first, noise["encoder_noise_multiplier"] = ((encoder_record(public.encoder_noise_multiplier),),
                                                        public.encoder_noise_multiplier)
        accountant = reference_accountant(z_e, spec.accountant)
        claim = Claim(epsilon=eps, delta=public.delta, rule=_PUBLIC_RULE, source=_PUBLIC_SOURCE)
        ledger = ledger_of(*first, emb_record(z_e), classifier_record(z_c), accountant=accountant, claim=claim)
        noise |= {"public_sigma": public.sigma, "public_delta": public.delta}
    else:
        if encoder_steps:
            z_a = calibrate_ledger(target_epsilon=hp.encoder_share * eps,
                                   ledger_of=lambda s: ledger_of(encoder_record(s)))
            first, noise["encoder_noise_multiplier"] = (encoder_record(z_a),), z_a
        z_e = calibrate_ledger(target_epsilon=hp.emb_share * eps, ledger_of=lambda s: ledger_of(emb_record(s)))
        first += (emb_record(z_e),)
        z_c = calibrate_ledger(target_epsilon=eps, ledger_of=lambda s: ledger_of(*first, classifier_record(s)))
        ledger = ledger_of(*first, classifier_record(z_c))
    ledger.check()
    nap = NAP(level="node", row_clip=row_clip, noise_multiplier=z_e, max_degree=max_degree)
    noise |= {"emb_noise_multiplier": z_e, "emb_noise_std": nap.noise_std, "classifier_noise_multiplier": z_c}

    def privacy(record: MechanismRecord) -> PrivacyConfig:
        return privacy_from_record(record, expected_batch_size=hp.batch_size)

    encoder_privacy = privacy(ledger.mechanisms[0]) if encoder_steps else None
    return DpdgcPlan(True, nap, edges, max_degree, row_clip, ledger, q, encoder_steps, classifier_steps,
                     encoder_privacy, privacy(ledger.mechanisms[-1]), noise)


def run_dpdgc(inputs: RunInputs, spec: RunSpec, hp: DpdgcHparams, *, private: bool) -> RunResult:
    plan = plan_dpdgc(inputs, spec, hp, private=private)
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    num_nodes = graph.num_nodes
    y = graph.y.to(device)
    edges = plan.edges.to(device)
    train_nodes = split.train.to(device)
    encoder = AdjacencyEncoder(num_nodes, inputs.num_classes, hidden_dim=hp.hidden_dim, row_clip=plan.row_clip,
                               dropout=hp.dropout, generator=make_generator(spec.seed + _HEAD_STREAM)).to(device)
    start = time.perf_counter()
    if plan.encoder_steps:
        csr = in_neighbours(edges, num_nodes=num_nodes)

        def encoder_batch(idx: Tensor) -> tuple[AdjacencyRows, Tensor]:
            nodes = train_nodes[idx.to(device)]
            return adjacency_rows(edges, nodes, num_nodes=num_nodes, csr=csr), y[nodes]

        batches = poisson_batches(split.train.numel(), sampling_rate=plan.sampling_rate, steps=plan.encoder_steps,
                                  generator=generator)
        progress = spec.progress and f"{spec.method} {spec.dataset} encoder"
        if plan.encoder_privacy is None:
            train_model(encoder, batch_fn=encoder_batch, optim=hp.encoder_optim(), privacy=None, batches=batches,
                        generator=generator, device=device, total=plan.encoder_steps, progress=progress,
                        on_step=lambda _step: encoder.normalize_())
        else:
            noise_generator = (generator if generator.device == device
                               else make_generator(spec.seed + _ENCODER_NOISE_STREAM, device=device))
            clip = plan.encoder_privacy.clip_norm
            table, shift = encoder.table.weight, encoder.shift.bias
            train_model(encoder, batch_fn=encoder_batch, optim=hp.encoder_optim(), privacy=plan.encoder_privacy,
                        batches=batches, generator=noise_generator, device=device, total=plan.encoder_steps,
                        progress=progress, on_step=lambda _step: encoder.normalize_(),
                        clipped_sum=lambda rows, targets, grads: clipped_gradient_sum(
                            encoder, rows, targets, clip_norm=clip, table_grad=grads[table], shift_grad=grads[shift]))
    encoder.normalize_()  # the release needs it whatever happened before
    table, bias = encoder.embedding_table(), encoder.shift.bias.detach()

    def embedding(aggregated: Tensor) -> Tensor:
        """The classifier's x̃_A from an aggregation of the table (post-processing)."""
        shifted = aggregated + bias
        return shifted / plan.nap.noise_std if hp.standardize_embedding and plan.nap.noise_std > 0 else shifted

    released = embedding(plan.nap(table, edges, generator=generator))
    if plan.nap.calls != 1:
        raise RuntimeError(f"DP-Emb was queried {plan.nap.calls} times, the ledger charges 1")
    x = graph.x.to(device)
    classifier = LinkxClassifier(graph.num_features, inputs.num_classes, hidden_dim=hp.hidden_dim,
                                 base_layers=hp.base_layers, mix_layers=hp.mix_layers, dropout=hp.dropout).to(device)
    bounded = inputs.structure["out-degree"]

    def predict(other, parts=None) -> Tensor:  # module docstring: noise-free X_A of the given graph (parts: its split)
        other_edges = inference_edges(other, split=split if parts is None else parts, num_nodes=num_nodes,
                                      bounded=bounded).to(device)
        extended = torch.cat([table, table.new_zeros(other.num_nodes - num_nodes, table.size(1))])
        aggregated = nap_aggregate(extended, other_edges, num_nodes=other.num_nodes, row_clip=plan.row_clip)
        return classifier((other.x.to(device), embedding(aggregated)))

    result = fit_node_classifier(
        classifier, inputs_of=lambda nodes: (x[nodes], released[nodes]), y=y, split=split, spec=spec,
        optim=hp.optim_config(), batches=poisson_batches(split.train.numel(), sampling_rate=plan.sampling_rate,
                                                         steps=plan.classifier_steps, generator=generator),
        total=plan.classifier_steps, privacy=plan.classifier_privacy, ledger=plan.ledger, generator=generator,
        device=device, predict=predict,
    )
    return dataclasses.replace(result, train_seconds=time.perf_counter() - start, details={
        **result.details, **plan.noise, "encoder_steps": plan.encoder_steps, "max_degree": plan.max_degree,
        "row_clip": plan.row_clip, "emb_queries": plan.nap.calls, "ledger_accountant": plan.ledger.accountant,
    })
