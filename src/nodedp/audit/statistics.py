"""Statistics of an empirical privacy audit: from canary scores to lower bounds on ε.

``epsilon_one_run`` (the one-run bound of Steinke, Nasr & Jagielski 2023), ``clopper_pearson_epsilon`` (the
threshold bound over i.i.d. trials), ``attack_auc`` and ``tpr_at_fpr``; numpy/scipy only.
Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

__all__ = [
    "CANARY_COUNTS",
    "OneRunBound",
    "ThresholdBound",
    "attack_auc",
    "best_canary_count",
    "clopper_pearson_epsilon",
    "default_guess_grid",
    "epsilon_from_counts",
    "epsilon_one_run",
    "one_run_p_value",
    "tpr_at_fpr",
]

# Default grid (see ``default_guess_grid``): total guesses r run down from m by
# factors of √2 to about _MIN_GUESSES, each split between "in" and "out" guesses.
_MIN_GUESSES = 10
_SPLITS = (1.0, 0.75, 0.5, 0.25, 0.0)  # share of the r guesses that say "in"
_BISECTION_TOL = 1e-9


@dataclass(frozen=True)
class OneRunBound:
    """The result of :func:`epsilon_one_run`.

    ``epsilon`` is the lower bound (≥ 0) at the grid point that gave the largest one;
    ``k_plus``/``k_minus`` are that point's numbers of "in"/"out" guesses, ``guesses``
    their sum r and ``correct`` the number v of them that were right. ``grid_size`` is
    the number of grid points the confidence was split over, so every point was
    tested at level ``(1 − confidence) / grid_size``.
    """

    epsilon: float
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    confidence: float
    delta: float
    m: int
    grid_size: int


@dataclass(frozen=True)
class ThresholdBound:
    """The result of :func:`clopper_pearson_epsilon`.

    ``epsilon`` is the lower bound (≥ 0) reached at ``threshold`` (rule: score ≥
    threshold means "in"); ``tpr``/``fpr`` are that rule's empirical rates and
    ``tpr_lower``/``fpr_upper`` their Clopper–Pearson bounds. ``side`` says which
    inequality gave the bound: "positive" (TPR vs FPR) or "negative" (1 − FPR vs 1 − TPR).
    ``n_thresholds`` is the number of thresholds the confidence was split over.
    """

    epsilon: float
    threshold: float
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    side: str
    confidence: float
    delta: float
    n_thresholds: int


# --------------------------------------------------------------------------- checks


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float | np.number) or not (0 <= delta < 1):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    return float(delta)


def _check_open_unit(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not (0 < value < 1):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def _check_scores(scores: Any, included: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scores as a finite 1-D float array and inclusion as a bool array of the same length."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite (no NaN or inf)")
    raw = np.asarray(included)
    if raw.ndim != 1:
        raise ValueError(f"included must be one-dimensional, got shape {raw.shape}")
    if raw.dtype != bool:
        if raw.size and not (np.issubdtype(raw.dtype, np.number) and np.all((raw == 0) | (raw == 1))):
            raise ValueError("included must be a boolean array (or 0/1 values)")
        raw = raw.astype(bool)
    if s.shape != raw.shape:
        raise ValueError(f"scores and included differ in length: {s.size} != {raw.size}")
    n_in = int(raw.sum())
    if n_in == 0:
        raise ValueError("no canary is included: an audit needs canaries both in and out")
    if n_in == raw.size:
        raise ValueError("every canary is included: an audit needs canaries both in and out")
    return s, raw


# --------------------------------------------------------------- one-run: one (r, v)


def _binomial_tail_quantile(correct: int, guesses: int, beta: float) -> float:
    """The largest q with P[Binomial(r, q) ≥ v] ≤ β (v ≥ 1): P[Bin(r, q) ≥ v] is the Beta(v, r − v + 1) cdf at q."""
    return float(stats.beta.ppf(beta, correct, guesses - correct + 1))


def _pure_epsilon(correct: int, guesses: int, beta: float) -> float:
    """The δ = 0 bound: the largest ε with P[Binomial(r, e^ε/(1 + e^ε)) ≥ v] ≤ β, floored at 0."""
    if correct == 0:
        return 0.0
    q = _binomial_tail_quantile(correct, guesses, beta)
    if not q > 0.5:
        return 0.0
    return float(special.logit(q)) if q < 1 else math.inf


def _p_value(correct: int, guesses: int, m: int, epsilon: float, delta: float) -> float:
    q = float(special.expit(epsilon))
    tail = float(stats.binom.sf(correct - 1, guesses, q))  # f(v) = P[Bin(r, q) ≥ v]
    if delta == 0 or correct == 0:
        return min(tail, 1.0)
    # f(v − i) − f(v) = P[v − i ≤ Bin(r, q) ≤ v − 1], for i = 1..v, as a running sum of the pmf.
    below = stats.binom.pmf(np.arange(correct - 1, -1, -1), guesses, q)
    alpha = float(np.max(np.cumsum(below) / np.arange(1, correct + 1)))
    return min(tail + 2.0 * m * delta * alpha, 1.0)


def one_run_p_value(correct: int, guesses: int, *, m: int, epsilon: float, delta: float) -> float:
    """Upper bound on P[≥ ``correct`` of ``guesses`` guesses are right] under (ε, δ)-DP, m canaries.

    With f(k) = P[Binomial(r, q) ≥ k], q = e^ε/(1 + e^ε), this is
    ``min(1, f(v) + 2·m·δ·max_{1≤i≤v} (f(v − i) − f(v))/i)``: the main theorem of
    Steinke, Nasr & Jagielski (2023) (Theorem 5.2, in the form of Corollary 5.4 of
    arXiv:2305.08846v1), computed as in their Appendix D. With δ = 0 it is f(v).
    """
    v, r, m = _check_count(correct, "correct"), _check_count(guesses, "guesses"), _check_count(m, "m")
    if not v <= r <= m:
        raise ValueError(f"need correct <= guesses <= m, got {v}, {r}, {m}")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return _p_value(v, r, m, float(epsilon), _check_delta(delta))


def epsilon_from_counts(correct: int, guesses: int, *, delta: float, beta: float, m: int | None = None) -> float:
    """The one-run lower bound on ε from v = ``correct`` right guesses out of r = ``guesses``.

    Returns an ε ≥ 0 with ``one_run_p_value(v, r, m=m, epsilon=ε, delta=δ) ≤ beta``
    (or 0 when even ε = 0 is not rejected): the mechanism is not (ε, δ)-DP, at
    confidence 1 − ``beta``. The test is valid because the claim "(ε₀, δ)-DP"
    implies (ε, δ)-DP for every ε ≥ ε₀, so the p-value of any ε ≥ ε₀ bounds the
    chance of the observed count; any ε whose p-value is ≤ β is thus a valid bound.

    ``m`` is the total number of canaries (abstentions included; each in with
    probability 1/2); it is required when δ > 0 because the δ term is 2·m·δ·α.

    With δ = 0 the bound is exact: P[Binomial(r, q) ≥ v] is increasing in q and
    equals the Beta(v, r − v + 1) cdf at q, so ε = logit(Beta⁻¹(β; v, r − v + 1)).
    With δ > 0 the p-value is not monotone in ε in general, but it is at least the
    δ = 0 one, so every rejected ε lies below the δ = 0 bound; the search bisects
    [0, ε_{δ=0}] keeping p(lo) ≤ β, as the paper's Appendix D does, and returns lo.
    """
    v, r = _check_count(correct, "correct"), _check_count(guesses, "guesses")
    if v > r:
        raise ValueError(f"correct ({v}) cannot exceed guesses ({r})")
    delta = _check_delta(delta)
    beta = _check_open_unit(beta, "beta")
    if delta > 0:
        if m is None:
            raise ValueError("m (the number of canaries) is needed when delta > 0")
        m = _check_count(m, "m")
        if m < r:
            raise ValueError(f"m ({m}) cannot be smaller than guesses ({r})")
    return _epsilon_from_counts(v, r, delta=delta, beta=beta, m=0 if m is None else int(m))


def _epsilon_from_counts(v: int, r: int, *, delta: float, beta: float, m: int, pure: float | None = None) -> float:
    upper = _pure_epsilon(v, r, beta) if pure is None else pure
    if delta == 0 or upper == 0:
        return upper
    if not math.isfinite(upper):  # q rounds to 1 only for astronomically many guesses: search a finite bracket
        upper = 50.0
    if _p_value(v, r, m, 0.0, delta) > beta:
        return 0.0
    lo, hi = 0.0, upper
    if _p_value(v, r, m, hi, delta) <= beta:
        return hi
    while hi - lo > _BISECTION_TOL * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if _p_value(v, r, m, mid, delta) <= beta:
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------- one-run: the audit


def default_guess_grid(m: int) -> list[tuple[int, int]]:
    """The default (k+, k−) grid of :func:`epsilon_one_run` for m canaries.

    Total guesses r = round(m / √2^j), j = 0, 1, …, while r ≥ min(m, 10) (so about
    2·log₂(m/10) values, m itself first); each r is split as k+ = round(s·r),
    k− = r − k+ for s in (1, 3/4, 1/2, 1/4, 0). Duplicates are dropped.
    """
    m = _check_count(m, "m")
    if m < 1:
        raise ValueError("m must be >= 1")
    totals: list[int] = []
    j = 0
    while True:
        r = round(m / math.sqrt(2) ** j)
        if r < min(m, _MIN_GUESSES) or r < 1:
            break
        if r not in totals:
            totals.append(r)
        j += 1
    grid: list[tuple[int, int]] = []
    for r in totals:
        for share in _SPLITS:
            k_plus = round(share * r)
            point = (k_plus, r - k_plus)
            if point not in grid:
                grid.append(point)
    return grid


def _check_grid(guesses: Iterable[tuple[int, int]], m: int) -> list[tuple[int, int]]:
    grid: list[tuple[int, int]] = []
    for point in guesses:
        try:
            k_plus, k_minus = point
        except (TypeError, ValueError):
            raise ValueError(f"each grid point must be a pair (k_plus, k_minus), got {point!r}") from None
        k_plus, k_minus = _check_count(k_plus, "k_plus"), _check_count(k_minus, "k_minus")
        if k_plus + k_minus < 1 or k_plus + k_minus > m:
            raise ValueError(f"need 1 <= k_plus + k_minus <= m = {m}, got ({k_plus}, {k_minus})")
        grid.append((k_plus, k_minus))
    if not grid:
        raise ValueError("guesses must hold at least one (k_plus, k_minus) pair")
    return grid


def epsilon_one_run(
    scores: Any,
    included: Any,
    *,
    delta: float,
    confidence: float = 0.95,
    guesses: Iterable[tuple[int, int]] | None = None,
    seed: int = 0,
) -> OneRunBound:
    """Lower bound on ε at ``delta`` from one training run (Steinke, Nasr & Jagielski 2023).

    ``scores[i]`` is canary i's score (higher = more likely included) and
    ``included[i]`` its true inclusion, drawn independently with probability 1/2 —
    the theorem needs that design; m = len(scores) counts every canary.

    For a grid point (k+, k−) the auditor guesses "in" for the k+ highest scores,
    "out" for the k− lowest and abstains on the rest (k+ + k− ≤ m, so the two sets
    never overlap). Ties in the scores are broken by a random permutation drawn
    from ``seed`` — a choice independent of the inclusion bits, as the theorem
    requires (the canaries' order might not be). With r = k+ + k− guesses and v of
    them right, :func:`epsilon_from_counts` gives the bound of that point.

    Confidence over the grid: the grid is fixed before the scores are seen
    (``guesses``, or :func:`default_guess_grid` when None), and every one of its G
    points is tested at level β = (1 − confidence)/G (Bonferroni). By the union
    bound, all G bounds hold together with probability ≥ ``confidence``, so their
    maximum — the returned ``epsilon`` — is a valid lower bound at ``confidence``
    even though the best point was picked after seeing the data. When no point
    gives a positive bound, ``epsilon`` is 0 and the first grid point is reported.
    """
    s, inc = _check_scores(scores, included)
    delta = _check_delta(delta)
    confidence = _check_open_unit(confidence, "confidence")
    m = s.size
    grid = default_guess_grid(m) if guesses is None else _check_grid(guesses, m)
    beta = (1.0 - confidence) / len(grid)

    # Order from highest to lowest score, ties in a random order independent of ``included``.
    tie_break = np.random.default_rng(seed).permutation(m)
    order = np.lexsort((tie_break, -s))
    ranked_in = inc[order]
    hits_top = np.concatenate(([0], np.cumsum(ranked_in)))  # included among the k highest
    misses_bottom = np.concatenate(([0], np.cumsum(~ranked_in[::-1])))  # excluded among the k lowest

    points = []
    for k_plus, k_minus in grid:
        v = int(hits_top[k_plus] + misses_bottom[k_minus])
        r = k_plus + k_minus
        points.append((_pure_epsilon(v, r, beta), k_plus, k_minus, r, v))

    # Branch and bound: the δ = 0 bound caps the δ > 0 one, so visit points by it.
    best: tuple[float, int, int, int, int] = (0.0, *points[0][1:])
    for pure, k_plus, k_minus, r, v in sorted(points, key=lambda p: -p[0]):
        if pure <= best[0]:
            break
        eps = _epsilon_from_counts(v, r, delta=delta, beta=beta, m=m, pure=pure)
        if eps > best[0]:
            best = (eps, k_plus, k_minus, r, v)
    eps, k_plus, k_minus, r, v = best
    return OneRunBound(
        epsilon=float(eps),
        k_plus=k_plus,
        k_minus=k_minus,
        guesses=r,
        correct=v,
        confidence=confidence,
        delta=delta,
        m=m,
        grid_size=len(grid),
    )


# -------------------------------------------------------------- Clopper–Pearson bound


CANARY_COUNTS = (50, 100, 200, 500, 1000, 2000, 5000)


def best_canary_count(delta: float, *, confidence: float = 0.95, choices: Iterable[int] = CANARY_COUNTS) -> int:
    """The canary count m of ``choices`` whose one-run bound is highest for a perfect attack at ``delta``: the
    ceiling of any audit with m canaries, which the 2·m·δ term lowers as m grows (at δ = 1e-4 it peaks near
    m = 100, at 1e-5 near 1000). It reads δ and the confidence only, never scores: a choice made before the
    audit, so it costs the bound nothing."""
    delta = _check_delta(delta)
    best, best_bound = None, -1.0
    for m in choices:
        m = _check_count(m, "canary count")
        included = np.arange(m) % 2 == 0  # half in, perfectly separated by the scores
        bound = epsilon_one_run(included.astype(float), included, delta=delta, confidence=confidence).epsilon
        if bound > best_bound:
            best, best_bound = m, bound
    if best is None:
        raise ValueError("choices must hold at least one canary count")
    return best


def _threshold_counts(s: np.ndarray, inc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct score t as a threshold (score ≥ t says "in"), with its true and false positive counts."""
    thresholds = np.unique(s)  # ascending
    in_sorted, out_sorted = np.sort(s[inc]), np.sort(s[~inc])
    tp = in_sorted.size - np.searchsorted(in_sorted, thresholds, side="left")
    fp = out_sorted.size - np.searchsorted(out_sorted, thresholds, side="left")
    return thresholds, tp, fp


def clopper_pearson_epsilon(scores: Any, included: Any, *, delta: float, confidence: float = 0.95) -> ThresholdBound:
    """Lower bound on ε from the best score threshold with Clopper–Pearson intervals.

    Each distinct score t defines the test "score ≥ t means in". (ε, δ)-DP requires
    TPR ≤ e^ε·FPR + δ and, for the complementary event, 1 − FPR ≤ e^ε·(1 − TPR) + δ,
    so ε ≥ log((TPR − δ)/FPR) and ε ≥ log((1 − FPR − δ)/(1 − TPR)). Both are
    evaluated with a one-sided lower Clopper–Pearson bound on TPR and an upper one
    on FPR (scipy.stats.beta quantiles), which makes each side conservative.

    Confidence: with T distinct thresholds, each of the 2·T one-sided intervals has
    level (1 − confidence)/(2T) (Bonferroni over the thresholds and the two rates),
    so all hold together with probability ≥ ``confidence`` and the maximum over
    thresholds and sides is a valid bound — *if* the canaries' outcomes are
    independent trials (e.g. one canary per training run). In a single run the
    canaries' scores share one model and are not independent; use
    :func:`epsilon_one_run` for a bound that stays valid there.
    """
    s, inc = _check_scores(scores, included)
    delta = _check_delta(delta)
    confidence = _check_open_unit(confidence, "confidence")
    thresholds, tp, fp = _threshold_counts(s, inc)
    n_in, n_out = int(inc.sum()), int((~inc).sum())
    level = (1.0 - confidence) / (2 * thresholds.size)

    # One-sided Clopper–Pearson: lower bound of k/n is Beta(k, n − k + 1) quantile `level` (0 when k = 0),
    # upper bound is Beta(k + 1, n − k) quantile 1 − level (1 when k = n).
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr_lo = np.where(tp > 0, stats.beta.ppf(level, np.maximum(tp, 1), n_in - tp + 1), 0.0)
        fpr_hi = np.where(fp < n_out, stats.beta.ppf(1 - level, fp + 1, np.maximum(n_out - fp, 1)), 1.0)
        positive = np.log(np.maximum(tpr_lo - delta, 0.0)) - np.log(fpr_hi)
        negative = np.log(np.maximum(1.0 - fpr_hi - delta, 0.0)) - np.log(1.0 - tpr_lo)
    positive = np.where(np.isnan(positive), -np.inf, positive)
    negative = np.where(np.isnan(negative), -np.inf, negative)

    best_pos, best_neg = int(np.argmax(positive)), int(np.argmax(negative))
    if positive[best_pos] >= negative[best_neg]:
        index, side, value = best_pos, "positive", positive[best_pos]
    else:
        index, side, value = best_neg, "negative", negative[best_neg]
    return ThresholdBound(
        epsilon=float(max(value, 0.0)),
        threshold=float(thresholds[index]),
        tpr=float(tp[index] / n_in),
        fpr=float(fp[index] / n_out),
        tpr_lower=float(tpr_lo[index]),
        fpr_upper=float(fpr_hi[index]),
        side=side,
        confidence=confidence,
        delta=delta,
        n_thresholds=int(thresholds.size),
    )


# ------------------------------------------------------------------ attack metrics


def attack_auc(scores: Any, included: Any) -> float:
    """Area under the ROC curve: P[score of an included canary > score of an excluded one], ties ½.

    Computed from average ranks (the Mann–Whitney U statistic over n_in·n_out).
    """
    s, inc = _check_scores(scores, included)
    ranks = stats.rankdata(s)  # ties get their average rank, i.e. count ½ per tied pair
    n_in, n_out = int(inc.sum()), int((~inc).sum())
    u = float(ranks[inc].sum()) - n_in * (n_in + 1) / 2.0
    return u / (n_in * n_out)


def tpr_at_fpr(scores: Any, included: Any, fpr: float = 0.01) -> float:
    """The largest empirical TPR of a rule "score ≥ t means in" whose empirical FPR is ≤ ``fpr``.

    Thresholds run over the distinct scores (and +∞, where TPR = FPR = 0); no
    interpolation between them, so the value is attained by an actual threshold.
    """
    s, inc = _check_scores(scores, included)
    if isinstance(fpr, bool) or not isinstance(fpr, int | float | np.number) or not (0 <= fpr <= 1):
        raise ValueError(f"fpr must be a number in [0, 1], got {fpr!r}")
    _, tp, fp = _threshold_counts(s, inc)
    n_in, n_out = int(inc.sum()), int((~inc).sum())
    allowed = fp <= fpr * n_out + 1e-12 * n_out
    return float(tp[allowed].max() / n_in) if np.any(allowed) else 0.0
