from __future__ import annotations

import pytest

from nodedp.accounting import verify_ledger_dict
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method


def run(inputs, method: str, epsilon: float):
    info = get_method(method)
    spec = RunSpec(
        dataset="csbm-tiny",
        method=method,
        seed=0,
        target_epsilon=epsilon,
        target_delta=0.0 if epsilon == float("inf") else 1e-4,
    )
    return info.run(inputs, spec, info.parse_hparams({"epochs": 30, "hidden_dim": 16}))


def test_edgerand_is_pure_epsilon_edge_level_randomized_response(tiny_inputs):
    result = run(tiny_inputs, "edgerand", 1.0)
    ledger = result.ledger
    assert ledger.level == "edge" and ledger.composed() == (1.0, 0.0)
    (record,) = ledger.mechanisms
    assert record.kind == "randomized_response" and record.touches == ("edges",)
    assert record.params["flip_probability"] == pytest.approx(1 / (1 + 2.718281828459045))
    assert verify_ledger_dict(ledger.to_dict()) == 1.0


def test_edgerand_trains_on_the_released_graph(tiny_inputs):
    # At huge ε nothing flips: the GCN twin's result. At tiny ε the graph is noise.
    twin = run(tiny_inputs, "gcn", float("inf")).test["accuracy"]
    faithful = run(tiny_inputs, "edgerand", 40.0).test["accuracy"]
    scrambled = run(tiny_inputs, "edgerand", 0.01).test["accuracy"]
    assert faithful == pytest.approx(twin, abs=0.02)
    assert scrambled != faithful
