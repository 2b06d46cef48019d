"""White-box audit of a DP-SGD release: the noise a run's ledger records, against a Dirac canary, over many runs.

Each run draws the canary's sampled steps and the noise on its own coordinate (no training), so the
Clopper–Pearson threshold bound over independent runs bounds the recorded mechanism's ε: it audits the
accounting, not the training code. Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = [
    "DPSGD_KINDS",
    "FIXED_SIZE_KINDS",
    "MIXTURE_KINDS",
    "dpsgd_records",
    "dpsgd_release_scores",
    "fixed_size_release_scores",
    "mixture_law",
    "mixture_release_scores",
]

# Ledger record kinds of Poisson-sampled DP-SGD with one example per node (own example at least).
DPSGD_KINDS = ("subsampled_gaussian", "poisson_occurrence_gaussian")
# DP-SGD on fixed-size batches drawn without replacement, a node in at most d examples (DP-GNN's Theorem 1).
FIXED_SIZE_KINDS = ("hypergeometric_gaussian",)
# DP-SGD whose per-step pair is a Gaussian mixture of the record's params (accounted by a PLD of its own):
# SparseGNN's structured subsampling, HeterPoisson's per-node mixture.
MIXTURE_KINDS = ("structured_gaussian", "heter_poisson_gaussian")
_POISSON_KEYS = {"noise_std", "clip_norm", "sampling_rate", "steps"}
_FIXED_SIZE_KEYS = {"noise_std", "clip_norm", "num_examples", "batch_size", "max_occurrences", "steps"}


def dpsgd_records(ledger: Any) -> list[Any]:
    """The ledger's DP-SGD records (a stage's each): Poisson-sampled (``DPSGD_KINDS``) or on fixed-size batches
    (``FIXED_SIZE_KINDS``), in ledger order."""
    return [
        record
        for record in ledger.mechanisms
        if (record.kind in DPSGD_KINDS and set(record.params) >= _POISSON_KEYS)
        or (record.kind in FIXED_SIZE_KINDS and set(record.params) >= _FIXED_SIZE_KEYS)
        or record.kind in MIXTURE_KINDS
    ]


def dpsgd_release_scores(
    *,
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    node_sample_rate: float = 1.0,
    max_occurrences: int = 1,
    runs: int,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``runs`` independent runs of the recorded DP-SGD against a Dirac canary (docs/design/audit-internals.md), each with
    the canary in with probability ½; returns (scores [runs], in [runs]). ``noise_multiplier`` = σ/C.

    ``max_occurrences`` = d (a "poisson_occurrence_gaussian" record's): the canary node's own example (gradient C·e,
    present only with the node) and d − 1 other examples that hold it, each drawn with the batch rate and present
    either way, whose gradient is C·e with the node and −C·e without it (‖g − g'‖ = 2C, the most the ledger
    allows). Without the node in the q' sample they read as without it."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    if isinstance(max_occurrences, bool) or not isinstance(max_occurrences, int) or max_occurrences < 1:
        raise ValueError(f"max_occurrences must be an integer >= 1, got {max_occurrences!r}")
    for name, rate in (("sampling_rate", sampling_rate), ("node_sample_rate", node_sample_rate)):
        if not 0 < rate <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {rate!r}")
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(runs, generator=generator) < 0.5
    sampled = included & (torch.rand(runs, generator=generator) < node_sample_rate)
    drawn = torch.binomial(
        torch.full((runs,), float(steps), dtype=torch.float64),
        torch.full((runs,), float(sampling_rate), dtype=torch.float64),
        generator=generator,
    )
    noise = torch.randn(runs, generator=generator, dtype=torch.float64) * math.sqrt(steps)
    others = torch.zeros_like(drawn)  # the other examples' draws over all steps (d = 1: none, and no draw)
    if max_occurrences > 1:
        others = torch.binomial(
            torch.full((runs,), float(steps * (max_occurrences - 1)), dtype=torch.float64),
            torch.full((runs,), float(sampling_rate), dtype=torch.float64),
            generator=generator,
        )
    return torch.where(sampled, drawn + others, -others) / noise_multiplier + noise, included


def fixed_size_release_scores(
    *,
    noise_multiplier: float,
    num_examples: int,
    batch_size: int,
    steps: int,
    max_occurrences: int,
    runs: int,
    seed: int,
    chunk: int = 256,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``runs`` independent runs of DP-SGD on fixed-size batches (``batch_size`` of ``num_examples`` examples drawn
    without replacement at each of ``steps`` steps) against a canary in d = ``max_occurrences`` examples, each
    present either way with gradient C·e with the node and −C·e without it (the 2C per occurrence that DP-GNN's
    Theorem 1 charges; a step's count ρ ~ Hypergeometric(N, d, m)); returns (scores [runs], in [runs])."""
    for name, value, least in (
        ("runs", runs, 2),
        ("steps", steps, 1),
        ("num_examples", num_examples, 1),
        ("batch_size", batch_size, 1),
        ("max_occurrences", max_occurrences, 1),
        ("chunk", chunk, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if batch_size > num_examples or max_occurrences > num_examples:
        raise ValueError(
            f"batch_size ({batch_size}) and max_occurrences ({max_occurrences}) must not exceed num_examples "
            f"({num_examples})"
        )
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(runs, generator=generator) < 0.5
    noise = torch.randn(runs, generator=generator, dtype=torch.float64) * math.sqrt(steps)
    rng = np.random.default_rng(seed)
    drawn = np.zeros(runs, dtype=np.int64)
    for start in range(0, steps, chunk):  # the steps' counts, a chunk of steps at a time (memory: runs x chunk)
        size = (runs, min(chunk, steps - start))
        drawn += rng.hypergeometric(max_occurrences, num_examples - max_occurrences, batch_size, size=size).sum(1)
    counts = torch.from_numpy(drawn).to(torch.float64)
    return torch.where(included, counts, -counts) / noise_multiplier + noise, included


# Mixture components lighter than this are moved to shift 0: the simulated pair is then dominated by the record's,
# so a bound on it stays a lower bound on the record's ε.
_LIGHT = 1e-12


def mixture_law(record: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """(shifts in units of C, their per-step probabilities, symmetric) of a ``MIXTURE_KINDS`` record's pair:
    SparseGNN's count law J with the canary at +J and its substitute at −J (symmetric), HeterPoisson's shifts
    against N(0) (add/remove)."""
    from nodedp.accounting.heter_poisson import heter_poisson_mixture
    from nodedp.accounting.structured import structured_count_law

    params = record.params
    if record.kind == "structured_gaussian":
        law = structured_count_law(
            sampling_rate=params["sampling_rate"],
            edge_keep=params["edge_keep"],
            radius=params["radius"],
            out_degree_bound=params["out_degree_bound"],
            union_factor=params["union_factor"],
        )
        return np.arange(law.size, dtype=np.float64), np.asarray(law, dtype=np.float64), True
    if record.kind == "heter_poisson_gaussian":
        shifts, weights = heter_poisson_mixture(
            sampling_rate=params["sampling_rate"], neighbours=params["neighbours"], degree=params["degree_bound"]
        )
        return np.asarray(shifts, dtype=np.float64), np.asarray(weights, dtype=np.float64), False
    raise ValueError(f"no mixture law for kind {record.kind!r}; kinds: {list(MIXTURE_KINDS)}")


def mixture_release_scores(
    *,
    shifts: np.ndarray,
    weights: np.ndarray,
    symmetric: bool,
    noise_multiplier: float,
    steps: int,
    runs: int,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``runs`` independent runs of ``steps`` DP-SGD steps against a canary whose per-step shift (units of C) is
    drawn from ``weights`` over ``shifts``: with it the canary's coordinate sums the shifts, without it 0 (or,
    ``symmetric``, minus the shifts: a substitution), plus N(0, σ²) per step; returns (scores [runs], in [runs])."""
    for name, value in (("runs", runs), ("steps", steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    shifts, weights = np.asarray(shifts, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    kept = weights >= _LIGHT
    kept[np.argmin(shifts)] = True
    lowest = int(np.flatnonzero(kept & (shifts == shifts.min()))[0])
    probs = np.where(kept, weights, 0.0)
    probs[lowest] += weights[~kept].sum()
    shifts, probs = shifts[kept], probs[kept] / probs[kept].sum()
    rng = np.random.default_rng(seed)
    included = rng.random(runs) < 0.5
    drawn = rng.multinomial(steps, probs, size=runs) @ shifts  # Σ_t shift_t per run
    moved = np.where(included, drawn, -drawn if symmetric else 0.0)
    scores = moved / noise_multiplier + rng.standard_normal(runs) * math.sqrt(steps)
    return torch.from_numpy(scores), torch.from_numpy(included)
