"""Privacy plans: a run's ledger as a pure, torch-free function of public inputs.

A planner takes ``PublicInputs`` (what a paper would print about the dataset), the run's ``RunSpec`` and its
hyperparameters, and returns the ``Plan`` the run executes: the ledger before any private data is read. A method
registers its planner as ``MethodInfo.plan``; values no public input gives are passed by the run and read back off
a stated ledger by ``planner.run_supplied``. ``python -m nodedp verify`` re-plans a finished run and compares.
Details: docs/design/methods.md, section `nodedp.plans`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodedp.accounting import Ledger
    from nodedp.contract.base import MethodInfo, RunSpec

__all__ = ["Plan", "PublicInputs", "plan_run", "planner_of"]


@dataclass(frozen=True)
class PublicInputs:
    """What a plan may read: the dataset's public metadata. The training-set size is declared public (its split
    protocol and the node count give it, as the papers print it), and the ledger's relation says so."""

    dataset: str
    num_nodes: int
    num_train: int
    num_features: int
    num_classes: int
    num_edges: int = 0  # as meta.json counts them (an undirected edge twice)
    is_undirected: bool | None = True  # None: not read (a plan that needs it refuses: ``undirected``)
    setting: str = "transductive"  # the split protocol's (inductive: cross-part edges removed)

    def __post_init__(self) -> None:
        if not 0 < self.num_train <= self.num_nodes:
            raise ValueError(
                f"{self.dataset}: need 0 < training nodes ≤ nodes, got {self.num_train} of {self.num_nodes}"
            )

    @classmethod
    def of(cls, meta: Mapping[str, Any], *, num_train: int, setting: str) -> PublicInputs:
        """From a graph's meta.json, its split's training-set size and the split's setting."""
        return cls(
            dataset=meta["name"],
            num_nodes=int(meta["num_nodes"]),
            num_train=int(num_train),
            num_features=int(meta["num_features"]),
            num_classes=int(meta["num_classes"]),
            num_edges=int(meta["num_edges"]),
            is_undirected=bool(meta["is_undirected"]),
            setting=setting,
        )

    @classmethod
    def from_run(cls, inputs: Any, spec: RunSpec, *, direction: bool = False) -> PublicInputs:
        """A run's public inputs (``RunInputs``): the dataset's public metadata (``inputs.meta``, its meta.json:
        node, edge and feature counts, direction) and its split's training-set size and setting; what the plan
        reads, and all it reads. Never a count of the graph in hand, so that a neighbouring graph (a node or an
        edge more or less) gets the same plan, as the ledger's relation states; the graph must only have the
        metadata's feature count (the model's input width). Without ``inputs.meta`` (the audit's graphs with
        canaries, tests) the graph's own sizes stand in; ``direction`` then also reads whether it is undirected
        (a pass over every edge: only for the plans that read it, ``undirected``)."""
        graph, split = inputs.graph, inputs.split
        meta = getattr(inputs, "meta", None)
        if meta is not None:
            if int(graph.x.size(1)) != int(meta["num_features"]):
                raise ValueError(
                    f"{spec.dataset}: the graph has {int(graph.x.size(1))} features, its meta.json "
                    f"{meta['num_features']}; rebuild the graph (`nodedp graph`)"
                )
            return cls.of({**meta, "name": spec.dataset}, num_train=int(split.train.numel()), setting=split.setting)
        return cls(
            dataset=spec.dataset,
            num_nodes=int(graph.num_nodes),
            num_train=int(split.train.numel()),
            num_features=int(graph.x.size(1)),
            num_classes=int(inputs.num_classes),
            num_edges=int(graph.edge_index.size(1)),
            is_undirected=bool(graph.is_undirected()) if direction else None,
            setting=split.setting,
        )

    def undirected(self) -> bool:
        """Whether the graph is undirected, for a plan that reads it (refused where it was not read)."""
        if self.is_undirected is None:
            raise ValueError(
                f"{self.dataset}: this plan reads whether the graph is undirected; build its public "
                "inputs with it (PublicInputs.of, or from_run(..., direction=True))"
            )
        return self.is_undirected

    def degree_bounds(self, hparams: Mapping[str, Any]) -> dict[str, int]:
        """The public degree bound of each structure kind for a method's hyperparameters (the dataset
        registry's, unless the hyperparameters set their own: ``nodedp.contract.structure.structure_bounds``)."""
        from nodedp.contract.structure import structure_bounds
        from nodedp.data import get_dataset

        return structure_bounds(get_dataset(self.dataset), hparams)


@dataclass(frozen=True)
class Plan:
    """A run's privacy plan: its ledger, and what the method needs to execute it (e.g. a DP-SGD plan)."""

    ledger: Ledger
    parts: Mapping[str, Any] = field(default_factory=dict)


def planner_of(info: MethodInfo):
    """The method's planner (``public, spec, hp -> Plan``), or None where it has none yet."""
    if not info.private:
        return _non_private
    if info.plan is None:
        return None
    module, _, function = info.plan.partition(":")
    return getattr(importlib.import_module(module), function)


def reference_floor_of(info: MethodInfo):
    """The method's ``reference_floor`` (``num_train -> float``), or None where it has none."""
    if info.reference_floor is None:
        return None
    module, _, function = info.reference_floor.partition(":")
    return getattr(importlib.import_module(module), function)


def plan_run(info: MethodInfo, public: PublicInputs, spec: RunSpec, hp: Any) -> Plan:
    planner = planner_of(info)
    if planner is None:
        raise ValueError(f"method {info.name!r} has no privacy planner yet")
    return planner(public, spec, hp)


def _non_private(public: PublicInputs, spec: RunSpec, hp: Any) -> Plan:
    from nodedp.accounting import Ledger

    return Plan(Ledger.non_private())
