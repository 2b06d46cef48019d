"""Noise calibrated to a target (ε, δ), never the other way round.

The search runs over the same accountant that later accounts the run, so the
calibrated noise multiplier σ spends at most the target: ε(σ) ≤ target_ε.
It is the smallest such σ to within ``tolerance``: ε(σ) ≥ (1 − tolerance)·target_ε.
``calibrate`` is the search over any ε(σ); the other functions give it the ε
of a DpEvent or of a curve that is not one (DP-GNN's Theorem 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dp_accounting.dp_event import DpEvent

from nodedp.accounting._checks import check_delta
from nodedp.accounting.constants import ACCOUNTANTS
from nodedp.accounting.events import epsilon_of, subsampled_gaussian_event
from nodedp.accounting.hypergeometric import hypergeometric_gaussian_epsilon, hypergeometric_gaussian_rdp

# The σ search range: below it ε is effectively infinite for every mechanism
# here, above it the noise drowns any signal a model could learn from.
SIGMA_MIN = 1e-3
SIGMA_MAX = 1e6
_MAX_STEP = math.log(16.0)  # per bracketing step, in log σ
_MIN_STEP = math.log(1.1)
_MAX_EVALUATIONS = 200


def _log(epsilon: float) -> float:
    return math.log(epsilon) if epsilon > 0 else -math.inf


def calibrate_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    make_event: Callable[[float], DpEvent],
    accountant: str = "rdp",
    tolerance: float = 0.005,
) -> float:
    """The smallest noise multiplier σ with ε(make_event(σ)) ≤ ``target_epsilon`` at ``target_delta``."""
    check_delta(target_delta, "target_delta")
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"unknown accountant {accountant!r}; valid choices: {list(ACCOUNTANTS)}")
    return calibrate(
        target_epsilon=target_epsilon,
        epsilon_of_sigma=lambda sigma: epsilon_of(make_event(sigma), delta=target_delta, accountant=accountant),
        tolerance=tolerance,
    )


def calibrate(
    *,
    target_epsilon: float,
    epsilon_of_sigma: Callable[[float], float],
    tolerance: float = 0.005,
) -> float:
    """The smallest noise multiplier σ with ``epsilon_of_sigma(σ)`` ≤ ``target_epsilon``.

    Assumes ε decreases as σ grows. The result satisfies
    (1 − tolerance)·target ≤ ε(σ) ≤ target whenever ε is continuous in σ; where
    ε jumps across that window, the σ just above the jump is returned (still
    within budget). Works on log σ against log ε, which is close to linear, so
    a regula falsi lands in a few evaluations of ε.
    """
    if isinstance(target_epsilon, bool) or not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise ValueError(f"target_epsilon must be a finite number > 0, got {target_epsilon!r}")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")

    floor = target_epsilon * (1 - tolerance)
    aim = math.log(target_epsilon * (1 - tolerance / 2))  # the middle of the accepted window
    evaluations = 0

    def log_eps(u: float) -> tuple[float, float]:
        nonlocal evaluations
        evaluations += 1
        if evaluations > _MAX_EVALUATIONS:
            raise RuntimeError(f"calibration did not converge in {_MAX_EVALUATIONS} evaluations of ε")
        epsilon = float(epsilon_of_sigma(math.exp(u)))
        return epsilon, _log(epsilon)

    # Bracket: lo is over budget, hi within it. Points are (log σ, log ε).
    lo: tuple[float, float] | None = None
    hi: tuple[float, float] | None = None
    previous: tuple[float, float] | None = None
    u = 0.0
    while True:
        epsilon, value = log_eps(u)
        if floor <= epsilon <= target_epsilon:
            return math.exp(u)
        if epsilon > target_epsilon:
            lo = (u, value)
            if hi is not None:
                break
            if u >= math.log(SIGMA_MAX):
                raise ValueError(
                    f"target_epsilon = {target_epsilon} is unreachable: even noise multiplier {SIGMA_MAX:g} "
                    f"spends ε = {epsilon:.6g} (the mechanism's ε has a floor)"
                )
            direction = 1.0
        else:
            hi = (u, value)
            if lo is not None:
                break
            if u <= math.log(SIGMA_MIN):
                raise ValueError(
                    f"target_epsilon = {target_epsilon} does not constrain the noise: noise multiplier "
                    f"{SIGMA_MIN:g} already spends only ε = {epsilon:.6g}"
                )
            direction = -1.0
        # Next guess: the log-log secant through the last two points, else slope −1 (ε ∝ 1/σ).
        slope = -1.0
        if previous is not None and math.isfinite(previous[1]) and math.isfinite(value) and previous[0] != u:
            secant = (value - previous[1]) / (u - previous[0])
            if secant < 0:
                slope = secant
        step = (aim - value) / slope if math.isfinite(value) else direction * _MAX_STEP
        step = direction * min(max(abs(step), _MIN_STEP), _MAX_STEP)
        previous = (u, value)
        u = min(max(u + step, math.log(SIGMA_MIN)), math.log(SIGMA_MAX))

    # Illinois regula falsi on f(u) = log ε(e^u) − aim, keeping the bracket.
    (u_lo, f_lo), (u_hi, f_hi) = (lo[0], lo[1] - aim), (hi[0], hi[1] - aim)
    side = 0
    while u_hi - u_lo > 1e-12:
        if math.isfinite(f_lo) and math.isfinite(f_hi):
            u = u_lo - f_lo * (u_hi - u_lo) / (f_hi - f_lo)
        else:
            u = (u_lo + u_hi) / 2
        if not u_lo < u < u_hi:
            u = (u_lo + u_hi) / 2
        epsilon, value = log_eps(u)
        if floor <= epsilon <= target_epsilon:
            return math.exp(u)
        if epsilon > target_epsilon:
            u_lo, f_lo = u, value - aim
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            u_hi, f_hi = u, value - aim
            if side == 1:
                f_lo /= 2
            side = 1
    return math.exp(u_hi)


def calibrate_dpsgd(
    *,
    target_epsilon: float,
    target_delta: float,
    sampling_rate: float,
    steps: int,
    accountant: str = "rdp",
) -> float:
    """Noise multiplier for ``steps`` rounds of Poisson-sampled DP-SGD at rate ``sampling_rate``."""
    # Validates sampling_rate and steps before the search starts.
    subsampled_gaussian_event(noise_multiplier=1.0, sampling_rate=sampling_rate, steps=steps)
    return calibrate_noise_multiplier(
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        make_event=lambda sigma: subsampled_gaussian_event(
            noise_multiplier=sigma, sampling_rate=sampling_rate, steps=steps
        ),
        accountant=accountant,
    )


def calibrate_dp_gnn(
    *,
    target_epsilon: float,
    target_delta: float,
    num_examples: int,
    max_occurrences: int,
    batch_size: int,
    steps: int,
    tolerance: float = 0.005,
) -> float:
    """σ/C for ``steps`` DP-GNN steps (Theorem 1): noise std on the gradient sum over the clip norm."""
    check_delta(target_delta, "target_delta")
    n, d, m = num_examples, max_occurrences, batch_size
    # Validates the schedule before the search starts.
    hypergeometric_gaussian_rdp(orders=(2.0,), noise_multiplier=1.0, num_examples=n, max_occurrences=d, batch_size=m)

    def epsilon_of_sigma(sigma: float) -> float:
        return hypergeometric_gaussian_epsilon(
            noise_multiplier=sigma, steps=steps, delta=target_delta, num_examples=n, max_occurrences=d, batch_size=m
        )

    return calibrate(target_epsilon=target_epsilon, epsilon_of_sigma=epsilon_of_sigma, tolerance=tolerance)


def calibrate_ledger(*, target_epsilon: float, ledger_of: Callable[[float], Any], tolerance: float = 0.005) -> float:
    """The smallest σ whose ledger ``ledger_of(σ)`` composes to ≤ ``target_epsilon`` under its own accountant.

    Under "pld" a trial σ far below the answer builds wide privacy-loss grids
    (seconds each), so the search first finds σ under "rdp" (milliseconds, an
    upper bound within ~15% of the PLD answer) and then searches σ/that unit
    under "pld": a few PLD evaluations. The result is checked by the very
    composition that accounts the run, so it is within budget either way.
    """
    if ledger_of(1.0).accountant != "pld":
        return calibrate(
            target_epsilon=target_epsilon,
            tolerance=tolerance,
            epsilon_of_sigma=lambda sigma: ledger_of(sigma).composed()[0],
        )
    unit = calibrate(
        target_epsilon=target_epsilon,
        tolerance=0.05,
        epsilon_of_sigma=lambda sigma: replace(ledger_of(sigma), accountant="rdp").composed()[0],
    )
    return unit * calibrate(
        target_epsilon=target_epsilon,
        tolerance=tolerance,
        epsilon_of_sigma=lambda scale: ledger_of(unit * scale).composed()[0],
    )
