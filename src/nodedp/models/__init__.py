"""Plain nn.Modules with no privacy logic."""

from __future__ import annotations

from nodedp.models.dpdgc import AdjacencyEncoder, LinkxClassifier
from nodedp.models.gap import GAPClassifier, GAPEncoder, ProGAP, ProGAPStage, StageMLP
from nodedp.models.heter_poisson import GNet
from nodedp.models.mlp import MLP
from nodedp.models.nip import aca_propagate, normalized_adjacency
from nodedp.models.pprgo import PPRGo, power_iteration
from nodedp.models.subgraph_gnn import LAYERS, GraphReadout, SubgraphGNN

__all__ = [
    "LAYERS",
    "MLP",
    "AdjacencyEncoder",
    "GAPClassifier",
    "GAPEncoder",
    "GNet",
    "GraphReadout",
    "LinkxClassifier",
    "PPRGo",
    "ProGAP",
    "ProGAPStage",
    "StageMLP",
    "SubgraphGNN",
    "aca_propagate",
    "normalized_adjacency",
    "power_iteration",
]
