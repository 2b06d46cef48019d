from __future__ import annotations

import pytest

from nodedp.data import get_dataset
from nodedp.resources import cell_memory_mb, cell_runtime_min, cost_of, data_memory_mb, graph_mib, training_epochs

PRODUCTS = get_dataset("synthetic-products").size
ARXIV = get_dataset("synthetic-arxiv").size


def test_a_dataset_of_unknown_size_and_a_small_one_get_the_floors():
    assert cell_memory_mb("gap", None, margin=1.5, floor=4000) == 4000
    assert cell_runtime_min("gap", None, epochs=10, margin=3, floor=60) == 60
    tiny = get_dataset("csbm-tiny").size
    assert cell_memory_mb("gap", tiny, margin=1.5, floor=4000) == 4000
    assert data_memory_mb(tiny, margin=1.5, floor=2000) == 2000


@pytest.mark.parametrize("method", ["dp-mlp", "gap", "progap", "dp-gcn", "dpar-em0", "nip-gnn", "dpdgc", "dp-sage"])
def test_requests_grow_with_the_graph_and_the_epochs(method):
    small = cell_memory_mb(method, ARXIV, margin=1.0, floor=1)
    large = cell_memory_mb(method, PRODUCTS, margin=1.0, floor=1)
    assert small < large
    assert cell_runtime_min(method, ARXIV, epochs=1, margin=1, floor=1) <= cell_runtime_min(
        method, ARXIV, epochs=50, margin=1, floor=1
    )
    assert cell_runtime_min(method, PRODUCTS, epochs=1, margin=1, floor=1) > cell_runtime_min(
        method, ARXIV, epochs=1, margin=1, floor=1
    )


def test_memory_estimates_cover_the_peaks_measured_on_the_products_standin():
    # docs/scaling.md: the largest stage peak of one cell (GiB), before any margin.
    measured = {"dp-mlp": 8.43, "gap": 14.84, "progap": 14.86, "dpar-em0": 8.69}
    for method, gib in measured.items():
        assert cell_memory_mb(method, PRODUCTS, margin=1.0, floor=1) * 1e6 >= gib * 2**30, method
    assert data_memory_mb(PRODUCTS, margin=1.0, floor=1) * 1e6 >= 8.32 * 2**30  # undirected degree bounding


def test_quadratic_mechanisms_are_charged_per_node_pair():
    assert cost_of("nip-gnn").structure_s_per_pair > 0 and cost_of("dpdgc-nodp").epoch_s_per_pair > 0
    linear = cell_runtime_min("gap", PRODUCTS, epochs=1, margin=1, floor=1) / cell_runtime_min(
        "gap", ARXIV, epochs=1, margin=1, floor=1
    )
    quadratic = cell_runtime_min("nip-gnn", PRODUCTS, epochs=1, margin=1, floor=1) / cell_runtime_min(
        "nip-gnn", ARXIV, epochs=1, margin=1, floor=1
    )
    assert quadratic > 5 * linear


def test_graph_size_and_epochs():
    assert graph_mib(PRODUCTS) == pytest.approx((2_449_029 * 100 * 4 + 2_449_029 * 8 + 61_859_140 * 32) / 2**20)
    assert training_epochs({"epochs": 10, "encoder_epochs": 40, "lr": 0.1}) == 40
    assert training_epochs({"lr": 0.1}) == 1
