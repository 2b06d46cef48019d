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
