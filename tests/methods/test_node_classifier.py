"""The one classifier fit shared by every method: its optional hooks are checked by name."""

from __future__ import annotations

import pytest

from nodedp.methods.node_classifier import TrainHooks, fit_node_classifier


def test_a_misspelt_hook_is_refused_before_any_training():
    # `train_label` for `train_labels` would otherwise train on the true labels without a word.
    args = dict.fromkeys(
        ("inputs_of", "y", "split", "spec", "optim", "batches", "privacy", "ledger", "generator", "device")
    )
    with pytest.raises(TypeError, match=r"unknown hook\(s\) \['train_label'\]; valid: .*'train_labels'"):
        fit_node_classifier(None, **args, train_label=None)
    assert "train_labels" in TrainHooks.__annotations__
