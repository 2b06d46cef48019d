"""Node-level membership inference by a shadow model, TSTF style (NIP-GNN §5.2.3, Table 4).

``tstf_attack``: target and shadow models trained on member subgraphs, queried on the full graph; an attack MLP on
the shadow's sorted posteriors is scored on the target's members against as many non-members (50% is chance).
Partition, features and attack model: docs/design/audit-internals.md.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from nodedp.audit.statistics import attack_auc
from nodedp.contract.base import RunResult
from nodedp.data.splits import Split, remove_cross_split_edges, validate_split

__all__ = ["MiaPartition", "MiaResult", "partition_nodes", "sorted_posteriors", "training_graph", "tstf_attack"]

_TINY = torch.finfo(torch.float64).tiny  # log floor for posteriors that underflowed to 0
MIN_PART = 4  # nodes per quarter: fewer leave the attack nothing to learn from or be scored on


@dataclass(frozen=True)
class MiaPartition:
    """Four disjoint, equally large, sorted int64 parts of the labelled nodes."""

    target_in: Tensor
    target_out: Tensor
    shadow_in: Tensor
    shadow_out: Tensor

    def target_split(self, setting: str, seed: int) -> Split:
        return _split(self.target_in, self.target_out, setting, seed)

    def shadow_split(self, setting: str, seed: int) -> Split:
        return _split(self.shadow_in, self.shadow_out, setting, seed)


@dataclass(frozen=True)
class MiaResult:
    accuracy: float  # attack accuracy on the target's members vs as many non-members, at threshold 0.5
    auc: float  # AUC of the attack model's scores on the same nodes
    members: int
    nonmembers: int
    shadow_train_accuracy: float  # the attack model on its own (shadow) training data
    target_test_accuracy: float  # the target model's RunResult.test accuracy (its non-members, training graph)
    target_train_accuracy: float  # the target model's accuracy on its members, queried on the full graph
    k: int  # posterior entries the attack read
    seed: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _split(members: Tensor, nonmembers: Tensor, setting: str, seed: int) -> Split:
    return Split(train=members, val=torch.empty(0, dtype=torch.int64), test=nonmembers, setting=setting, seed=seed)


def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def partition_nodes(split: Split, *, seed: int) -> MiaPartition:
    """Shuffle the nodes of ``split``'s parts with a generator seeded by ``seed`` and cut them into target in/out
    and shadow in/out quarters of ⌊n/4⌋ nodes each (the ≤ 3 left over are dropped), each part sorted."""
    _check_int(seed, "seed", 0)
    validate_split(split, where="tstf_attack split")
    labelled = torch.cat([split.train, split.val, split.test]).sort().values
    quarter = labelled.numel() // 4
    if quarter < MIN_PART:
        raise ValueError(
            f"too few labelled nodes for four parts of at least {MIN_PART}: the split holds "
            f"{labelled.numel()} (train ∪ val ∪ test), need {4 * MIN_PART}"
        )
    order = labelled[torch.randperm(labelled.numel(), generator=torch.Generator().manual_seed(seed))]
    parts = [order[i * quarter : (i + 1) * quarter].sort().values for i in range(4)]
    return MiaPartition(*parts)


def training_graph(graph: Data, split: Split) -> Data:
    """``graph`` with only the edges inside ``split.train`` and inside ``split.test`` (the members' subgraph and
    the non-members' apart); every node keeps its id so that a model trained on it can be queried on ``graph``."""
    return Data(x=graph.x, y=graph.y, edge_index=remove_cross_split_edges(graph.edge_index, split))


def sorted_posteriors(logits: Tensor, k: int | None = 3) -> Tensor:
    """Each row's softmax posterior sorted in descending order, its top min(C, ``k``) entries (all C for None)."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or logits.size(1) < 2:
        found = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a [nodes, classes ≥ 2] tensor, got {found}")
    if k is not None:
        _check_int(k, "k", 1)
    probs = torch.softmax(logits.detach().double().cpu(), dim=1)
    top = probs.size(1) if k is None else min(k, probs.size(1))
    return probs.sort(dim=1, descending=True).values[:, :top]


def _query(result: RunResult, graph: Data, who: str, split: Split) -> Tensor:
    """The model's logits for every node of the full graph, checked (TSTF's "test on full graph": the run's
    parts given as a transductive split, so a method whose inference drops cross-part edges reads them all)."""
    if not isinstance(result, RunResult):
        raise ValueError(f"train must return a RunResult, got {type(result).__name__} for the {who} model")
    if result.predict is None:
        raise ValueError(f"the {who} model offers no inference on another graph (RunResult.predict is None)")
    logits = result.predict(graph, dataclasses.replace(split, setting="transductive"))
    if not isinstance(logits, Tensor) or logits.dim() != 2 or logits.size(0) != graph.num_nodes:
        found = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"the {who} model's predict gave {found}, expected logits [{graph.num_nodes}, classes]")
    logits = logits.detach().float().cpu()
    if not bool(torch.isfinite(logits).all()):
        raise ValueError(f"the {who} model's predict gave non-finite logits")
    return logits


def _log_features(posteriors: Tensor) -> Tensor:
    """Log-posteriors: a monotone rescaling that lets a small model tell 1 − 1e-6 (a memorised member) from
    1 − 1e-3, which standardising the raw probabilities squashes together."""
    return posteriors.clamp_min(_TINY).log().float()


def _fit_attack(
    features: Tensor, labels: Tensor, *, hidden: int, epochs: int, lr: float, seed: int
) -> Callable[[Tensor], Tensor]:
    """Train the attack model full batch; returns features -> membership logit (> 0: "member")."""
    generator = torch.Generator().manual_seed(seed)
    features = _log_features(features)
    mean, std = features.mean(dim=0), features.std(dim=0).clamp_min(1e-6)
    dims = [features.size(1), hidden, 1] if hidden > 0 else [features.size(1), 1]
    layers: list[nn.Module] = []
    for fan_in, fan_out in itertools.pairwise(dims):
        linear = nn.Linear(fan_in, fan_out)
        bound = fan_in**-0.5  # torch's default scale, but drawn from our generator
        nn.init.uniform_(linear.weight, -bound, bound, generator=generator)
        nn.init.uniform_(linear.bias, -bound, bound, generator=generator)
        layers += [linear, nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    inputs, targets = (features - mean) / std, labels.float()
    with torch.enable_grad():
        for _ in range(epochs):
            optimizer.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(model(inputs).squeeze(1), targets)
            loss.backward()
            optimizer.step()
    model.eval()
    return lambda x: model((_log_features(x) - mean) / std).squeeze(1).detach()


def tstf_attack(
    graph: Data,
    split: Split,
    *,
    train: Callable[[Data, Split], RunResult],
    seed: int,
    k: int | None = 3,
    attack_hidden: int = 64,
    attack_epochs: int = 300,
    attack_lr: float = 0.01,
) -> MiaResult:
    """Membership inference against the method ``train`` runs, TSTF style (docs/design/audit-internals.md).

    ``train(training_graph, split)`` trains the audited method once and returns its ``RunResult``; it is called
    twice, for the target and the shadow, each with a Split(train=members, val=∅, test=non-members,
    setting=split.setting, seed=split.seed) and its :func:`training_graph`, and must build whatever structure
    artifacts the method needs from the graph it is given. ``seed`` draws the partition and the attack model's
    initial weights; the method's own randomness is ``train``'s."""
    _check_int(seed, "seed", 0)
    if k is not None:
        _check_int(k, "k", 1)
    _check_int(attack_hidden, "attack_hidden", 0)
    _check_int(attack_epochs, "attack_epochs", 1)
    if isinstance(attack_lr, bool) or not isinstance(attack_lr, int | float) or not attack_lr > 0:
        raise ValueError(f"attack_lr must be a number > 0, got {attack_lr!r}")
    if not callable(train):
        raise ValueError(f"train must be callable (graph, split) -> RunResult, got {type(train).__name__}")
    if not isinstance(graph, Data) or graph.x is None or graph.y is None or graph.edge_index is None:
        raise ValueError("graph must be a torch_geometric Data with x, y and edge_index")
    validate_split(split, where="tstf_attack split", num_nodes=graph.num_nodes)
    parts = partition_nodes(split, seed=seed)

    target_split = parts.target_split(split.setting, split.seed)
    shadow_split = parts.shadow_split(split.setting, split.seed)
    target = train(training_graph(graph, target_split), target_split)
    target_logits = _query(target, graph, "target", target_split)
    shadow_logits = _query(train(training_graph(graph, shadow_split), shadow_split), graph, "shadow", shadow_split)

    def labelled(logits: Tensor, members: Tensor, nonmembers: Tensor) -> tuple[Tensor, Tensor]:
        nodes = torch.cat([members, nonmembers])
        is_member = torch.cat([torch.ones_like(members), torch.zeros_like(nonmembers)]).bool()
        return sorted_posteriors(logits[nodes], k), is_member

    shadow_x, shadow_y = labelled(shadow_logits, parts.shadow_in, parts.shadow_out)
    attack = _fit_attack(shadow_x, shadow_y, hidden=attack_hidden, epochs=attack_epochs, lr=float(attack_lr), seed=seed)
    target_x, target_y = labelled(target_logits, parts.target_in, parts.target_out)
    scores = attack(target_x)

    def accuracy(guess: Tensor, truth: Tensor) -> float:
        return float((guess == truth).float().mean())

    y = graph.y.cpu()
    return MiaResult(
        accuracy=accuracy(scores >= 0, target_y),  # logit ≥ 0 ⇔ attack probability ≥ 0.5
        auc=attack_auc(scores.numpy(), target_y.numpy()),
        members=parts.target_in.numel(),
        nonmembers=parts.target_out.numel(),
        shadow_train_accuracy=accuracy(attack(shadow_x) >= 0, shadow_y),
        target_test_accuracy=float(target.test["accuracy"]),
        target_train_accuracy=accuracy(target_logits[parts.target_in].argmax(dim=1), y[parts.target_in]),
        k=shadow_x.size(1),
        seed=seed,
    )
