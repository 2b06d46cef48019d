from __future__ import annotations

import math

import pytest
import torch

from nodedp.data import get_dataset
from nodedp.data.preprocess import get_protocol
from nodedp.data.registry import GraphSize
from nodedp.data.splits import random_split
from nodedp.data.standins import SHAPES, standin_name, standin_spec
from nodedp.data.synthetic import generate_csbm


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_standin_is_registered_with_the_real_graphs_size_and_says_it_is_for_cost(shape):
    s = SHAPES[shape]
    info = get_dataset(standin_name(shape))
    assert info.kind == "synthetic" and "cost, not accuracy" in info.description
    assert info.size == GraphSize(nodes=s.nodes, edges=s.edges, features=s.features, classes=s.classes)
    spec = standin_spec(shape)
    assert spec.num_nodes == s.nodes and math.isclose(spec.num_nodes * spec.avg_degree / 2, s.edges)
    assert (info.out_degree_bound, info.in_degree_bound) == (s.out_degree_bound, s.in_degree_bound)
    assert spec.degree_exponent is not None  # heavy-tailed degrees


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_split_protocol_has_the_official_splits_proportions(shape):
    s = SHAPES[shape]
    protocol = get_protocol(get_dataset(standin_name(shape)).protocol).split
    assert protocol.kind == "random" and protocol.setting == "transductive"
    total = sum(s.split)
    for fraction, count in zip((protocol.train, protocol.val, protocol.test), s.split):
        assert math.isclose(fraction, count / total, rel_tol=1e-9)


def test_a_scaled_standin_keeps_the_shape_and_has_about_its_edges():
    spec = standin_spec("arxiv", num_nodes=3000, seed=5)
    real = standin_spec("arxiv")
    assert spec.avg_degree == real.avg_degree and spec.num_features == 128 and spec.num_classes == 40
    data = generate_csbm(spec)
    expected = spec.num_nodes * spec.avg_degree / 2
    assert abs(data.edge_index.size(1) / 2 - expected) < 5 * math.sqrt(expected)
    degree = torch.bincount(data.edge_index[0], minlength=spec.num_nodes).float()
    assert degree.max() > 8 * degree.mean()  # a heavy tail, not a regular graph
    assert data.x.shape == (3000, 128) and int(data.y.max()) == 39
    split = random_split(3000, seed=0, **dict(zip(("train", "val", "test"), SHAPES["arxiv"].fractions())))
    assert abs(split.train.numel() / 3000 - 90_941 / 169_343) < 1e-3


def test_an_unknown_shape_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"valid choices: \['arxiv', 'products', 'reddit'\]"):
        standin_spec("mag")
