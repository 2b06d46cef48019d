"""DPDGC's plan (``nodedp.methods.dpdgc``): the three stages' noise and the ledger, from public sizes only.

The training-set size (declared public) sets the Poisson rate q = B/|train| and the steps; the public
out-degree bound D (``PublicInputs.degree_bounds``: the dataset's, the workflow bounds the graph to it) sets the
encoder's occurrence count D + 1, DP-Emb's Δ = √(D + R²) and R = √D by default. Suite mode calibrates the encoder
to ``encoder_share``·ε alone, DP-Emb to ``emb_share``·ε alone, the classifier on the whole ledger; reference mode
(``dpdgc@paper``) takes the public code's noise for the claimed ε (``public_code_noise``) and records what it
spends. Nothing here reads the graph: the run executes this plan on the bounded edges.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant

from nodedp.accounting import (
    RDP_ORDERS,
    Claim,
    DegreeBound,
    Ledger,
    MechanismRecord,
    calibrate,
    calibrate_ledger,
    default_delta,
    nap_event,
    poisson_occurrence_gaussian_params,
)
from nodedp.accounting.hypergeometric import OWN_PLUS_ROWS
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.dpdgc import DpdgcHparams
from nodedp.plans import Plan, PublicInputs
from nodedp.plans.dpsgd import dpsgd_record

__all__ = [
    "PLD_MIN_NOISE_MULTIPLIER",
    "PUBLIC_NORM_SCALE",
    "DpdgcSchedule",
    "PublicCodeNoise",
    "dpdgc_ledger_plan",
    "dpdgc_schedule",
    "plan_dpdgc",
    "public_code_delta",
    "public_code_epsilon",
    "public_code_noise",
    "public_code_sigma",
    "public_code_steps",
    "reference_accountant",
]

_SAME_EDGE_LISTS = (
    "as in GAP, neighbouring graphs are compared on the same sampled edge lists: re-running the "
    "out-degree sampling without a node could let its in-neighbours keep other edges instead"
)

# --- reference mode: the public code's accounting (docs/design/methods.md, nodedp.methods.dpdgc) ---------------------------------------------
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


def public_code_epsilon(
    sigma: float, *, num_train_nodes: int, batch_size: int, encoder_epochs: int, epochs: int, delta: float
) -> float:
    """The ε the public code states for noise scale σ (its ``ComposedNoisyMechanism``, via autodp).

    RDP of the encoder's and the classifier's DP-SGD, each ``public_code_steps`` draws of B of the N training
    nodes without replacement under replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Thm. 27, what
    autodp's ``AmplificationBySampling(PoissonSampling=False)`` with the improved bound computes), plus one
    Gaussian of noise multiplier σ (DP-Emb), converted at ``delta`` (dp_accounting at ``RDP_ORDERS``; it
    reproduces autodp's σ to ~1e-5 relative on Cora's sizes). A stage with 0 epochs is free (its ZeroMechanism).
    """
    accountant = RdpAccountant(orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.REPLACE_ONE)
    # Both stages are the same sampled Gaussian (same σ, N and B): their RDP adds as one of the summed steps.
    steps = sum(
        public_code_steps(num_train_nodes=num_train_nodes, batch_size=batch_size, epochs=e)
        for e in (encoder_epochs, epochs)
        if e
    )
    if steps:
        sampled = dp_event.SampledWithoutReplacementDpEvent(
            num_train_nodes, batch_size, dp_event.GaussianDpEvent(sigma)
        )
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
def public_code_sigma(
    *, claimed_epsilon: float, num_train_nodes: int, batch_size: int, encoder_epochs: int, epochs: int
) -> float:
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
        target_epsilon=claimed_epsilon,
        tolerance=_PUBLIC_TOLERANCE,
        epsilon_of_sigma=lambda s: public_code_epsilon(
            s,
            num_train_nodes=num_train_nodes,
            batch_size=batch_size,
            encoder_epochs=encoder_epochs,
            epochs=epochs,
            delta=delta,
        ),
    )


def public_code_noise(
    *,
    claimed_epsilon: float,
    num_train_nodes: int,
    batch_size: int,
    encoder_epochs: int,
    epochs: int,
    max_degree: int,
    norm_scale: float = PUBLIC_NORM_SCALE,
) -> PublicCodeNoise:
    """The noise the public DPDGC code adds when asked for ``claimed_epsilon`` (docs/design/methods.md, nodedp.methods.dpdgc).

    σ is ``public_code_sigma``. The noise factors are the code's: 2√(D+1) on the encoder (its count of the
    D + 1 rows a node changes), 2 on the classifier (replace-one), and DP-Emb's std σ·norm_scale·√(2D) (its
    sensitivity for embeddings of norm ``norm_scale`` when replacing a node moves 2D rows). Pure: public sizes
    and hyperparameters only.
    """
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    if not (math.isfinite(norm_scale) and norm_scale > 0):
        raise ValueError(f"norm_scale must be a finite number > 0, got {norm_scale!r}")
    sigma = public_code_sigma(
        claimed_epsilon=float(claimed_epsilon),
        num_train_nodes=num_train_nodes,
        batch_size=batch_size,
        encoder_epochs=encoder_epochs,
        epochs=epochs,
    )
    return PublicCodeNoise(
        sigma=sigma,
        delta=public_code_delta(num_train_nodes),
        encoder_noise_multiplier=2.0 * math.sqrt(max_degree + 1) * sigma,
        emb_noise_std=sigma * norm_scale * math.sqrt(2 * max_degree),
        classifier_noise_multiplier=2.0 * sigma,
    )


def reference_accountant(emb_noise_multiplier: float, accountant: str) -> str:
    """A reference ledger's accountant: the run's, or "rdp" where DP-Emb's noise multiplier is below
    ``PLD_MIN_NOISE_MULTIPLIER`` (no PLD of it can be built; RDP bounds it soundly, if more loosely)."""
    return "rdp" if emb_noise_multiplier < PLD_MIN_NOISE_MULTIPLIER else accountant


@dataclass(frozen=True)
class DpdgcSchedule:
    """What the run's loops need beyond the noise: public sizes and hyperparameters only."""

    max_degree: int  # the public out-degree bound D
    row_clip: float  # R (0 in the hyperparameters: √D)
    sampling_rate: float  # q = B/|train|, both DP-SGD stages
    encoder_steps: int  # 0: no encoder training
    classifier_steps: int


def dpdgc_schedule(*, num_train: int, max_degree: int, hp: DpdgcHparams) -> DpdgcSchedule:
    """The stages' rate and steps and R, from the training-set size and the bound D (both public)."""
    if not 1 <= hp.batch_size <= num_train:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {num_train}] (training nodes)")
    q = hp.batch_size / num_train
    return DpdgcSchedule(
        max_degree=max_degree,
        row_clip=hp.row_clip or math.sqrt(max_degree),
        sampling_rate=q,
        encoder_steps=math.ceil(hp.encoder_epochs / q) if hp.encoder_epochs else 0,
        classifier_steps=max(1, math.ceil(hp.epochs / q)),
    )


def plan_dpdgc(public: PublicInputs, spec: RunSpec, hp: DpdgcHparams) -> Plan:
    """DPDGC's plan (module docstring): D is the dataset's public out-degree bound, |train| public."""
    max_degree = int(public.degree_bounds(dataclasses.asdict(hp))["out-degree"])
    return dpdgc_ledger_plan(num_train=public.num_train, max_degree=max_degree, spec=spec, hp=hp)


def dpdgc_ledger_plan(*, num_train: int, max_degree: int, spec: RunSpec, hp: DpdgcHparams) -> Plan:
    """Calibrate M1 and M2 to their shares alone, then M3 on the whole ledger (reference mode: the public code's
    noise). ``parts``: "schedule" (``DpdgcSchedule``), "emb_noise_multiplier" (DP-Emb's z) and "noise" (the
    noise figures the run reports)."""
    schedule = dpdgc_schedule(num_train=num_train, max_degree=max_degree, hp=hp)
    encoder_steps, row_clip, n = schedule.encoder_steps, schedule.row_clip, num_train
    # out-degree bounding keeps every edge of a node within D (nodedp.data.degree.identity_bound)
    degree_bound = DegreeBound(kind="out-degree", bound=max_degree, identity_bound=max_degree)

    def encoder_record(z: float) -> MechanismRecord:
        return _encoder_record(spec, hp, schedule, max_degree=max_degree, noise_multiplier=z)

    def emb_record(z: float) -> MechanismRecord:
        return _emb_record(spec, row_clip=row_clip, max_degree=max_degree, noise_multiplier=z)

    def classifier_record(z: float) -> MechanismRecord:
        return _classifier_record(spec, hp, schedule, num_train=n, noise_multiplier=z)

    def ledger_of(*records: MechanismRecord, accountant: str = spec.accountant, claim: Claim | None = None) -> Ledger:
        return Ledger(
            level="node",
            target_epsilon=spec.target_epsilon,
            target_delta=spec.target_delta,
            mechanisms=records,
            accountant=accountant,
            degree_bound=degree_bound,
            claim=claim,
        )

    eps = spec.target_epsilon
    first: tuple[MechanismRecord, ...] = ()
    noise: dict[str, Any] = {}
    if hp.accounting == "paper":  # the public code's noise, the same records (docs/design/methods.md)
        public = public_code_noise(
            claimed_epsilon=eps,
            num_train_nodes=n,
            batch_size=hp.batch_size,
            encoder_epochs=hp.encoder_epochs,
            epochs=hp.epochs,
            max_degree=hp.paper_max_degree or max_degree,
        )
        z_e = public.emb_noise_std / math.sqrt(max_degree + row_clip**2)
        z_c = public.classifier_noise_multiplier
        if encoder_steps:
            first, noise["encoder_noise_multiplier"] = (
                (encoder_record(public.encoder_noise_multiplier),),
                public.encoder_noise_multiplier,
            )
        accountant = reference_accountant(z_e, spec.accountant)
        claim = Claim(epsilon=eps, delta=public.delta, rule=_PUBLIC_RULE, source=_PUBLIC_SOURCE)
        ledger = ledger_of(*first, emb_record(z_e), classifier_record(z_c), accountant=accountant, claim=claim)
        noise |= {"public_sigma": public.sigma, "public_delta": public.delta}
    else:
        if encoder_steps:
            z_a = calibrate_ledger(
                target_epsilon=hp.encoder_share * eps, ledger_of=lambda s: ledger_of(encoder_record(s))
            )
            first, noise["encoder_noise_multiplier"] = (encoder_record(z_a),), z_a
        z_e = calibrate_ledger(target_epsilon=hp.emb_share * eps, ledger_of=lambda s: ledger_of(emb_record(s)))
        first += (emb_record(z_e),)
        z_c = calibrate_ledger(target_epsilon=eps, ledger_of=lambda s: ledger_of(*first, classifier_record(s)))
        ledger = ledger_of(*first, classifier_record(z_c))
    ledger.check()
    return Plan(ledger, {"schedule": schedule, "emb_noise_multiplier": z_e, "noise": noise})


def _encoder_record(
    spec: RunSpec, hp: DpdgcHparams, schedule: DpdgcSchedule, *, max_degree: int, noise_multiplier: float
) -> MechanismRecord:
    """M1's record: Poisson DP-Adam on adjacency rows, d = D + 1 occurrences of a node."""
    occurrences = max_degree + 1
    c = hp.clip_norm
    return MechanismRecord(
        name=f"dp-sgd:{spec.method}:encoder",
        kind="poisson_occurrence_gaussian",
        touches=("edges", "labels"),
        params=poisson_occurrence_gaussian_params(
            sampling_rate=schedule.sampling_rate,
            max_rows=max_degree,
            noise_multiplier=noise_multiplier,
            clip_norm=c,
            steps=schedule.encoder_steps,
            occurrence_rule=OWN_PLUS_ROWS,
        ),
        sensitivity=2 * c * occurrences,
        sensitivity_reason=(
            f"a training example is a node's adjacency row (its in-neighbours) and label; removing a node "
            f"removes its own example and changes the rows of its ≤ D = {max_degree} out-neighbours, "
            f"d = D + 1 = {occurrences} examples each clipped to C, so the gradient sum moves by ≤ 2·C·ρ, "
            "ρ ~ Binomial(d, γ) of them in a Poisson batch (the public code's 2C√(D+1) with single-record "
            "amplification under-counts)"
        ),
        dp_event=None,
        caveat=_SAME_EDGE_LISTS,
    )


def _emb_record(spec: RunSpec, *, row_clip: float, max_degree: int, noise_multiplier: float) -> MechanismRecord:
    """M2's record, DP-Emb: one NAP query on the unit-norm table, Δ = √(D + R²)."""
    z = noise_multiplier
    sensitivity = math.sqrt(max_degree + row_clip**2)
    return MechanismRecord(
        name=f"dp-emb:{spec.method}",
        kind="gaussian",
        touches=("edges",),
        params={
            "mechanism": "nap",
            "level": "node",
            "noise_multiplier": z,
            "noise_std": z * sensitivity,
            "queries": 1,
            "row_clip": row_clip,
            "max_degree": max_degree,
            "embedding_norm": 1.0,
        },
        sensitivity=sensitivity,
        sensitivity_reason=(
            f"X_A = clip_R(A Ŵ) with every embedding Ŵ_j of norm ≤ 1 (normalized before the release) and "
            f"rows clipped to R = {row_clip:g}: removing a node moves its ≤ D = {max_degree} out-neighbours' "
            f"rows by ≤ 1 each and its own row by ≤ R, so Δ = √(D + R²) = {sensitivity:.6g} (the public "
            "code sizes the noise for embeddings of norm 1e-8 it never enforces, and omits the node's own row)"
        ),
        dp_event=nap_event(noise_multiplier=z, hops=1),
        caveat=_SAME_EDGE_LISTS,
    )


def _classifier_record(
    spec: RunSpec, hp: DpdgcHparams, schedule: DpdgcSchedule, *, num_train: int, noise_multiplier: float
) -> MechanismRecord:
    """M3's record: Poisson DP-Adam, one example per training node (Δ = C)."""
    return dpsgd_record(
        name=f"dp-sgd:{spec.method}:classifier",
        touches=("features", "labels"),
        noise_multiplier=noise_multiplier,
        clip_norm=hp.clip_norm,
        sampling_rate=schedule.sampling_rate,
        num_examples=num_train,
        batch_size=hp.batch_size,
        steps=schedule.classifier_steps,
        epochs=hp.epochs,
        sensitivity_reason=(
            "each training node is one example: its own features, label and released "
            "embedding row (already private); adding or removing it changes the clipped "
            "sum by ≤ C"
        ),
    )
