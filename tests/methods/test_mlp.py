from __future__ import annotations

import pytest

from nodedp.methods import RunSpec, get_method


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
