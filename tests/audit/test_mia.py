"""The TSTF membership-inference attack: partition, features, the subgraph/full-graph protocol, and the attack's
verdict on an overfitting MLP (clearly above chance) against a DP-MLP at small ε (within chance's band)."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats
from torch_geometric.data import Data

from nodedp.accounting import Ledger
from nodedp.audit.mia import partition_nodes, sorted_posteriors, tstf_attack
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import Split, random_split


def method_train(inputs: RunInputs, method: str, epsilon: float, seed: int, **hparams):
    """``train`` for tstf_attack: one run of a registered method, as tests/audit/test_run.py builds it."""
    info = get_method(method)
    hp = info.parse_hparams(hparams)
    spec = RunSpec(
        dataset="csbm-tiny",
        method=method,
        seed=seed,
        target_epsilon=epsilon,
        target_delta=1e-3 if math.isfinite(epsilon) else 0.0,
    )
    return lambda graph, split: info.run(RunInputs(graph=graph, split=split, num_classes=inputs.num_classes), spec, hp)


@pytest.fixture(scope="module")
def noisy_inputs(tiny_inputs) -> RunInputs:
    """The tiny graph with 128 pure-noise feature columns: a wide MLP memorises its 75 training nodes from them
    (train accuracy 1) without learning anything that carries over (test accuracy near chance)."""
    graph = tiny_inputs.graph
    noise = torch.randn(graph.num_nodes, 128, generator=torch.Generator().manual_seed(0))
    graph = Data(x=torch.cat([graph.x, noise], dim=1), y=graph.y, edge_index=graph.edge_index)
    return RunInputs(graph=graph, split=tiny_inputs.split, num_classes=tiny_inputs.num_classes)


def chance_band(n: int, level: float = 0.99) -> float:
    """Half-width of the two-sided ``level`` normal band of an accuracy over n fair coin flips (Binomial(n, ½)/n)."""
    return float(stats.norm.ppf(0.5 + level / 2)) * math.sqrt(0.25 / n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_overfitting_mlp_leaks_membership(noisy_inputs, seed):
    train = method_train(
        noisy_inputs, "mlp", math.inf, seed, epochs=300, hidden_dim=256, lr=0.01, weight_decay=0.0, dropout=0.0
    )
    result = tstf_attack(noisy_inputs.graph, noisy_inputs.split, train=train, seed=seed)
    assert result.members == result.nonmembers == 75 and result.k == 3
    assert result.target_train_accuracy - result.target_test_accuracy > 0.4  # the premise: it overfits
    band = chance_band(result.members + result.nonmembers)  # ≈ 0.105 for 150 nodes
    assert result.accuracy > 0.5 + band + 0.15 and result.auc > 0.85  # measured 0.92-0.97, AUC ≥ 0.97
    assert result.shadow_train_accuracy > 0.8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_dp_mlp_at_small_epsilon_is_at_chance(noisy_inputs, seed):
    # Same data and model size as above, DP-SGD at ε = 0.5: the attack should be a fair coin on the 150 nodes.
    train = method_train(noisy_inputs, "dp-mlp", 0.5, seed, epochs=100, hidden_dim=256, lr=0.01, batch_size=32)
    result = tstf_attack(noisy_inputs.graph, noisy_inputs.split, train=train, seed=seed)
    band = chance_band(result.members + result.nonmembers)
    assert abs(result.accuracy - 0.5) <= band  # measured 0.45-0.56
    assert result.accuracy <= math.exp(0.5) / (1 + math.exp(0.5))  # below what (0.5, δ)-DP could allow anyway
    assert set(result.as_dict()) >= {
        "accuracy",
        "auc",
        "members",
        "nonmembers",
        "shadow_train_accuracy",
        "target_test_accuracy",
    }


def test_the_partition_is_four_balanced_disjoint_seeded_parts(tiny_inputs):
    split = tiny_inputs.split
    labelled = torch.cat([split.train, split.val, split.test])
    parts = partition_nodes(split, seed=0)
    quarters = [parts.target_in, parts.target_out, parts.shadow_in, parts.shadow_out]
    assert [q.numel() for q in quarters] == [labelled.numel() // 4] * 4
    everything = torch.cat(quarters)
    assert torch.unique(everything).numel() == everything.numel()  # disjoint
    assert bool(torch.isin(everything, labelled).all())
    assert all(q.dtype == torch.int64 and bool((q[1:] > q[:-1]).all()) for q in quarters)  # sorted as Split wants
    again, other = partition_nodes(split, seed=0), partition_nodes(split, seed=1)
    assert all(
        torch.equal(a, b)
        for a, b in zip(quarters, [again.target_in, again.target_out, again.shadow_in, again.shadow_out], strict=True)
    )
    assert not torch.equal(parts.target_in, other.target_in)
    target = parts.target_split("inductive", 7)
    assert torch.equal(target.train, parts.target_in) and torch.equal(target.test, parts.target_out)
    assert target.val.numel() == 0 and target.setting == "inductive" and target.seed == 7


def test_nodes_outside_the_split_are_never_in_a_part():
    split = Split(
        train=torch.arange(0, 20),
        val=torch.empty(0, dtype=torch.int64),
        test=torch.arange(30, 50),
        setting="transductive",
        seed=0,
    )
    parts = partition_nodes(split, seed=3)
    everything = torch.cat([parts.target_in, parts.target_out, parts.shadow_in, parts.shadow_out])
    assert everything.numel() == 40 and not bool(((everything >= 20) & (everything < 30)).any())


def test_sorted_posteriors_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0), math.log(6.0)], [math.log(2.0), 0.0, math.log(2.0)]])
    # softmax: [1, 3, 6]/10 and [2, 1, 2]/5
    expected = torch.tensor([[0.6, 0.3, 0.1], [0.4, 0.4, 0.2]], dtype=torch.float64)
    assert torch.allclose(sorted_posteriors(logits), expected)
    assert torch.allclose(sorted_posteriors(logits, k=2), expected[:, :2])
    assert torch.allclose(sorted_posteriors(logits, k=None), expected)
    assert sorted_posteriors(logits, k=10).shape == (2, 3)  # min(C, k)
    with pytest.raises(ValueError, match="k must be"):
        sorted_posteriors(logits, k=0)
    with pytest.raises(ValueError, match="classes"):
        sorted_posteriors(torch.zeros(4))


def fake_method(calls: list, leak: float = 10.0):
    """A "method" whose logits give its training nodes their own label with margin ``leak`` and every other node
    none: membership is fully visible. Records the graphs and splits it trains on and is queried with."""

    def train(graph: Data, split: Split) -> RunResult:
        calls.append(("train", graph, split))

        def predict(other: Data, parts: Split | None = None) -> torch.Tensor:
            assert parts is not None and parts.setting == "transductive"  # the full graph: no part drops edges
            calls.append(("predict", other, split))
            logits = torch.zeros(other.num_nodes, 3)
            logits[split.train, other.y[split.train]] = leak
            return logits

        return RunResult(
            val={"accuracy": None},
            test={"accuracy": 1 / 3},
            ledger=Ledger.non_private(),
            train_seconds=0.0,
            predict=predict,
        )

    return train


def test_trains_on_the_members_subgraph_and_queries_the_full_graph(tiny_inputs):
    graph, calls = tiny_inputs.graph, []
    result = tstf_attack(graph, tiny_inputs.split, train=fake_method(calls), seed=0)
    assert result.accuracy == 1.0 and result.auc == 1.0 and result.shadow_train_accuracy == 1.0
    assert result.target_train_accuracy == 1.0 and result.target_test_accuracy == pytest.approx(1 / 3)
    trained = [(g, s) for kind, g, s in calls if kind == "train"]
    queried = [g for kind, g, _ in calls if kind == "predict"]
    assert len(trained) == 2 and len(queried) == 2 and all(g is graph for g in queried)  # TSTF: the full graph
    (target_graph, target), (_, shadow) = trained
    assert not bool(torch.isin(torch.cat([target.train, target.test]), torch.cat([shadow.train, shadow.test])).any())
    assert target.setting == tiny_inputs.split.setting and target.val.numel() == 0
    assert target_graph.num_nodes == graph.num_nodes and torch.equal(target_graph.x, graph.x)
    src, dst = target_graph.edge_index
    inside = (torch.isin(src, target.train) & torch.isin(dst, target.train)) | (
        torch.isin(src, target.test) & torch.isin(dst, target.test)
    )
    assert bool(inside.all()) and 0 < target_graph.edge_index.size(1) < graph.edge_index.size(1)


def test_input_validation(tiny_inputs):
    graph, split = tiny_inputs.graph, tiny_inputs.split
    train = fake_method([])
    small = Split(
        train=torch.arange(10),
        val=torch.empty(0, dtype=torch.int64),
        test=torch.arange(10, 15),
        setting="transductive",
        seed=0,
    )
    with pytest.raises(ValueError, match="too few labelled nodes"):
        tstf_attack(graph, small, train=train, seed=0)
    with pytest.raises(ValueError, match="out of range"):
        tstf_attack(graph, random_split(graph.num_nodes + 5, seed=0), train=train, seed=0)
    for kwargs, message in [
        ({"seed": -1}, "seed"),
        ({"seed": 0, "k": 0}, "k must"),
        ({"seed": 0, "attack_epochs": 0}, "attack_epochs"),
        ({"seed": 0, "attack_lr": 0.0}, "attack_lr"),
    ]:
        with pytest.raises(ValueError, match=message):
            tstf_attack(graph, split, train=train, **kwargs)
    with pytest.raises(ValueError, match="callable"):
        tstf_attack(graph, split, train=None, seed=0)

    def no_predict(g, s):
        return RunResult(val={}, test={"accuracy": 0.5}, ledger=Ledger.non_private(), train_seconds=0.0)

    with pytest.raises(ValueError, match="no inference"):
        tstf_attack(graph, split, train=no_predict, seed=0)

    def short_predict(g, s):
        return RunResult(
            val={},
            test={"accuracy": 0.5},
            ledger=Ledger.non_private(),
            train_seconds=0.0,
            predict=lambda other, parts=None: torch.zeros(5, 3),
        )

    with pytest.raises(ValueError, match="expected logits"):
        tstf_attack(graph, split, train=short_predict, seed=0)
