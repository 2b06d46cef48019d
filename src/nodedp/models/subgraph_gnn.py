"""DP-GNN's models (Daigavane et al.): encoder MLP, r message-passing layers, decoder MLP.

Plain nn.Modules with no privacy logic: ``forward(x_local, adj, mask)`` on padded dense subgraphs (one example per
root) for training, ``forward_full(x, edge_index)`` on the whole graph for inference; ``GraphReadout`` serves both.
Layers, edge direction and conventions: docs/design/models.md.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn

from nodedp.mechanisms.edge_sum import edge_chunks, neighbour_sum
from nodedp.models.mlp import _ACTIVATIONS, MLP

__all__ = ["LAYERS", "SubgraphGNN"]

LAYERS = ("gcn", "gin", "gat", "sage")


def _in_degree(edge_index: Tensor, num_nodes: int, like: Tensor) -> Tensor:
    return like.new_zeros(num_nodes).index_add_(0, edge_index[1], like.new_ones(edge_index.shape[1]))


def _neighbour_sum(h: Tensor, edge_index: Tensor) -> Tensor:
    """[N, H]: row v is Σ_{u -> v} h_u (in chunks of edges on large graphs)."""
    src, dst = edge_index
    return neighbour_sum(h, src, dst)


class GCNLayer(nn.Module):
    """(D+I)^-1 (A+I) H W: the mean over the node itself and its in-neighbours (the paper's normalization)."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.out_dim = out_dim

    def dense(self, h: Tensor, adj: Tensor) -> Tensor:
        hw = self.linear(h)
        return (adj @ hw + hw) / (adj.sum(-1, keepdim=True) + 1)

    def sparse(self, h: Tensor, edge_index: Tensor) -> Tensor:
        hw = self.linear(h)
        degree = _in_degree(edge_index, h.shape[0], hw)
        return (_neighbour_sum(hw, edge_index) + hw) / (degree + 1).unsqueeze(1)


class _OnePlusEpsilon(nn.Module):
    """h -> (1+ε)·h with a learnable scalar ε, in a module of its own so that
    per-example gradients reach it through the generic torch.func rule."""

    def __init__(self) -> None:
        super().__init__()
        self.epsilon = nn.Parameter(torch.zeros(1))

    def forward(self, h: Tensor) -> Tensor:
        return (1 + self.epsilon) * h


class GINLayer(nn.Module):
    """MLP((1+ε)·h_v + Σ_{u -> v} h_u), the MLP two linear layers deep."""

    def __init__(self, in_dim: int, out_dim: int, *, activation: str) -> None:
        super().__init__()
        self.scale = _OnePlusEpsilon()
        self.mlp = MLP(in_dim, out_dim, out_dim, num_layers=2, activation=activation)
        self.out_dim = out_dim

    def dense(self, h: Tensor, adj: Tensor) -> Tensor:
        return self.mlp(self.scale(h) + adj @ h)

    def sparse(self, h: Tensor, edge_index: Tensor) -> Tensor:
        return self.mlp(self.scale(h) + _neighbour_sum(h, edge_index))


class GATLayer(nn.Module):
    """Dot-product attention over the node itself and its in-neighbours, heads concatenated.

    score(v, u) = <W_q h_v, W_k h_u> / √d per head, softmax over u, then the
    weighted sum of W_v h_u. Each head has d = ⌈hidden/heads⌉ dimensions, so
    the output has heads·d columns (260 for the paper's 256 and 10 heads).
    """

    def __init__(self, in_dim: int, hidden_dim: int, *, heads: int) -> None:
        super().__init__()
        if heads < 1:
            raise ValueError(f"heads must be >= 1, got {heads}")
        self.heads, self.head_dim = heads, math.ceil(hidden_dim / heads)
        self.out_dim = heads * self.head_dim
        self.query = nn.Linear(in_dim, self.out_dim)
        self.key = nn.Linear(in_dim, self.out_dim)
        self.value = nn.Linear(in_dim, self.out_dim)

    def _split(self, t: Tensor) -> Tensor:
        return t.unflatten(-1, (self.heads, self.head_dim))

    def dense(self, h: Tensor, adj: Tensor) -> Tensor:
        # [B, S, heads, d] -> [B, heads, S, d]
        q, k, v = (self._split(f(h)).transpose(1, 2) for f in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # [B, heads, S(v), S(u)]
        eye = torch.eye(adj.shape[-1], dtype=torch.bool, device=adj.device)
        allowed = ((adj > 0) | eye).unsqueeze(1)
        attention = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        return (attention @ v).transpose(1, 2).flatten(2)

    def sparse(self, h: Tensor, edge_index: Tensor, *, chunk: int | None = None) -> Tensor:
        """The layer on a whole graph, in chunks of edges (``edge_chunks``): no per-edge tensor of the whole graph is
        held, only [N, heads] maxima and denominators. At Reddit size the per-edge queries, keys and values at once
        are [E, heads·d], 36.8 GB, and the scores' softmax over [E, heads] several copies of 4.6 GB. The scores are
        computed anew in each of three passes: per-node maxima (for stability), softmax denominators, weighted
        values."""
        n = h.shape[0]
        loops = torch.arange(n, device=h.device).expand(2, n)
        src, dst = torch.cat([edge_index, loops], dim=1)
        q, k, v = (self._split(f(h)) for f in (self.query, self.key, self.value))
        chunks = edge_chunks(src.numel(), self.out_dim, chunk=chunk)
        scale = math.sqrt(self.head_dim)

        def scores(c: slice) -> Tensor:  # [edges of c, heads]
            return (q[dst[c]] * k[src[c]]).sum(-1) / scale

        top = q.new_full((n, self.heads), float("-inf"))
        with torch.no_grad():  # a shift: softmax does not depend on it
            for c in chunks:
                top.scatter_reduce_(0, dst[c].unsqueeze(-1).expand(-1, self.heads), scores(c), reduce="amax")
        total = q.new_zeros((n, self.heads))
        for c in chunks:
            total = total.index_add(0, dst[c], (scores(c) - top[dst[c]]).exp())
        out = v.new_zeros(v.shape)
        for c in chunks:
            attention = (scores(c) - top[dst[c]]).exp() / total[dst[c]]  # every node has its self-loop: total > 0
            out = out.index_add(0, dst[c], attention.unsqueeze(-1) * v[src[c]])
        return out.flatten(1)


class SAGELayer(nn.Module):
    """W_self h_v + W_neigh mean_{u -> v} h_u (the mean of no neighbours is 0)."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.self_linear = nn.Linear(in_dim, out_dim)
        self.neighbour_linear = nn.Linear(in_dim, out_dim, bias=False)
        self.out_dim = out_dim

    def dense(self, h: Tensor, adj: Tensor) -> Tensor:
        mean = adj @ h / adj.sum(-1, keepdim=True).clamp_min(1)
        return self.self_linear(h) + self.neighbour_linear(mean)

    def sparse(self, h: Tensor, edge_index: Tensor) -> Tensor:
        degree = _in_degree(edge_index, h.shape[0], h).clamp_min(1)
        mean = _neighbour_sum(h, edge_index) / degree.unsqueeze(1)
        return self.self_linear(h) + self.neighbour_linear(mean)


GNNLayer = GCNLayer | GINLayer | GATLayer | SAGELayer


def _layer(kind: str, in_dim: int, hidden_dim: int, *, heads: int, activation: str) -> GNNLayer:
    if kind == "gcn":
        return GCNLayer(in_dim, hidden_dim)
    if kind == "gin":
        return GINLayer(in_dim, hidden_dim, activation=activation)
    if kind == "gat":
        return GATLayer(in_dim, hidden_dim, heads=heads)
    return SAGELayer(in_dim, hidden_dim)


class SubgraphGNN(nn.Module):
    """Encoder MLP -> activation -> ``num_layers`` × (GNN layer -> activation) -> decoder MLP.

    ``layer`` is one of ``LAYERS``; ``heads`` applies to "gat" only.
    """

    def __init__(
        self,
        in_dim: int,
        hidden_dim: int,
        out_dim: int,
        *,
        layer: str,
        num_layers: int,
        encoder_layers: int = 1,
        decoder_layers: int = 1,
        heads: int = 10,
        activation: str = "tanh",
    ) -> None:
        super().__init__()
        if layer not in LAYERS:
            raise ValueError(f"unknown GNN layer {layer!r}; choose from {list(LAYERS)}")
        if num_layers < 1:
            raise ValueError(f"num_layers (r) must be >= 1, got {num_layers}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(_ACTIVATIONS)}")
        self.encoder = MLP(in_dim, hidden_dim, hidden_dim, num_layers=encoder_layers, activation=activation)
        convs: list[GNNLayer] = []
        width = hidden_dim
        for _ in range(num_layers):
            convs.append(_layer(layer, width, hidden_dim, heads=heads, activation=activation))
            width = convs[-1].out_dim
        self.convs = nn.ModuleList(convs)
        self.decoder = MLP(width, hidden_dim, out_dim, num_layers=decoder_layers, activation=activation)
        self.activation = _ACTIVATIONS[activation]()

    def forward(self, x_local: Tensor, adj: Tensor, mask: Tensor) -> Tensor:
        """Roots' logits [B, C] from padded subgraphs: x_local [B, S, F], adj [B, S, S]
        (adj[b, a, c] = 1 iff c -> a), mask [B, S] (False at padding); row 0 is the root."""
        if x_local.dim() != 3 or adj.shape != (*x_local.shape[:2], x_local.shape[1]) or mask.shape != x_local.shape[:2]:
            raise ValueError(
                f"need x_local [B, S, F], adj [B, S, S], mask [B, S]; got {tuple(x_local.shape)}, "
                f"{tuple(adj.shape)}, {tuple(mask.shape)}"
            )
        # Padding must not reach real rows: zero its features (garbage may be inf/nan)
        # and its edges both ways.
        mask = mask.to(torch.bool)
        h = x_local.masked_fill(~mask.unsqueeze(-1), 0.0)
        keep = mask.unsqueeze(-1) & mask.unsqueeze(-2)
        adj = torch.where(keep, adj.to(h.dtype), 0.0)
        h = self.activation(self.encoder(h))
        for conv in self._layers():
            h = self.activation(conv.dense(h, adj))
        return self.decoder(h[:, 0])

    def forward_full(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Logits [N, C] of every node of a graph x [N, F], edge_index [2, E] (src -> dst)."""
        h = self.activation(self.encoder(x))
        for conv in self._layers():
            h = self.activation(conv.sparse(h, edge_index))
        return self.decoder(h)

    def _layers(self) -> list[GNNLayer]:
        return [cast(GNNLayer, conv) for conv in self.convs]


class GraphReadout(nn.Module):
    """One model for both kinds of example: a tuple (x_local, adj, mask) is a batch of
    subgraphs (DP-GNN training); a tensor of node ids runs the full graph and returns
    those rows (inference, and the non-private twins' full-batch training)."""

    x: Tensor
    edge_index: Tensor

    def __init__(self, gnn: SubgraphGNN, x: Tensor, edge_index: Tensor) -> None:
        super().__init__()
        self.gnn = gnn
        self.register_buffer("x", x, persistent=False)
        self.register_buffer("edge_index", edge_index, persistent=False)

    def forward(self, inputs: Tensor | tuple[Tensor, Tensor, Tensor]) -> Tensor:
        if isinstance(inputs, Tensor):
            return self.gnn.forward_full(self.x, self.edge_index)[inputs]
        return self.gnn(*inputs)
