from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from nodedp.accounting import (
    RDP_ORDERS,
    Ledger,
    advanced_composition_epsilon,
    amplified,
    dp_appr_em_records,
    dp_appr_gm_event,
    dp_appr_gm_record,
    epsilon_of,
    gaussian_event,
    gm_sensitivity,
    gumbel_topk_epsilon,
    gumbel_topk_rdp,
    paper_composition_epsilon,
    reference_understated,
    subsampled_gaussian_event,
)


def test_advanced_composition_is_the_min_of_basic_and_kov() -> None:
    eps, k, delta = 0.1, 100, 1e-5
    kov = k * eps * (math.exp(eps) - 1) / (math.exp(eps) + 1) + eps * math.sqrt(2 * k * math.log(1 / delta))
    assert kov < k * eps
    assert math.isclose(advanced_composition_epsilon(epsilon=eps, k=k, delta=delta), kov)
    # one mechanism, or a large ε: basic composition wins
    assert advanced_composition_epsilon(epsilon=eps, k=1, delta=delta) == eps
    assert advanced_composition_epsilon(epsilon=3.0, k=4, delta=delta) == 12.0


def _corollary1(eps: float, k: int, delta: float) -> float:
    """DPAR's Corollary 1 as printed: 2·min{kε, kε(e^{2ε} − 1)/(e^{2ε} + 1) + ε√(2k ln(1/δ))}."""
    advanced = k * eps * (math.exp(2 * eps) - 1) / (math.exp(2 * eps) + 1) + eps * math.sqrt(
        2 * k * math.log(1 / delta)
    )
    return 2 * min(k * eps, advanced)


def test_corollary1_is_the_composition_of_2eps_dp_peeling_steps() -> None:
    for eps, k in [(0.05, 2), (0.5, 10), (2.0, 3), (0.01, 200)]:
        value = gumbel_topk_epsilon(epsilon=eps, k=k, delta=1e-6)
        assert math.isclose(value, _corollary1(eps, k, 1e-6), rel_tol=1e-12)
        assert math.isclose(value, advanced_composition_epsilon(epsilon=2 * eps, k=k, delta=1e-6))
        assert value <= 2 * k * eps
    # the public code's Gumbel(2·C2/ε_code) with the formula at ε_code = 2ε and no factor 2: the same figure
    eps, k, delta = 0.01, 200, 1e-6
    code = min(
        k * 2 * eps,
        k * 2 * eps * (math.exp(2 * eps) - 1) / (math.exp(2 * eps) + 1)
        + 2 * eps * math.sqrt(2 * k * math.log(1 / delta)),
    )
    assert math.isclose(gumbel_topk_epsilon(epsilon=eps, k=k, delta=delta), code, rel_tol=1e-12)


def _renyi(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    return float(np.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1))


def test_gumbel_rdp_bounds_the_exact_renyi_divergence_of_one_selection() -> None:
    """One Gumbel(C2/ε) top-1 is softmax(ε·u/C2); scores in [0, C2] may move anywhere in that box."""
    rng = np.random.default_rng(0)
    orders = [1.5, 2.0, 4.0, 16.0, 64.0]
    for eps in [0.05, 0.5, 2.0]:
        bound = gumbel_topk_rdp(epsilon=eps, selections=1, orders=orders)
        pairs = [(np.array([0.0, 1.0]), np.array([1.0, 0.0]))]  # the extreme pair (C2 = 1)
        pairs += [(rng.integers(0, 2, 6).astype(float), rng.integers(0, 2, 6).astype(float)) for _ in range(200)]
        for u, v in pairs:
            p = np.exp(eps * u) / np.exp(eps * u).sum()
            q = np.exp(eps * v) / np.exp(eps * v).sum()
            for alpha, b in zip(orders, bound, strict=True):
                assert _renyi(p, q, alpha) <= b * (1 + 1e-9)
                assert _renyi(q, p, alpha) <= b * (1 + 1e-9)


def test_gumbel_rdp_is_tighter_than_basic_composition_for_many_selections() -> None:
    eps, m, k, delta = 0.02, 70, 2, 1e-5
    rdp = gumbel_topk_rdp(epsilon=eps, selections=m * k, orders=RDP_ORDERS)
    from_rdp = compute_epsilon(list(RDP_ORDERS), list(rdp), delta)[0]
    (record,) = dp_appr_em_records(option="em0", epsilon=eps, k=k, m=m, clip=0.1)
    ledger = Ledger(level="node", target_epsilon=100.0, target_delta=delta, mechanisms=(record,))
    assert math.isclose(ledger.composed()[0], from_rdp)  # the ledger composes exactly this curve
    assert from_rdp < 0.5 * 2 * m * k * eps
    # and never above basic composition, at any order
    assert np.all(rdp <= 2 * m * k * eps + 1e-12)


def test_paper_composition_inverts_the_theorem_formula() -> None:
    m, delta_total = 70, 2e-3
    for eps_row in [0.001, 0.05, 0.3]:
        eps_g = paper_composition_epsilon(epsilon_row=eps_row, m=m, delta_total=delta_total)
        back = eps_g / (2 * math.sqrt(m * math.log(math.e + eps_g / delta_total)))
        assert math.isclose(back, eps_row, rel_tol=1e-9)
    # increasing in the per-row ε
    a = paper_composition_epsilon(epsilon_row=0.01, m=m, delta_total=delta_total)
    b = paper_composition_epsilon(epsilon_row=0.02, m=m, delta_total=delta_total)
    assert b > a


def test_gm_event_is_m_gaussians_with_sqrt2_c1_sensitivity() -> None:
    assert math.isclose(gm_sensitivity(clip=0.3), math.sqrt(2) * 0.3)
    z, m, delta = 20.0, 16, 1e-5
    composed = epsilon_of(dp_appr_gm_event(noise_multiplier=z, m=m), delta=delta)
    # M Gaussians of multiplier z are one Gaussian of multiplier z/√M
    assert math.isclose(
        composed, epsilon_of(gaussian_event(noise_multiplier=z / math.sqrt(m)), delta=delta), rel_tol=1e-6
    )
    values = [epsilon_of(dp_appr_gm_event(noise_multiplier=s, m=m), delta=delta) for s in [5.0, 10.0, 40.0]]
    assert values[0] > values[1] > values[2]
    record = dp_appr_gm_record(noise_multiplier=z, k=4, m=m, clip=0.3)
    assert record.kind == "gaussian" and record.touches == ("edges",)
    assert math.isclose(record.sensitivity, math.sqrt(2) * 0.3)


def test_em_records_charge_selection_and_values_in_a_ledger() -> None:
    eps, k, m, clip, eps2 = 0.01, 2, 70, 0.1, 0.02
    (selection,) = dp_appr_em_records(option="em0", epsilon=eps, k=k, m=m, clip=clip)
    assert selection.kind == "gumbel_topk" and selection.pure_epsilon is None and selection.dp_event is None
    assert selection.params["selections"] == m * k
    assert math.isclose(selection.params["gumbel_scale"], clip / eps)
    selection1, values = dp_appr_em_records(option="em1", epsilon=eps, k=k, m=m, clip=clip, epsilon_value=eps2)
    assert selection1.params == {**selection.params, "option": "em1"}
    assert values.kind == "laplace" and math.isclose(values.params["laplace_scale"], k * clip / eps2)
    ledger = Ledger(level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(selection1, values))
    ledger.check()
    total, _ = ledger.composed()
    alone = Ledger(level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(selection1,)).composed()[0]
    # the Laplace part costs more than nothing and at most its pure M·ε2 (plus the selection's basic composition)
    assert alone < total <= 2 * m * k * eps + m * eps2 + 1e-9
    tight = Ledger(level="node", target_epsilon=total * 0.99, target_delta=1e-5, mechanisms=(selection1, values))
    with pytest.raises(ValueError, match="exceeds the target"):
        tight.check()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"option": "em3"}, "valid choices"),
        ({"option": "em1"}, "epsilon_value"),
        ({"option": "em0", "epsilon_value": 0.5}, "no epsilon_value"),
        ({"option": "em0", "m": 0}, "m must be"),
    ],
)
def test_em_records_refuse_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"epsilon": 0.1, "k": 2, "m": 5, "clip": 0.1} | kwargs
    with pytest.raises(ValueError, match=match):
        dp_appr_em_records(**args)


def test_amplification_is_never_below_the_reference_understatement() -> None:
    for eps in [0.01, 0.1, 0.5, 1.0, 4.0, 8.0, 16.0]:
        for rate in [0.01, 0.09, 0.5, 1.0]:
            amp_eps, amp_delta = amplified(eps, 1e-5, rate=rate)
            assert amp_eps >= reference_understated(eps, rate=rate) - 1e-15
            assert amp_eps <= eps + 1e-12
            assert math.isclose(amp_delta, rate * 1e-5)
    # at the paper's q' = 9% and ε = 8, the reference charges 0.72 where the truth is ~5.6
    assert math.isclose(amplified(8.0, 0.0, rate=0.09)[0], math.log(1 + 0.09 * (math.exp(8.0) - 1)))
    assert amplified(8.0, 0.0, rate=0.09)[0] > 7 * reference_understated(8.0, rate=0.09)
    assert amplified(2.0, 0.0, rate=1.0)[0] == pytest.approx(2.0)


def test_amplification_refuses_bad_rates() -> None:
    with pytest.raises(ValueError, match="rate"):
        amplified(1.0, 1e-5, rate=0.0)
    with pytest.raises(ValueError, match="rate"):
        reference_understated(1.0, rate=1.5)


def test_inner_budget_amplifies_back_to_the_target() -> None:
    from nodedp.accounting import inner_budget

    for eps, q in [(1.0, 0.09), (8.0, 0.09), (4.0, 1.0), (60.0, 0.5)]:
        inner, inner_delta = inner_budget(target_epsilon=eps, target_delta=1e-4, sample_rate=q)
        assert inner >= eps and inner_delta == pytest.approx(1e-4 / q)
        assert amplified(inner, inner_delta, rate=q) == pytest.approx((eps, 1e-4), rel=1e-9)
    with pytest.raises(ValueError, match="sample_rate"):
        inner_budget(target_epsilon=1.0, target_delta=0.2, sample_rate=0.1)


@pytest.mark.parametrize("option", ["em0", "em1", "gm"])
def test_dp_appr_plan_spends_its_share_within_one_percent(option: str) -> None:
    from nodedp.accounting import dp_appr_plan

    eps, delta, k, m = 2.0, 1e-3, 2, 70
    noise, records = dp_appr_plan(option=option, epsilon=eps, delta=delta, k=k, m=m, clip=0.01)
    spent = Ledger(level="node", target_epsilon=eps, target_delta=delta, mechanisms=records).composed()[0]
    assert 0.99 * eps <= spent <= eps
    assert {r.name for r in records} == (
        {"dp_appr_gm"}
        if option == "gm"
        else {"dp_appr_em_select"} | ({"dp_appr_em_values"} if option == "em1" else set())
    )
    if option == "em1":  # the two parts' noise keeps the ratio of their separate calibrations
        alone = Ledger(level="node", target_epsilon=eps, target_delta=delta, mechanisms=records[:1]).composed()[0]
        assert eps / 2 < alone < spent
        assert noise["epsilon_value"] == pytest.approx(k / records[1].dp_event.event.noise_multiplier)
    # a larger budget buys less noise
    more, _ = dp_appr_plan(option=option, epsilon=2 * eps, delta=delta, k=k, m=m, clip=0.01)
    if option == "gm":
        assert more["noise_multiplier"] < noise["noise_multiplier"]
    else:
        assert more["epsilon"] > noise["epsilon"]


def test_claimed_dp_appr_epsilon_is_the_papers_formula_and_understates_ours() -> None:
    from nodedp.accounting import claimed_dp_appr_epsilon, dp_appr_plan

    delta, k, m = 1e-3, 2, 70
    noise, _ = dp_appr_plan(option="em0", epsilon=4.0, delta=delta, k=k, m=m, clip=0.001)
    claimed = claimed_dp_appr_epsilon(option="em0", noise=noise, k=k, m=m, delta=delta)
    row = gumbel_topk_epsilon(epsilon=noise["epsilon"], k=k, delta=delta / (2 * m))
    assert claimed == pytest.approx(paper_composition_epsilon(epsilon_row=row, m=m, delta_total=delta))
    noise, _ = dp_appr_plan(option="gm", epsilon=4.0, delta=delta, k=k, m=m, clip=0.01)
    row = math.sqrt(2 * math.log(1.25 / (delta / (2 * m)))) / (math.sqrt(2) * noise["noise_multiplier"])
    assert claimed_dp_appr_epsilon(option="gm", noise=noise, k=k, m=m, delta=delta) == pytest.approx(
        paper_composition_epsilon(epsilon_row=row, m=m, delta_total=delta)
    )
    with pytest.raises(ValueError, match="valid choices"):
        dp_appr_plan(option="em2", epsilon=1.0, delta=delta, k=k, m=m, clip=0.01)


# Reference mode: the noise DPAR's own accounting gives a claimed (ε, δ), against literal formulas of the paper.


def test_paper_delta_is_table_1s_or_the_inverse_of_the_sampled_training_nodes() -> None:
    from nodedp.accounting.dpar import paper_delta

    assert paper_delta("cora-ml", num_train=2396, sample_rate=0.09) == 2e-3
    assert paper_delta("coauthor-physics", num_train=27594, sample_rate=0.09) == 1e-4
    assert paper_delta("csbm-homophilous", num_train=2396, sample_rate=0.09) == 1 / 216  # ⌈0.09·2396⌉
    # MS Academic by the rule: Table 1's 8e-4 within 10%
    assert paper_delta(None, num_train=round(0.8 * 18333), sample_rate=0.09) == pytest.approx(8e-4, rel=0.1)
    with pytest.raises(ValueError, match="too few"):
        paper_delta(None, num_train=100, sample_rate=0.09)


@pytest.mark.parametrize("option", ["em0", "em1", "gm"])
def test_paper_dp_appr_noise_is_theorems_1_and_3_by_hand(option: str) -> None:
    from nodedp.accounting import claimed_dp_appr_epsilon
    from nodedp.accounting.dpar import paper_dp_appr_noise

    eps, delta, q, ratio, k, m, c1 = 4.0, 2e-3, 0.09, 0.5, 2, 70, 0.01
    noise = paper_dp_appr_noise(option=option, epsilon=eps, delta=delta, k=k, m=m, sample_rate=q, ratio=ratio)
    # DP-APPR's part ratio·ε and δ/2 on the whole graph, each divided by q' on the sample (the claim is × q')
    eps_g, delta_g = ratio * eps / q, delta / 2 / q
    row = eps_g / (2 * math.sqrt(m * math.log(math.e + eps_g / delta_g)))  # Theorem 1/3: ε = ε_g/(2√(M ln(e+ε_g/2Mδ)))
    delta_row = delta_g / (2 * m)
    assert noise["epsilon_row"] == pytest.approx(row, rel=1e-12)
    assert noise["delta_row"] == pytest.approx(delta_row, rel=1e-12)
    if option == "gm":  # Algorithm 3, line 8: σ = √(2 ln(1.25/δ))·C1/ε, the suite's multiplier is of √2·C1
        sigma = math.sqrt(2 * math.log(1.25 / delta_row)) * c1 / row
        assert noise["noise_multiplier"] * math.sqrt(2) * c1 == pytest.approx(sigma, rel=1e-12)
    elif option == "em0":
        assert _corollary1(noise["epsilon"], k, delta_row) == pytest.approx(row, rel=1e-10)
        assert noise["epsilon"] == pytest.approx(row / (2 * k), rel=1e-10)  # here basic composition is the min
    else:  # option II: ε1 + ε2 per row, the public code's ε2 = ε1
        assert noise["epsilon_value"] == pytest.approx(row / 2, rel=1e-12)
        assert _corollary1(noise["epsilon"], k, delta_row) == pytest.approx(row / 2, rel=1e-10)
    # the suite's forward figure of what the paper claims for this noise gives back the part
    assert claimed_dp_appr_epsilon(option=option, noise=noise, k=k, m=m, delta=delta_g) == pytest.approx(
        eps_g, rel=1e-9
    )


def test_corollary1_inverse_in_the_advanced_regime() -> None:
    from nodedp.accounting.dpar import gumbel_topk_selection_epsilon

    k, delta = 200, 1e-3  # √(2k ln(1/δ)) < k: the advanced-composition branch is the min
    for target in [0.5, 3.0, 20.0]:
        eps = gumbel_topk_selection_epsilon(epsilon_prime=target, k=k, delta=delta)
        assert _corollary1(eps, k, delta) == pytest.approx(target, rel=1e-10)


def test_reference_dpsgd_accountant_is_the_public_codes_by_hand() -> None:
    from nodedp.accounting.dpar import (
        REFERENCE_SGD_ORDERS,
        paper_dp_sgd_noise_multiplier,
        reference_dpsgd_epsilon,
    )

    # full batches: RDP is T·α/(2z²) exactly, converted by ε = min_α RDP − ln δ/(α − 1)
    z, steps, delta = 3.0, 50, 1e-5
    by_hand = min(steps * a / (2 * z * z) - math.log(delta) / (a - 1) for a in REFERENCE_SGD_ORDERS)
    assert reference_dpsgd_epsilon(noise_multiplier=z, sampling_rate=1.0, steps=steps, delta=delta) == pytest.approx(
        by_hand, rel=1e-12
    )
    # the public code's conversion is looser than the suite's: the same noise, a larger ε
    sub = reference_dpsgd_epsilon(noise_multiplier=1.2, sampling_rate=0.05, steps=400, delta=delta)
    assert sub > epsilon_of(subsampled_gaussian_event(noise_multiplier=1.2, sampling_rate=0.05, steps=400), delta=delta)
    # DP-SGD's part (1 − ratio)·ε at δ/2, each over q' on the sample
    eps, q, ratio, rate, steps = 8.0, 0.09, 0.5, 0.28, 100
    z = paper_dp_sgd_noise_multiplier(
        epsilon=eps, delta=2e-3, sample_rate=q, ratio=ratio, sampling_rate=rate, steps=steps
    )
    assert reference_dpsgd_epsilon(
        noise_multiplier=z, sampling_rate=rate, steps=steps, delta=1e-3 / q
    ) == pytest.approx((1 - ratio) * eps / q, rel=1e-9)


def test_paper_dp_sgd_budget_gives_features_the_whole_claim() -> None:
    """The paper's rule with DP-APPR's share ratio: DP-SGD gets (1 − ratio)·ε and half of δ, each over q' on the
    sample; the Features baseline (no DP-APPR, ratio FEATURES_RATIO = 0) gets all of ε and all of δ."""
    from nodedp.accounting.dpar import (
        FEATURES_RATIO,
        PAPER_DELTA_SHARE,
        paper_dp_sgd_budget,
        paper_dp_sgd_noise_multiplier,
        reference_dpsgd_epsilon,
    )

    eps, delta, q = 1.0, 2e-3, 0.09
    assert FEATURES_RATIO == 0.0
    assert paper_dp_sgd_budget(epsilon=eps, delta=delta, sample_rate=q, ratio=FEATURES_RATIO) == pytest.approx(
        (eps / q, delta / q), rel=1e-15
    )
    assert paper_dp_sgd_budget(epsilon=eps, delta=delta, sample_rate=q, ratio=0.5) == pytest.approx(
        (0.5 * eps / q, (1 - PAPER_DELTA_SHARE) * delta / q), rel=1e-15
    )
    for bad in (-0.1, 1.0, True):
        with pytest.raises(ValueError, match="ratio"):
            paper_dp_sgd_budget(epsilon=eps, delta=delta, sample_rate=q, ratio=bad)
    rate, steps = 60 / (q * 2396), 200 * 4
    z = paper_dp_sgd_noise_multiplier(
        epsilon=eps, delta=delta, sample_rate=q, ratio=FEATURES_RATIO, sampling_rate=rate, steps=steps
    )
    assert reference_dpsgd_epsilon(
        noise_multiplier=z, sampling_rate=rate, steps=steps, delta=delta / q
    ) == pytest.approx(eps / q, rel=1e-9)
    half = paper_dp_sgd_noise_multiplier(
        epsilon=eps, delta=delta, sample_rate=q, ratio=0.5, sampling_rate=rate, steps=steps
    )
    assert z < half
