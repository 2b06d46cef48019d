"""RDP curves of DP-SGD steps in which one node changes up to d examples (DP-GNN's Theorem 1, DPAR, DPDGC).

Fixed-size batches of m of N subgraphs (DP-GNN): ρ ~ Hypergeometric(N, d, m) of the node's examples are in
the batch and each step is (α, γ(α))-RDP, γ(α) = 1/(α − 1) · ln E_ρ[exp(α(α − 1) · 2ρ²C²/σ²)]; Poisson
batches: ρ ~ Binomial(d, γ) (``poisson_occurrence_gaussian_rdp``), d from ``max_rows`` by the record's
``occurrence_rule`` (``occurrence_bound``). The curves are not DpEvents; they are converted to (ε, δ) with
dp_accounting's RDP conversion. The argument and the occurrence rules are in docs/design/accounting.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.special import logsumexp
from scipy.stats import binom, hypergeom

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting.orders import RDP_ORDERS

# The batch sampling Theorem 1 assumes; the ledger records it so that a run
# that samples otherwise cannot borrow this curve.
SAMPLING = "fixed_size_without_replacement"
POISSON = "poisson"

# How d follows from max_rows (``occurrence_bound``): the extra examples one node's removal changes beyond the
# ≤ max_rows examples that hold it. A record names its rule so that a verifier recomputes d from params.
OWN_PLUS_ROWS = "own_plus_rows"  # its own example: d = max_rows + 1
RANKED_SOURCES = "ranked_sources"  # its own and the node that takes its source row: d = max_rows + 2
SELF_ONLY = "self_only"  # its own only; no example holds another node, so max_rows must be 0: d = 1
OCCURRENCE_RULES: dict[str, int] = {OWN_PLUS_ROWS: 1, RANKED_SOURCES: 2, SELF_ONLY: 1}

# noise_std must equal noise_multiplier · clip_norm to this relative precision.
_NOISE_RTOL = 1e-9


def max_occurrences(*, max_degree: int, num_layers: int) -> int:
    """N(K, r) = (K^(r+1) − 1)/(K − 1) = 1 + K + … + K^r: the most r-hop subgraphs one node occurs in.

    With in-degrees bounded by K, a node reaches at most K^i nodes i hops
    downstream, and each of the nodes within r hops owns one subgraph
    (r + 1 when K = 1, 1 when K = 0 or r = 0).
    """
    k = check_int(max_degree, "max_degree", minimum=0)
    r = check_int(num_layers, "num_layers", minimum=0)
    return sum(k**i for i in range(r + 1))


def hypergeometric_gaussian_rdp(
    *,
    orders: Sequence[float],
    num_examples: int,
    max_occurrences: int,
    batch_size: int,
    noise_multiplier: float,
) -> np.ndarray:
    """Theorem 1's per-step RDP γ(α) at each of ``orders`` (all > 1); +inf where it overflows.

    ``num_examples`` is N (training subgraphs), ``max_occurrences`` N(K, r),
    ``batch_size`` m (drawn without replacement), and ``noise_multiplier`` is
    σ/C: the std of the noise added to the gradient SUM divided by the
    per-example clip norm C. Unlike a DpEvent's noise multiplier it is not
    relative to the sensitivity, which here is 2C per sampled occurrence.
    """
    n = check_int(num_examples, "num_examples", minimum=1)
    d = check_int(max_occurrences, "max_occurrences", minimum=1)
    m = check_int(batch_size, "batch_size", minimum=1)
    if m > n:
        raise ValueError(f"batch_size = {m} exceeds num_examples = {n} (the batch is drawn without replacement)")
    z = check_positive(noise_multiplier, "noise_multiplier")
    # A node occurs in at most all N subgraphs; capping keeps the distribution defined
    # and, by Lemma 6's stochastic dominance, still bounds the true count.
    d = min(d, n)
    rho = np.arange(max(0, m + d - n), min(m, d) + 1, dtype=np.float64)
    return _mixture_rdp(orders, rho=rho, log_pmf=hypergeom.logpmf(rho, n, d, m), noise_multiplier=z)


def _mixture_rdp(
    orders: Sequence[float], *, rho: np.ndarray, log_pmf: np.ndarray, noise_multiplier: float
) -> np.ndarray:
    """1/(α − 1) · ln Σ_ρ P(ρ)·exp(α(α − 1)·2ρ²/z²) at each order: the Gaussian's RDP mixed over ρ."""
    alphas = np.asarray(orders, dtype=np.float64)
    if alphas.ndim != 1 or not np.all(np.isfinite(alphas)) or not np.all(alphas > 1):
        raise ValueError(f"orders must be a sequence of finite numbers > 1, got {orders!r}")
    with np.errstate(over="ignore"):
        # (α − 1)·γ_ρ, with γ_ρ = α(2ρC)²/(2σ²) the Gaussian's RDP at sensitivity 2ρC.
        exponent = (alphas * (alphas - 1))[:, None] * (2.0 * (rho / noise_multiplier) ** 2)[None, :]
    log_mgf = logsumexp(log_pmf[None, :] + exponent, axis=1)
    # Near 0, logsumexp's answer is swamped by the rounding of Σ pmf = 1;
    # ln(1 + Σ pmf·(e^x − 1)) keeps the digits (the ρ = 0 term adds exactly 0).
    # A heavy tail's e^x overflows there (ρ large, P(ρ) tiny): that order's term is NaN, then +inf below, which is
    # sound (the order is given up) and leaves the minimum over the other orders; no warning for it.
    small = log_mgf < 1.0
    if np.any(small):
        with np.errstate(over="ignore", invalid="ignore"):
            log_mgf[small] = np.log1p(np.expm1(exponent[small]) @ np.exp(log_pmf))
    rdp = log_mgf / (alphas - 1)
    return np.where(np.isnan(rdp), np.inf, rdp)


def occurrence_bound(*, rule: str, max_rows: int) -> int:
    """d: the most examples one node's removal changes when at most ``max_rows`` examples hold it.

    "own_plus_rows": its own example and those holding it, d = max_rows + 1.
    "ranked_sources": DPAR's, d = max_rows + 2: the same plus the one sampled
    node that takes a removed source's DP-APPR row (``nodedp.methods.dpar``).
    "self_only": every example is its node alone (DPAR's "Features" baseline),
    so no example holds another node: ``max_rows`` must be 0 and d = 1.
    """
    if not isinstance(rule, str) or rule not in OCCURRENCE_RULES:
        raise ValueError(f"unknown occurrence_rule {rule!r}; valid choices: {list(OCCURRENCE_RULES)}")
    rows = check_int(max_rows, "max_rows", minimum=0)
    if rule == SELF_ONLY and rows != 0:
        raise ValueError(
            f"occurrence_rule {SELF_ONLY!r} means no example holds another node, so max_rows must "
            f"be 0, got {max_rows!r}"
        )
    return rows + OCCURRENCE_RULES[rule]


def dpar_occurrences(*, max_rows: int) -> int:
    """DPAR's d = max_rows + 2 (rule "ranked_sources"; the proof is in ``nodedp.methods.dpar``)."""
    return occurrence_bound(rule=RANKED_SOURCES, max_rows=max_rows)


def poisson_occurrence_gaussian_rdp(
    *, orders: Sequence[float], sampling_rate: float, max_occurrences: int, noise_multiplier: float
) -> np.ndarray:
    """Per-step RDP when each example joins the batch independently with probability γ = ``sampling_rate``
    and one node changes at most d = ``max_occurrences`` examples: ρ ~ Binomial(d, γ) (docs/design/accounting.md).
    ``noise_multiplier`` is σ/C, as for ``hypergeometric_gaussian_rdp``."""
    if isinstance(sampling_rate, bool) or not isinstance(sampling_rate, int | float) or not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be a number in (0, 1], got {sampling_rate!r}")
    d = check_int(max_occurrences, "max_occurrences", minimum=1)
    z = check_positive(noise_multiplier, "noise_multiplier")
    rho = np.arange(d + 1, dtype=np.float64)
    return _mixture_rdp(orders, rho=rho, log_pmf=binom.logpmf(rho, d, sampling_rate), noise_multiplier=z)


def poisson_occurrence_gaussian_params(
    *,
    sampling_rate: float,
    max_rows: int,
    noise_multiplier: float,
    clip_norm: float,
    steps: int,
    occurrence_rule: str,
) -> dict[str, Any]:
    """The ledger params of a "poisson_occurrence_gaussian" mechanism (DPAR's and DPDGC's DP-SGD).

    ``max_occurrences`` is d = ``occurrence_bound(rule=occurrence_rule, max_rows=max_rows)``; the record keeps
    both ingredients so that d is recomputed, never trusted.
    """
    params = {
        "sampling_rate": float(sampling_rate),
        "max_occurrences": occurrence_bound(rule=occurrence_rule, max_rows=max_rows),
        "max_rows": max_rows,
        "occurrence_rule": occurrence_rule,
        **_noise_fields(noise_multiplier=noise_multiplier, clip_norm=clip_norm, steps=steps),
        "sampling": POISSON,
    }
    poisson_occurrence_gaussian_rdp_of_params(params, (2.0,))  # validates every field
    return params


def poisson_occurrence_gaussian_rdp_of_params(params: Mapping[str, Any], orders: Sequence[float]) -> np.ndarray:
    """T·γ(α) at ``orders`` from a ledger record's params; refuses params that contradict each other."""
    keys = ("sampling_rate", "max_occurrences", "max_rows", "occurrence_rule", "noise_multiplier", "noise_std",
            "clip_norm", "steps", "sampling")  # fmt: skip
    missing = [key for key in keys if key not in params]
    if missing:
        raise ValueError(f"poisson_occurrence_gaussian params lack {missing}; they need {list(keys)}")
    if params["sampling"] != POISSON:
        raise ValueError(f"this bound holds for Poisson batches (sampling {POISSON!r}), got {params['sampling']!r}")
    expected = occurrence_bound(rule=params["occurrence_rule"], max_rows=params["max_rows"])
    if params["max_occurrences"] != expected:
        raise ValueError(
            f"max_occurrences = {params['max_occurrences']!r} but max_rows = {params['max_rows']} "
            f"under occurrence_rule {params['occurrence_rule']!r} gives d = {expected}"
        )
    z = _check_noise(params)
    return check_int(params["steps"], "steps", minimum=1) * poisson_occurrence_gaussian_rdp(
        orders=orders, sampling_rate=params["sampling_rate"], max_occurrences=expected, noise_multiplier=z
    )


def _noise_fields(*, noise_multiplier: float, clip_norm: float, steps: int) -> dict[str, Any]:
    """The params both curves share: z = σ/C, σ, C and the number of steps."""
    return {
        "noise_multiplier": float(noise_multiplier),
        "noise_std": float(noise_multiplier) * check_positive(clip_norm, "clip_norm"),
        "clip_norm": float(clip_norm),
        "steps": steps,
    }


def _check_noise(params: Mapping[str, Any]) -> float:
    z = check_positive(params["noise_multiplier"], "noise_multiplier")
    std = check_positive(params["noise_std"], "noise_std")
    clip = check_positive(params["clip_norm"], "clip_norm")
    if not math.isclose(std, z * clip, rel_tol=_NOISE_RTOL):
        raise ValueError(f"noise_std = {std!r} is not noise_multiplier × clip_norm = {z!r} × {clip!r}")
    return z


def hypergeometric_gaussian_epsilon(
    *,
    num_examples: int,
    max_occurrences: int,
    batch_size: int,
    noise_multiplier: float,
    steps: int,
    delta: float,
    orders: Sequence[float] = RDP_ORDERS,
) -> float:
    """ε at ``delta`` of ``steps`` DP-GNN steps: T·γ(α) converted as dp_accounting's RdpAccountant does."""
    t = check_int(steps, "steps", minimum=1)
    check_delta(delta)
    rdp = t * hypergeometric_gaussian_rdp(
        orders=orders,
        num_examples=num_examples,
        max_occurrences=max_occurrences,
        batch_size=batch_size,
        noise_multiplier=noise_multiplier,
    )
    return float(compute_epsilon(list(orders), list(rdp), delta)[0])


def hypergeometric_gaussian_params(
    *,
    num_examples: int,
    max_degree: int,
    num_layers: int,
    batch_size: int,
    noise_multiplier: float,
    clip_norm: float,
    steps: int,
) -> dict[str, Any]:
    """The ledger params of a "hypergeometric_gaussian" mechanism: everything Theorem 1 depends on."""
    params = {
        "num_examples": num_examples,
        "max_occurrences": max_occurrences(max_degree=max_degree, num_layers=num_layers),
        "max_degree": max_degree,
        "num_layers": num_layers,
        "batch_size": batch_size,
        **_noise_fields(noise_multiplier=noise_multiplier, clip_norm=clip_norm, steps=steps),
        "sampling": SAMPLING,
    }
    hypergeometric_gaussian_rdp_of_params(params, (2.0,))  # validates every field
    return params


def hypergeometric_gaussian_rdp_of_params(params: Mapping[str, Any], orders: Sequence[float]) -> np.ndarray:
    """T·γ(α) at ``orders`` from a ledger record's params; refuses params that contradict each other."""
    keys = ("num_examples", "max_occurrences", "max_degree", "num_layers", "batch_size",
            "noise_multiplier", "noise_std", "clip_norm", "steps", "sampling")  # fmt: skip
    missing = [key for key in keys if key not in params]
    if missing:
        raise ValueError(f"hypergeometric_gaussian params lack {missing}; they need {list(keys)}")
    if params["sampling"] != SAMPLING:
        raise ValueError(
            f"Theorem 1 holds for batches of fixed size drawn without replacement (sampling {SAMPLING!r}), "
            f"got sampling {params['sampling']!r}"
        )
    expected = max_occurrences(max_degree=params["max_degree"], num_layers=params["num_layers"])
    if params["max_occurrences"] != expected:
        raise ValueError(
            f"max_occurrences = {params['max_occurrences']!r} but max_degree = {params['max_degree']} and "
            f"num_layers = {params['num_layers']} give N(K, r) = {expected}"
        )
    z = _check_noise(params)
    steps = check_int(params["steps"], "steps", minimum=1)
    return steps * hypergeometric_gaussian_rdp(
        orders=orders,
        num_examples=params["num_examples"],
        max_occurrences=params["max_occurrences"],
        batch_size=params["batch_size"],
        noise_multiplier=z,
    )
