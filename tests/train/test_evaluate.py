from __future__ import annotations

import pytest
import torch
from torch import nn

from nodedp.train import evaluate, majority_class_accuracy, metrics_from_logits


def _logits_for(pred: list[int], classes: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(pred), classes).float()


def test_hand_computed_example() -> None:
    y = torch.tensor([0, 0, 1, 1, 2])
    pred = [0, 1, 1, 1, 0]
    # F1 = 2tp / (#pred + #true): class 0: 2/4, class 1: 4/5, class 2: 0/1.
    metrics = metrics_from_logits(_logits_for(pred, 3), y)
    assert metrics["accuracy"] == pytest.approx(3 / 5)
    assert metrics["macro_f1"] == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_classes_only_predicted_count_and_absent_classes_do_not() -> None:
    y = torch.tensor([0, 0])
    # class 0: 2·1/(1+2) = 2/3; class 1 (predicted, not true): 0; classes 2-4 absent.
    metrics = metrics_from_logits(_logits_for([0, 1], 5), y)
    assert metrics["macro_f1"] == pytest.approx((2 / 3 + 0.0) / 2)


def test_perfect_predictions() -> None:
    y = torch.tensor([2, 0, 1, 2])
    assert metrics_from_logits(_logits_for(y.tolist(), 4), y) == {
        "accuracy": 1.0,
        "macro_f1": 1.0,
        "predicted_classes": 3,
    }


def test_a_constant_predictor_predicts_one_class_whatever_its_accuracy() -> None:
    y = torch.tensor([1, 1, 1, 0, 2])
    constant = metrics_from_logits(_logits_for([1] * 5, 3), y)
    assert constant["predicted_classes"] == 1 and constant["accuracy"] == pytest.approx(3 / 5)
    assert metrics_from_logits(_logits_for([1, 1, 1, 0, 0], 3), y)["predicted_classes"] == 2


def test_majority_class_accuracy_is_the_share_of_the_training_sets_most_frequent_class() -> None:
    train = torch.tensor([2, 2, 0, 1, 2, 0])
    test = torch.tensor([2, 0, 0, 1, 2, 1, 1, 2])
    assert majority_class_accuracy(train, test) == pytest.approx(3 / 8)  # class 2: 3 of 8 test labels
    # It is what the constant predictor of that class scores, and ties go to the smallest class id.
    assert majority_class_accuracy(train, test) == metrics_from_logits(_logits_for([2] * 8, 3), test)["accuracy"]
    assert majority_class_accuracy(torch.tensor([1, 0]), test) == pytest.approx(2 / 8)
    with pytest.raises(ValueError, match="class ids"):
        majority_class_accuracy(torch.tensor([-1, 0]), test)
    with pytest.raises(ValueError, match="needs training labels"):
        majority_class_accuracy(torch.tensor([], dtype=torch.long), test)


def test_shape_errors() -> None:
    with pytest.raises(ValueError, match="logits"):
        metrics_from_logits(torch.zeros(3, 2), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="zero examples"):
        metrics_from_logits(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))


def test_evaluate_uses_eval_mode_chunks_and_restores_mode() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 3))
    x, y = torch.randn(23, 4), torch.randint(0, 3, (23,))
    model.train()
    full = evaluate(model, x, y)
    assert model.training
    with torch.no_grad():
        expected = metrics_from_logits(model.eval()(x), y)  # dropout off
    model.train()
    assert full == expected
    assert evaluate(model, x, y, batch_size=5) == pytest.approx(full)


class _TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(2, 3)

    def forward(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.a(inputs[0]) + self.b(inputs[1])


def test_evaluate_chunks_a_tuple_of_inputs_together() -> None:
    torch.manual_seed(0)
    model = _TwoInputs()
    x1, x2, y = torch.randn(23, 4), torch.randn(23, 2), torch.randint(0, 3, (23,))
    with torch.no_grad():
        expected = metrics_from_logits(model((x1, x2)), y)
    assert evaluate(model, (x1, x2), y) == expected
    assert evaluate(model, (x1, x2), y, batch_size=5) == pytest.approx(expected)
    # Chunks must pair rows of the same examples: shuffling one input changes the result.
    assert evaluate(model, (x1, x2.flip(0)), y, batch_size=5) != expected
