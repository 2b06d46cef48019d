"""A plain GCN (Kipf & Welling) on a full graph; no privacy logic."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GCNConv


class GCN(nn.Module):
    def __init__(
        self, in_dim: int, hidden_dim: int, out_dim: int, *, num_layers: int = 2, dropout: float = 0.5
    ) -> None:
        super().__init__()
        dims = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(self.dropout(x), edge_index)
            if i < len(self.convs) - 1:
                x = torch.relu(x)
        return x


class NodeReadout(nn.Module):
    """Runs a GNN on a fixed graph and returns the rows of the requested nodes.

    Lets full-graph models train through the one training loop, whose examples
    are node ids.
    """

    def __init__(self, gnn: nn.Module, x: torch.Tensor, edge_index: torch.Tensor) -> None:
        super().__init__()
        self.gnn = gnn
        self.register_buffer("x", x, persistent=False)
        self.register_buffer("edge_index", edge_index, persistent=False)

    def forward(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.gnn(self.x, self.edge_index)[nodes]
