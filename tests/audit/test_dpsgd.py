"""The white-box DP-SGD release audit: a Dirac canary over independent simulated runs of the recorded noise; a
correct accounting is never refuted, DPAR's q'·ε claim for noise sized at ε on its q'-sample is."""

from __future__ import annotations

import math

import pytest

from nodedp.accounting.events import epsilon_of, subsampled_gaussian_event
from nodedp.audit.dpsgd import dpsgd_records, dpsgd_release_scores
from nodedp.audit.statistics import attack_auc, clopper_pearson_epsilon

DELTA = 1e-4
RUNS = 20000


def bound(scores, included, delta=DELTA) -> float:
    return clopper_pearson_epsilon(scores.numpy(), included.numpy(), delta=delta).epsilon


def test_an_included_canary_adds_its_sampled_steps_and_an_excluded_one_nothing():
    # Almost no noise: the score is the number of steps that drew the canary (in units of σ/C = z).
    z = 1e-6
    scores, included = dpsgd_release_scores(noise_multiplier=z, sampling_rate=0.2, steps=50, runs=4000, seed=0)
    counts = scores * z
    assert counts[~included].abs().max() < 1e-3
    assert counts[included].round().sub(counts[included]).abs().max() < 1e-3
    assert counts[included].mean() == pytest.approx(10.0, rel=0.05)  # T·γ
    # A node sample of rate q': only that share of the included canaries is ever drawn.
    scores, included = dpsgd_release_scores(
        noise_multiplier=z, sampling_rate=1.0, steps=5, node_sample_rate=0.1, runs=4000, seed=1
    )
    drawn = (scores[included] * z > 0.5).float().mean()
    assert drawn == pytest.approx(0.1, abs=0.02)


@pytest.mark.parametrize(("z", "rate", "steps"), [(0.7, 0.05, 200), (1.0, 0.1, 100), (3.0, 1.0, 10)])
def test_a_correctly_accounted_release_is_never_refuted(z, rate, steps):
    # The bound stays below the accountant's ε of the same mechanism (RDP, an upper bound on the true ε).
    claimed = epsilon_of(subsampled_gaussian_event(noise_multiplier=z, sampling_rate=rate, steps=steps), delta=DELTA)
    for seed in range(3):
        scores, included = dpsgd_release_scores(
            noise_multiplier=z, sampling_rate=rate, steps=steps, runs=RUNS, seed=seed
        )
        assert bound(scores, included) <= claimed


def test_noise_sized_on_the_node_sample_and_claimed_times_q_is_refuted():
    # DPAR's reference rule: DP-SGD sized for ε/q' at δ/q' on a q'-node sample, the run claiming ε at δ.
    q, claimed, delta = 0.09, 1.0, 5e-3
    rate, steps = 0.3, 600

    def z_for(target: float) -> float:  # the multiplier whose ε on the sample is target at δ/q'
        low, high = 0.3, 50.0
        for _ in range(60):
            mid = math.sqrt(low * high)
            event = subsampled_gaussian_event(noise_multiplier=mid, sampling_rate=rate, steps=steps)
            low, high = (mid, high) if epsilon_of(event, delta=delta / q) > target else (low, mid)
        return high

    z = z_for(claimed / q)
    scores, included = dpsgd_release_scores(
        noise_multiplier=z, sampling_rate=rate, steps=steps, node_sample_rate=q, runs=RUNS, seed=0
    )
    assert bound(scores, included, delta=delta) > claimed
    assert attack_auc(scores.numpy(), included.numpy()) < 0.6  # 91% of the included canaries were never sampled


def test_the_ledgers_dp_sgd_record_is_found_and_bad_settings_are_refused():
    class Record:
        def __init__(self, kind, **params):
            self.kind, self.params = kind, params

    class Ledger:
        mechanisms = (
            Record("gaussian", mechanism="nap"),
            Record("subsampled_gaussian", noise_std=2.0, clip_norm=1.0, sampling_rate=0.1, steps=5),
        )

    assert [r.params["noise_std"] for r in dpsgd_records(Ledger())] == [2.0]
    with pytest.raises(ValueError, match="node_sample_rate"):
        dpsgd_release_scores(noise_multiplier=1.0, sampling_rate=0.1, steps=5, node_sample_rate=0.0, runs=10, seed=0)
    with pytest.raises(ValueError, match="runs"):
        dpsgd_release_scores(noise_multiplier=1.0, sampling_rate=0.1, steps=5, runs=1, seed=0)


def test_a_canary_of_d_occurrences_moves_its_own_example_and_d_minus_1_others_by_2c():
    # Almost no noise: with the node, its own draws and the others' count +1 each; without it, the others -1.
    z, d, rate, steps = 1e-6, 4, 0.2, 50
    scores, included = dpsgd_release_scores(
        noise_multiplier=z, sampling_rate=rate, steps=steps, max_occurrences=d, runs=4000, seed=0
    )
    counts = scores * z
    assert counts[~included].max() < 1e-3 and counts[~included].mean() == pytest.approx(-(d - 1) * steps * rate, 0.05)
    assert counts[included].mean() == pytest.approx(d * steps * rate, rel=0.05)
    with pytest.raises(ValueError, match="max_occurrences"):
        dpsgd_release_scores(noise_multiplier=1.0, sampling_rate=0.1, steps=5, max_occurrences=0, runs=10, seed=0)


def _planned_ledger(name: str, epsilon: float):
    """The ledger a run of ``name`` (a method id or its reference mode) plans on a csbm-homophilous-sized graph."""
    from nodedp.config.variants import resolve_method
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.plans import PublicInputs, plan_run

    public = PublicInputs(dataset="csbm-homophilous", num_nodes=3000, num_train=2250, num_features=32, num_classes=5)
    base, hparams = resolve_method({}, name)
    info = get_method(base)
    spec = RunSpec(dataset=public.dataset, method=name, seed=0, target_epsilon=epsilon, target_delta=DELTA)
    return plan_run(info, public, spec, info.parse_hparams(hparams)).ledger


def _release_bound(ledger, *, occurrences: bool = True) -> float:
    params = dpsgd_records(ledger)[0].params
    scores, included = dpsgd_release_scores(
        noise_multiplier=params["noise_std"] / params["clip_norm"],
        sampling_rate=params["sampling_rate"],
        steps=int(params["steps"]),
        node_sample_rate=ledger.node_sample_rate,
        max_occurrences=int(params["max_occurrences"]) if occurrences else 1,
        runs=RUNS,
        seed=0,
    )
    delta = ledger.claim.delta if ledger.claim is not None else DELTA
    return bound(scores, included, delta=delta)


@pytest.mark.parametrize("method", ["dpar-em0", "dpar-gm", "dpdgc-fast"])
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_a_suite_accounted_occurrence_release_is_never_refuted(method, epsilon):
    ledger = _planned_ledger(method, epsilon)
    assert dpsgd_records(ledger)[0].kind == "poisson_occurrence_gaussian"
    assert _release_bound(ledger) <= ledger.composed()[0]


@pytest.mark.parametrize("method", ["dpar-em0@paper", "dpar-em1@paper", "dpar-gm@paper"])
def test_dpars_reference_dp_sgd_charged_for_one_example_is_refuted_by_the_canary_of_d_occurrences(method):
    """DPAR's paper sizes its DP-SGD for one example of sensitivity C; a node occurs in d = max_rows + 2 examples
    (its own and d − 1 others moved by 2C each), so the claimed ε = 1 (actual ≈ 160) is refuted, while a canary of
    one occurrence is not."""
    ledger = _planned_ledger(method, 1.0)
    assert ledger.claim.epsilon == 1.0 and ledger.actual_claim_epsilon() > 100
    assert _release_bound(ledger) > 1.0
    assert _release_bound(ledger, occurrences=False) < 1.0


def test_a_fixed_size_canary_counts_its_examples_in_each_batch_plus_with_the_node_and_minus_without():
    from nodedp.audit.dpsgd import fixed_size_release_scores

    z, n, m, d, steps = 1e-6, 100, 10, 4, 30
    scores, included = fixed_size_release_scores(
        noise_multiplier=z, num_examples=n, batch_size=m, steps=steps, max_occurrences=d, runs=4000, seed=0
    )
    counts = scores * z
    expected = steps * d * m / n  # T · E[Hypergeometric(N, d, m)]
    assert counts[included].mean() == pytest.approx(expected, rel=0.05)
    assert counts[~included].mean() == pytest.approx(-expected, rel=0.05) and counts[~included].max() < 1e-3
    with pytest.raises(ValueError, match="must not exceed num_examples"):
        fixed_size_release_scores(
            noise_multiplier=1.0, num_examples=5, batch_size=6, steps=1, max_occurrences=1, runs=10, seed=0
        )
    with pytest.raises(ValueError, match="max_occurrences"):
        fixed_size_release_scores(
            noise_multiplier=1.0, num_examples=5, batch_size=2, steps=1, max_occurrences=0, runs=10, seed=0
        )


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_dp_gnns_fixed_size_release_is_found_and_never_refuted_when_suite_accounted(epsilon):
    from nodedp.audit.dpsgd import fixed_size_release_scores

    ledger = _planned_ledger("dp-gcn", epsilon)
    record = dpsgd_records(ledger)[0]
    assert record.kind == "hypergeometric_gaussian"
    params = record.params
    scores, included = fixed_size_release_scores(
        noise_multiplier=params["noise_std"] / params["clip_norm"],
        num_examples=params["num_examples"],
        batch_size=params["batch_size"],
        steps=int(params["steps"]),
        max_occurrences=int(params["max_occurrences"]),
        runs=RUNS,
        seed=1,
    )
    assert bound(scores, included) <= ledger.composed()[0]


def _mixture_record(kind: str, **params):
    from types import SimpleNamespace

    return SimpleNamespace(name=f"dp-sgd:{kind}", kind=kind, params=params)


# The implementation spec's settings (§1.8, §2.5): ledger ε 2.618 (SparseGNN, δ = 1e-5) and 5.766 (HeterPoisson).
_MIXTURES = [
    (
        _mixture_record(
            "structured_gaussian",
            sampling_rate=0.01,
            edge_keep=0.1,
            radius=1,
            out_degree_bound=5,
            union_factor=2,
            noise_multiplier=2.0,
            steps=1000,
        ),
        2.0,
        2.618,
    ),
    (_mixture_record("heter_poisson_gaussian", sampling_rate=0.2, neighbours=1, degree_bound=20000), 1.65, 5.766),
]


@pytest.mark.parametrize(("record", "z", "ledger_epsilon"), _MIXTURES)
def test_a_mixture_release_stays_below_its_ledger_epsilon_and_a_tenth_of_its_noise_is_caught(record, z, ledger_epsilon):
    from nodedp.audit.dpsgd import mixture_law, mixture_release_scores

    shifts, weights, symmetric = mixture_law(record)
    assert weights.sum() == pytest.approx(1.0)
    steps = int(record.params.get("steps", 45))

    def audited(noise_multiplier: float) -> float:
        scores, included = mixture_release_scores(
            shifts=shifts,
            weights=weights,
            symmetric=symmetric,
            noise_multiplier=noise_multiplier,
            steps=steps,
            runs=RUNS,
            seed=0,
        )
        return bound(scores, included, delta=1e-5)

    assert 0 <= audited(z) <= ledger_epsilon
    assert audited(z / 10) > ledger_epsilon


def test_mixture_kinds_are_dp_sgd_records_and_every_mixture_is_audited():
    from nodedp.accounting import Ledger, MechanismRecord
    from nodedp.audit.releases import covering

    params = {**_MIXTURES[0][0].params, "noise_std": 2.0, "clip_norm": 1.0, "relation": "substitution"}
    record = MechanismRecord(
        name="dp-sgd:sparsegnn",
        kind="structured_gaussian",
        touches=("features", "labels", "edges"),
        params=params,
        sensitivity=22.0,
        sensitivity_reason="r",
        dp_event=None,
    )
    ledger = Ledger(level="node", target_epsilon=3.0, target_delta=1e-5, mechanisms=(record,), accountant="pld")
    assert dpsgd_records(ledger) == [record]
    assert covering(ledger, record) is not None and covering(ledger, record).name == "dpsgd"
