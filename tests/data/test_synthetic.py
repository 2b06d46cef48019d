from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from nodedp.data.graph import graph_stats, validate_graph
from nodedp.data.synthetic import CSBMSpec, generate_csbm


def spec(**overrides: object) -> CSBMSpec:
    base = dict(
        num_nodes=2000,
        num_classes=4,
        avg_degree=10.0,
        homophily=0.8,
        num_features=16,
        feature_signal=2.0,
        degree_exponent=2.5,
        class_weights=None,
        seed=0,
    )
    return CSBMSpec(**{**base, **overrides})  # type: ignore[arg-type]


def test_same_spec_same_graph_other_seed_other_graph() -> None:
    first, second = generate_csbm(spec()), generate_csbm(spec())
    for key in ("x", "y", "edge_index"):
        assert torch.equal(first[key], second[key])
    other = generate_csbm(spec(seed=1))
    assert not torch.equal(first.edge_index, other.edge_index)
    assert not torch.equal(first.y, other.y)


@pytest.mark.parametrize("exponent", [None, 2.1, 3.0])
def test_graph_is_canonical_simple_and_undirected(exponent: float | None) -> None:
    data = generate_csbm(spec(degree_exponent=exponent))
    validate_graph(data, where="csbm")  # dtypes, ranges, no duplicates
    stats = graph_stats(data)
    assert stats["is_undirected"] and stats["self_loops"] == 0
    # canonical column order: sorted by (src, dst)
    keys = data.edge_index[0] * data.num_nodes + data.edge_index[1]
    assert bool((keys[1:] > keys[:-1]).all())


@pytest.mark.parametrize("homophily", [0.0, 0.2, 0.5, 0.85, 1.0])
@pytest.mark.parametrize("exponent", [None, 2.1])
def test_degree_and_homophily_match_spec(homophily: float, exponent: float | None) -> None:
    stats = graph_stats(generate_csbm(spec(homophily=homophily, degree_exponent=exponent)))
    assert stats["degree"]["in"]["mean"] == pytest.approx(10.0, rel=0.05)
    assert abs(stats["edge_homophily"] - homophily) <= 0.05


def test_degree_correction_gives_heavy_tail() -> None:
    heavy = graph_stats(generate_csbm(spec(degree_exponent=2.1)))["degree"]["in"]
    flat = graph_stats(generate_csbm(spec(degree_exponent=None)))["degree"]["in"]
    assert heavy["max"] >= 10 * heavy["mean"]
    assert heavy["median"] < heavy["mean"]  # right-skewed
    assert flat["max"] <= 3 * flat["mean"]


def test_features_are_class_means_plus_unit_noise() -> None:
    s = spec(num_nodes=6000, num_features=8, feature_signal=3.0, num_classes=3)
    data = generate_csbm(s)
    means = torch.stack([data.x[data.y == c].mean(0) for c in range(3)])
    distances = torch.cdist(means, means)[torch.triu_indices(3, 3, 1).unbind()]
    assert torch.allclose(distances, torch.full_like(distances, 3.0), atol=0.15)
    residual = data.x - means[data.y]
    assert residual.var(0).mean().item() == pytest.approx(1.0, abs=0.05)


def test_zero_signal_features_carry_no_class_information() -> None:
    data = generate_csbm(spec(feature_signal=0.0, num_nodes=4000))
    means = torch.stack([data.x[data.y == c].mean(0) for c in range(4)])
    assert means.abs().max().item() < 0.15


def test_class_weights_give_exact_proportions() -> None:
    data = generate_csbm(spec(num_nodes=1000, num_classes=3, num_features=8, class_weights=(1.0, 2.0, 7.0)))
    assert torch.bincount(data.y).tolist() == [100, 200, 700]
    equal = generate_csbm(spec(num_nodes=1001, num_classes=4))
    assert sorted(torch.bincount(equal.y).tolist()) == [250, 250, 250, 251]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"num_classes": 1}, "num_classes must be >= 2"),
        ({"num_nodes": 3}, "num_nodes \\(3\\) must be >= num_classes"),
        ({"avg_degree": 0.0}, "avg_degree"),
        ({"avg_degree": 1999.0}, "avg_degree"),
        ({"homophily": 1.5}, "homophily"),
        ({"homophily": -0.1}, "homophily"),
        ({"num_features": 3}, "num_features \\(3\\) must be >= num_classes"),
        ({"feature_signal": -1.0}, "feature_signal"),
        ({"feature_signal": math.inf}, "feature_signal"),
        ({"degree_exponent": 2.0}, "degree_exponent"),
        ({"degree_exponent": math.nan}, "degree_exponent"),
        ({"class_weights": (1.0, 1.0)}, "class_weights has 2 entries"),
        ({"class_weights": (1.0, 1.0, 0.0, 1.0)}, "class_weights must be finite and > 0"),
        ({"seed": -1}, "seed"),
    ],
)
def test_invalid_spec_is_refused_with_named_field(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"invalid CSBMSpec: {message}"):
        spec(**overrides)


def test_class_weights_that_empty_a_class_are_refused() -> None:
    skewed = spec(num_nodes=10, num_classes=2, num_features=2, avg_degree=2.0, class_weights=(1.0, 1e-6))
    with pytest.raises(ValueError, match="leave class 1 empty"):
        generate_csbm(skewed)


def test_impossibly_dense_block_structure_is_reported() -> None:
    # Two classes of 10 have 90 intra-class pairs; the spec asks for ~140 intra-class edges.
    dense = spec(num_nodes=20, num_classes=2, num_features=2, avg_degree=14.0, homophily=1.0, degree_exponent=None)
    with pytest.raises(ValueError, match="too dense"):
        generate_csbm(dense)


def test_spec_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec().seed = 3  # type: ignore[misc]


def test_ten_thousand_nodes_degree_twenty_hits_the_mean_degree() -> None:
    # Speed is measured by benchmarks/scale.py, not asserted here.
    data = generate_csbm(spec(num_nodes=10_000, avg_degree=20.0, num_features=32, degree_exponent=2.1))
    assert data.edge_index.size(1) == pytest.approx(200_000, rel=0.05)
