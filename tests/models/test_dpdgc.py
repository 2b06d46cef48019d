"""DPDGC's models: what trains, what the normalization does, and the classifier's residual."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nodedp.mechanisms import nap_aggregate
from nodedp.models import AdjacencyEncoder, LinkxClassifier
from nodedp.models.dpdgc import AdjacencyRows
from nodedp.train import trainable_layer_names


def test_only_the_table_and_its_shift_train_and_the_head_is_a_seeded_scaled_orthogonal_map():
    def make():
        return AdjacencyEncoder(30, 3, hidden_dim=8, row_clip=2.0, generator=torch.Generator().manual_seed(5))

    encoder = make()
    assert trainable_layer_names(encoder) == ["table", "shift"]
    head = encoder.head.weight
    assert torch.allclose(head @ head.t(), torch.eye(3) * 6 / 8, atol=1e-6)
    assert torch.equal(head, make().head.weight)


def test_the_table_starts_as_a_normalized_bias_free_linear_n_to_h():
    torch.manual_seed(3)
    encoder = AdjacencyEncoder(30, 3, hidden_dim=8, row_clip=2.0)
    torch.manual_seed(3)
    linear = nn.Linear(30, 8, bias=False)
    assert torch.equal(encoder.table.weight, F.normalize(linear.weight, p=2.0, dim=0))


def test_normalize_projects_columns_to_the_unit_sphere_and_keeps_zero_columns():
    encoder = AdjacencyEncoder(12, 2, hidden_dim=4, row_clip=1.0)
    with torch.no_grad():
        encoder.table.weight.mul_(torch.linspace(0, 50, 12))  # column 0 becomes zero
    encoder.normalize_()
    norms = torch.linalg.vector_norm(encoder.embedding_table(), dim=1)
    assert norms[0] == 0 and torch.allclose(norms[1:], torch.ones(11))


def test_forward_is_the_nap_aggregation_plus_shift_through_the_head():
    n, r = 15, 1.3
    encoder = AdjacencyEncoder(n, 3, hidden_dim=6, row_clip=r)
    with torch.no_grad():
        encoder.shift.bias.normal_()
    edges = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [7, 7, 7, 8, 8, 9, 0]])
    dense = torch.zeros(n, n)
    dense[edges[1], edges[0]] = 1.0
    aggregated = nap_aggregate(encoder.embedding_table(), edges, num_nodes=n, row_clip=r)
    expected = encoder.head(torch.nn.functional.selu(aggregated + encoder.shift.bias))
    touched = dense.sum(0).nonzero().flatten()  # the table reads only the columns the rows name
    for rows in (AdjacencyRows(torch.arange(n), dense), AdjacencyRows(touched, dense[:, touched])):
        assert torch.allclose(encoder(rows), expected, atol=1e-6)
    assert torch.linalg.vector_norm(aggregated, dim=1).max() <= r + 1e-6


def test_linkx_adds_the_embedding_as_a_residual():
    torch.manual_seed(0)
    model = LinkxClassifier(5, 3, hidden_dim=4)
    x = torch.randn(6, 5)
    xa = torch.randn(6, 4)
    assert model((x, xa)).shape == (6, 3)
    with torch.no_grad():  # with MLP_W's output zeroed, the head sees SeLU(x_X + x̃_A)
        model.mix.layers[-1].weight.zero_()
        model.mix.layers[-1].bias.zero_()
    expected = model.head(torch.nn.functional.selu(model.features(x) + xa))
    assert torch.allclose(model((x, xa)), expected, atol=1e-6)


@pytest.mark.parametrize("bad", [torch.randn(2, 3), (torch.randn(2, 5),)])
def test_linkx_refuses_inputs_that_are_not_a_feature_embedding_pair(bad):
    with pytest.raises(ValueError, match="features"):
        LinkxClassifier(5, 3, hidden_dim=4)(bad)


def test_linkx_refuses_an_embedding_of_another_width():
    with pytest.raises(ValueError, match="hidden_dim = 4"):
        LinkxClassifier(5, 3, hidden_dim=4)((torch.randn(2, 5), torch.randn(2, 6)))


def test_encoder_refuses_more_classes_than_hidden_units():
    with pytest.raises(ValueError, match="num_classes ≤ hidden_dim"):
        AdjacencyEncoder(10, 9, hidden_dim=8, row_clip=math.sqrt(2))
