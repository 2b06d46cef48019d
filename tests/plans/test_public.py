"""PublicInputs: what a plan may read, and a refusal where a plan reads what was not given."""

from __future__ import annotations

import pytest

from nodedp.plans import PublicInputs


def _public(**kw) -> PublicInputs:
    return PublicInputs(
        dataset="csbm-tiny", num_nodes=300, num_train=225, num_features=8, num_classes=3, num_edges=2000, **kw
    )


def test_direction_is_read_only_where_given_and_a_plan_needing_it_refuses_otherwise():
    assert _public(is_undirected=False).undirected() is False and _public(is_undirected=True).undirected() is True
    with pytest.raises(ValueError, match="undirected"):
        _public(is_undirected=None).undirected()


def test_the_training_set_must_fit_the_graph():
    with pytest.raises(ValueError, match="training nodes"):
        PublicInputs(dataset="x", num_nodes=10, num_train=11, num_features=1, num_classes=2)


def test_a_run_plans_from_the_datasets_metadata_so_a_neighbouring_graph_gets_the_same_plan(tiny_inputs, tiny_graph_dir):
    """A node (with its edges) fewer in the graph in hand: the same public inputs, hence the same plan and δ; the
    graph's own counts would differ (what runs read before: N and |E| of the private graph)."""
    import dataclasses

    import torch

    from nodedp.cli.common import target_delta
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.io import read_json
    from nodedp.plans import plan_run

    meta = read_json(tiny_graph_dir / "meta.json")
    graph = tiny_inputs.graph
    last = graph.num_nodes - 1
    keep = (graph.edge_index != last).all(0)
    neighbour = graph.clone()
    neighbour.x, neighbour.y = graph.x[:last], graph.y[:last]
    neighbour.edge_index = graph.edge_index[:, keep]
    neighbour.num_nodes = last
    spec = RunSpec(dataset="csbm-tiny", method="dp-gcn", seed=0, target_epsilon=4.0, target_delta=1e-4)
    public = [
        PublicInputs.from_run(dataclasses.replace(tiny_inputs, graph=g, meta=meta), spec, direction=True)
        for g in (graph, neighbour)
    ]
    assert public[0] == public[1] == PublicInputs.of(meta, num_train=public[0].num_train, setting=public[0].setting)
    assert public[0].num_nodes == meta["num_nodes"] and public[0].num_edges == meta["num_edges"]
    hp = get_method("dp-gcn").parse_hparams({"epochs": 1, "batch_size": 16})
    assert (
        plan_run(get_method("dp-gcn"), public[0], spec, hp).ledger
        == plan_run(get_method("dp-gcn"), public[1], spec, hp).ledger
    )
    own = [PublicInputs.from_run(dataclasses.replace(tiny_inputs, graph=g), spec) for g in (graph, neighbour)]
    assert own[0].num_nodes != own[1].num_nodes  # the graph's own counts: what a plan must not read
    # δ "auto" from the metadata alone, at node and edge level
    for level in ("node", "edge"):
        info = dataclasses.replace(get_method("gap" if level == "node" else "gap-edge"))
        assert target_delta(info, meta, "auto") < 1 / (meta["num_nodes"] if level == "node" else meta["num_edges"] / 2)
    with pytest.raises(ValueError, match="features, its meta.json"):
        PublicInputs.from_run(dataclasses.replace(tiny_inputs, meta={**meta, "num_features": 1}), spec)
    assert torch.equal(graph.edge_index, tiny_inputs.graph.edge_index)  # the fixture untouched
