"""One audited run end to end on the tiny graph: canaries planted, DP-MLP trained once, every canary scored."""

from __future__ import annotations

import pytest
import torch

from nodedp.audit.run import audit_run, canary_scores
from nodedp.methods import get_method
from nodedp.methods.base import RunSpec


def spec(method: str, epsilon: float) -> RunSpec:
    return RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=epsilon, target_delta=1e-3)


def test_a_correct_dp_mlp_stays_below_its_ledger_epsilon(tiny_inputs):
    hp = get_method("dp-mlp").parse_hparams({"epochs": 5, "batch_size": 32})
    result = audit_run(tiny_inputs, spec("dp-mlp", 2.0), hp, method="dp-mlp", degree_bound=8, m=60, seed=1)
    assert result.canaries == 60 and 0 < result.included < 60
    assert 1.9 < result.claimed_epsilon <= 2.0 and result.delta == pytest.approx(1e-3)
    assert 0.0 <= result.one_run.epsilon <= result.claimed_epsilon and not result.violated
    assert 0.0 <= result.auc <= 1.0 and 0.0 <= result.test_accuracy <= 1.0
    row = result.as_dict()
    assert row["epsilon_lower_one_run"] == result.one_run.epsilon and row["violated"] is False


def test_methods_without_an_epsilon_or_with_structure_are_refused(tiny_inputs):
    with pytest.raises(ValueError, match="not private"):
        audit_run(tiny_inputs, spec("mlp", float("inf")), get_method("mlp").parse_hparams({}), method="mlp",
                  degree_bound=8, m=20)
    with pytest.raises(ValueError, match="structure artifacts"):
        audit_run(tiny_inputs, spec("dp-gcn", 1.0), get_method("dp-gcn").parse_hparams({}), method="dp-gcn",
                  degree_bound=8, m=20)


def test_a_canary_scores_the_log_probability_of_its_own_label():
    logits = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 5.0]])
    scores = canary_scores(logits, torch.tensor([1, 2]), torch.tensor([1, 1]))
    expected = torch.log_softmax(logits, dim=1)[[1, 2], [1, 1]]
    assert torch.allclose(scores, expected) and scores[1] > scores[0]
    with pytest.raises(ValueError, match="do not cover"):
        canary_scores(logits, torch.tensor([3]), torch.tensor([0]))
