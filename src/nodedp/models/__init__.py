"""Plain nn.Modules with no privacy logic."""

from __future__ import annotations

from nodedp.models.mlp import MLP
from nodedp.models.subgraph_gnn import LAYERS, GraphReadout, SubgraphGNN

__all__ = ["LAYERS", "GraphReadout", "MLP", "SubgraphGNN"]
