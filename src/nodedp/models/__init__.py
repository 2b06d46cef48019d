"""Plain nn.Modules with no privacy logic."""

from __future__ import annotations

from nodedp.models.gcn import GCN, NodeReadout
from nodedp.models.mlp import MLP
from nodedp.models.subgraph_gnn import LAYERS, SubgraphGNN

__all__ = ["GCN", "LAYERS", "MLP", "NodeReadout", "SubgraphGNN"]
