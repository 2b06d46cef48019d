from __future__ import annotations

import pytest

from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method


def run_dp_mlp(inputs, *, epsilon: float, seed: int, **hparams):
    info = get_method("dp-mlp")
    spec = RunSpec(dataset="csbm-tiny", method="dp-mlp", seed=seed, target_epsilon=epsilon, target_delta=1e-3)
    return info.run(inputs, spec, info.parse_hparams({"epochs": 3, "batch_size": 32, **hparams}))


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_dp_mlp_spends_within_one_percent_below_its_target(tiny_inputs, epsilon):
    result = run_dp_mlp(tiny_inputs, epsilon=epsilon, seed=0)
    spent, delta = result.ledger.composed()
    assert 0.99 * epsilon <= spent <= epsilon
    assert delta == pytest.approx(1e-3)
    (record,) = result.ledger.mechanisms
    assert record.kind == "subsampled_gaussian"
    assert set(record.touches) == {"features", "labels"}
    n_train = tiny_inputs.split.train.numel()
    assert record.params["sampling_rate"] == pytest.approx(32 / n_train)
    assert record.params["sampling"] == "poisson"
    # The noise the engine actually used is σ·C, and it is not zero.
    assert result.details["noise_std"] == pytest.approx(record.params["noise_multiplier"] * record.params["clip_norm"])
    assert result.details["noise_std"] > 0


def test_test_metrics_carry_the_classes_predicted_and_the_majority_class_reference(tiny_inputs):
    import torch

    from nodedp.train import majority_class_accuracy

    result = run_dp_mlp(tiny_inputs, epsilon=1.0, seed=0)
    y, split = tiny_inputs.graph.y, tiny_inputs.split
    classes = int(y.max()) + 1
    assert 1 <= result.test["predicted_classes"] <= classes and 1 <= result.val["predicted_classes"] <= classes
    # the majority class of the training nodes' true labels, scored on the test nodes: no model involved
    assert result.test["majority_accuracy"] == majority_class_accuracy(y[split.train], y[split.test])
    assert result.test["majority_accuracy"] == pytest.approx(
        (y[split.test] == torch.bincount(y[split.train]).argmax()).double().mean().item()
    )


def test_smaller_epsilon_means_more_noise(tiny_inputs):
    low = run_dp_mlp(tiny_inputs, epsilon=0.5, seed=0).details["noise_std"]
    high = run_dp_mlp(tiny_inputs, epsilon=8.0, seed=0).details["noise_std"]
    assert low > high > 0


def test_same_seed_same_metrics_different_seed_different_noise(tiny_inputs):
    a = run_dp_mlp(tiny_inputs, epsilon=2.0, seed=3)
    b = run_dp_mlp(tiny_inputs, epsilon=2.0, seed=3)
    c = run_dp_mlp(tiny_inputs, epsilon=2.0, seed=4)
    assert a.test == b.test and a.val == b.val
    assert (a.test, a.val) != (c.test, c.val)


def test_dp_mlp_reference_mode_spends_its_claim_at_the_papers_delta(tiny_inputs):
    """GAP/ProGAP's DP-MLP baseline is accounted as the suite does (Poisson DP-SGD, RDP): only δ is the papers'
    (10^-digits of N), and the actual ε there is the claimed one."""
    import math

    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    from nodedp.accounting import Ledger, verify_ledger_dict

    claimed = 4.0
    result = run_dp_mlp(tiny_inputs, epsilon=claimed, seed=0, accounting="paper")
    ledger = result.ledger
    n_nodes = tiny_inputs.graph.num_nodes
    paper_delta = 10.0 ** -len(str(n_nodes))
    assert ledger.claim.epsilon == claimed and ledger.claim.delta == paper_delta < 1 / n_nodes
    stored = ledger.to_dict()
    assert Ledger.from_dict(stored) == ledger
    assert verify_ledger_dict(stored) == pytest.approx(stored["epsilon"])
    (record,) = ledger.mechanisms
    sigma, q, steps = (record.params[k] for k in ("noise_multiplier", "sampling_rate", "steps"))
    assert steps == math.ceil(3 / q)  # 3 epochs of Poisson batches of expected size 32
    # Independently: that σ is (claimed, paper δ)-DP for these steps, and no smaller σ would be (calibrated).
    accountant = RdpAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    actual = stored["claim"]["actual_epsilon"]
    assert actual == pytest.approx(accountant.get_epsilon(paper_delta), rel=1e-9)
    assert 0.99 * claimed <= actual <= claimed
    assert result.details["noise_std"] == pytest.approx(sigma * record.params["clip_norm"])
    # The suite mode of the same run carries no claim.
    assert run_dp_mlp(tiny_inputs, epsilon=claimed, seed=0).ledger.claim is None
