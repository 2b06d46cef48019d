"""GAP and ProGAP accounting: K NAP queries composed with DP-SGD stages.

Each NAP query is ``gaussian_event(noise_multiplier=z)`` at sensitivity Δ (node level √(D + R²), edge level
1 or √2); at node level every DP-SGD stage is a Poisson-subsampled Gaussian, sharing one z with NAP.
``progap_eq11_epsilon`` and ``progap_edge_epsilon`` evaluate ProGAP's Theorems 4.2 and 4.1 literally;
``gap_paper_noise`` and ``gap_reference_epsilon`` are the reference mode (the papers' noise, charged at the
true Δ). Details in docs/design/accounting.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from dp_accounting import dp_event
from scipy.special import gammaln, logsumexp

from nodedp.accounting._checks import check_delta, check_int, check_positive
from nodedp.accounting.calibration import calibrate_noise_multiplier
from nodedp.accounting.delta import default_delta
from nodedp.accounting.events import compose, epsilon_of, gaussian_event, subsampled_gaussian_event


def nap_event(*, noise_multiplier: float, hops: int) -> dp_event.DpEvent:
    """``hops`` NAP queries, each a Gaussian mechanism with noise std = ``noise_multiplier`` × its sensitivity."""
    k = check_int(hops, "hops", minimum=1)
    return dp_event.SelfComposedDpEvent(gaussian_event(noise_multiplier=noise_multiplier), k)


def gap_event(
    *, noise_multiplier: float, hops: int, stage_steps: Sequence[int], sampling_rate: float | None
) -> dp_event.DpEvent:
    """K NAP Gaussians composed with one Poisson-subsampled-Gaussian DP-SGD run per entry of ``stage_steps``.

    GAP node level: ``stage_steps`` = (encoder, classifier); ProGAP node level:
    K + 1 stages; edge level: ``stage_steps`` = () and ``sampling_rate`` None.
    """
    k = check_int(hops, "hops", minimum=0)
    stage_steps = list(stage_steps)
    if k == 0 and not stage_steps:
        raise ValueError("gap_event needs hops >= 1 or at least one DP-SGD stage; it would charge nothing")
    events: list[dp_event.DpEvent] = [nap_event(noise_multiplier=noise_multiplier, hops=k)] if k else []
    if stage_steps:
        if sampling_rate is None:
            raise ValueError("DP-SGD stages need a sampling_rate in (0, 1], got None")
        for steps in stage_steps:
            check_int(steps, "stage steps", minimum=1)
        # The stages share z and q, so their composition is one run of Σ steps (the same RDP,
        # computed once: calibration evaluates this event many times).
        events.append(
            subsampled_gaussian_event(
                noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=sum(stage_steps)
            )
        )
    elif sampling_rate is not None:
        raise ValueError(f"sampling_rate = {sampling_rate!r} given without DP-SGD stages (stage_steps is empty)")
    return compose(events)


def calibrate_gap(
    *,
    target_epsilon: float,
    target_delta: float,
    hops: int,
    stage_steps: Sequence[int],
    sampling_rate: float | None,
    accountant: str = "rdp",
) -> float:
    """The smallest shared noise multiplier z with ε(gap_event(z)) ≤ ``target_epsilon`` at ``target_delta``."""
    stage_steps = tuple(stage_steps)
    # Validates the schedule before the search starts.
    gap_event(noise_multiplier=1.0, hops=hops, stage_steps=stage_steps, sampling_rate=sampling_rate)
    return calibrate_noise_multiplier(
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        make_event=lambda z: gap_event(
            noise_multiplier=z, hops=hops, stage_steps=stage_steps, sampling_rate=sampling_rate
        ),
        accountant=accountant,
    )


def gap_paper_delta(num_nodes: int) -> float:
    """The δ of GAP, ProGAP and their DP-MLP baseline at node level: 10^−(digits of N), N the node count.

    ProGAP §5.3: "The value of δ is fixed per each dataset to be smaller than
    the inverse number of private units (i.e., [...] nodes for node-level
    privacy)"; the public code's ``delta='auto'`` is ``1 / 10**len(str(N))``,
    the largest power of ten below 1/N (there N is the training nodes; the paper
    states the rule for the dataset's nodes, which this takes).
    """
    return default_delta(check_int(num_nodes, "num_nodes", minimum=1))  # the suite's 'auto' rule is the same


class GapPaperNoise(NamedTuple):
    """The noise GAP/ProGAP's own accounting gives a claimed (ε, δ) at node level."""

    noise_multiplier: float  # z: DP-SGD noise std z·C in every stage
    nap_noise_std: float  # z·√D: NAP's noise std per entry, the papers' sensitivity √D


def gap_paper_noise(
    *,
    target_epsilon: float,
    delta: float,
    hops: int,
    stage_steps: Sequence[int],
    sampling_rate: float,
    max_degree: int,
) -> GapPaperNoise:
    """The papers' rule: the shared z calibrated by RDP so that K NAP queries and the DP-SGD stages are
    (``target_epsilon``, ``delta``)-DP with NAP's sensitivity taken as √D; NAP's noise std is then z·√D.

    ProGAP Theorem 4.2 (Eq. 11) with σ_GP = z·C and σ_AP = z·√D (its NAP term
    DKα/2σ_AP² = Kα/2z²); GAP's node-level accounting is the same with two
    stages. Pure: public sizes and the claim only.
    """
    d = check_int(max_degree, "max_degree", minimum=1)
    if not stage_steps:
        raise ValueError("node-level GAP/ProGAP trains at least one DP-SGD stage; stage_steps is empty")
    z = calibrate_gap(
        target_epsilon=target_epsilon,
        target_delta=delta,
        hops=hops,
        stage_steps=stage_steps,
        sampling_rate=sampling_rate,
        accountant="rdp",
    )
    return GapPaperNoise(noise_multiplier=z, nap_noise_std=z * math.sqrt(d))


def gap_reference_epsilon(
    *,
    noise: GapPaperNoise,
    nap_sensitivity: float,
    hops: int,
    stage_steps: Sequence[int],
    sampling_rate: float,
    delta: float,
    accountant: str = "rdp",
) -> float:
    """The actual ε at ``delta`` of ``noise``: K NAP Gaussians of multiplier nap_noise_std / Δ (Δ the true
    sensitivity, √(D + R²) at node level) composed with the DP-SGD stages at multiplier z."""
    k = check_int(hops, "hops", minimum=1)
    sensitivity = check_positive(nap_sensitivity, "nap_sensitivity")
    steps = [check_int(t, "stage steps", minimum=1) for t in stage_steps]
    if not steps:
        raise ValueError("stage_steps is empty")
    event = compose(
        [
            nap_event(noise_multiplier=noise.nap_noise_std / sensitivity, hops=k),
            subsampled_gaussian_event(
                noise_multiplier=noise.noise_multiplier, sampling_rate=sampling_rate, steps=sum(steps)
            ),
        ]
    )
    return epsilon_of(event, delta=delta, accountant=accountant)


def progap_eq11_epsilon(
    *,
    num_nodes: int,
    batch_size: int,
    steps: int,
    clip: float,
    sigma_gp: float,
    hops: int,
    nap_sensitivity_sq: float,
    sigma_ap: float,
    delta: float,
    orders: Iterable[int] = range(2, 257),
) -> float:
    """ProGAP Theorem 4.2, Eq. 11, evaluated literally: min over integer α of

    (K+1)T/(α−1) · log{(1−q)^(α−1)(αq − q + 1) + Σ_{l=2}^{α} C(α,l)(1−q)^(α−l) q^l e^{(l−1)·l·C²/(2σ_GP²)}}
    + Δ²Kα/(2σ_AP²) + log(1/δ)/(α−1),   q = B/N,

    with the paper's D replaced by Δ² = ``nap_sensitivity_sq`` (the paper's D
    is its squared NAP sensitivity). ``sigma_gp`` and ``sigma_ap`` are noise
    stds (not multipliers); ``steps`` is T per stage, K + 1 stages.
    """
    n = check_int(num_nodes, "num_nodes", minimum=2)
    b = check_int(batch_size, "batch_size", minimum=1)
    if b >= n:
        raise ValueError(f"Theorem 4.2 needs batch_size < num_nodes, got {b} >= {n}")
    t = check_int(steps, "steps", minimum=1)
    k = check_int(hops, "hops", minimum=0)
    c = check_positive(clip, "clip")
    s_gp = check_positive(sigma_gp, "sigma_gp")
    s_ap = check_positive(sigma_ap, "sigma_ap")
    sens_sq = check_positive(nap_sensitivity_sq, "nap_sensitivity_sq")
    check_delta(delta)
    alphas = [check_int(a, "every order", minimum=2) for a in orders]
    if not alphas:
        raise ValueError("orders must hold at least one integer order >= 2")

    q = b / n
    log_q, log_1mq = math.log(q), math.log1p(-q)
    best = math.inf
    for alpha in alphas:
        # The paper prints e^{C²/2σ²} at l = 2, against its own general term and
        # Mironov et al.'s sampled Gaussian (e^{(l−1)lC²/2σ²} = e^{C²/σ²} there): a typo.
        ls = np.arange(2, alpha + 1, dtype=np.float64)
        log_binom = gammaln(alpha + 1) - gammaln(ls + 1) - gammaln(alpha - ls + 1)
        terms = log_binom + (alpha - ls) * log_1mq + ls * log_q + (ls - 1) * ls * c**2 / (2 * s_gp**2)
        head = (alpha - 1) * log_1mq + math.log(alpha * q - q + 1)
        log_sum = float(logsumexp(np.append(terms, head)))
        epsilon = (
            (k + 1) * t / (alpha - 1) * log_sum
            + sens_sq * k * alpha / (2 * s_ap**2)
            + math.log(1 / delta) / (alpha - 1)
        )
        best = min(best, epsilon)
    return best


def progap_edge_epsilon(*, hops: int, sigma: float, delta: float) -> float:
    """ProGAP Theorem 4.1: ε = K/(2σ²) + √(2K log(1/δ))/σ, σ the noise multiplier (std over Δ_edge).

    The minimum over real α > 1 of the K-fold Gaussian RDP Kα/(2σ²) plus the
    classic conversion log(1/δ)/(α−1).
    """
    k = check_int(hops, "hops", minimum=1)
    s = check_positive(sigma, "sigma")
    check_delta(delta)
    return k / (2 * s**2) + math.sqrt(2 * k * math.log(1 / delta)) / s
