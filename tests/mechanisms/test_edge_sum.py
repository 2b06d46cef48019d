from __future__ import annotations

import torch

from nodedp.mechanisms.edge_sum import neighbour_sum


def test_chunks_of_edges_give_the_one_pass_sum_and_its_gradient():
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, 40, (2, 500), generator=gen)
    h = torch.randn(40, 3, generator=gen, requires_grad=True)
    whole = torch.zeros(40, 3).index_add_(0, dst, h[src])
    chunked = neighbour_sum(h, src, dst, chunk=3 * 11)  # 11 edges a chunk
    torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-6)
    (grad_whole,) = torch.autograd.grad(whole.square().sum(), h)
    (grad_chunked,) = torch.autograd.grad(chunked.square().sum(), h)
    torch.testing.assert_close(grad_chunked, grad_whole)
    assert torch.equal(neighbour_sum(h, src, dst), whole)  # small: one pass, bit for bit


def test_gat_attention_in_chunks_of_edges_is_the_one_pass_layer_and_its_gradient():
    """GAT's whole-graph layer gathers queries, keys and values per edge in chunks (at Reddit size all at once
    would be 36.8 GB): the same output and gradient as in one pass, and as PyG's scatter of every message."""
    from torch_geometric.utils import scatter, softmax

    from nodedp.mechanisms.edge_sum import edge_chunks
    from nodedp.models.subgraph_gnn import GATLayer

    torch.manual_seed(0)
    layer = GATLayer(5, 8, heads=2)
    h = torch.randn(30, 5, requires_grad=True)
    edges = torch.randint(0, 30, (2, 200))
    chunked = layer.sparse(h, edges, chunk=8 * 7)  # 7 edges a chunk
    whole = layer.sparse(h, edges, chunk=10**9)
    loops = torch.arange(30).expand(2, 30)
    src, dst = torch.cat([edges, loops], dim=1)
    q, k, v = (layer._split(f(h)) for f in (layer.query, layer.key, layer.value))
    attention = softmax((q[dst] * k[src]).sum(-1) / 2.0, dst, num_nodes=30)  # head_dim 4
    reference = scatter(attention.unsqueeze(-1) * v[src], dst, dim=0, dim_size=30, reduce="sum").flatten(1)
    torch.testing.assert_close(whole, reference)
    torch.testing.assert_close(chunked, whole)
    (grad_whole,) = torch.autograd.grad(whole.square().sum(), h)
    (grad_chunked,) = torch.autograd.grad(chunked.square().sum(), h)
    torch.testing.assert_close(grad_chunked, grad_whole)
    assert [c.stop - c.start for c in edge_chunks(230, 8, chunk=8 * 7)] == [7] * 32 + [6]
