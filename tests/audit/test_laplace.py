"""The white-box Laplace-release audits (NIP-GNN's aggregation, DPAR em1's values): canaries that move every charged
coordinate by its full sensitivity, a correct release never refuted, a tenth of the recorded noise refuted (in the
record or in the suite's sampler), and NIP-GNN's unscaled Eq. 11 budgets refuted at the ε_A its paper claims."""

from __future__ import annotations

import pytest
import torch
from dp_accounting.pld import privacy_loss_distribution

import nodedp.mechanisms.dp_appr
import nodedp.mechanisms.nip
from nodedp.accounting import Ledger, dp_appr_em_records, nip_aggregation_record, nip_edge_record, nip_label_record
from nodedp.accounting.nip_bounds import min_keep_parameter
from nodedp.audit.laplace import (
    dp_appr_values_release_scores,
    laplace_records,
    laplace_release_scores,
    nip_aggregation_release_scores,
)
from nodedp.audit.statistics import best_canary_count, clopper_pearson_epsilon, epsilon_one_run
from nodedp.contract.base import RunSpec
from nodedp.mechanisms.nip import nip_budget_weights, scale_budgets_to_worst_case
from nodedp.plans import PublicInputs
from nodedp.plans.edgerand import plan_edgerand

DEGREE = 3
WEIGHTS = (1.5, 1.2, 1.0, 0.8)  # a canary star's budgets: its own, then its D leaves'
ROWS, K, CLIP = 2, 3, 0.3  # DPAR's M rows of K values, clipped to C2


def nip_parts(epsilon_a: float, weights=WEIGHTS, degree=DEGREE) -> list[tuple[float, float]]:
    """(Laplace scale, shift) of every coordinate a NIP canary star moves: its own row by D, each leaf's by 1."""
    b = 2 * degree / epsilon_a
    return [(b / weights[0], float(len(weights) - 1))] + [(b / w, 1.0) for w in weights[1:]]


def dpar_parts(scale: float) -> list[tuple[float, float]]:
    return [(scale, CLIP)] * (ROWS * K)


def true_epsilon(parts: list[tuple[float, float]], delta: float) -> float:
    """The release's ε at δ for one canary: the pure sum of shift/scale at δ = 0, else the pessimistic PLD's."""
    if delta == 0:
        return sum(shift / scale for scale, shift in parts)
    plds = [privacy_loss_distribution.from_laplace_mechanism(scale, sensitivity=shift) for scale, shift in parts]
    composed = plds[0]
    for pld in plds[1:]:
        composed = composed.compose(pld)
    return composed.get_epsilon_for_delta(delta)


def release(mechanism: str, *, epsilon: float, divide: float = 1.0, m: int, seed: int):
    """(scores, included, parts) of a release whose true pure ε is ``epsilon``, its noise divided by ``divide``."""
    if mechanism == "nip":
        ratio = true_epsilon(nip_parts(1.0), 0.0)  # the star's ε at ε_A = 1: (D·β₁ + Σβ)/2D
        epsilon_a = epsilon / ratio
        scores, included = nip_aggregation_release_scores(
            laplace_scale_at_epsilon_a=2 * DEGREE / epsilon_a / divide,
            max_degree=DEGREE,
            largest_budget_weights=list(WEIGHTS),
            m=m,
            seed=seed,
        )
        return scores, included, nip_parts(epsilon_a)
    scale = ROWS * K * CLIP / epsilon
    scores, included = dp_appr_values_release_scores(
        laplace_scale=scale / divide, clip=CLIP, rows=ROWS, k=K, m=m, seed=seed
    )
    return scores, included, dpar_parts(scale)


@pytest.mark.parametrize("mechanism", ["nip", "dpar"])
def test_every_coordinate_a_canary_touches_moves_by_its_full_sensitivity(mechanism):
    # Almost no noise (each coordinate's noise ~1e-6 of its shift): a canary scores ±(Σ shift/scale), the
    # release's pure ε, up to a few units in 1e6, when each of its coordinates moved by the whole shift the
    # accountant assumes; a coordinate moved by less would cost at least its share of ε (here ≥ 10%).
    scores, included, parts = release(mechanism, epsilon=1e6, m=40, seed=3)
    pure = true_epsilon(parts, 0.0)
    assert min(shift / scale for scale, shift in parts) / pure >= 0.1
    assert 0 < int(included.sum()) < 40
    assert torch.allclose(scores[included], torch.full_like(scores[included], pure), rtol=1e-4, atol=0)
    assert torch.allclose(scores[~included], torch.full_like(scores[~included], -pure), rtol=1e-4, atol=0)


def test_real_records_scores_reach_their_worst_case_exactly_and_never_beyond():
    # NAP's budgets as the suite makes them (Eq. 11, scaled to the worst case) on a path of 6 nodes, and DPAR's
    # em1 values record: every score lies within ±(the record's worst-case ε) and the atom at its top is hit
    # with one float value (exact ties: the bound's tie-break cannot read rounding noise).
    path = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 5], [1, 0, 2, 1, 3, 2, 4, 3, 5, 4]])
    beta = nip_budget_weights(path, num_nodes=6, ranks=torch.arange(1.0, 7.0), max_degree=DEGREE)
    scaled = scale_budgets_to_worst_case(beta, max_degree=DEGREE)
    nap = nip_aggregation_record(
        epsilon_a=2.0,
        max_degree=DEGREE,
        budget_scheme="paper",
        largest_budget_weights=scaled.largest,
        worst_case_ratio_before_scaling=scaled.worst_case_ratio_before_scaling,
        budget_scale=scaled.scale,
    )
    _, values = dp_appr_em_records(option="em1", epsilon=0.5, k=K, m=ROWS, clip=CLIP, epsilon_value=1.5)
    worst = {
        "nip_aggregation": nap.params["epsilon_a"] * nap.params["charged_ratio"],
        "dp_appr_em_values": values.params["queries"] * CLIP / values.params["laplace_scale"],
    }
    assert worst["nip_aggregation"] <= nap.pure_epsilon and worst["dp_appr_em_values"] == pytest.approx(ROWS * 1.5)
    for record in (nap, values):
        scores, included = laplace_release_scores(record, m=1000, seed=0)
        top = worst[record.params["mechanism"]]
        assert float(scores.abs().max()) <= top * (1 + 1e-12)
        assert float(scores[included].max()) == pytest.approx(top, rel=1e-12)
        assert scores[scores > top * (1 - 1e-9)].unique().numel() == 1


def test_saturated_scores_are_exact_ties_whatever_the_worlds_float_grid():
    # D = 1, β = 1, ε_A = 1: shift 1 at scale 2 on two coordinates. An included canary's values are 1 + n·b, an
    # excluded one's n·b; |y| − |y − 1| rounds differently on the two grids beyond y = 2, and the bound's
    # ordering of the saturated scores would read that (a bound of 1.22 > ε = 1 at seed 0). Clamped, each
    # atom (±ε) is one float and the bound stays below ε.
    for seed in range(2):
        scores, included = nip_aggregation_release_scores(
            laplace_scale_at_epsilon_a=2.0, max_degree=1, largest_budget_weights=[1.0, 1.0], m=5000, seed=seed
        )
        assert scores[scores.abs() > 1 - 1e-9].unique().tolist() == [-1.0, 1.0]
        assert epsilon_one_run(scores.numpy(), included.numpy(), delta=0.0, seed=seed).epsilon <= 1.0


@pytest.mark.parametrize("mechanism", ["nip", "dpar"])
@pytest.mark.parametrize("epsilon", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_a_release_with_the_recorded_noise_is_never_refuted(mechanism, epsilon, delta):
    # The canaries touch disjoint noise, so the scores are independent trials: the threshold bound holds too.
    m = best_canary_count(delta)
    for seed in range(2):
        scores, included, parts = release(mechanism, epsilon=epsilon, m=m, seed=seed)
        actual = true_epsilon(parts, delta)
        assert actual <= epsilon * (1 + 1e-12)
        s, bits = scores.numpy(), included.numpy()
        assert epsilon_one_run(s, bits, delta=delta, confidence=0.95, seed=seed).epsilon <= actual
        assert clopper_pearson_epsilon(s, bits, delta=delta).epsilon <= actual


@pytest.mark.parametrize("mechanism", ["nip", "dpar"])
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_a_tenth_of_the_recorded_noise_is_refuted_at_the_claimed_epsilon(mechanism, delta):
    claimed = 1.0
    scores, included, _ = release(mechanism, epsilon=claimed, divide=10.0, m=best_canary_count(delta), seed=0)
    assert epsilon_one_run(scores.numpy(), included.numpy(), delta=delta, seed=0).epsilon > claimed


def test_the_suites_sampler_is_what_is_audited(monkeypatch):
    # An honest record, a Laplace sampler in the suite that draws a tenth of the scale it is asked for: both
    # mechanisms' audits draw through the suite's code, so both catch it.
    honest = nodedp.mechanisms.nip.laplace_noise

    def tenth(shape, *, scale, **kwargs):
        return honest(shape, scale=scale / 10, **kwargs)

    monkeypatch.setattr(nodedp.mechanisms.nip, "laplace_noise", tenth)
    monkeypatch.setattr(nodedp.mechanisms.dp_appr, "laplace_noise", tenth)
    m = best_canary_count(1e-5)
    for mechanism in ("nip", "dpar"):
        scores, included, _ = release(mechanism, epsilon=1.0, m=m, seed=0)
        assert epsilon_one_run(scores.numpy(), included.numpy(), delta=1e-5).epsilon > 1.0


def test_nip_gnns_unscaled_eq11_budgets_are_refuted_at_the_paper_epsilon_a():
    # On D + 1 disjoint edges every node's only neighbour has degree 1, so Eq. 11 gives β = D to all: the
    # worst case (a star of them) costs D·ε_A, not Theorem 3's ε_A. The reference record charges it; the audit
    # refutes the paper's ε_A and stays below the charge.
    degree = 4
    pairs = torch.arange(2 * (degree + 1)).view(-1, 2).T
    matching = torch.cat([pairs, pairs.flip(0)], dim=1)
    beta = nip_budget_weights(matching, num_nodes=2 * (degree + 1), ranks=torch.ones(10), max_degree=degree)
    largest = sorted(beta.tolist(), reverse=True)[: degree + 1]
    assert largest == [float(degree)] * (degree + 1)
    record = nip_aggregation_record(
        epsilon_a=1.0,
        max_degree=degree,
        budget_scheme="paper",
        largest_budget_weights=largest,
        worst_case_ratio_before_scaling=float(degree),
        budget_scale=1.0,
        reference=True,
    )
    scores, included = laplace_release_scores(record, m=best_canary_count(0.0), seed=0)
    bound = epsilon_one_run(scores.numpy(), included.numpy(), delta=0.0).epsilon
    assert record.params["epsilon_a"] < bound <= record.pure_epsilon == pytest.approx(degree)


def test_the_records_are_found_in_real_ledgers_and_others_refused():
    nap = nip_aggregation_record(
        epsilon_a=1.0,
        max_degree=DEGREE,
        budget_scheme="uniform",
        largest_budget_weights=[1.0] * (DEGREE + 1),
        worst_case_ratio_before_scaling=1.0,
        budget_scale=1.0,
    )
    nip = Ledger(
        level="node",
        target_epsilon=3.0,
        target_delta=0.0,
        mechanisms=(
            nip_edge_record(epsilon_b=1.0, s=min_keep_parameter(1.0, DEGREE), max_degree=DEGREE),
            nap,
            nip_label_record(epsilon_c=1.0, num_classes=4),
        ),
    )
    assert laplace_records(nip) == [nap]
    selection, values = dp_appr_em_records(option="em1", epsilon=0.5, k=K, m=ROWS, clip=CLIP, epsilon_value=1.0)
    em1 = Ledger(level="node", target_epsilon=10.0, target_delta=1e-5, mechanisms=(selection, values))
    assert laplace_records(em1) == [values]
    em0 = Ledger(
        level="node",
        target_epsilon=10.0,
        target_delta=1e-5,
        mechanisms=dp_appr_em_records(option="em0", epsilon=0.5, k=K, m=ROWS, clip=CLIP),
    )
    public = PublicInputs(dataset="toy", num_nodes=50, num_train=10, num_features=4, num_classes=3)
    spec = RunSpec(dataset="toy", method="edgerand", seed=0, target_epsilon=1.0, target_delta=0.0)
    assert laplace_records(em0) == [] and laplace_records(plan_edgerand(public, spec, None).ledger) == []
    with pytest.raises(ValueError, match="dp_appr_em_select"):
        laplace_release_scores(selection, m=10, seed=0)


def test_bad_arguments_are_refused_naming_them():
    nip = {"laplace_scale_at_epsilon_a": 2.0, "max_degree": 1, "largest_budget_weights": [1.0, 1.0], "m": 10}
    dpar = {"laplace_scale": 1.0, "clip": 0.1, "rows": 2, "k": 2, "m": 10}
    for name, value in [
        ("laplace_scale_at_epsilon_a", 0.0),
        ("laplace_scale_at_epsilon_a", float("inf")),
        ("max_degree", 0),
        ("largest_budget_weights", [1.0]),
        ("largest_budget_weights", [1.0, -1.0]),
        ("largest_budget_weights", "11"),
        ("m", 1),
        ("m", True),
    ]:
        with pytest.raises(ValueError, match=rf"^{name}\b"):
            nip_aggregation_release_scores(**{**nip, name: value}, seed=0)
    for name, value in [("laplace_scale", -1.0), ("clip", float("nan")), ("rows", 0), ("k", 1.5), ("m", 0)]:
        with pytest.raises(ValueError, match=rf"^{name}\b"):
            dp_appr_values_release_scores(**{**dpar, name: value}, seed=0)
