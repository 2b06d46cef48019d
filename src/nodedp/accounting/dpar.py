"""Privacy cost of DPAR's DP-APPR (Algorithms 1 and 3, Theorems 1 and 3) and of its node sampling.

EM (Algorithm 1) releases M·K Gumbel top-K selections of clipped APPR scores (an RDP curve of
``nodedp.accounting.gumbel``) and, for option II, Laplace values; GM (Algorithm 3) releases M Gaussian rows at
ℓ2 sensitivity √2·C1. A run's target (ε, δ) is for the whole graph while its mechanisms run on a node sample
of rate q' (``inner_budget``); a share goes to DP-APPR (``dp_appr_plan``), the rest to DP-SGD. The
sensitivity arguments and the budget split are in docs/design/accounting.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.optimize import brentq

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting._dp_private import poisson_subsampled_gaussian_rdp
from nodedp.accounting.calibration import calibrate, calibrate_noise_multiplier
from nodedp.accounting.constants import EM_VALUE_SHARE
from nodedp.accounting.gumbel import gumbel_topk_rdp
from nodedp.accounting.ledger import Ledger, MechanismRecord, amplify_epsilon
from nodedp.accounting.orders import RDP_ORDERS

EM_OPTIONS: tuple[str, ...] = ("em0", "em1")


def check_em_option(option: str, epsilon_value: float | None) -> None:
    """Refuse an unknown EM option, an em1 without its ε2, or an em0 given one."""
    if option not in EM_OPTIONS:
        raise ValueError(f"unknown DP-APPR-EM option {option!r}; valid choices: {list(EM_OPTIONS)}")
    if option == "em1":
        check_positive(epsilon_value, "epsilon_value (the per-row Laplace budget ε2 of option em1)")  # type: ignore[arg-type]
    elif epsilon_value is not None:
        raise ValueError(f"option 'em0' releases no values, so it takes no epsilon_value; got {epsilon_value!r}")


def advanced_composition_epsilon(*, epsilon: float, k: int, delta: float) -> float:
    """ε of k adaptively composed ε-DP mechanisms at extra δ (Kairouz, Oh & Viswanath 2015, Thm 3.5):

    min{ k·ε,  k·ε·(e^ε − 1)/(e^ε + 1) + ε·√(2k·ln(1/δ)) }.

    For (ε, δ₀)-DP parts the composition is (this, 1 − (1 − δ₀)^k·(1 − δ))-DP.
    """
    check_positive(epsilon, "epsilon")
    check_int(k, "k", minimum=1)
    check_delta(delta)
    advanced = k * epsilon * math.tanh(epsilon / 2) + epsilon * math.sqrt(2 * k * math.log(1 / delta))
    return min(k * epsilon, advanced)


def gumbel_topk_epsilon(*, epsilon: float, k: int, delta: float) -> float:
    """DPAR Corollary 1: one-shot Gumbel(Δ(u)/ε) top-k is (ε', δ)-DP with

    ε' = 2·min{ k·ε,  k·ε·(e^{2ε} − 1)/(e^{2ε} + 1) + ε·√(2k·ln(1/δ)) },

    i.e. the advanced composition of k peeling steps of 2ε-DP each (scores may
    rise and fall). The public code computes the same figure: its noise is
    Gumbel(2·C2/ε_code) and its formula has ε_code = 2ε and no factor 2.
    """
    check_positive(epsilon, "epsilon")
    return advanced_composition_epsilon(epsilon=2 * epsilon, k=k, delta=delta)


def paper_composition_epsilon(*, epsilon_row: float, m: int, delta_total: float) -> float:
    """The ε_g that DPAR's Theorems 1 and 3 claim for M rows of (ε_row, δ_total/2M)-DP each.

    Solves ε_row = ε_g / (2·√(M·ln(e + ε_g/δ_total))) for ε_g (δ_total = 2Mδ in
    the paper). Recorded beside our bound as the paper's claim; Kairouz et al.
    state this corollary for ε_g ≤ 0.9, and DPAR uses it far above.
    """
    check_positive(epsilon_row, "epsilon_row")
    check_int(m, "m", minimum=1)
    check_delta(delta_total, "delta_total")

    def gap(epsilon_g: float) -> float:
        return epsilon_g / (2 * math.sqrt(m * math.log(math.e + epsilon_g / delta_total))) - epsilon_row

    # gap rises in ε_g from −ε_row; at ε_g = 2·ε_row·√M·√ln(e + …) it is ≥ 0, so double until it is.
    high = 2 * epsilon_row * math.sqrt(m)
    while gap(high) < 0:
        high *= 2
    return float(brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-12))


def gm_sensitivity(*, clip: float) -> float:
    """ℓ2 sensitivity of one non-negative, ℓ2-clipped (≤ C1) APPR row: √2·C1 (docs/design/accounting.md)."""
    check_positive(clip, "clip")
    return math.sqrt(2) * clip


def dp_appr_gm_event(*, noise_multiplier: float, m: int) -> dp_event.DpEvent:
    """Algorithm 3 on M rows: M Gaussian mechanisms, std = noise_multiplier × √2·C1 each (Theorem 3)."""
    check_positive(noise_multiplier, "noise_multiplier")
    check_int(m, "m", minimum=1)
    return dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(float(noise_multiplier)), int(m))


def dp_appr_gm_record(*, noise_multiplier: float, k: int, m: int, clip: float) -> MechanismRecord:
    """The ledger record of DP-APPR-GM; top-K of the noisy rows is post-processing."""
    check_int(k, "k", minimum=1)
    return MechanismRecord(
        name="dp_appr_gm",
        kind="gaussian",
        touches=("edges",),
        params={
            "mechanism": "dp_appr_gm",
            "noise_multiplier": noise_multiplier,
            "noise_std": noise_multiplier * gm_sensitivity(clip=clip),
            "k": k,
            "m": m,
            "clip": clip,
        },
        sensitivity=gm_sensitivity(clip=clip),
        sensitivity_reason=(
            "each of the M released rows is a non-negative APPR vector ℓ2-clipped to C1; any two such rows "
            "differ by at most √2·C1 in ℓ2, and one node can change all M rows (M Gaussian mechanisms)"
        ),
        dp_event=dp_appr_gm_event(noise_multiplier=noise_multiplier, m=m),
    )


def dp_appr_em_records(
    *, option: str, epsilon: float, k: int, m: int, clip: float, epsilon_value: float | None = None
) -> tuple[MechanismRecord, ...]:
    """Ledger records of DP-APPR-EM: the Gumbel top-K selection, and for em1 the Laplace values.

    Selection: M·K peeling steps, each 2ε-DP and ε²/2-zCDP, recorded as the RDP
    curve of kind "gumbel_topk" (``nodedp.accounting.gumbel``). Values (em1):
    M·K Laplace mechanisms of scale K·C2/ε2 on scores of sensitivity C2 each,
    i.e. noise multiplier K/ε2 (ε2 per row), as a DpEvent.
    """
    check_em_option(option, epsilon_value)
    check_positive(epsilon, "epsilon")
    check_positive(clip, "clip")
    check_int(k, "k", minimum=1)
    check_int(m, "m", minimum=1)
    selection = MechanismRecord(
        name="dp_appr_em_select",
        kind="gumbel_topk",
        touches=("edges",),
        params={
            "option": option,
            "epsilon": epsilon,
            "k": k,
            "m": m,
            "clip": clip,
            "gumbel_scale": clip / epsilon,
            "selections": m * k,
        },
        sensitivity=float(clip),
        sensitivity_reason=(
            "APPR entries clipped to [0, C2], so every score of every row moves by at most C2 (up or down) "
            "and one node can change all M rows: M·K peeling exponential mechanisms, each 2ε-DP and "
            "2ε-bounded-range (ε²/2-zCDP)"
        ),
        dp_event=None,
    )
    if option == "em0":
        return (selection,)
    noise_multiplier = k / epsilon_value  # type: ignore[operator]
    values = MechanismRecord(
        name="dp_appr_em_values",
        kind="laplace",
        touches=("edges",),
        params={
            "mechanism": "dp_appr_em_values",
            "epsilon_value": epsilon_value,
            "k": k,
            "m": m,
            "clip": clip,
            "laplace_scale": noise_multiplier * clip,
            "queries": m * k,
        },
        sensitivity=float(clip),
        sensitivity_reason=(
            "each of the K selected values of each of the M rows is a clipped score in [0, C2], moving by at "
            "most C2: M·K one-dimensional Laplace mechanisms"
        ),
        dp_event=dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(float(noise_multiplier)), int(m * k)),
    )
    return selection, values


def inner_budget(*, target_epsilon: float, target_delta: float, sample_rate: float) -> tuple[float, float]:
    """(ε_in, δ_in) on a node sample of rate q' whose ``amplified`` value is exactly (ε, δ).

    ε_in = ln(1 + (e^ε − 1)/q'), δ_in = δ/q' (must stay below 1).
    """
    check_positive(target_epsilon, "target_epsilon")
    if isinstance(sample_rate, bool) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    if isinstance(target_delta, bool) or not 0 <= target_delta < sample_rate:
        raise ValueError(
            f"target_delta must be in [0, sample_rate = {sample_rate:g}) so that δ/q' < 1, got {target_delta!r}"
        )
    if target_epsilon > 30:  # ε + ln((1 − e^{−ε})/q' + e^{−ε}), without overflowing e^ε
        inner = target_epsilon + math.log(-math.expm1(-target_epsilon) / sample_rate + math.exp(-target_epsilon))
    else:
        inner = math.log1p(math.expm1(target_epsilon) / sample_rate)
    return inner, target_delta / sample_rate


def _rdp_epsilon(rdp: np.ndarray, delta: float) -> float:
    return float(compute_epsilon(list(RDP_ORDERS), list(rdp), delta)[0])


def calibrate_gumbel_topk(*, target_epsilon: float, delta: float, selections: int) -> float:
    """The largest per-selection ε whose ``selections`` Gumbel top-K steps cost ≤ ``target_epsilon`` at ``delta``."""
    check_delta(delta)
    check_int(selections, "selections", minimum=1)
    scale = calibrate(
        target_epsilon=target_epsilon,
        epsilon_of_sigma=lambda s: _rdp_epsilon(
            gumbel_topk_rdp(epsilon=1 / s, selections=selections, orders=RDP_ORDERS), delta
        ),
    )
    return 1 / scale


def dp_appr_plan(
    *,
    option: str,
    epsilon: float,
    delta: float,
    k: int,
    m: int,
    clip: float,
    value_share: float = EM_VALUE_SHARE,
    accountant: str = "rdp",
) -> tuple[dict[str, float], tuple[MechanismRecord, ...]]:
    """Calibrate DP-APPR (``option`` em0, em1 or gm) to spend ``epsilon`` alone at ``delta`` on the sample.

    em0: the M·K selections get all of it. em1: the selections and the M·K
    Laplace values split it (1 − value_share) : value_share, each calibrated
    to its share alone, then both noises scaled by one factor until their RDP
    composition spends all of ε. gm: M Gaussians of std z·√2·C1.
    Returns the noise parameters (``epsilon`` per selection, ``epsilon_value``
    ε2 per row, or ``noise_multiplier`` z) and the ledger records.
    """
    if option not in (*EM_OPTIONS, "gm"):
        raise ValueError(f"unknown DP-APPR option {option!r}; valid choices: {[*EM_OPTIONS, 'gm']}")
    check_positive(epsilon, "epsilon")
    check_delta(delta)
    check_int(k, "k", minimum=1)
    check_int(m, "m", minimum=1)
    if option == "gm":
        z = calibrate_noise_multiplier(
            target_epsilon=epsilon,
            target_delta=delta,
            accountant=accountant,
            make_event=lambda sigma: dp_appr_gm_event(noise_multiplier=sigma, m=m),
        )
        return {"noise_multiplier": z}, (dp_appr_gm_record(noise_multiplier=z, k=k, m=m, clip=clip),)
    if option == "em0":
        value_share = 0.0
    elif not 0 < value_share < 1:
        raise ValueError(f"value_share must be in (0, 1) for em1, got {value_share!r}")
    per_selection = calibrate_gumbel_topk(target_epsilon=(1 - value_share) * epsilon, delta=delta, selections=m * k)
    if option == "em0":
        noise = {"epsilon": per_selection}
    else:
        b = calibrate_noise_multiplier(
            target_epsilon=value_share * epsilon,
            target_delta=delta,
            accountant=accountant,
            make_event=lambda sigma: dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(sigma), m * k),
        )

        def scaled(sigma: float) -> dict[str, float]:  # both parts' noise × σ: the shares keep their ratio
            return {"epsilon": per_selection / sigma, "epsilon_value": k / (b * sigma)}

        def records_of(n: dict[str, float]) -> tuple[MechanismRecord, ...]:
            return dp_appr_em_records(
                option=option, epsilon=n["epsilon"], k=k, m=m, clip=clip, epsilon_value=n["epsilon_value"]
            )

        # Composed by RDP the two cost less than their shares' sum: scale both to spend all of ε.
        sigma = calibrate(
            target_epsilon=epsilon,
            epsilon_of_sigma=lambda t: _epsilon_of_records(records_of(scaled(t)), delta=delta, accountant=accountant),
        )
        noise = scaled(sigma)
    records = dp_appr_em_records(
        option=option, epsilon=noise["epsilon"], k=k, m=m, clip=clip, epsilon_value=noise.get("epsilon_value")
    )
    return noise, records


def _epsilon_of_records(records: Sequence[MechanismRecord], *, delta: float, accountant: str) -> float:
    """The ε the ledger composes ``records`` to at ``delta`` (the target only bounds checks, not composition)."""
    return Ledger(
        level="node", target_epsilon=1e9, target_delta=delta, mechanisms=tuple(records), accountant=accountant
    ).composed()[0]


def claimed_dp_appr_epsilon(*, option: str, noise: dict[str, float], k: int, m: int, delta: float) -> float:
    """What DPAR's Theorem 1 (em0/em1) or 3 (gm) claims the DP-APPR matrix costs on the sample.

    ``noise`` is ``dp_appr_plan``'s; the paper's total δ is 2Mδ_row = ``delta``.
    Per row: Corollary 1's ε (+ ε2 for em1), or for gm the classic Gaussian
    ε = √(2 ln(1.25/δ_row))/z' with z' the noise std over the paper's
    sensitivity C1 (ours uses √2·C1, so z' = √2·z); then the paper's
    composition (``paper_composition_epsilon``).
    """
    check_delta(delta)
    delta_row = delta / (2 * m)
    if option == "gm":
        row = math.sqrt(2 * math.log(1.25 / delta_row)) / (math.sqrt(2) * noise["noise_multiplier"])
    else:
        row = gumbel_topk_epsilon(epsilon=noise["epsilon"], k=k, delta=delta_row) + noise.get("epsilon_value", 0.0)
    return paper_composition_epsilon(epsilon_row=row, m=m, delta_total=delta)


def amplified(epsilon: float, delta: float, *, rate: float) -> tuple[float, float]:
    """(ε, δ)-DP on a random node sample of rate q' is (ln(1 + q'(e^ε − 1)), q'·δ)-DP on the whole graph."""
    check_positive(epsilon, "epsilon")
    if isinstance(delta, bool) or not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    if isinstance(rate, bool) or not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    return amplify_epsilon(epsilon, rate=rate), rate * delta


def reference_understated(epsilon: float, *, rate: float) -> float:
    """What DPAR's public code charges for node sampling: q'·ε, below the true ``amplified`` ε."""
    check_positive(epsilon, "epsilon")
    if isinstance(rate, bool) or not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    return rate * epsilon


# Reference mode: DPAR's noise sized by the paper's own accounting for a claimed (ε, δ) ------------------------
#
# The paper (Theorem 2, §4) and its public code (main.py) arrive at a run's ε thus: ε is split by ``ratio``
# between DP-APPR and DP-SGD (§4.1: "evenly divided"); each part's (ε, δ) is computed on the q'-sample and
# multiplied by q' (the claimed amplification); the total is the sum of the parts (Theorem 2). DP-APPR's
# part is Theorem 1 (EM) or 3 (GM): M rows, each (ε_row, δ_row)-DP, composed by Kairouz et al.'s formula
# ε_row = ε_g / (2√(M·ln(e + ε_g/δ_g))), δ_g = 2M·δ_row; a row is Corollary 1 (EM; option II adds ε2 of
# Laplace(K·C2/ε2) values, the public code's ε2 = ε1) or the classic Gaussian σ = √(2 ln(1.25/δ_row))·C1/ε_row
# (GM, sensitivity C1). DP-SGD's part is the public code's RDP accountant (TF Privacy's, one example per
# node). The functions below invert that: from the claimed ε and δ, the noise the paper would use.
#
# DPAR's "Features" baseline (§4: "utilizes the original DP-SGD to achieve node DP ... equal to the case where
# we use a one-hot vector as each node's APPR vector in Algorithm 2") runs no DP-APPR: its DP-APPR share is
# ``FEATURES_RATIO`` = 0, so by the same rule DP-SGD spends the whole claimed ε and the whole δ (δ_APPR = 0):
# ε/q' and δ/q' on the sample (``paper_dp_sgd_budget``).

# Table 1's δ for the paper's datasets, by the suite's dataset ids.
PAPER_DELTAS: dict[str, float] = {
    "cora-ml": 2e-3,
    "ms-academic": 8e-4,
    "coauthor-cs": 8e-4,
    "coauthor-physics": 1e-4,
    "reddit": 1e-4,
}
# DP-APPR's share of the paper's δ (the public code's DP-SGD δ is 1e-3, half of Table 1's 2e-3 on Cora-ML).
PAPER_DELTA_SHARE = 0.5
# The RDP orders of the public code's DP-SGD accountant (dpgnn/utils.py: compute_epsilon).
REFERENCE_SGD_ORDERS: tuple[float, ...] = tuple([1 + x / 10 for x in range(1, 100)] + [float(a) for a in range(12, 64)])
PAPER_RULE = (
    "ε = q'·ε_APPR + q'·ε_SGD, split by ratio, each part computed on the q'-sample and multiplied by q' "
    "(never amplified as a composed whole): ε_APPR by Theorem 1 (Corollary 1 per row; EM1 adds ε2 = ε1) or "
    "Theorem 3 (Gaussian with sensitivity C1) with Kairouz et al.'s composition of the M rows at δ_row = "
    "δ_APPR/2M, ε_SGD by the public code's RDP accountant with one example per node, δ = δ_APPR + δ_SGD "
    "split evenly"
)
PAPER_SOURCE = (
    "DPAR (Zhang et al., KDD 2024): Corollary 1, Theorems 1-3, Appendices A-C, §4.1 and Table 1 (δ); "
    "public code (Emory-AIMS/DPAR main.py: ×q' per part, EM report_val_eps = ε1, DP-SGD accountant)"
)
# DP-APPR's share of ε in the Features baseline: none (no DP-APPR runs; module section above).
FEATURES_RATIO = 0.0
PAPER_FEATURES_RULE = (
    "ε = q'·ε_SGD: the Features baseline (Algorithm 2 with one-hot APPR rows, no DP-APPR), so DP-SGD spends "
    "the whole ε and δ, computed on the q'-sample by the public code's RDP accountant with one example per node "
    "and multiplied by q' (never amplified)"
)


def paper_delta(dataset: str | None, *, num_train: int, sample_rate: float) -> float:
    """The paper's δ: Table 1's for its datasets, elsewhere §4.1's rule "roughly the inverse of the number of
    training nodes", the nodes of the sampled training graph (Algorithm 2's N = ⌈q'·|train|⌉, as the public
    code samples them; on MS Academic, CS and Reddit this gives Table 1's δ)."""
    check_int(num_train, "num_train", minimum=1)
    if isinstance(sample_rate, bool) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    delta = PAPER_DELTAS[dataset] if dataset in PAPER_DELTAS else 1.0 / math.ceil(sample_rate * num_train)
    if not delta < sample_rate:
        raise ValueError(
            f"the paper's δ = {delta:g} must be below q' = {sample_rate:g} (the parts run at δ/q' on "
            f"the sample); {num_train} training nodes are too few for §4.1's rule"
        )
    return delta


def paper_row_epsilon(*, epsilon_g: float, m: int, delta_total: float) -> float:
    """Theorems 1 and 3: the per-row ε that M rows may each spend for (ε_g, δ_total) by Kairouz et al.'s
    composition, ε_g / (2·√(M·ln(e + ε_g/δ_total))) (inverse of ``paper_composition_epsilon``)."""
    check_positive(epsilon_g, "epsilon_g")
    check_int(m, "m", minimum=1)
    check_delta(delta_total, "delta_total")
    return epsilon_g / (2 * math.sqrt(m * math.log(math.e + epsilon_g / delta_total)))


def gumbel_topk_selection_epsilon(*, epsilon_prime: float, k: int, delta: float) -> float:
    """The per-selection ε whose one-shot Gumbel(C2/ε) top-k Corollary 1 states as ``epsilon_prime``
    (inverse of ``gumbel_topk_epsilon``, which rises continuously in ε)."""
    check_positive(epsilon_prime, "epsilon_prime")
    check_int(k, "k", minimum=1)
    check_delta(delta)
    # Corollary 1 lies between 2ε·min{k, √(2k ln(1/δ))} and 2kε: the root is in between.
    low = epsilon_prime / (2 * k)
    high = epsilon_prime / (2 * min(k, math.sqrt(2 * k * math.log(1 / delta))))
    if math.isclose(low, high, rel_tol=1e-15) or gumbel_topk_epsilon(epsilon=low, k=k, delta=delta) >= epsilon_prime:
        return low
    return float(
        brentq(
            lambda e: gumbel_topk_epsilon(epsilon=e, k=k, delta=delta) - epsilon_prime,
            low,
            high,
            xtol=1e-15,
            rtol=1e-13,
        )
    )


def paper_dp_appr_noise(
    *,
    option: str,
    epsilon: float,
    delta: float,
    k: int,
    m: int,
    sample_rate: float,
    ratio: float,
    value_share: float = EM_VALUE_SHARE,
) -> dict[str, float]:
    """DP-APPR's noise as DPAR sizes it for a claimed run (``epsilon``, ``delta``) (module section above).

    DP-APPR's part is ratio·ε and PAPER_DELTA_SHARE·δ on the whole graph, so ε_g = ratio·ε/q' and
    δ_g = 2M·δ_row = PAPER_DELTA_SHARE·δ/q' on the sample; ε_row = ``paper_row_epsilon``. em0: the selection
    ε with Corollary 1's ε' = ε_row; em1: ε1 = (1 − value_share)·ε_row selects, ε2 = value_share·ε_row is
    the Laplace values' (the public code's default ε2 = ε1 is value_share = 1/2); gm: σ = √(2 ln(1.25/δ_row))·C1
    / ε_row, i.e. noise multiplier σ/(√2·C1) of the suite's sensitivity √2·C1. Returns ``dp_appr_plan``'s
    noise keys (``epsilon`` / ``epsilon_value`` / ``noise_multiplier``) and the paper's ``epsilon_row``,
    ``delta_row``.
    """
    if option not in (*EM_OPTIONS, "gm"):
        raise ValueError(f"unknown DP-APPR option {option!r}; valid choices: {[*EM_OPTIONS, 'gm']}")
    check_positive(epsilon, "epsilon")
    check_int(k, "k", minimum=1)
    check_int(m, "m", minimum=1)
    if isinstance(sample_rate, bool) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    delta_total = PAPER_DELTA_SHARE * delta / sample_rate
    check_delta(delta_total, "δ_APPR/q'")
    epsilon_g = ratio * epsilon / sample_rate
    row = paper_row_epsilon(epsilon_g=epsilon_g, m=m, delta_total=delta_total)
    delta_row = delta_total / (2 * m)
    plan: dict[str, float] = {"epsilon_row": row, "delta_row": delta_row}
    if option == "gm":
        sigma_over_c1 = math.sqrt(2 * math.log(1.25 / delta_row)) / row
        return {"noise_multiplier": sigma_over_c1 / math.sqrt(2), **plan}
    if option == "em0":
        return {"epsilon": gumbel_topk_selection_epsilon(epsilon_prime=row, k=k, delta=delta_row), **plan}
    if not 0 < value_share < 1:
        raise ValueError(f"value_share must be in (0, 1) for em1, got {value_share!r}")
    selection = gumbel_topk_selection_epsilon(epsilon_prime=(1 - value_share) * row, k=k, delta=delta_row)
    return {"epsilon": selection, "epsilon_value": value_share * row, **plan}


def reference_dpsgd_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """DP-SGD's ε by the public code's accountant: the Poisson-subsampled Gaussian's RDP (sensitivity one
    example) at ``REFERENCE_SGD_ORDERS``, converted by ε = min_α RDP(α) − ln δ/(α − 1) (TF Privacy's)."""
    check_positive(noise_multiplier, "noise_multiplier")
    check_delta(delta)
    check_int(steps, "steps", minimum=1)
    if isinstance(sampling_rate, bool) or not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    orders = np.array(REFERENCE_SGD_ORDERS)
    rdp = steps * np.asarray(poisson_subsampled_gaussian_rdp(sampling_rate, noise_multiplier, orders))
    return float(np.nanmin(rdp - math.log(delta) / (orders - 1)))


def paper_dp_sgd_budget(*, epsilon: float, delta: float, sample_rate: float, ratio: float) -> tuple[float, float]:
    """DP-SGD's (ε, δ) on the q'-sample in a run DPAR claims is (``epsilon``, ``delta``)-DP, DP-APPR taking
    ``ratio`` of ε: ((1 − ratio)·ε/q', (1 − PAPER_DELTA_SHARE)·δ/q') when DP-APPR runs (0 < ratio < 1), and
    (ε/q', δ/q') for ratio = ``FEATURES_RATIO`` = 0, the Features baseline, where no DP-APPR runs and DP-SGD
    gets the whole claimed budget, δ included (module section above)."""
    check_positive(epsilon, "epsilon")
    if isinstance(ratio, bool) or not 0 <= ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), or {FEATURES_RATIO} for no DP-APPR (Features), got {ratio!r}")
    if isinstance(sample_rate, bool) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    delta_share = 1.0 if ratio == FEATURES_RATIO else 1 - PAPER_DELTA_SHARE
    inner_delta = delta_share * delta / sample_rate
    check_delta(inner_delta, "δ_SGD/q'")
    return (1 - ratio) * epsilon / sample_rate, inner_delta


@functools.lru_cache(maxsize=256)  # pure, and each ε of the search costs ~0.1 s
def paper_dp_sgd_noise_multiplier(
    *, epsilon: float, delta: float, sample_rate: float, ratio: float, sampling_rate: float, steps: int
) -> float:
    """DP-SGD's noise multiplier as DPAR sizes it for a claimed run (``epsilon``, ``delta``): the z whose
    ``reference_dpsgd_epsilon`` at δ_SGD/q' is ε_SGD/q', the part's ε and δ on the sample
    (``paper_dp_sgd_budget``: (1 − ratio)·ε/q' at half of δ/q', or with ``ratio`` = ``FEATURES_RATIO`` = 0, the
    Features baseline, all of ε/q' at all of δ/q')."""
    target, inner_delta = paper_dp_sgd_budget(epsilon=epsilon, delta=delta, sample_rate=sample_rate, ratio=ratio)

    def gap(log_z: float) -> float:
        return math.log(
            reference_dpsgd_epsilon(
                noise_multiplier=math.exp(log_z), sampling_rate=sampling_rate, steps=steps, delta=inner_delta
            )
        ) - math.log(target)

    low, high = 0.0, 0.0  # ε falls as z grows: bracket the root in log z
    while gap(low) < 0:
        low -= 1.0
        if low < math.log(1e-4):
            raise ValueError(f"DP-SGD's claimed ε = {target:g} on the sample needs no noise at all")
    while gap(high) > 0:
        high += 1.0
        if high > math.log(1e6):
            raise ValueError(f"DP-SGD's claimed ε = {target:g} on the sample is unreachable")
    return math.exp(brentq(gap, low, high, xtol=1e-13, rtol=1e-13)) if low < high else math.exp(low)
