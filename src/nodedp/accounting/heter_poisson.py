"""HeterPoisson's accountant (HP-v2, Gaussian noise): the suite's PLD, and the public code's RDP as a reference.

Under node insertion/removal, one step (roots Poisson at rate q, each listed node kept with probability
min(1, M/D), per-subgraph gradients clipped to C/2, N(0, σ²C²) noise) is, in units of C, P = Σ_i w_i·N(s_i, σ²)
against Q = N(0, σ²): shift ½ w.p. q (x is a root, and then nowhere else), shift n w.p. (1 − q)·Bin(n; D, c),
c = q·min(1, M/D) (x is a neighbour in n subgraphs). The pair is sound for the suite's sampler, which drops every
sampled root from all other subgraphs, keeps nodes with a public degree bound D (d = D is then the worst case),
gives isolated roots no neighbours and scales the noise by the expected batch size; the public code does none of
these. Both orientations are accounted as a pessimistic connect-the-dots PLD on the suite's grid (dp_accounting's
mixture-of-Gaussians privacy loss, its inverse vectorised). The public code's accountant (``paper_epsilon``,
``paper_noise_multiplier``) is the RDP of the mixture at keep probability M/d on its quantile grid (log-weights
below −30 dropped, worst d by a scan, Balle et al.'s conversion); ``grid="wide"`` integrates that RDP correctly.
Arguments and numbers: docs/design/accountant-heterpoisson.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType, MixtureGaussianPrivacyLoss
from scipy.special import ndtri
from scipy.stats import binom

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting.calibration import calibrate
from nodedp.accounting.mixture_pld import _NEGLIGIBLE
from nodedp.accounting.pld import (
    _TAIL_MASS_TRUNCATION,
    LOG_MASS_TRUNCATION_BOUND,
    VALUE_DISCRETIZATION_INTERVAL,
    _check_interval,
    epsilon_pld,
)

__all__ = [
    "HETER_POISSON_PARAMS",
    "PAPER_ORDERS",
    "calibrate_heter_poisson",
    "check_heter_poisson_params",
    "heter_poisson_epsilon_of_params",
    "heter_poisson_mixture",
    "heter_poisson_pld_of_params",
    "heter_poisson_rdp",
    "heter_poisson_step_pld",
    "paper_epsilon",
    "paper_noise_multiplier",
    "paper_worst_degree",
]

HETER_POISSON_PARAMS: tuple[str, ...] = ("sampling_rate", "neighbours", "degree_bound", "noise_multiplier", "steps")

# The public code's orders: 1.1..10.9 and 12..29, each at its float32 value (it builds them as a float32 tensor).
PAPER_ORDERS: tuple[float, ...] = tuple(
    float(a) for a in np.array([1 + x / 10 for x in range(1, 100)] + list(range(12, 30)), dtype=np.float32)
)
# The public code drops mixture components whose normalised log-weight is below this.
_PAPER_LOG_WEIGHT_CUTOFF = -30.0
# ... and picks the worst d at this (α, σ).
_PAPER_SCAN_ORDER, _PAPER_SCAN_SIGMA = 1.3, 1.0
# Its σ search: bisection on this bracket to this width.
_PAPER_SIGMA_BRACKET, _PAPER_SIGMA_WIDTH = (0.001, 100.0), 0.01

# The partial sums (largest terms only) that may settle an order before the full sum (``_exceeds``).
_LOWER_BOUND_POINTS = (1, 1 << 10, 1 << 15)
# Grid points per block where a mixture's log-likelihood ratio is evaluated (bounds memory to 0.5 MB a component).
_BLOCK = 1 << 16

Grid = Literal["wide", "quantile"]


def _check_rate(sampling_rate: Any) -> float:
    if isinstance(sampling_rate, bool) or not isinstance(sampling_rate, int | float | np.number):
        raise ValueError(f"sampling_rate must be a number in (0, 1], got {sampling_rate!r}")
    if not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be a number in (0, 1], got {sampling_rate!r}")
    return float(sampling_rate)


def _neighbour_rate(q: float, neighbours: int, degree_bound: int) -> float:
    """c = q·min(1, M/D): the chance that a given listing root is sampled and keeps the node."""
    return q * min(1.0, neighbours / degree_bound)


def heter_poisson_mixture(
    *, sampling_rate: float, neighbours: int, degree: int, degree_bound: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One step's shifts (units of C) and their weights, for a node listed by ``degree`` potential roots.

    Shifts are 0, ½, 1, …, d: ½ with weight q (the node is a root, and
    then nowhere else), n with weight (1 − q)·Binomial(n; d, c) (a neighbour
    in n subgraphs), c = q·min(1, M/D), D = ``degree_bound`` (default d: the
    public code's keep probability M/d). ``sampling_rate`` q ∈ (0, 1];
    ``neighbours`` M ≥ 1; 1 ≤ d ≤ D.
    """
    q = _check_rate(sampling_rate)
    m = check_int(neighbours, "neighbours", minimum=1)
    d = check_int(degree, "degree", minimum=1)
    bound = d if degree_bound is None else check_int(degree_bound, "degree_bound", minimum=1)
    if d > bound:
        raise ValueError(f"degree must be <= degree_bound, got degree = {d} > degree_bound = {bound}")
    n = np.arange(d + 1)
    counts = binom.pmf(n, d, _neighbour_rate(q, m, bound))
    shifts = np.concatenate(([0.0, 0.5], n[1:].astype(np.float64)))
    weights = np.concatenate(([(1 - q) * counts[0], q], (1 - q) * counts[1:]))
    return shifts, weights


def _kept_components(
    *, sampling_rate: float, neighbours: int, degree: int, degree_bound: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """The mixture without components below ``_NEGLIGIBLE``: (shifts, weights normalised, dropped weight).

    The neighbour counts kept form a range [lo, hi] (the binomial is
    unimodal); the weight left out is computed from the binomial's tails,
    accurate where the pmf underflows.
    """
    shifts, weights = heter_poisson_mixture(
        sampling_rate=sampling_rate, neighbours=neighbours, degree=degree, degree_bound=degree_bound
    )
    keep = weights >= _NEGLIGIBLE
    q, c = float(sampling_rate), _neighbour_rate(float(sampling_rate), neighbours, degree_bound)
    counts = shifts[keep & (shifts != 0.5)]
    if counts.size:
        lo, hi = int(counts.min()), int(counts.max())
        dropped = (1 - q) * (float(binom.cdf(lo - 1, degree, c)) + float(binom.sf(hi, degree, c)))
    else:
        dropped = 1 - q
    if not keep[1]:
        dropped += q
    kept = weights[keep]
    return shifts[keep], kept / math.fsum(kept), dropped


def _log_sum_exp_lines(x: np.ndarray, slopes: np.ndarray, constants: np.ndarray) -> np.ndarray:
    """logsumexp_i(constants_i + slopes_i·x) at every x (a mixture's log-likelihood ratio), in blocks of x."""
    out = np.empty(x.size)
    for start in range(0, x.size, _BLOCK):
        lines = constants[:, np.newaxis] + np.multiply.outer(slopes, x[start : start + _BLOCK])
        top = lines.max(axis=0)
        out[start : start + _BLOCK] = top + np.log(np.exp(lines - top).sum(axis=0))
    return out


class _VectorisedMixtureLoss(MixtureGaussianPrivacyLoss):
    """dp_accounting's mixture-of-Gaussians privacy loss with its inverse vectorised.

    The library inverts the loss by a binary search that recurses per grid
    point and evaluates one x per call; this one runs the same bisection (same
    bracket, same splits, same answer: the smallest multiple of ``precision``
    whose loss is ≤ l) for all points at once. Overriding a private method:
    should a later dp_accounting rename it, the library's own search runs
    instead, slower but with the same result.
    """

    def __init__(
        self, standard_deviation: float, sensitivities: np.ndarray, sampling_probs: np.ndarray, **kwargs: Any
    ) -> None:
        super().__init__(standard_deviation, sensitivities, sampling_probs, **kwargs)
        self._slopes = np.asarray(self.sensitivities, dtype=np.float64) / float(standard_deviation) ** 2
        single = self.privacy_loss_for_single_gaussian(np.zeros(len(self.sensitivities)), self.sensitivities)
        sign = -1.0 if self.adjacency_type == AdjacencyType.ADD else 1.0
        self._constants = np.log(self.sampling_probs) + sign * single

    def privacy_losses(self, x: np.ndarray) -> np.ndarray:
        """``privacy_loss`` at every point of ``x``."""
        if self.adjacency_type == AdjacencyType.ADD:
            return -_log_sum_exp_lines(np.asarray(x, dtype=np.float64), self._slopes, self._constants)
        return _log_sum_exp_lines(np.asarray(x, dtype=np.float64), -self._slopes, self._constants)

    def _inverse_privacy_losses_with_range(
        self, privacy_losses: np.ndarray, bounds: tuple[float, float], precision: float = 1e-6
    ) -> np.ndarray:
        losses = np.asarray(privacy_losses, dtype=np.float64)
        lower, upper = np.full(losses.shape, float(bounds[0])), np.full(losses.shape, float(bounds[1]))
        width = float(bounds[1]) - float(bounds[0])
        while width > precision:
            middle = (lower + upper) / 2
            above = losses < self.privacy_losses(middle)  # loss(middle) > l: the inverse lies above middle
            lower, upper = np.where(above, middle, lower), np.where(above, upper, middle)
            width /= 2
        return np.floor(upper / precision) * precision


def _connect_dots_pmf(loss: MixtureGaussianPrivacyLoss, interval: float) -> pld_pmf.PLDPmf:
    """The pessimistic connect-the-dots PMF of ``loss`` on the grid (dp_accounting's construction for a
    continuous monotone loss: δ(ε) at every grid ε between its connect-the-dots bounds)."""
    bounds = loss.connect_dots_bounds()
    upper = math.ceil(bounds.epsilon_upper / interval)
    lower = math.floor(bounds.epsilon_lower / interval)
    deltas = loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * interval)
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(interval, lower, upper, deltas)


def heter_poisson_step_pld(
    *,
    sampling_rate: float,
    neighbours: int,
    degree_bound: int,
    noise_multiplier: float,
    degree: int | None = None,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> pld_lib.PrivacyLossDistribution:
    """PLD of one step: P = Σ w_i N(s_i, σ²) vs Q = N(0, σ²), removal (P vs Q) and insertion (Q vs P).

    Shifts and weights from ``heter_poisson_mixture`` (units of C) at
    d = ``degree`` (default D = ``degree_bound``, the worst case);
    ``noise_multiplier`` σ is the noise std over C. Pessimistic, on the grid
    ``value_discretization_interval``; the weight of dropped components goes
    to infinite loss (H_ε(P‖Q) ≤ (1 − ρ)·H_ε(P_kept‖Q) + ρ, likewise for Q‖P).
    """
    bound = check_int(degree_bound, "degree_bound", minimum=1)
    d = bound if degree is None else check_int(degree, "degree", minimum=1)
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    interval = _check_interval(value_discretization_interval)
    shifts, weights, dropped = _kept_components(
        sampling_rate=sampling_rate, neighbours=neighbours, degree=d, degree_bound=bound
    )
    if shifts.max() > 0:
        pmfs = [
            _connect_dots_pmf(
                _VectorisedMixtureLoss(
                    sigma,
                    shifts,
                    weights,
                    pessimistic_estimate=True,
                    log_mass_truncation_bound=LOG_MASS_TRUNCATION_BOUND,
                    adjacency_type=adjacency,
                ),
                interval,
            )
            for adjacency in (AdjacencyType.REMOVE, AdjacencyType.ADD)
        ]
        step = pld_lib.PrivacyLossDistribution(pmfs[0], pmfs[1])
    else:
        step = pld_lib.identity(value_discretization_interval=interval)
    if dropped > 0:
        # Composing with "loss 0 w.p. 1, +∞ w.p. ρ" moves ρ to infinite loss (total mass ≥ 1: pessimistic).
        charge = pld_lib.PrivacyLossDistribution.create_from_rounded_probability({0: 1.0}, dropped, interval)
        step = step.compose(charge, tail_mass_truncation=0.0)
    return step


def _read_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The step's arguments and ``steps`` from ``params``, validated."""
    missing = [key for key in HETER_POISSON_PARAMS if key not in params]
    if missing:
        raise ValueError(f"HeterPoisson params lack {missing}; they need {list(HETER_POISSON_PARAMS)}")
    read = {
        "sampling_rate": _check_rate(params["sampling_rate"]),
        "neighbours": check_int(params["neighbours"], "neighbours", minimum=1),
        "degree_bound": check_int(params["degree_bound"], "degree_bound", minimum=1),
        "noise_multiplier": check_positive(params["noise_multiplier"], "noise_multiplier"),
        "steps": check_int(params["steps"], "steps", minimum=1),
    }
    return read


def check_heter_poisson_params(params: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``params`` (keys ``HETER_POISSON_PARAMS``) are valid: what a ledger record of kind
    "heter_poisson_gaussian" is checked with, without building its PLD."""
    _read_params(params)


def heter_poisson_pld_of_params(
    params: Mapping[str, Any], *, value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL
) -> pld_lib.PrivacyLossDistribution:
    """The T-step PLD of ``params`` (keys ``HETER_POISSON_PARAMS``): the step at d = D, self-composed."""
    read = _read_params(params)
    steps = read.pop("steps")
    one = heter_poisson_step_pld(value_discretization_interval=value_discretization_interval, **read)
    return one.self_compose(steps, tail_mass_truncation=_TAIL_MASS_TRUNCATION)


def heter_poisson_epsilon_of_params(
    params: Mapping[str, Any],
    *,
    delta: float,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """ε at ``delta`` of ``params`` alone under the PLD (max over removal and insertion)."""
    pld = heter_poisson_pld_of_params(params, value_discretization_interval=value_discretization_interval)
    return epsilon_pld([pld], delta=delta)


def calibrate_heter_poisson(
    params: Mapping[str, Any],
    *,
    target_epsilon: float,
    target_delta: float,
    tolerance: float = 0.005,
    other_plds: Sequence[pld_lib.PrivacyLossDistribution] = (),
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> float:
    """The smallest σ = noise std / C with ε(params at σ ⊕ ``other_plds``) ≤ ``target_epsilon`` at ``target_delta``.

    ``params``' "noise_multiplier" is replaced by each trial σ. Uses
    ``nodedp.accounting.calibration.calibrate``, so (1 − tolerance)·target ≤
    ε(σ) ≤ target under the very PLD that accounts the run. A PLD at small σ
    has a wide grid (losses ~ s²/σ²), so the search runs on σ / unit, the unit
    being σ calibrated under the wide-grid RDP (a fixed cost per σ; 5-20%
    above the answer in the spec's settings).
    """
    check_delta(target_delta, "target_delta")
    read = _read_params({**params, "noise_multiplier": 1.0})
    rdp_args = {key: read[key] for key in ("sampling_rate", "neighbours", "degree_bound", "steps")}
    unit = calibrate(
        target_epsilon=target_epsilon,
        tolerance=0.05,
        epsilon_of_sigma=lambda sigma: paper_epsilon(
            **rdp_args, noise_multiplier=sigma, delta=target_delta, degree=read["degree_bound"], grid="wide"
        ),
    )

    def epsilon_of_scale(scale: float) -> float:
        trial = {**params, "noise_multiplier": unit * scale}
        pld = heter_poisson_pld_of_params(trial, value_discretization_interval=value_discretization_interval)
        return epsilon_pld([pld, *other_plds], delta=target_delta)

    return unit * calibrate(target_epsilon=target_epsilon, epsilon_of_sigma=epsilon_of_scale, tolerance=tolerance)


@functools.cache
def _grid(grid: Grid) -> tuple[np.ndarray, np.ndarray, bool]:
    """(x, log integration weight, renormalise the ratio?) of an RDP grid, for E_{x~N(0,1)}[f(x)].

    "quantile": the public code's 10⁶ points uniform in t ∈ [1e-8, 1 − 1e-8],
    x = Φ⁻¹(t), weight dt, ratio renormalised to integrate to 1; "wide":
    4·10⁵ points uniform on [−40, 40], weight φ(x)dx.
    """
    if grid == "quantile":
        t = np.linspace(1e-8, 1 - 1e-8, 10**6)
        return ndtri(t), np.full(t.size, math.log(t[1] - t[0])), True
    x = np.linspace(-40.0, 40.0, 400_000)
    return x, -0.5 * x * x - 0.5 * math.log(2 * math.pi) + math.log(x[1] - x[0]), False


def _log_sum_exp(values: np.ndarray) -> float:
    """log Σ exp(values), the exponentials taken only over the stretch where values are within 60 of the largest
    (the rest add ≤ 1e-20 of the sum on a 10⁶-point grid)."""
    top = float(values.max())
    if not math.isfinite(top):
        return top
    counts = values > top - 60.0
    first, last = int(counts.argmax()), values.size - int(counts[::-1].argmax())
    return top + math.log(float(np.exp(values[first:last] - top).sum()))


def _paper_components(*, sampling_rate: float, neighbours: int, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """The public code's mixture at d: (shifts, log-weights normalised over all d + 2 components), those below
    −30 dropped, the rest not renormalised."""
    shifts, _ = heter_poisson_mixture(sampling_rate=sampling_rate, neighbours=neighbours, degree=degree)
    q, c = float(sampling_rate), _neighbour_rate(float(sampling_rate), neighbours, degree)
    with np.errstate(divide="ignore"):
        log_counts = binom.logpmf(np.arange(degree + 1), degree, c)
        log_w = np.concatenate(
            (
                [math.log1p(-q) + log_counts[0] if q < 1 else -math.inf, math.log(q)],
                (math.log1p(-q) if q < 1 else -math.inf) + log_counts[1:],
            )
        )
    log_w = log_w - _log_sum_exp(log_w)
    keep = log_w >= _PAPER_LOG_WEIGHT_CUTOFF
    return shifts[keep], log_w[keep]


class _RdpCurve:
    """The public code's one-step RDP of one mixture and σ on one grid, each order computed when first asked.

    On the quantile grid the weight is constant and log P/Q is non-decreasing in x (every shift is ≥ 0), so
    a·L(x) + c is monotone for every order: the stretch within 60 of its largest value (what ``_log_sum_exp``
    exponentiates) is found by bisection instead of a scan. The values are those of a full evaluation.
    """

    def __init__(
        self, *, sampling_rate: float, neighbours: int, degree: int, noise_multiplier: float, grid: Grid
    ) -> None:
        if grid not in ("wide", "quantile"):
            raise ValueError(f"grid must be 'wide' or 'quantile', got {grid!r}")
        sigma = check_positive(noise_multiplier, "noise_multiplier")
        shifts, log_w = _paper_components(sampling_rate=sampling_rate, neighbours=neighbours, degree=degree)
        x, log_dx, renormalise = _grid(grid)
        means = shifts / sigma  # log P/Q(x) = logsumexp_i(log w_i + μ_i x − μ_i²/2), x ~ N(0, 1), μ_i = s_i/σ
        log_ratio = _log_sum_exp_lines(x, means, log_w - 0.5 * means * means)
        if renormalise:
            log_ratio -= _log_sum_exp(log_ratio + log_dx)
        self._monotone = grid == "quantile" and bool(np.all(np.diff(log_ratio) >= 0))
        self._log_ratio, self._log_dx = log_ratio, log_dx
        self._cache: dict[tuple[float, int], float] = {}

    def _lse(self, coefficient: float) -> float:
        """log Σ_x exp(coefficient·L(x) + log dx), as ``_log_sum_exp`` computes it."""
        values = coefficient * self._log_ratio + self._log_dx
        if not self._monotone:
            return _log_sum_exp(values)
        rising = coefficient >= 0
        top = float(values[-1] if rising else values[0])
        if not math.isfinite(top):
            return top
        if rising:
            window = values[int(np.searchsorted(values, top - 60.0, side="right")) :]
        else:
            window = values[: values.size - int(np.searchsorted(values[::-1], top - 60.0, side="right"))]
        return top + math.log(float(np.exp(window - top).sum()))

    def divergence_at_least(self, order: float, points: int) -> float:
        """A lower bound on D_α(P‖Q): the sum over only the ``points`` largest terms (every term is positive);
        on a non-monotone grid, or once computed, the value itself."""
        if (order, 0) in self._cache or not self._monotone:
            return self.divergence(order, 0)
        values = order * self._log_ratio[-points:] + self._log_dx[-points:]
        return _log_sum_exp(values) / (order - 1)

    def divergence(self, order: float, direction: int) -> float:
        """D_α(P‖Q) (direction 0) or D_α(Q‖P) (direction 1) on the grid."""
        key = (order, direction)
        if key not in self._cache:
            coefficient = order if direction == 0 else 1 - order
            self._cache[key] = self._lse(coefficient) / (order - 1)
        return self._cache[key]

    def rdp(self, order: float) -> float:
        return max(self.divergence(order, 0), self.divergence(order, 1))


def heter_poisson_rdp(
    *,
    sampling_rate: float,
    neighbours: int,
    degree: int,
    noise_multiplier: float,
    orders: Sequence[float],
    grid: Grid = "wide",
) -> np.ndarray:
    """The public code's one-step RDP at each order: max(D_α(P‖Q), D_α(Q‖P)) by numerical integration.

    P, Q as ``heter_poisson_mixture`` at d = ``degree`` (units of C, σ =
    ``noise_multiplier``), components of normalised log-weight < −30 dropped
    as that code does. ``grid``: "quantile" (the public code's) or "wide"
    (x ∈ [−40, 40], where the integrand of every order here lies). Not an RDP
    bound of the full pair (the dropped components, of total weight
    ~e^{−30}, would dominate it): a reference, not the suite's accountant.
    """
    alphas = _check_orders(orders)
    curve = _RdpCurve(
        sampling_rate=sampling_rate, neighbours=neighbours, degree=degree, noise_multiplier=noise_multiplier, grid=grid
    )
    return np.array([curve.rdp(float(a)) for a in alphas])


def _check_orders(orders: Sequence[float]) -> np.ndarray:
    alphas = np.asarray(orders, dtype=np.float64)
    if alphas.ndim != 1 or alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 1):
        raise ValueError(f"orders must be a non-empty sequence of finite numbers > 1, got {orders!r}")
    return alphas


def _conversion(order: float, delta: float) -> float:
    """Balle et al.'s conversion term at one order: log((α − 1)/α) − (log δ + log α)/(α − 1)."""
    return math.log((order - 1) / order) - (math.log(delta) + math.log(order)) / (order - 1)


def _exceeds(curve: _RdpCurve, *, steps: int, delta: float, target: float, first: int) -> tuple[bool, int]:
    """Whether min over ``PAPER_ORDERS`` of T·RDP(α) + conversion(α) exceeds ``target`` (``_balle_epsilon`` > target,
    NaNs ignored), and the order index that settled it. Orders are tried from ``first`` outward; the answer is
    "no" at the first order within the target, and an order is passed over once one direction exceeds it."""
    n = len(PAPER_ORDERS)
    ranked = sorted(range(n), key=lambda i: (abs(i - first), i))
    for i in ranked:
        a = PAPER_ORDERS[i]
        conversion = _conversion(a, delta)
        if any(steps * curve.divergence_at_least(a, k) + conversion > target for k in _LOWER_BOUND_POINTS):
            continue
        if steps * curve.divergence(a, 0) + conversion > target:
            continue
        value = steps * curve.rdp(a) + conversion
        if value <= target:  # a NaN compares False: ignored, as nanmin ignores it
            return False, i
    return True, first


def _balle_epsilon(orders: Sequence[float], rdp: np.ndarray, delta: float) -> float:
    """ε = min_α [RDP(α) + log((α − 1)/α) − (log δ + log α)/(α − 1)] (Balle et al. 2020, Thm 21), as the public
    code converts (NaNs ignored)."""
    alphas = np.asarray(orders, dtype=np.float64)
    eps = rdp - (math.log(delta) + np.log(alphas)) / (alphas - 1) + np.log((alphas - 1) / alphas)
    return math.inf if np.all(np.isnan(eps)) else float(np.nanmin(eps))


def paper_worst_degree(*, sampling_rate: float, neighbours: int, degree_bound: int) -> int:
    """The public code's worst d: the first d in 1..D maximising the one-step RDP at α = 1.3, σ = 1 on its grid.

    One quantile-grid integration per d (~0.4 s each on one core): two hours
    for D = 18,000. ``paper_epsilon`` takes ``degree`` to skip it.
    """
    bound = check_int(degree_bound, "degree_bound", minimum=1)
    worst, best = 1, 0.0
    for d in range(1, bound + 1):
        rdp = heter_poisson_rdp(
            sampling_rate=sampling_rate,
            neighbours=neighbours,
            degree=d,
            noise_multiplier=_PAPER_SCAN_SIGMA,
            orders=(_PAPER_SCAN_ORDER,),
            grid="quantile",
        )[0]
        if rdp > best:
            worst, best = d, rdp
    return worst


def paper_epsilon(
    *,
    sampling_rate: float,
    neighbours: int,
    degree_bound: int,
    noise_multiplier: float,
    steps: int,
    delta: float,
    degree: int | None = None,
    grid: Grid = "quantile",
) -> float:
    """The public code's ε: T × one-step RDP on ``PAPER_ORDERS`` at the worst d, Balle et al.'s conversion.

    d = ``degree`` if given, else ``paper_worst_degree`` (its scan over
    1..``degree_bound``: slow for large D; the scan picks D wherever we
    checked, the RDP growing with d). ``grid="wide"`` gives what a correct
    integration of the same RDP spends.
    """
    check_delta(delta)
    t = check_int(steps, "steps", minimum=1)
    bound = check_int(degree_bound, "degree_bound", minimum=1)
    if degree is not None and check_int(degree, "degree", minimum=1) > bound:
        raise ValueError(f"degree must be <= degree_bound, got degree = {degree} > degree_bound = {bound}")
    d = (
        degree
        if degree is not None
        else paper_worst_degree(sampling_rate=sampling_rate, neighbours=neighbours, degree_bound=bound)
    )
    rdp = heter_poisson_rdp(
        sampling_rate=sampling_rate,
        neighbours=neighbours,
        degree=d,
        noise_multiplier=noise_multiplier,
        orders=PAPER_ORDERS,
        grid=grid,
    )
    return _balle_epsilon(PAPER_ORDERS, t * rdp, delta)


def paper_noise_multiplier(
    *,
    sampling_rate: float,
    neighbours: int,
    degree_bound: int,
    steps: int,
    target_epsilon: float,
    target_delta: float,
    degree: int | None = None,
    grid: Grid = "quantile",
) -> float:
    """The public code's σ for (``target_epsilon``, ``target_delta``): a reproduction of its own search.

    Bisection on σ ∈ [0.001, 100] until the bracket is ≤ 0.01 wide, returning
    its upper (within-budget) end, each ε by ``paper_epsilon`` at one d
    (``degree``, else the scan's, found once). This bisection reproduces the
    public code's search, σ included to its 0.01 granularity; the suite's own
    σ comes from ``calibrate_heter_poisson``.
    """
    check_delta(target_delta, "target_delta")
    check_positive(target_epsilon, "target_epsilon")
    bound = check_int(degree_bound, "degree_bound", minimum=1)
    d = (
        degree
        if degree is not None
        else paper_worst_degree(sampling_rate=sampling_rate, neighbours=neighbours, degree_bound=bound)
    )

    t = check_int(steps, "steps", minimum=1)
    best = len(PAPER_ORDERS) // 2

    def exceeds(sigma: float) -> bool:  # paper_epsilon(σ) > target, deciding at the first order that settles it
        nonlocal best
        curve = _RdpCurve(
            sampling_rate=sampling_rate, neighbours=neighbours, degree=d, noise_multiplier=sigma, grid=grid
        )
        answer, best = _exceeds(curve, steps=t, delta=target_delta, target=target_epsilon, first=best)
        return answer

    small, large = _PAPER_SIGMA_BRACKET
    if exceeds(large):
        raise ValueError(f"target_epsilon = {target_epsilon} is unreachable: σ = {large} spends more")
    while large - small > _PAPER_SIGMA_WIDTH:
        middle = (small + large) / 2
        if exceeds(middle):
            small = middle
        else:
            large = middle
    return large
