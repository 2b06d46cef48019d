from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from nodedp.models.subgraph_gnn import LAYERS, GCNLayer, SubgraphGNN
from nodedp.train import PerSampleGradients

FEATURES, HIDDEN, CLASSES = 4, 6, 3

# A small directed graph (src -> dst) around root 0. In-neighbours: 0 <- {1, 2, 3};
# 1 <- {4, 2}; 2 <- {5}; 3 <- {}. The edges into 4 and 5 and the nodes 6-8 are outside
# 0's 2-hop subgraph (Algorithm 2 uses only edges into nodes at depth < r).
EDGES = torch.tensor(
    [
        [1, 2, 3, 4, 2, 5, 6, 0, 7, 0, 3],
        [0, 0, 0, 1, 1, 2, 4, 5, 6, 8, 7],
    ]
)
NUM_NODES = 9

# The root's r-hop in-neighbourhoods by hand: local row i is global node NODES[i];
# ADJ[a][c] = 1 iff NODES[c] -> NODES[a] is an edge into a node at depth < r.
SUBGRAPHS = {
    1: (
        [0, 1, 2, 3],
        [
            [0, 1, 1, 1],
            [0, 0, 0, 0],
            [0, 0, 0, 0],
            [0, 0, 0, 0],
        ],
    ),
    2: (
        [0, 1, 2, 3, 4, 5],
        [
            [0, 1, 1, 1, 0, 0],
            [0, 0, 1, 0, 1, 0],
            [0, 0, 0, 0, 0, 1],
            [0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0, 0],
        ],
    ),
}


@pytest.fixture(autouse=True)
def _float64() -> Iterator[None]:
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _model(layer: str, num_layers: int, **kwargs: object) -> SubgraphGNN:
    return SubgraphGNN(FEATURES, HIDDEN, CLASSES, layer=layer, num_layers=num_layers, heads=2, **kwargs)


def _subgraph(x: Tensor, num_layers: int) -> tuple[Tensor, Tensor, Tensor]:
    nodes, adj = SUBGRAPHS[num_layers]
    mask = torch.ones(1, len(nodes), dtype=torch.bool)
    return x[nodes].unsqueeze(0), torch.tensor(adj, dtype=x.dtype).unsqueeze(0), mask


def _restricted_edges(nodes: list[int]) -> Tensor:
    """The graph's edges among ``nodes``, relabelled to their positions."""
    position = {v: i for i, v in enumerate(nodes)}
    kept = [(position[s], position[d]) for s, d in EDGES.t().tolist() if s in position and d in position]
    return torch.tensor(kept).t()


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("layer", LAYERS)
def test_subgraph_path_equals_full_graph_path_at_the_root(layer: str, num_layers: int) -> None:
    model = _model(layer, num_layers, encoder_layers=2, decoder_layers=2)
    x = torch.randn(NUM_NODES, FEATURES)
    root = model(*_subgraph(x, num_layers))[0]
    # The whole graph: farther nodes and edges into the leaves must not matter.
    torch.testing.assert_close(root, model.forward_full(x, EDGES)[0])
    nodes, _ = SUBGRAPHS[num_layers]
    torch.testing.assert_close(root, model.forward_full(x[nodes], _restricted_edges(nodes))[0])
    # ... while an edge into a depth-(r-1) node does.
    extra = torch.cat([EDGES, torch.tensor([[6], [num_layers - 1]])], dim=1)
    assert not torch.allclose(root, model.forward_full(x, extra)[0])


@pytest.mark.parametrize("layer", LAYERS)
def test_padding_and_other_examples_do_not_change_the_output(layer: str) -> None:
    model = _model(layer, 2)
    x = torch.randn(NUM_NODES, FEATURES)
    small, large = _subgraph(x, 1), _subgraph(x, 2)
    alone = [model(*small), model(*large)]
    # Pad the 1-hop subgraph to 6 rows with garbage features and edges, and batch both.
    x_pad = torch.cat([small[0], torch.tensor([[[float("nan")] * FEATURES, [1e6] * FEATURES]])], dim=1)
    adj_pad = torch.ones(1, 6, 6)
    adj_pad[:, :4, :4] = small[1]
    mask_pad = torch.tensor([[True] * 4 + [False] * 2])
    batch = model(torch.cat([x_pad, large[0]]), torch.cat([adj_pad, large[1]]), torch.cat([mask_pad, large[2]]))
    assert batch.shape == (2, CLASSES)
    torch.testing.assert_close(batch, torch.cat(alone))


def test_gcn_is_the_inverse_degree_normalization() -> None:
    layer = GCNLayer(FEATURES, HIDDEN)
    h = torch.randn(NUM_NODES, FEATURES)
    a = torch.zeros(NUM_NODES, NUM_NODES)
    a[EDGES[1], EDGES[0]] = 1.0  # row v aggregates from its in-neighbours
    eye = torch.eye(NUM_NODES)
    expected = torch.linalg.inv(torch.diag(a.sum(1)) + eye) @ (a + eye) @ layer.linear(h)
    torch.testing.assert_close(layer.sparse(h, EDGES), expected)
    torch.testing.assert_close(layer.dense(h.unsqueeze(0), a.unsqueeze(0))[0], expected)


def _flat_gradient(model: SubgraphGNN, inputs: tuple[Tensor, Tensor, Tensor], y: Tensor) -> Tensor:
    params = list(model.parameters())
    grads = torch.autograd.grad(F.cross_entropy(model(*inputs), y, reduction="sum"), params, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).flatten() for g, p in zip(grads, params)])


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("layer", LAYERS)
def test_per_example_gradients_equal_one_backward_per_example(layer: str, num_layers: int) -> None:
    model = _model(layer, num_layers, encoder_layers=2, decoder_layers=2)
    batch, size = 4, 5
    x = torch.randn(batch, size, FEATURES)
    adj = (torch.rand(batch, size, size) < 0.5).double()
    mask = torch.tensor([[True] * n + [False] * (size - n) for n in (5, 3, 1, 4)])
    y = torch.randint(CLASSES, (batch,))
    expected = torch.stack(
        [_flat_gradient(model, (x[i : i + 1], adj[i : i + 1], mask[i : i + 1]), y[i : i + 1]) for i in range(batch)]
    )
    # Every parameter tensor (GIN's ε included) is reached, so the comparison covers it.
    assert all(part.abs().sum() > 0 for part in expected.split([p.numel() for p in model.parameters()], dim=1))
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(x, adj, mask)
    psg.backward(F.cross_entropy(out, y, reduction="none"))
    torch.testing.assert_close(psg.norms(), expected.norm(dim=1), rtol=1e-5, atol=1e-7)
    factors = torch.rand(batch)
    psg.write_clipped_sum(factors)
    got = torch.cat([p.grad.flatten() for p in psg.parameters])
    torch.testing.assert_close(got, factors @ expected, rtol=1e-5, atol=1e-7)
    psg.remove()


def test_gat_heads_split_the_hidden_width() -> None:
    model = SubgraphGNN(FEATURES, 256, CLASSES, layer="gat", num_layers=1, heads=10)
    assert (model.convs[0].heads, model.convs[0].head_dim) == (10, 26)
    assert model.decoder.layers[0].in_features == 260
    x = torch.randn(NUM_NODES, FEATURES)
    assert model.forward_full(x, EDGES).shape == (NUM_NODES, CLASSES)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"layer": "gcnii"}, "gcn.*gin.*gat.*sage"),
        ({"num_layers": 0}, "num_layers"),
        ({"activation": "gelu"}, "relu"),
        ({"layer": "gat", "heads": 0}, "heads"),
    ],
)
def test_invalid_choices_name_the_valid_ones(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SubgraphGNN(FEATURES, HIDDEN, CLASSES, **{"layer": "gcn", "num_layers": 1, **kwargs})
