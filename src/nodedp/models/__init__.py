"""Plain nn.Modules with no privacy logic."""

from __future__ import annotations

from nodedp.models.gcn import GCN, NodeReadout
from nodedp.models.mlp import MLP

__all__ = ["GCN", "MLP", "NodeReadout"]
