"""SparseGNN's privacy accountant (structured subsampling, "SG-latest"): one symmetric double-mixture PLD per step.

Each step every training node becomes a root with probability p1 (Poisson) and grows an r-hop subgraph along
incoming arcs of a graph whose out-degrees are capped at K_out, keeping each examined arc with probability p2;
one gradient per root, clipped to C, is summed and N(0, σ²C²) is added. Under node substitution each affected
root moves by ≤ 2C, so a step is dominated (units of C) by

    P = Σ_k π_k·N(−k, σ²),   Q = Σ_k π_k·N(+k, σ²),   π = law of J (``structured_count_law``):
    J = Bernoulli(p1) + Σ_{ℓ=1..r} Binomial(χ·K_out^ℓ, b_ℓ),   b_ℓ = p1·p2^ℓ / (1 − p1 + p1·p2^ℓ),

χ = 2 the union-graph factor (χ = 1: the public code's reference mode). The PLD is the pessimistic
connect-the-dots one of the pair (``create_pmf_pessimistic_connect_dots``), composed over T steps;
``calibrate_structured`` searches σ with ``nodedp.accounting.calibration.calibrate``. Conditional on the
degree-capped graph. Why it dominates, and the test vectors: docs/design/accountant-sparsegnn.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy.special import log_ndtr, logsumexp, ndtr
from scipy.stats import binom, norm

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting.calibration import calibrate
from nodedp.accounting.pld import _TAIL_MASS_TRUNCATION, VALUE_DISCRETIZATION_INTERVAL, _check_interval, epsilon_pld

__all__ = [
    "STRUCTURED_PARAM_KEYS",
    "UNION_FACTORS",
    "calibrate_structured",
    "check_structured_params",
    "structured_count_law",
    "structured_epsilon_of_params",
    "structured_pld_of_params",
    "structured_step_pld",
]

STRUCTURED_PARAM_KEYS: tuple[str, ...] = (
    "sampling_rate",
    "edge_keep",
    "radius",
    "out_degree_bound",
    "union_factor",
    "noise_multiplier",
    "steps",
)
UNION_FACTORS: tuple[int, ...] = (1, 2)

# Components of π lighter than this are charged as infinite loss (δ += their mass at every ε).
_NEGLIGIBLE = 1e-14
# The x-grid covers each kept component to z std of the noise (Φ(−z) = 1e-15), as the spec's recipe.
_Z = float(norm.isf(1e-15))
# Points of the x-grid that gives each x*(ε) its first guess and bracket.
_X_POINTS = 8193
# Per-step losses beyond ±this (nats) are not resolved: mass above goes to infinite loss, below is raised to it
# (both pessimistic); ε of a run with such a step is infinite or enormous anyway. Keeps tiny σ from
# asking for a grid of 10^9 points.
_LOSS_CAP = 100.0
# Entries (grid ε × components) evaluated at once.
_CHUNK = 1 << 20
# Newton on L(x) = ε stops when every step is below this (in units of σ).
_X_TOLERANCE = 1e-12
_MAX_NEWTON = 60
# Bisections after a stalled Newton: each halves every bracket (a cell of the grid at most), so 2000 reach any
# float64 tolerance.
_MAX_BISECTIONS = 2000
# The coarse grid (nats) of calibrate_structured's first search: an upper bound on the fine grid's ε, cheap.
_COARSE_INTERVAL = 0.02


def _check_rate(value: Any, name: str) -> float:
    """``value`` as a float in (0, 1] (numpy numbers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not 0 < value <= 1:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def structured_count_law(
    *, sampling_rate: float, edge_keep: float, radius: int, out_degree_bound: int, union_factor: int
) -> np.ndarray:
    """π_k = Pr[J = k], k = 0..1 + χ·Σ_{ℓ=1..r} K_out^ℓ, of J = Bern(p1) + Σ_ℓ Bin(χ·K_out^ℓ, b_ℓ) (independent).

    ``sampling_rate`` p1 (root probability per step), ``edge_keep`` p2 (arc keep probability), ``radius`` r
    (hops; r = 0 gives J ~ Bern(p1)), ``out_degree_bound`` K_out, ``union_factor`` χ (2: sound under node
    substitution; 1: the public code's reference mode). Exact convolution of the pmfs.
    """
    p1 = _check_rate(sampling_rate, "sampling_rate")
    p2 = _check_rate(edge_keep, "edge_keep")
    r = check_int(radius, "radius", minimum=0)
    k_out = check_int(out_degree_bound, "out_degree_bound", minimum=1)
    chi = check_int(union_factor, "union_factor", minimum=1)
    if chi not in UNION_FACTORS:
        raise ValueError(f"union_factor must be one of {list(UNION_FACTORS)}, got {union_factor!r}")
    law = np.array([1.0 - p1, p1])
    for hop in range(1, r + 1):
        m = chi * k_out**hop
        tilt = p2**hop
        b = 1.0 if p1 == 1.0 else p1 * tilt / (1.0 - p1 + p1 * tilt)
        law = np.convolve(law, binom.pmf(np.arange(m + 1), m, b))
    return law


def _check_count_law(count_law: Any) -> np.ndarray:
    pi = np.asarray(count_law, dtype=np.float64)
    if pi.ndim != 1 or pi.size < 2 or not np.all(np.isfinite(pi)) or np.any(pi < 0):
        raise ValueError("count_law must be a 1-D array of >= 2 probabilities (Pr[J = k], k = 0, 1, ...)")
    if not math.isclose(math.fsum(pi), 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"count_law must sum to 1, sums to {math.fsum(pi)!r}")
    if math.fsum(pi[1:]) <= 0:
        raise ValueError("count_law puts all its mass on J = 0 (nothing to account)")
    return pi


class _Pair:
    """P = Σ_k w_k·N(−k, σ²) and Q = Σ_k w_k·N(+k, σ²) over the kept components k (w: their π, not renormalized).

    The loss is L(x) = log P(x) − log Q(x) = g(−x) − g(x) with g(t) = log Σ_k w_k·exp(t·k/σ² − k²/(2σ²)),
    so L is odd and strictly decreasing (log of a Laplace transform is convex, and every k ≥ 0).
    """

    def __init__(self, shifts: np.ndarray, weights: np.ndarray, sigma: float) -> None:
        self.k, self.sigma = shifts, sigma
        self.log_w = np.log(weights)
        self.a = self.log_w - shifts**2 / (2 * sigma**2)

    def _g(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """g(t) and g'(t) (the tilted mean of k over σ²)."""
        e = self.a + np.multiply.outer(t, self.k) / self.sigma**2
        value = logsumexp(e, axis=-1)
        return value, np.sum(np.exp(e - value[..., None]) * self.k, axis=-1) / self.sigma**2

    def loss(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """L(x) and L'(x) (nats; x in units of C)."""
        g_minus, dg_minus = self._g(-x)
        g_plus, dg_plus = self._g(x)
        return g_minus - g_plus, -dg_minus - dg_plus

    def hockey_stick(self, x: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """F_P(x) − e^ε·F_Q(x): δ(ε) of the kept part at x = x*(ε) (its maximiser over x)."""
        s = self.sigma
        out = np.empty_like(eps)
        left = x <= 0  # ε ≥ 0: both CDFs small, in logs
        xl = x[left][:, None]
        log_fp = logsumexp(self.log_w + log_ndtr((xl + self.k) / s), axis=-1)
        log_fq = logsumexp(self.log_w + log_ndtr((xl - self.k) / s), axis=-1)
        out[left] = -np.exp(log_fp) * np.expm1(eps[left] + log_fq - log_fp)
        right = ~left  # ε < 0: F = W − survival, with W the kept mass
        xr, er = x[right][:, None], eps[right]
        surv_p = np.sum(np.exp(self.log_w) * ndtr(-(xr + self.k) / s), axis=-1)
        surv_q = np.sum(np.exp(self.log_w) * ndtr(-(xr - self.k) / s), axis=-1)
        out[right] = -np.expm1(er) * math.fsum(np.exp(self.log_w)) + (np.exp(er) * surv_q - surv_p)
        return out


def _solve_loss(pair: _Pair, x_grid: np.ndarray, loss_grid: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """x*(ε) with L(x*) = ε for each ε inside [L(x_grid[-1]), L(x_grid[0])], by safeguarded Newton.

    Starts from linear interpolation on the grid and keeps each root in its grid cell (bisecting when Newton
    leaves it), so it converges for every ε; to ``_X_TOLERANCE``·σ.
    """
    # loss_grid decreases along x_grid; cell j holds x* when loss_grid[j] >= ε >= loss_grid[j + 1].
    j = np.clip(np.searchsorted(-loss_grid, -eps, side="right") - 1, 0, x_grid.size - 2)
    lo, hi = x_grid[j], x_grid[j + 1]
    x = np.interp(-eps, -loss_grid, x_grid)
    for _ in range(_MAX_NEWTON):
        value, slope = pair.loss(x)
        above = value > eps  # L decreasing: x* is to the right
        lo, hi = np.where(above, x, lo), np.where(above, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = (value - eps) / slope
        new = x - step
        outside = ~((new >= lo) & (new <= hi))  # NaN included
        new = np.where(outside, (lo + hi) / 2, new)
        moved = np.abs(new - x)
        x = new
        if np.all(moved <= _X_TOLERANCE * pair.sigma * (1.0 + np.abs(x))):
            return x
    # Newton stalled somewhere (a slope that underflows where one component dominates both P and Q): bisect the
    # brackets Newton kept, which always hold x*, until every one is within the tolerance. An x* off by that much
    # moves δ(ε) only at second order (the hockey stick is flat in x at x*).
    for _ in range(_MAX_BISECTIONS):
        tolerance = _X_TOLERANCE * pair.sigma * (1.0 + np.abs(lo) + np.abs(hi))
        if np.all(hi - lo <= tolerance):
            return (lo + hi) / 2
        middle = (lo + hi) / 2
        above = pair.loss(middle)[0] > eps
        lo, hi = np.where(above, middle, lo), np.where(above, hi, middle)
    raise RuntimeError("the inverse of the privacy loss did not converge")


def _x_range(pair: _Pair, eps_low: float, eps_high: float) -> tuple[float, float]:
    """[x_lo, x_hi] ⊇ [−k_max − σz, σz] with L(x_lo) ≥ ``eps_high`` and L(x_hi) ≤ ``eps_low``."""
    x_lo, x_hi = float(-pair.k[-1] - _Z * pair.sigma), float(_Z * pair.sigma)
    width = x_hi - x_lo
    while pair.loss(np.array([x_lo]))[0][0] < eps_high:
        x_lo -= width
        width *= 2
    width = x_hi - x_lo
    while pair.loss(np.array([x_hi]))[0][0] > eps_low:
        x_hi += width
        width *= 2
    return x_lo, x_hi


def structured_step_pld(
    *,
    count_law: np.ndarray,
    noise_multiplier: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> pld_lib.PrivacyLossDistribution:
    """PLD of one step of P = Σ_k π_k·N(−k, σ²) vs Q = Σ_k π_k·N(+k, σ²) (symmetric, pessimistic).

    ``count_law`` π (``structured_count_law``); ``noise_multiplier`` σ = noise std / C (shifts are in units of
    C). Components with π_k < 1e-14 are charged as infinite loss. The grid ε_i = i·Δ spans the losses of
    x ∈ [−k_max − σz, σz] (z = Φ⁻¹(1 − 1e-15)), clipped to ±100 nats; δ(ε_i) is exact there
    (F_P(x*) − e^ε·F_Q(x*) at L(x*) = ε_i) and the mass above the last ε_i goes to infinite loss.
    """
    pi = _check_count_law(count_law)
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    interval = _check_interval(value_discretization_interval)
    kept = np.flatnonzero(pi >= _NEGLIGIBLE)
    dropped = math.fsum(pi[pi < _NEGLIGIBLE])
    if kept[-1] == 0:  # every affected-root count above the threshold is 0: zero loss, δ = the dropped mass
        return pld_lib.PrivacyLossDistribution(pld_pmf.create_pmf({0: 1.0 - dropped}, interval, dropped, True))
    pair = _Pair(kept.astype(np.float64), pi[kept], sigma)

    ends = np.array([-pair.k[-1] - _Z * sigma, _Z * sigma])
    loss_ends = pair.loss(ends)[0]
    lower = max(math.floor(loss_ends[1] / interval), -math.ceil(_LOSS_CAP / interval))
    upper = min(math.ceil(loss_ends[0] / interval), math.ceil(_LOSS_CAP / interval))
    upper = max(upper, lower + 1)
    x_lo, x_hi = _x_range(pair, lower * interval, upper * interval)
    x_grid = np.linspace(x_lo, x_hi, _X_POINTS)
    loss_grid = pair.loss(x_grid)[0]
    # L is strictly decreasing, but where one component dominates both P and Q its slope can be e^(−huge):
    # flat in floating point. Refuse only an increase beyond rounding.
    if np.any(np.diff(loss_grid) > 1e-12 * (1.0 + np.abs(loss_grid[1:]))):
        raise RuntimeError("the privacy loss is not non-increasing on the grid (numerical failure)")
    loss_grid = np.minimum.accumulate(loss_grid)

    indices = np.arange(lower, upper + 1)
    deltas = np.empty(indices.size)
    chunk = max(1, _CHUNK // pair.k.size)
    for start in range(0, indices.size, chunk):
        eps = indices[start : start + chunk] * interval
        x_star = _solve_loss(pair, x_grid, loss_grid, eps)
        deltas[start : start + chunk] = pair.hockey_stick(x_star, eps) + dropped
    # δ(ε) is non-increasing; rounding may break that by ~1e-17: raise earlier values (pessimistic).
    deltas = np.maximum.accumulate(np.clip(deltas, 0.0, 1.0)[::-1])[::-1]
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(interval, indices, deltas)
    return pld_lib.PrivacyLossDistribution(pmf)


def _read_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], float, int]:
    """The count law's arguments, σ and T from ``params`` (other keys are ignored)."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {type(params).__name__}")
    missing = [key for key in STRUCTURED_PARAM_KEYS if key not in params]
    if missing:
        raise ValueError(f"params lack {missing}; the structured accountant reads {list(STRUCTURED_PARAM_KEYS)}")
    law = {key: params[key] for key in STRUCTURED_PARAM_KEYS[:5]}
    sigma = check_positive(params["noise_multiplier"], "noise_multiplier")
    steps = check_int(params["steps"], "steps", minimum=1)
    return law, sigma, steps


def check_structured_params(params: Mapping[str, Any]) -> None:
    """Raise ValueError (TypeError for a non-mapping) unless ``params`` hold a valid count law, σ and T: what a
    ledger record of kind "structured_gaussian" is checked with, without building its PLD."""
    law, _, _ = _read_params(params)
    structured_count_law(**law)


def structured_pld_of_params(
    params: Mapping[str, Any], *, value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL
) -> pld_lib.PrivacyLossDistribution:
    """The T-step PLD of ``params``: sampling_rate p1, edge_keep p2, radius r, out_degree_bound K_out,
    union_factor χ, noise_multiplier σ (noise std / C), steps T."""
    law, sigma, steps = _read_params(params)
    one = structured_step_pld(
        count_law=structured_count_law(**law),
        noise_multiplier=sigma,
        value_discretization_interval=value_discretization_interval,
    )
    return one.self_compose(steps, tail_mass_truncation=_TAIL_MASS_TRUNCATION)


def structured_epsilon_of_params(
    params: Mapping[str, Any],
    *,
    delta: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """ε at ``delta`` of T steps of ``params`` (``structured_pld_of_params``), node substitution."""
    check_delta(delta)
    pld = structured_pld_of_params(params, value_discretization_interval=value_discretization_interval)
    return epsilon_pld([pld], delta=delta)


def calibrate_structured(
    params: Mapping[str, Any],
    *,
    target_epsilon: float,
    target_delta: float,
    tolerance: float = 0.005,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """The smallest σ = noise std / C with ε(``params`` at σ) ≤ ``target_epsilon`` at ``target_delta``.

    ``params``' own noise_multiplier is replaced by each trial σ. Uses ``calibrate``, so
    (1 − tolerance)·target ≤ ε(σ) ≤ target under ``structured_epsilon_of_params``, the function that
    accounts the run.
    """
    check_delta(target_delta, "target_delta")
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {type(params).__name__}")
    _read_params({**params, "noise_multiplier": 1.0})  # validates before the search

    def epsilon(sigma: float, interval: float) -> float:
        trial = {**params, "noise_multiplier": sigma}
        return structured_epsilon_of_params(trial, delta=target_delta, value_discretization_interval=interval)

    # Trial σ far below the answer have wide loss grids; the search on the coarse grid (a pessimistic bound,
    # ~50 times fewer points) gives the unit, and the fine search on σ / unit starts next to its answer.
    coarse = max(_COARSE_INTERVAL, _check_interval(value_discretization_interval))
    unit = calibrate(target_epsilon=target_epsilon, epsilon_of_sigma=lambda s: epsilon(s, coarse), tolerance=0.05)
    return unit * calibrate(
        target_epsilon=target_epsilon,
        epsilon_of_sigma=lambda scale: epsilon(unit * scale, value_discretization_interval),
        tolerance=tolerance,
    )
