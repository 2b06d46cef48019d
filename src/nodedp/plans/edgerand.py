"""EdgeRand's plan (``nodedp.methods.edgerand``): the adjacency released once by randomized response, every pair's
entry flipped with probability 1/(1 + e^ε) (pure ε-edge-DP); training and inference are post-processing.

Public inputs only: the node count N (the released adjacency is N × N) and whether the graph is undirected (pairs
unordered) are the dataset's public metadata.
"""

from __future__ import annotations

import math
from typing import Any

from nodedp.accounting import Ledger, MechanismRecord
from nodedp.contract.base import RunSpec
from nodedp.plans import Plan, PublicInputs

__all__ = ["plan_edgerand"]


def flip_probability(epsilon: float) -> float:
    """p = 1/(1 + e^ε), as ``nodedp.mechanisms.edge_rr.flip_probability`` (torch-free here; the run checks)."""
    if isinstance(epsilon, bool) or not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"randomized response needs a finite ε > 0, got {epsilon!r}")
    return 1.0 / (1.0 + math.exp(epsilon))


def plan_edgerand(public: PublicInputs, spec: RunSpec, hp: Any) -> Plan:
    undirected = public.undirected()
    record = MechanismRecord(
        name=f"edge-rr:{spec.method}",
        kind="randomized_response",
        touches=("edges",),
        params={
            "mechanism": "edge_rr",
            "flip_probability": flip_probability(spec.target_epsilon),
            "num_nodes": public.num_nodes,
            "pairs": "unordered" if undirected else "ordered",
        },
        sensitivity=1.0,
        sensitivity_reason=(
            "one edge is one adjacency entry (an unordered pair on this undirected graph); each entry is "
            "flipped independently w.p. p = 1/(1+e^ε), a likelihood ratio of (1−p)/p = e^ε"
        ),
        dp_event=None,
        pure_epsilon=spec.target_epsilon,
    )
    ledger = Ledger(
        level="edge",
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        mechanisms=(record,),
        accountant=spec.accountant,
    )
    ledger.check()
    return Plan(ledger, {"undirected": undirected})
