"""DP-GNN's plan (``nodedp.methods.dp_gnn``): Theorem 1's DP-SGD on in-degree-bounded r-hop subgraphs.

From public inputs only: the in-degree bound K, N = |train| subgraphs, m per step, T steps, the clip norms and the
noise multiplier z (the suite's accountant, or the paper's public code's noise in reference mode). With
``clip_percentile`` the run passes its measured ``thresholds`` (an uncharged read); ``stated_thresholds`` reads
them off a stated ledger. Torch-free: the paper's accountant (``paper_*``) lives here.
Details: docs/design/methods.md, section `nodedp.plans.dp_gnn`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, cast

from nodedp.accounting import (
    Claim,
    DegreeBound,
    Ledger,
    MechanismRecord,
    UnchargedRead,
    calibrate,
    calibrate_ledger,
    hypergeometric_gaussian_epsilon,
    hypergeometric_gaussian_params,
    max_occurrences,
)
from nodedp.accounting.dp_gnn_paper import PAPER_ORDERS, paper_delta, paper_epsilon_floor
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.dp_gnn import DpGnnHparams
from nodedp.contract.specs.gnn import LAYERS
from nodedp.plans import Plan, PublicInputs

__all__ = [
    "layer_names",
    "paper_epsilon",
    "paper_noise_multiplier",
    "paper_reference_noise_multiplier",
    "plan_dp_gat",
    "plan_dp_gcn",
    "plan_dp_gin",
    "plan_dp_gnn",
    "plan_dp_sage",
    "stated_thresholds",
]

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

# The layers (modules owning trainable parameters, ``nodedp.train.trainable_layer_names``) of one GNN layer of
# ``nodedp.models.SubgraphGNN`` wrapped in ``GraphReadout``, by kind; the run checks its model has exactly these.
_CONV_LAYERS: dict[str, tuple[str, ...]] = {
    "gcn": ("linear",),
    "gin": ("scale", "mlp.layers.0", "mlp.layers.2"),
    "gat": ("query", "key", "value"),
    "sage": ("self_linear", "neighbour_linear"),
}


def paper_epsilon(
    *, noise_multiplier: float, num_examples: int, max_degree: int, num_layers: int, batch_size: int, steps: int
) -> float:
    """The ε the paper's accountant states for ``steps`` DP-GNN steps of noise multiplier z.

    z is σ/C (Theorem 1's noise std over the clip norm; the paper's λ is z/(2·N(K, r))); the curve is
    Theorem 1's at ``PAPER_ORDERS``, converted at ``paper_delta(num_examples)``.
    """
    return hypergeometric_gaussian_epsilon(
        num_examples=num_examples,
        max_occurrences=max_occurrences(max_degree=max_degree, num_layers=num_layers),
        batch_size=batch_size,
        noise_multiplier=noise_multiplier,
        steps=steps,
        delta=paper_delta(num_examples),
        orders=PAPER_ORDERS,
    )


def paper_noise_multiplier(
    *, target_epsilon: float, num_examples: int, max_degree: int, num_layers: int, batch_size: int, steps: int
) -> float:
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
        target_epsilon=target_epsilon,
        tolerance=_PAPER_TOLERANCE,
        epsilon_of_sigma=lambda z: paper_epsilon(
            noise_multiplier=z,
            num_examples=num_examples,
            max_degree=max_degree,
            num_layers=num_layers,
            batch_size=batch_size,
            steps=steps,
        ),
    )


def paper_reference_noise_multiplier(
    *,
    target_epsilon: float,
    num_examples: int,
    max_degree: int,
    num_layers: int,
    batch_size: int,
    steps: int,
    num_groups: int,
) -> float:
    """The noise multiplier the paper's noise actually has over the whole gradient: z/√L.

    With ``num_groups`` = L groups clipped to C_t = C/√L each and noise std z·C_t on each (z from
    ``paper_noise_multiplier``), the whole gradient carries one Gaussian of std z·C/√L, while its clipped norm
    is bounded by √(Σ C_t²) = C: relative to that bound, the multiplier is z/√L.
    """
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        raise ValueError(f"num_groups must be an integer >= 1, got {num_groups!r}")
    z = paper_noise_multiplier(
        target_epsilon=target_epsilon,
        num_examples=num_examples,
        max_degree=max_degree,
        num_layers=num_layers,
        batch_size=batch_size,
        steps=steps,
    )
    return z / math.sqrt(num_groups)


def layer_names(layer: str, num_layers: int) -> tuple[str, ...]:
    """The clip groups of DP-GNN's model (``GraphReadout(SubgraphGNN(...))``, one encoder and one decoder layer):
    its modules owning trainable parameters, named by path in model order, as ``trainable_layer_names`` names
    them (a public function of the architecture; the run checks its model against it)."""
    if layer not in _CONV_LAYERS:
        raise ValueError(f"unknown GNN layer {layer!r}; choose from {list(LAYERS)}")
    convs = [f"gnn.convs.{i}.{name}" for i in range(num_layers) for name in _CONV_LAYERS[layer]]
    return ("gnn.encoder.layers.0", *convs, "gnn.decoder.layers.0")


def _total_clip_norm(layer_clip_norms: Mapping[str, float]) -> float:
    """C = √(Σ C_l²), as ``nodedp.train.total_clip_norm`` computes it."""
    return math.sqrt(math.fsum(c * c for c in layer_clip_norms.values()))


def stated_thresholds(ledger: Mapping[str, Any]) -> dict[str, float] | float:
    """The run's own thresholds as a stated ledger (``Ledger.to_dict``) records them: its per-layer clip norms, or
    its one clip norm. Only for plans with ``clip_percentile`` > 0, whose thresholds no public input gives."""
    (record,) = ledger["mechanisms"]
    params = record["params"]
    if "layer_clip_norms" in params:
        return {str(k): float(v) for k, v in params["layer_clip_norms"].items()}
    return float(params["clip_norm"])


def plan_dp_gnn(
    public: PublicInputs,
    spec: RunSpec,
    hp: DpGnnHparams,
    *,
    layer: str,
    thresholds: Mapping[str, float] | float | None = None,
) -> Plan:
    """The run's ledger, and what it executes (``parts``): ``max_degree`` K, ``degree_bound``, ``steps``,
    ``batch_size``, ``noise_multiplier``, ``clip_norm``, ``layer_clip_norms`` (None: flat clipping) and
    ``layer_names`` (the model's clip groups, where clipping is layer-wise)."""
    num_examples = public.num_train
    if not 1 <= hp.batch_size <= num_examples:
        raise ValueError(f"batch_size {hp.batch_size} must be in [1, {num_examples}] (training nodes)")
    max_degree = int(public.degree_bounds(dataclasses.asdict(hp))["in-degree"])
    steps = max(1, math.ceil(hp.epochs * num_examples / hp.batch_size))
    layerwise = hp.clipping == "layerwise" or hp.accounting == "paper"
    names = layer_names(layer, hp.num_layers) if layerwise else None
    clip, layer_clips, uncharged = _clip_norms(spec, hp, names, thresholds)

    def record_of(z: float) -> MechanismRecord:
        return _dpsgd_record(
            spec,
            hp,
            noise_multiplier=z,
            clip=clip,
            layer_clips=layer_clips,
            num_examples=num_examples,
            max_degree=max_degree,
            steps=steps,
        )

    # Algorithm 1 is the identity for train in-degrees ≤ ⌊K/2⌋ (``nodedp.data.identity_bound``), the out-degree
    # sampling for out-degrees ≤ K: the "in-degree" bound's guarantee states both (DegreeBound.condition).
    degree_bound = DegreeBound(kind="in-degree", bound=max_degree, identity_bound=max_degree // 2)

    claim = None
    if hp.accounting == "paper":
        claim = Claim(
            epsilon=spec.target_epsilon, delta=paper_delta(num_examples), rule=_PAPER_RULE, source=_PAPER_SOURCE
        )

    def ledger_of(z: float) -> Ledger:
        return Ledger(
            level="node",
            target_epsilon=spec.target_epsilon,
            target_delta=spec.target_delta,
            mechanisms=(record_of(z),),
            accountant=spec.accountant,
            uncharged=uncharged,
            degree_bound=degree_bound,
            claim=claim,
        )

    if claim is None:
        z = calibrate_ledger(target_epsilon=spec.target_epsilon, ledger_of=ledger_of)
    else:  # the paper's noise std z·C_l on each layer: z/√L relative to the whole gradient's bound C
        assert layer_clips is not None
        z = paper_reference_noise_multiplier(
            target_epsilon=spec.target_epsilon,
            num_examples=num_examples,
            max_degree=max_degree,
            num_layers=hp.num_layers,
            batch_size=hp.batch_size,
            steps=steps,
            num_groups=len(layer_clips),
        )
    ledger = ledger_of(z)
    ledger.check()
    return Plan(
        ledger,
        {
            "max_degree": max_degree,
            "degree_bound": degree_bound,
            "steps": steps,
            "batch_size": hp.batch_size,
            "noise_multiplier": z,
            "clip_norm": clip,
            "layer_clip_norms": layer_clips,
            "layer_names": names,
        },
    )


def _clip_norms(
    spec: RunSpec,
    hp: DpGnnHparams,
    names: tuple[str, ...] | None,
    thresholds: Mapping[str, float] | float | None,
) -> tuple[float, dict[str, float] | None, tuple[UnchargedRead, ...]]:
    """(C, the per-layer C_l or None for flat clipping, the uncharged read of measured thresholds): the run's
    ``thresholds`` where ``clip_percentile`` > 0, else ``clip_norm`` (split equally over ``names``, if any)."""
    uncharged: tuple[UnchargedRead, ...] = ()
    layer_clips: dict[str, float] | None = None
    if hp.clip_percentile > 0:
        if thresholds is None:
            raise ValueError(
                f"clip_percentile {hp.clip_percentile:g}: the clipping thresholds are a percentile of gradient norms "
                "on the private data (an uncharged read), which no public input gives; the run measures them "
                "(plan_dp_gnn's `thresholds`)"
            )
        if hp.clipping == "layerwise":
            if not isinstance(thresholds, Mapping) or sorted(thresholds) != sorted(names or ()):
                raise ValueError(
                    f"layer-wise thresholds must name the model's layers {list(names or ())}, got {thresholds!r}"
                )
            layer_clips = dict(thresholds)
            clip = _total_clip_norm(layer_clips)
        else:
            if isinstance(thresholds, Mapping):
                raise ValueError(f"flat clipping takes one threshold, got {thresholds!r}")
            clip = thresholds
        uncharged = (
            UnchargedRead(
                name=f"clip-thresholds:{spec.method}",
                touches=("features", "labels", "edges"),
                reason=(
                    f"{hp.clipping} clipping thresholds are the {hp.clip_percentile:g}th percentile of per-subgraph "
                    f"gradient norms at initialization on {hp.batch_size} training subgraphs, read without noise "
                    "(the paper's recipe); the thresholds are not covered by the recorded ε"
                ),
            ),
        )
    else:
        if thresholds is not None:
            raise ValueError("thresholds are the run's only where clip_percentile > 0; here they are clip_norm's")
        clip = hp.clip_norm
        # A public choice: C split equally over the L layers (reference mode always clips layer-wise).
        if names is not None:
            layer_clips = {name: clip / math.sqrt(len(names)) for name in names}
            clip = _total_clip_norm(layer_clips)  # = clip_norm up to rounding
    return clip, layer_clips, uncharged


def _dpsgd_record(
    spec: RunSpec,
    hp: DpGnnHparams,
    *,
    noise_multiplier: float,
    clip: float,
    layer_clips: dict[str, float] | None,
    num_examples: int,
    max_degree: int,
    steps: int,
) -> MechanismRecord:
    """Theorem 1's record of DP-SGD on the r-hop subgraphs at noise multiplier z."""
    occurrences = max_occurrences(max_degree=max_degree, num_layers=hp.num_layers)
    clipped = "each per-subgraph gradient is clipped to C"
    if layer_clips is not None:
        clipped = "each layer l of a per-subgraph gradient is clipped to C_l, so the whole gradient to C = √(Σ C_l²)"
    params = hypergeometric_gaussian_params(
        num_examples=num_examples,
        max_degree=max_degree,
        num_layers=hp.num_layers,
        batch_size=hp.batch_size,
        noise_multiplier=noise_multiplier,
        clip_norm=clip,
        steps=steps,
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


# What a verifier must take from the stated ledger to re-plan a run (none unless clip_percentile > 0): keyword
# -> reader of a stated ledger (``Ledger.to_dict``).
def _stated_thresholds(ledger: Mapping[str, Any], *_: Any) -> dict[str, float] | float:
    """``stated_thresholds`` as a verifier calls a reader: (ledger, public, spec, hp)."""
    return stated_thresholds(ledger)


_RUN_SUPPLIED = {"thresholds": _stated_thresholds}
cast(Any, plan_dp_gnn).run_supplied = _RUN_SUPPLIED


def _planner(layer: str):
    def plan(
        public: PublicInputs, spec: RunSpec, hp: DpGnnHparams, thresholds: Mapping[str, float] | float | None = None
    ) -> Plan:
        return plan_dp_gnn(public, spec, hp, layer=layer, thresholds=thresholds)

    plan.__name__ = plan.__qualname__ = f"plan_dp_{layer}"
    plan.__doc__ = f"DP-GNN's plan with {layer.upper()} layers (``plan_dp_gnn``)."
    cast(Any, plan).run_supplied = _RUN_SUPPLIED
    return plan


# The registry's planners (``MethodInfo.plan``), one per layer kind: the clip groups are the layers' names.
plan_dp_gcn = _planner("gcn")
plan_dp_sage = _planner("sage")
plan_dp_gin = _planner("gin")
plan_dp_gat = _planner("gat")
assert set(_CONV_LAYERS) == set(LAYERS)
