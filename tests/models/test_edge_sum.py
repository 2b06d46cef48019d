from __future__ import annotations

import torch

from nodedp.models.edge_sum import neighbour_sum


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
