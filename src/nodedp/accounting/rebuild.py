"""Rebuild every ledger record's cost from its raw parameters, never trusting a stored cost.

``check_record`` recomputes a record's sensitivity from its inputs by the mechanism's own rule
(``params["mechanism"]``, ``MECHANISMS``), then its cost, and refuses a record whose stored sensitivity, noise
multiplier, DpEvent or pure ε disagrees, naming the field; a record with no rule is refused. Why:
docs/design/accounting.md. Torch-free, like the rest of ``nodedp.accounting``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dp_accounting import dp_event

from nodedp.accounting.events import event_to_dict
from nodedp.accounting.hypergeometric import POISSON
from nodedp.accounting.nip_bounds import worst_case_budget_ratio

_RTOL = 1e-9


class RecordMismatch(ValueError):
    """A record's stored cost or sensitivity does not follow from its raw parameters."""


@dataclass(frozen=True)
class Rebuilt:
    """What a record's raw params imply: its sensitivity and exactly one of a DpEvent or a pure ε (or neither
    for kinds accounted by their own RDP curve of params)."""

    sensitivity: float
    dp_event: dp_event.DpEvent | None = None
    pure_epsilon: float | None = None


def _field(params: Mapping[str, Any], key: str, name: str) -> Any:
    if key not in params:
        raise RecordMismatch(f"{name}: params lack {key!r}, which its cost is rebuilt from")
    return params[key]


def _positive(params: Mapping[str, Any], key: str, name: str) -> float:
    value = _field(params, key, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
        raise RecordMismatch(f"{name}: params[{key!r}] must be a finite number > 0, got {value!r}")
    return float(value)


def _count(params: Mapping[str, Any], key: str, name: str, *, minimum: int = 1) -> int:
    value = _field(params, key, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RecordMismatch(f"{name}: params[{key!r}] must be an integer >= {minimum}, got {value!r}")
    return value


def _probability(params: Mapping[str, Any], key: str, name: str) -> float:
    value = _positive(params, key, name)
    if not value < 1:
        raise RecordMismatch(f"{name}: params[{key!r}] must be in (0, 1), got {value!r}")
    return value


def _agree(stored: Any, rebuilt: float, *, field: str, name: str) -> None:
    if (
        isinstance(stored, bool)
        or not isinstance(stored, int | float)
        or not math.isclose(stored, rebuilt, rel_tol=_RTOL, abs_tol=0.0)
    ):
        raise RecordMismatch(f"{name}: {field} = {stored!r}, but the raw params give {rebuilt!r}")


def _multiplier(params: Mapping[str, Any], sensitivity: float, name: str) -> float:
    """z = noise std / sensitivity; a stored noise_multiplier must agree with it."""
    z = _positive(params, "noise_std", name) / sensitivity
    if "noise_multiplier" in params:
        _agree(params["noise_multiplier"], z, field="params['noise_multiplier'] (noise_std / sensitivity)", name=name)
    return z


def _repeated(event: dp_event.DpEvent, count: int) -> dp_event.DpEvent:
    return dp_event.SelfComposedDpEvent(event, count)


# --- one rule per mechanism: params -> Rebuilt ----------------------------------------------------------------------


def _dp_sgd(params: Mapping[str, Any], name: str) -> Rebuilt:
    """Poisson-sampled DP-SGD, one example per private unit: Δ = C, q = expected batch / examples."""
    if _field(params, "sampling", name) != POISSON:
        raise RecordMismatch(
            f"{name}: params['sampling'] = {params['sampling']!r}; this bound holds for {POISSON!r} batches only"
        )
    sensitivity = _positive(params, "clip_norm", name)
    z = _multiplier(params, sensitivity, name)
    q = _positive(params, "sampling_rate", name)
    if q > 1:
        raise RecordMismatch(f"{name}: params['sampling_rate'] = {q!r} is above 1")
    rate = _positive(params, "expected_batch_size", name) / _count(params, "num_examples", name)
    _agree(q, rate, field="params['sampling_rate'] (expected_batch_size / num_examples)", name=name)
    steps = _count(params, "steps", name)
    return Rebuilt(
        sensitivity, dp_event=_repeated(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
    )


def _nap(params: Mapping[str, Any], name: str) -> Rebuilt:
    """Gaussian aggregation perturbation, ``queries`` times. Node level: the removed node's own row moves by
    ≤ R and each of its ≤ D out-neighbours' rows by ≤ u (the norm of one summed row, 1 for NAP's normalised
    features, ``embedding_norm`` for DPDGC's embeddings): Δ = √(D·u² + R²). Edge level: 1 (directed) or √2."""
    level = _field(params, "level", name)
    if level == "node":
        degree = _count(params, "max_degree", name, minimum=0)
        row_clip = _positive(params, "row_clip", name)
        unit = _positive(params, "embedding_norm", name) if "embedding_norm" in params else 1.0
        sensitivity = math.sqrt(degree * unit**2 + row_clip**2)
    elif level == "edge":
        undirected = _field(params, "undirected", name)
        if not isinstance(undirected, bool):
            raise RecordMismatch(f"{name}: params['undirected'] must be true or false, got {undirected!r}")
        sensitivity = math.sqrt(2.0) if undirected else 1.0
    else:
        raise RecordMismatch(f"{name}: params['level'] must be 'node' or 'edge', got {level!r}")
    z = _multiplier(params, sensitivity, name)
    return Rebuilt(sensitivity, dp_event=_repeated(dp_event.GaussianDpEvent(z), _count(params, "queries", name)))


def _dp_appr_gm(params: Mapping[str, Any], name: str) -> Rebuilt:
    """M rows, each a non-negative APPR vector ℓ2-clipped to C1: Δ = √2·C1 per row, M Gaussians."""
    sensitivity = math.sqrt(2.0) * _positive(params, "clip", name)
    z = _multiplier(params, sensitivity, name)
    return Rebuilt(sensitivity, dp_event=_repeated(dp_event.GaussianDpEvent(z), _count(params, "m", name)))


def _dp_appr_em_values(params: Mapping[str, Any], name: str) -> Rebuilt:
    """M·K released values in [0, C2], each Laplace(scale): multiplier scale/C2, which must be K/ε2."""
    clip = _positive(params, "clip", name)
    k, m = _count(params, "k", name), _count(params, "m", name)
    multiplier = _positive(params, "laplace_scale", name) / clip
    _agree(
        k / _positive(params, "epsilon_value", name),
        multiplier,
        field="K / params['epsilon_value'] (the Laplace multiplier)",
        name=name,
    )
    return Rebuilt(clip, dp_event=_repeated(dp_event.LaplaceDpEvent(multiplier), m * k))


def _dp_appr_em_select(params: Mapping[str, Any], name: str) -> Rebuilt:
    """M·K Gumbel(C2/ε) peeling selections: ``selections`` must be M·K and ε = C2 / gumbel_scale."""
    clip = _positive(params, "clip", name)
    selections = _count(params, "selections", name)
    m_times_k = _count(params, "m", name) * _count(params, "k", name)
    if selections != m_times_k:
        raise RecordMismatch(f"{name}: params['selections'] = {selections}, but M·K = {m_times_k}")
    _agree(
        params.get("epsilon"),
        clip / _positive(params, "gumbel_scale", name),
        field="params['epsilon'] (C2 / gumbel_scale)",
        name=name,
    )
    return Rebuilt(clip)


def _occurrence_mixture(params: Mapping[str, Any], name: str) -> Rebuilt:
    """The mixture curves validate their own params (N(K, r), d from its ingredients, σ = z·C); a node moves
    the clipped sum by ≤ 2C per example it changes, d of them."""
    clip = _positive(params, "clip_norm", name)
    return Rebuilt(2.0 * clip * _count(params, "max_occurrences", name))


def _noise_in_units_of_clip(params: Mapping[str, Any], name: str) -> float:
    """C, once the stored noise multiplier is checked to be noise_std / C (the PLD kinds' unit)."""
    clip = _positive(params, "clip_norm", name)
    z = _positive(params, "noise_std", name) / clip
    _agree(_field(params, "noise_multiplier", name), z, field="params['noise_multiplier'] (noise_std / C)", name=name)
    return clip


def _structured(params: Mapping[str, Any], name: str) -> Rebuilt:
    """SparseGNN: under substitution each affected root's clipped gradient moves by ≤ 2C, and at most
    1 + χ·Σ_ℓ K_out^ℓ roots are affected (the count law's support; its PLD validates the rest)."""
    clip = _noise_in_units_of_clip(params, name)
    if _field(params, "relation", name) != "substitution":
        raise RecordMismatch(f"{name}: params['relation'] must be 'substitution' (the pair's neighbouring relation)")
    k_out, radius = _count(params, "out_degree_bound", name), _count(params, "radius", name, minimum=0)
    chi = _count(params, "union_factor", name)
    return Rebuilt(2.0 * clip * (1 + chi * sum(k_out**hop for hop in range(1, radius + 1))))


def _heter_poisson(params: Mapping[str, Any], name: str) -> Rebuilt:
    """HeterPoisson: per-subgraph gradients clipped to C/2; a removed node moves each of the ≤ D subgraphs that
    list it by ≤ C (or, as a root, its own by C/2): at most D·C."""
    clip = _noise_in_units_of_clip(params, name)
    return Rebuilt(clip * _count(params, "degree_bound", name))


def _edge_rr(params: Mapping[str, Any], name: str) -> Rebuilt:
    """Every adjacency entry flipped w.p. p: ε = ln((1 − p)/p) per edge."""
    p = _probability(params, "flip_probability", name)
    if not p < 0.5:
        raise RecordMismatch(f"{name}: params['flip_probability'] = {p!r} must be below 1/2")
    return Rebuilt(1.0, pure_epsilon=math.log((1 - p) / p))


def _nip_edge_rr(params: Mapping[str, Any], name: str) -> Rebuilt:
    """NIP-GNN Theorem 4: each pair re-drawn w.p. s (flipped w.p. s/2), counted over 2·D_max entries."""
    s = _probability(params, "s", name)
    _agree(params.get("flip_probability"), s / 2, field="params['flip_probability'] (s / 2)", name=name)
    degree = _count(params, "max_degree", name)
    return Rebuilt(2.0 * degree, pure_epsilon=2.0 * degree * math.log((2 - s) / s))


def _nip_label_rr(params: Mapping[str, Any], name: str) -> Rebuilt:
    """M-ary randomized response keeping the label w.p. k: ε = ln(k·(M − 1)/(1 − k))."""
    classes = _count(params, "num_classes", name, minimum=2)
    keep = _probability(params, "keep_probability", name)
    if not keep > 1 / classes:
        raise RecordMismatch(f"{name}: params['keep_probability'] = {keep!r} must exceed 1/M = {1 / classes!r}")
    return Rebuilt(1.0, pure_epsilon=math.log(keep * (classes - 1) / (1 - keep)))


def _nip_aggregation(params: Mapping[str, Any], name: str) -> Rebuilt:
    """NIP-GNN's Laplace NAP (Eq. 9): ‖ΔH‖₁ ≤ 2·D_max; row u gets Laplace(2·D_max/ε_u) with ε_u = ε_A·β_u.
    Removing or adding a node costs ≤ ratio·ε_A on any graph with degrees ≤ D_max, the ratio rebuilt from
    the D_max + 1 largest budget weights (``nodedp.accounting.nip_bounds.worst_case_budget_ratio``, Theorem 3)."""
    degree = _count(params, "max_degree", name)
    sensitivity = 2.0 * degree
    epsilon_a = sensitivity / _positive(params, "laplace_scale_at_epsilon_a", name)
    _agree(
        params.get("epsilon_a"),
        epsilon_a,
        field="params['epsilon_a'] (2·D_max / laplace_scale_at_epsilon_a)",
        name=name,
    )
    weights = _field(params, "largest_budget_weights", name)
    try:
        ratio = worst_case_budget_ratio(weights, max_degree=degree)
    except (TypeError, ValueError) as err:
        raise RecordMismatch(f"{name}: params['largest_budget_weights'] {err}") from None
    if len(weights) > degree + 1 or list(weights) != sorted(weights, reverse=True):
        raise RecordMismatch(
            f"{name}: params['largest_budget_weights'] must be the min(N, D_max + 1) largest "
            f"budget weights in descending order (D_max + 1 = {degree + 1}), got {len(weights)}"
        )
    _agree(params.get("charged_ratio"), ratio, field="params['charged_ratio'] (worst case of the budgets)", name=name)
    return Rebuilt(sensitivity, pure_epsilon=epsilon_a * ratio)


MECHANISMS: Mapping[str, tuple[str, Callable[[Mapping[str, Any], str], Rebuilt]]] = {
    "dp_sgd": ("subsampled_gaussian", _dp_sgd),
    "nap": ("gaussian", _nap),
    "dp_appr_gm": ("gaussian", _dp_appr_gm),
    "dp_appr_em_values": ("laplace", _dp_appr_em_values),
    "dp_appr_em_select": ("gumbel_topk", _dp_appr_em_select),
    "hypergeometric_gaussian": ("hypergeometric_gaussian", _occurrence_mixture),
    "poisson_occurrence_gaussian": ("poisson_occurrence_gaussian", _occurrence_mixture),
    "structured_gaussian": ("structured_gaussian", _structured),
    "heter_poisson_gaussian": ("heter_poisson_gaussian", _heter_poisson),
    "edge_rr": ("randomized_response", _edge_rr),
    "nip_edge_rr": ("randomized_response", _nip_edge_rr),
    "nip_label_rr": ("randomized_response", _nip_label_rr),
    "nip_aggregation": ("laplace", _nip_aggregation),
}
# Kinds with one mechanism: their records may leave params["mechanism"] out.
_DEFAULT_MECHANISM = {
    "subsampled_gaussian": "dp_sgd",
    "gumbel_topk": "dp_appr_em_select",
    "hypergeometric_gaussian": "hypergeometric_gaussian",
    "poisson_occurrence_gaussian": "poisson_occurrence_gaussian",
    "structured_gaussian": "structured_gaussian",
    "heter_poisson_gaussian": "heter_poisson_gaussian",
}


def rebuilt_cost(*, name: str, kind: str, params: Mapping[str, Any]) -> Rebuilt:
    """The sensitivity and cost that ``params`` imply for a record of ``kind``; raises ``RecordMismatch``."""
    mechanism = params.get("mechanism", _DEFAULT_MECHANISM.get(kind))
    if mechanism not in MECHANISMS:
        raise RecordMismatch(
            f"{name}: params['mechanism'] = {mechanism!r} names no rule to rebuild its cost from; "
            f"known: {sorted(MECHANISMS)}"
        )
    expected_kind, rule = MECHANISMS[mechanism]
    if kind != expected_kind:
        raise RecordMismatch(f"{name}: mechanism {mechanism!r} is of kind {expected_kind!r}, the record says {kind!r}")
    return rule(params, name)


def _same(a: Any, b: Any) -> bool:
    """Equal JSON forms, floats to a relative 1e-9."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool) | isinstance(b, bool):
        return math.isclose(a, b, rel_tol=_RTOL, abs_tol=0.0)
    return a == b


def check_record(record: Any) -> Rebuilt:
    """Raise ``RecordMismatch`` unless ``record``'s sensitivity and cost are what its raw params give.

    A DpEvent must equal the rebuilt one; a pure ε must be at least the rebuilt cost (charging more is
    allowed, charging less is the under-report this exists to catch).
    """
    name = record.name
    rebuilt = rebuilt_cost(name=name, kind=record.kind, params=record.params)
    _agree(record.sensitivity, rebuilt.sensitivity, field="sensitivity", name=name)
    if rebuilt.dp_event is not None:
        stored = None if record.dp_event is None else event_to_dict(record.dp_event)
        expected = event_to_dict(rebuilt.dp_event)
        if not _same(stored, expected):
            raise RecordMismatch(f"{name}: dp_event = {stored!r}, but the raw params give {expected!r}")
    if rebuilt.pure_epsilon is not None:
        stored = record.pure_epsilon
        if stored is None or not stored >= rebuilt.pure_epsilon * (1 - _RTOL):
            raise RecordMismatch(f"{name}: pure_epsilon = {stored!r}, but the raw params cost {rebuilt.pure_epsilon!r}")
    return rebuilt
