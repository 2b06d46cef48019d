from __future__ import annotations

import json

import pytest

from nodedp.config.check import check_config
from nodedp.config.read import ConfigError
from nodedp.config.variants import tuned_blocks
from tests.config._grids import tiny_grid, tiny_train_nodes


def test_a_synthetic_datasets_size_is_its_spec_and_a_built_graph_says_its_own(tmp_path, tiny_graph_dir):
    from nodedp.config.limits import public_size
    from nodedp.io import read_json

    spec = public_size("csbm-tiny")
    meta = read_json(tiny_graph_dir / "meta.json")
    assert spec.num_nodes == meta["num_nodes"] and spec.num_train == tiny_train_nodes() and spec.num_edges is None
    built = public_size("csbm-tiny", graphs_dir=tiny_graph_dir.parent)
    assert built.num_nodes == meta["num_nodes"] and built.num_edges == meta["num_edges"] // 2
    assert built.source.endswith("meta.json")
    assert public_size("cora", graphs_dir=tmp_path) is None  # downloaded and not built: nothing public yet


def test_delta_must_lie_below_one_over_the_public_number_of_nodes():
    from nodedp.config.limits import public_size

    n = public_size("csbm-tiny").num_nodes
    grid = tiny_grid(**{"dp-mlp": {"batch_size": 16}})
    for delta in ("auto", 0.5 / n):
        check_config({**grid, "privacy": {"delta": delta}})
    for delta in (1 / n, 0.5):
        with pytest.raises(ConfigError, match=rf"^privacy.delta: .*1/N = 1/{n} for dp-mlp on csbm-tiny"):
            check_config({**grid, "privacy": {"delta": delta}})
    check_config({**tiny_grid(), "privacy": {"delta": 0.5}})  # no private method: no δ to check


def test_a_batch_of_training_nodes_cannot_exceed_the_training_set(monkeypatch):
    n = tiny_train_nodes()
    check_config(tiny_grid(**{"dp-mlp": {"batch_size": n}}))
    with pytest.raises(ConfigError, match=rf"^methods.dp-mlp.batch_size: {n + 1} is more than the {n} training nodes"):
        check_config(tiny_grid(**{"dp-mlp": {"batch_size": n + 1}}))
    # A variant inherits its base's block: the field named is where the value is set.
    grid = tiny_grid(**{"dp-mlp-big": {"base": "dp-mlp"}})
    grid["methods"]["dp-mlp"] = {"batch_size": n + 1}
    with pytest.raises(ConfigError, match=r"^methods.dp-mlp.batch_size: "):
        check_config(grid)
    from nodedp.contract.registry import get_method

    assert tuned_blocks()["gap"]["batch_size"] > n  # a tuned value, named as such
    with pytest.raises(ConfigError, match=r"^methods.gap.batch_size \(the suite's tuned setting, .*tuned.yaml\)"):
        check_config(tiny_grid(gap=None))
    default = get_method("gap").hparams().batch_size
    if default > n:  # the default itself, named as such
        for module in ("variants", "limits"):  # where the blocks are read, and where the limit names their source
            monkeypatch.setattr(f"nodedp.config.{module}.tuned_blocks", dict)
        with pytest.raises(ConfigError, match=r"^methods.gap.batch_size \(the default of gap\)"):
            check_config(tiny_grid(gap=None))
    # Non-private minibatching has no such limit: one batch is then the whole training set.
    check_config(tiny_grid(**{"mlp": {"batch_size": 10 * n}}))


def test_a_built_graphs_meta_gives_the_size_of_a_downloaded_dataset(tmp_path):
    from nodedp.io import write_json

    grid = {
        "studies": {"s": {"datasets": ["cora"], "methods": ["dp-mlp"], "epsilons": [1], "seeds": [0]}},
        "methods": {"dp-mlp": {"batch_size": 64}},
    }
    check_config(grid, graphs_dir=tmp_path)  # not built yet: nothing to check against
    write_json(
        tmp_path / "cora" / "meta.json",
        {"name": "cora", "num_nodes": 80, "num_edges": 300, "is_undirected": True, "source": {"protocol": "nip-gnn"}},
    )
    with pytest.raises(ConfigError, match=r"batch_size: 64 is more than the 60 training nodes of cora .*meta.json"):
        check_config(grid, graphs_dir=tmp_path)
    (tmp_path / "cora" / "meta.json").write_text("{broken")
    check_config(grid, graphs_dir=tmp_path)  # unreadable: the job reading it reports it, not the planner


def test_the_batch_limit_follows_the_registry_entry(tmp_path):
    from nodedp.config.limits import size_limits
    from nodedp.contract.registry import get_method

    # dp-mlp draws its batch from the training nodes (its entry says so); dpar-em0 draws an expected batch of its
    # own node sample, so its batch size is no limit on the dataset.
    assert get_method("dp-mlp").batch_of_training_nodes and not get_method("dpar-em0").batch_of_training_nodes
    grid = {
        "studies": {"s": {"datasets": ["csbm-tiny"], "methods": ["dpar-em0", "dp-mlp"], "epsilons": [1], "seeds": [0]}},
        "methods": {"dpar-em0": {"batch_size": 999}, "dp-mlp": {"batch_size": 7}},
    }
    assert size_limits(grid, "csbm-tiny")["batch"] == {
        "study": "s",
        "method": "dp-mlp",
        "size": 7,
        "field": "methods.dp-mlp.batch_size",
    }


def test_size_limits_keep_the_first_run_of_each_level_and_the_largest_batch_on_the_dataset():
    from nodedp.config.limits import size_limits

    cell = {"epsilons": [1], "seeds": [0]}
    grid = {
        "studies": {
            "a": {"datasets": ["cora"], "methods": ["mlp", "dp-mlp", "gap-edge"], **cell},
            "b": {"datasets": ["csbm-tiny", "cora"], "methods": ["dp-gcn", "dp-mlp-big"], **cell},
            "c": {"datasets": ["csbm-tiny"], "methods": ["dp-sage"], **cell},
        },
        "methods": {
            "mlp": {"batch_size": 5000},
            "dp-mlp": {"batch_size": 64},
            "dp-gcn": {"batch_size": 32},
            "dp-mlp-big": {"base": "dp-mlp", "batch_size": 128},
            "dp-sage": {"batch_size": 999},
        },
        "privacy": {"delta": 1e-6},
    }
    limits = size_limits(grid, "cora")
    assert limits == {
        "dataset": "cora",
        "delta": 1e-6,
        "node": {"study": "a", "method": "dp-mlp"},
        "edge": {"study": "a", "method": "gap-edge"},
        "batch": {"study": "b", "method": "dp-mlp-big", "size": 128, "field": "methods.dp-mlp-big.batch_size"},
        "claims": [],
    }  # mlp minibatches freely; dp-sage: not cora; no reference-mode run
    assert json.loads(json.dumps(limits)) == limits  # what the split job gets on its command line
    assert size_limits(grid, "csbm-tiny")["batch"]["size"] == 999
    assert size_limits({**grid, "privacy": {"delta": "auto"}}, "cora")["delta"] is None


def test_the_split_check_refuses_what_the_planner_refuses_for_the_same_size():
    from nodedp.config.limits import check_size_limits, public_size, size_limits

    def refusal(check) -> str | None:
        try:
            check()
        except ConfigError as err:
            return str(err)
        return None

    n, size = tiny_train_nodes(), public_size("csbm-tiny")
    for block, delta in [
        ({"batch_size": n}, "auto"),
        ({"batch_size": n + 1}, "auto"),
        ({"batch_size": 16}, 1 / size.num_nodes),
        ({"batch_size": 16}, 0.5 / size.num_nodes),
    ]:
        grid = {**tiny_grid(**{"dp-mlp": block}), "privacy": {"delta": delta}}
        planned = refusal(lambda grid=grid: check_config(grid))
        assert planned == refusal(lambda grid=grid: check_size_limits(size_limits(grid, "csbm-tiny"), size))
    assert planned is None and refusal(lambda: check_config(tiny_grid(**{"dp-mlp": {"batch_size": n + 1}})))


def test_a_split_with_fewer_training_nodes_than_published_refuses_the_batch_and_names_it():
    from nodedp.config.limits import PublicSize, check_size_limits, size_limits

    grid = {**tiny_grid(**{"dp-mlp": {"batch_size": 100}, "gap-edge": None}), "privacy": {"delta": 1e-4}}
    limits = size_limits(grid, "csbm-tiny")
    check_size_limits(limits, PublicSize(num_nodes=2000, num_edges=5000, num_train=100, source="the split"))
    with pytest.raises(
        ConfigError,
        match=r"^methods\.dp-mlp\.batch_size: 100 is more than the 99 training nodes "
        r"of csbm-tiny \(study s; its split of 2000 nodes, from the split\); use a "
        r"batch_size of at most 99$",
    ):
        check_size_limits(limits, PublicSize(num_nodes=2000, num_edges=5000, num_train=99, source="the split"))
    with pytest.raises(
        ConfigError,
        match=r"^privacy\.delta: 0\.0001 is not below 1/N = 1/10000 for gap-edge "
        r"on csbm-tiny \(study s; 10000 edges, from the split\)",
    ):
        check_size_limits(limits, PublicSize(num_nodes=2000, num_edges=10000, num_train=100, source="the split"))


def test_the_split_verb_checks_the_split_it_cut_before_saving_it(tiny_graph_dir, tmp_path, capsys):
    from nodedp.cli import main
    from nodedp.config.limits import size_limits

    n, out = tiny_train_nodes(), tmp_path / "split.pt"
    split = ["split", "--graph", str(tiny_graph_dir), "--seed", "0", "--out", str(out), "--check-limits"]
    too_big = {"config": "grid.yaml", **size_limits(tiny_grid(**{"dp-mlp": {"batch_size": n + 1}}), "csbm-tiny")}
    assert main([*split, json.dumps(too_big)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        f"nodedp split: error: grid.yaml: methods.dp-mlp.batch_size: {n + 1} is more than the "
        f"{n} training nodes of csbm-tiny (study s; its split of "
    ), error
    assert f"{tiny_graph_dir / 'meta.json'} and its " in error and " split of seed 0)" in error
    assert not out.exists()
    assert main([*split, json.dumps(size_limits(tiny_grid(**{"dp-mlp": {"batch_size": n}}), "csbm-tiny"))]) == 0
    assert out.is_file()


@pytest.mark.parametrize("ratio", [0.9, 1.1])
def test_a_reference_claim_at_or_below_the_papers_accountant_floor_is_refused_before_any_job(ratio):
    """DP-GNN's reference mode cannot claim an ε its paper's accountant cannot state on the training nodes (its
    RDP-to-(ε, δ) conversion alone costs the floor; on the 45-school FB-100 union, ε = 1.313): check-config refuses
    the study's ε where the planner would, and the suite-accounted twin at the same ε is not refused."""
    from nodedp.accounting.dp_gnn_paper import paper_epsilon_floor
    from nodedp.plans.dp_gnn import paper_noise_multiplier

    n = tiny_train_nodes()
    epsilon = ratio * paper_epsilon_floor(n)
    cell = {"datasets": ["csbm-tiny"], "epsilons": [8, epsilon], "seeds": [0]}
    small = {"dp-gcn": {"batch_size": 16}}
    check_config({"studies": {"suite": {**cell, "methods": ["dp-gcn"]}}, "methods": small})
    grid = {"studies": {"ref": {**cell, "methods": ["mlp", "dp-gcn@paper"]}}, "methods": small}
    shape = {"num_examples": n, "max_degree": 5, "num_layers": 1, "batch_size": 16, "steps": 10}
    if ratio < 1:
        with pytest.raises(
            ConfigError,
            match=rf"^studies\.ref\.epsilons: {epsilon:g} is a claim dp-gcn@paper cannot state on csbm-tiny "
            rf"\({n} training nodes, from the csbm-tiny spec\): its accountant's conversion alone costs ε = ",
        ):
            check_config(grid)
        with pytest.raises(ValueError, match="its conversion alone costs"):
            paper_noise_multiplier(target_epsilon=epsilon, **shape)
    else:
        check_config(grid)
        assert paper_noise_multiplier(target_epsilon=epsilon, **shape) > 0
