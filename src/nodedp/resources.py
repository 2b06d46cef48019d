"""Cluster requests sized from the graph: memory and runtime of a job from its datasets' published sizes.

Planning knows each dataset's size from the registry (``DatasetInfo.size``), so a cell on ogbn-products asks for
what it needs on its first attempt. The model per method family is what ``benchmarks/scaling.py`` measures
(docs/scaling.md): a process floor plus a multiple of the graph's in-memory size, and seconds per edge (NIP-GNN's
structure also per node pair). Estimates are multiplied by a margin, never go below the configured floors, and a
dataset of unknown size gets the floors; retries grow from the estimate. Torch-free: the workflow imports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from nodedp.data.registry import GraphSize

__all__ = ["COSTS", "Cost", "cell_memory_mb", "cell_runtime_min", "data_memory_mb", "data_runtime_min", "graph_mib"]

# A process with torch, torch_geometric and nodedp loaded, before any graph (measured: 0.45-0.55 GiB).
BASE_MIB = 600.0


@dataclass(frozen=True)
class Cost:
    """One method family's cost per cell: peak memory = BASE_MIB + ``memory_factor`` × the graph's in-memory
    size; seconds = ``startup_s`` + edges × (``structure_s_per_edge`` + epochs × ``epoch_s_per_edge`` +
    ``evaluation_s_per_edge``) + node pairs × (``structure_s_per_pair`` + epochs × ``epoch_s_per_pair``)."""

    memory_factor: float
    structure_s_per_edge: float
    epoch_s_per_edge: float
    evaluation_s_per_edge: float
    structure_s_per_pair: float = 0.0
    epoch_s_per_pair: float = 0.0
    startup_s: float = 60.0


# Fitted from `python benchmarks/scaling.py` (docs/scaling.md): the arxiv stand-in up to 169k nodes and
# single cells on the products stand-in, on a 2-core CPU beside other work, rounded up. Memory factors:
# the largest stage peak over the graph's in-memory size (products: DP-MLP 2.8, GAP and ProGAP 5.1, DPAR
# 2.9). Quadratic terms where the mechanism is (NIP-GNN's release visits every node pair; DPDGC's encoder
# noises all N columns at every step, steps ∝ N). A method not listed takes DEFAULT_COST.
COSTS: dict[str, Cost] = {
    "dp-mlp": Cost(memory_factor=3.0, structure_s_per_edge=1e-6, epoch_s_per_edge=2e-6, evaluation_s_per_edge=5e-7),
    "gap": Cost(memory_factor=5.5, structure_s_per_edge=3e-6, epoch_s_per_edge=5e-6, evaluation_s_per_edge=5e-7),
    "progap": Cost(memory_factor=5.5, structure_s_per_edge=3e-6, epoch_s_per_edge=8e-6, evaluation_s_per_edge=5e-7),
    "dp-gcn": Cost(memory_factor=8.0, structure_s_per_edge=3e-6, epoch_s_per_edge=1e-5, evaluation_s_per_edge=5e-6),
    "dpar-em0": Cost(memory_factor=3.5, structure_s_per_edge=3e-6, epoch_s_per_edge=2e-6, evaluation_s_per_edge=5e-6),
    "nip-gnn": Cost(
        memory_factor=12.0,
        structure_s_per_edge=1e-5,
        epoch_s_per_edge=5e-6,
        evaluation_s_per_edge=5e-7,
        structure_s_per_pair=2e-8,
    ),
    "dpdgc": Cost(
        memory_factor=8.0,
        structure_s_per_edge=4e-5,
        epoch_s_per_edge=5e-6,
        evaluation_s_per_edge=5e-7,
        epoch_s_per_pair=5e-9,
    ),
}
DEFAULT_COST = Cost(memory_factor=8.0, structure_s_per_edge=1e-5, epoch_s_per_edge=1e-5, evaluation_s_per_edge=5e-6)
# Families sharing a model: DP-GNN's layer types, DPAR's options, the variants of GAP and ProGAP.
_FAMILY = {
    "dp-sage": "dp-gcn",
    "dp-gin": "dp-gcn",
    "dp-gat": "dp-gcn",
    "dpar-em1": "dpar-em0",
    "dpar-gm": "dpar-em0",
    "dpar-features": "dpar-em0",
    "dpar-nodp": "dpar-em0",
    "gap-edge": "gap",
    "gap-nodp": "gap",
    "progap-edge": "progap",
    "progap-nodp": "progap",
    "dpdgc-nodp": "dpdgc",
    "mlp": "dp-mlp",
    "gcn": "dp-gcn",
    "sage": "dp-gcn",
    "gin": "dp-gcn",
    "gat": "dp-gcn",
    "edgerand": "dp-gcn",
}
# Data and structure jobs (graph building, splits, degree bounding, DP-APPR, stability): graph-sized work.
# Measured at ogbn-products size: building the graph 8.1 GiB, undirected degree bounding 8.3 GiB
# (2.6-2.8 × the graph), building 1,014 s on a loaded machine (1.6e-5 s per edge).
_DATA = Cost(
    memory_factor=3.0, structure_s_per_edge=2e-5, epoch_s_per_edge=0.0, evaluation_s_per_edge=0.0, startup_s=30.0
)


def cost_of(method: str) -> Cost:
    """The cost model of a registered method id (its family's, or the default)."""
    return COSTS.get(_FAMILY.get(method, method), DEFAULT_COST)


def graph_mib(size: GraphSize) -> float:
    """The canonical graph in memory: float32 features, int64 labels, both directions of every edge."""
    return (size.nodes * size.features * 4 + size.nodes * 8 + 2 * size.edges * 2 * 8) / 2**20


def _mb(mib: float, *, margin: float, floor: int) -> int:
    return max(floor, math.ceil(mib * 2**20 / 1e6 * margin))


def cell_memory_mb(method: str, size: GraphSize | None, *, margin: float, floor: int) -> int:
    """Memory (MB) to ask for one cell of ``method`` on a graph of ``size`` (None: the floor)."""
    if size is None:
        return floor
    return _mb(BASE_MIB + cost_of(method).memory_factor * graph_mib(size), margin=margin, floor=floor)


def cell_runtime_min(method: str, size: GraphSize | None, *, epochs: int, margin: float, floor: int) -> int:
    """Minutes to ask for one cell of ``method`` training ``epochs`` epochs on a graph of ``size``."""
    if size is None:
        return floor
    c = cost_of(method)
    pairs = size.nodes * (size.nodes - 1) / 2
    seconds = (
        c.startup_s
        + size.edges * (c.structure_s_per_edge + epochs * c.epoch_s_per_edge + c.evaluation_s_per_edge)
        + pairs * (c.structure_s_per_pair + epochs * c.epoch_s_per_pair)
    )
    return max(floor, math.ceil(seconds * margin / 60))


def data_memory_mb(size: GraphSize | None, *, margin: float, floor: int) -> int:
    """Memory (MB) of a data or structure job (building, splitting or bounding the graph, DP-APPR)."""
    if size is None:
        return floor
    return _mb(BASE_MIB + _DATA.memory_factor * graph_mib(size), margin=margin, floor=floor)


def data_runtime_min(size: GraphSize | None, *, margin: float, floor: int) -> int:
    if size is None:
        return floor
    return max(floor, math.ceil((_DATA.startup_s + size.edges * _DATA.structure_s_per_edge) * margin / 60))


def training_epochs(hparams: Mapping[str, object]) -> int:
    """The most epochs any of a method's training loops runs (``*epochs`` hyperparameters; at least 1)."""
    values = [int(v) for k, v in hparams.items() if k.endswith("epochs") and isinstance(v, int | float)]
    return max([1, *values])
