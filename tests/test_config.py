from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from nodedp.config import ConfigError, check_config, method_variants, resolve_method, tuned_blocks

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_the_shipped_config_passes(config):
    check_config(config)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["methods"].update({"dp-mlp": {"clip_norm": -1.0}}), "methods.dp-mlp: .*clip_norm"),
        (lambda c: c["methods"].update({"mlp": {"hiden_dim": 3}}), r"methods.mlp: .*hiden_dim.*valid"),
        (lambda c: c["studies"]["demo"]["methods"].append("dp-foo"), "studies.demo.methods: unknown method 'dp-foo'"),
        (lambda c: c["studies"]["demo"]["datasets"].append("cora2"), "studies.demo.datasets: unknown dataset 'cora2'"),
        (
            lambda c: c["methods"].update({"gcn-x": {"base": "dp-foo"}}),
            "methods.gcn-x.base: 'dp-foo' is not a registered",
        ),
        (
            lambda c: c["methods"].update({"gcn": {"base": "gcn"}}),
            "methods.gcn: a registered method cannot have a 'base'",
        ),
        (lambda c: c["methods"].update({"gcn-x": {"base": "gcn", "num_layers": 0}}), "methods.gcn-x: .*num_layers"),
    ],
)
def test_bad_configs_name_the_field(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError, match=message):
        check_config(bad)


def test_a_variant_is_its_base_with_its_own_keys_on_top(config):
    config["methods"]["gcn"] = {"hidden_dim": 32, "lr": 0.02}
    config["methods"]["gcn-deep"] = {"base": "gcn", "num_layers": 2}
    config["studies"]["demo"]["methods"].append("gcn-deep")
    check_config(config)
    assert method_variants(config)["gcn-deep"] == "gcn"
    assert "gcn" not in method_variants(config)
    gcn = {**tuned_blocks()["gcn"], "hidden_dim": 32, "lr": 0.02}  # the grid's keys on the tuned block
    assert resolve_method(config, "gcn-deep") == ("gcn", {**gcn, "num_layers": 2})
    assert resolve_method(config, "gcn") == ("gcn", gcn)
    with pytest.raises(ConfigError, match="unknown method 'gcn-3hop'.*gcn-deep"):
        resolve_method(config, "gcn-3hop")


# --- the suite's tuned settings: one packaged file beneath every grid's `methods:` ---------------------------

RESOLVED = ROOT / "tests" / "resolved_methods.json"  # every name config.yaml trains, as it resolved before


def one_cell(**methods) -> dict:
    """A grid of one's own (what `--configfile` gives: it replaces config.yaml), naming methods only."""
    return {
        "studies": {"mine": {"datasets": ["cora"], "methods": ["dp-gcn", "dp-gcn-k5"], "epsilons": [4], "seeds": [0]}},
        "methods": methods,
    }


def test_every_method_config_yaml_trains_resolves_as_pinned(config):
    """Moving the tuned blocks out of config.yaml changed no run: a name's hyperparameters are its runs'
    meaning (a rule parameter: a change reruns its cells), so changing them means a new name or a new pin."""
    pinned = json.loads(RESOLVED.read_text(encoding="utf-8"))
    studied = {m for spec in config["studies"].values() for m in spec["methods"]}
    assert studied <= set(pinned)
    for name, (base, hparams) in pinned.items():
        assert resolve_method(config, name) == (base, hparams), name


def test_a_grid_naming_a_method_without_a_block_gets_the_tuned_settings(config):
    from nodedp.contract.registry import get_method

    for grid in (one_cell(), {k: v for k, v in one_cell().items() if k != "methods"}):  # `methods: {}` or none
        check_config(grid)
        assert resolve_method(grid, "dp-gcn") == resolve_method(config, "dp-gcn")
        assert resolve_method(grid, "dp-gcn-k5") == resolve_method(config, "dp-gcn-k5")
    base, hparams = resolve_method(one_cell(), "dp-gcn")
    tuned, default = get_method(base).parse_hparams(hparams), get_method(base).hparams()
    assert tuned != default and tuned.in_degree_bound == 3 and default.in_degree_bound == 0


def test_a_grids_entry_overrides_the_tuned_block_key_by_key():
    grid = one_cell(**{"dp-gcn": {"epochs": 7}, "dp-gcn-k5": {"lr": 0.5}})
    check_config(grid)
    tuned = dict(tuned_blocks()["dp-gcn"])
    assert resolve_method(grid, "dp-gcn") == ("dp-gcn", {**tuned, "epochs": 7})
    # a packaged variant keeps its base and keys: the grid's base block under it, the grid's keys for it on top
    assert resolve_method(grid, "dp-gcn-k5") == ("dp-gcn", {**tuned, "epochs": 7, "in_degree_bound": 5, "lr": 0.5})
    # a variant's own key wins over the grid's base block (dp-gcn-arxiv trains 100 epochs)
    assert resolve_method(grid, "dp-gcn-arxiv")[1]["epochs"] == 100
    assert resolve_method(grid, "dp-gcn@paper")[1] == {**tuned, "epochs": 7, "accounting": "paper"}


def test_an_unknown_method_lists_the_packaged_variants():
    grid = one_cell()
    grid["studies"]["mine"]["methods"].append("dp-gcn-k4")
    with pytest.raises(ConfigError, match=r"unknown method 'dp-gcn-k4'; valid: .*'dp-gcn-k5'.*'dpar-em0-ratio10'"):
        check_config(grid)
    with pytest.raises(ConfigError, match=r"unknown method 'dp-gcn-k4'; valid: .*'dp-gcn-k5'.*'dp-mlp-nip'"):
        resolve_method(grid, "dp-gcn-k4")
    assert method_variants(grid)["dpar-em0-ratio10"] == "dpar-em0"


def test_every_tuned_block_parses_and_passes_the_schema():
    from nodedp.config import SCHEMA, check_schema
    from nodedp.contract.registry import get_method

    blocks = {name: dict(block) for name, block in tuned_blocks().items()}
    check_schema({**one_cell(), "methods": blocks}, SCHEMA)
    for name in blocks:
        base, hparams = resolve_method({}, name)
        get_method(base).parse_hparams(hparams)
    with pytest.raises(TypeError):
        tuned_blocks()["dp-gcn"]["epochs"] = 1  # read-only: no caller can change another's settings


def test_the_tuned_settings_ship_with_the_package():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    from nodedp.config import TUNED

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert TUNED.relative_to(ROOT / "src" / "nodedp").as_posix() in package_data["package-data"]["nodedp"]


def test_a_bad_override_of_a_tuned_block_names_the_grids_field():
    with pytest.raises(ConfigError, match=r"^methods.dp-gcn: .*"):
        check_config(one_cell(**{"dp-gcn": {"epochs": 0}}))
    with pytest.raises(ConfigError, match=r"^methods.dp-gcn-k5.base: 'dp-foo' is not a registered method"):
        check_config(one_cell(**{"dp-gcn-k5": {"base": "dp-foo"}}))


def test_a_reference_name_is_its_method_with_the_papers_accounting(config):
    config["methods"]["dp-gcn-2hop"] = {"base": "dp-gcn", "num_layers": 2}
    config["methods"]["dp-gcn-2hop@paper"] = {"epochs": 7}  # the paper's own settings on top
    config["studies"]["demo"]["methods"] += ["dp-gcn@paper", "dp-gcn-2hop@paper"]
    check_config(config)
    base, hparams = resolve_method(config, "dp-gcn-2hop@paper")
    assert base == "dp-gcn" and hparams["accounting"] == "paper" and hparams["epochs"] == 7
    assert hparams["num_layers"] == 2 and "accounting" not in resolve_method(config, "dp-gcn-2hop")[1]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["studies"]["demo"]["methods"].append("mlp@paper"), "unknown method 'mlp@paper'"),
        (lambda c: c["methods"].update({"dp-gcn": {"accounting": "paper"}}), "set by the name alone"),
        (lambda c: c["methods"].update({"dp-gcn@paper": {"base": "dp-gcn"}}), "takes its method from its prefix"),
    ],
)
def test_reference_mode_is_named_and_only_by_name(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError, match=message):
        check_config(bad)
    with pytest.raises(ConfigError, match="no paper reference mode"):
        resolve_method(config, "mlp@paper")


def test_a_run_name_must_say_the_method_and_mode_the_run_is():
    from nodedp.config import check_run_name
    from nodedp.contract.registry import get_method

    check_run_name("dp-gcn@paper", base="dp-gcn", reference=True, epsilon=4.0)
    check_run_name("dp-gcn-fb100@paper", base="dp-gcn", reference=True, epsilon=4.0)  # a variant's reference run
    check_run_name("my-gcn", base="dp-gcn", reference=False, epsilon=4.0)
    check_run_name("mlp", base="mlp", reference=False, epsilon=float("inf"))
    for name, base, reference, eps, message in [
        ("dp-gcn", "dp-gcn", True, 4.0, "is named '<method>@paper', and only such a run; this run is in reference"),
        ("dp-gcn@paper", "dp-gcn", False, 4.0, "only such a run; this run is accounted by the suite"),
        ("dp-gcn", "dp-mlp", False, 4.0, "registered method 'dp-gcn', but the run is method 'dp-mlp'"),
        ("dp-gcn", "mlp", False, float("inf"), "registered method 'dp-gcn', but the run is method 'mlp'"),
        ("nip-gnn", "dp-mlp", True, 1.0, "registered method 'nip-gnn', but the run is method 'dp-mlp'"),
        ("dp-mlp-x", "dp-mlp", False, float("inf"), "is private: ε must be finite"),
        ("mlp-x", "mlp", False, 8.0, "is non-private: its ε is 'inf'"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            check_run_name(name, base=base, reference=reference, epsilon=eps)
    with pytest.raises(ValueError, match="accounting must be one of"):
        get_method("dp-gcn").parse_hparams({"accounting": "papers"})


# --- reading and schema: one line naming the file, line or field -------------------------------------------


def test_a_yaml_syntax_error_names_the_file_and_its_line(tmp_path):
    from nodedp.config import read_config

    lines = ["studies:", "  demo:", "    datasets: [csbm-tiny", "    methods: [mlp]", "methods: {}"]
    path = tmp_path / "grid.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as err:
        read_config(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}, line ") and "YAML syntax error" in message
    # The parser notices the unclosed list where the next key starts, and says where the list began.
    assert f"line {lines.index('    methods: [mlp]') + 1}," in message
    assert f"from line {lines.index('    datasets: [csbm-tiny') + 1}" in message
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="a config is a YAML mapping"):
        read_config(path)
    with pytest.raises(ConfigError, match="nope.yaml: cannot read"):
        read_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda c: c.pop("studies"), "(top level)", "'studies' is a required property"),
        (lambda c: c["studies"]["demo"]["seeds"].__setitem__(0, 0.5), "studies.demo.seeds[0]", "not of type 'integer'"),
        (lambda c: c.update({"privacy": {"delta": 1.5}}), "privacy.delta", "1.5 is greater than"),
        (lambda c: c.update({"privacy": {"delta": None}}), "privacy.delta", 'expected "auto"'),  # its description
        (lambda c: c.update({"extra": 1}), "(top level)", "'extra' was unexpected"),
    ],
)
def test_a_schema_violation_is_one_line_naming_the_field(config, edit, field, problem):
    from nodedp.config import SCHEMA, check_schema

    check_schema(config, SCHEMA)
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError) as err:
        check_schema(bad, SCHEMA)
    message = str(err.value)
    assert message.startswith(f"{field}: ") and problem in message and "\n" not in message


# --- what the datasets' public sizes decide, before any job --------------------------------------------------


def tiny_grid(**methods) -> dict:
    return {
        "studies": {"s": {"datasets": ["csbm-tiny"], "methods": ["mlp", *methods], "epsilons": [1], "seeds": [0]}},
        "methods": {name: block for name, block in methods.items() if block is not None},
    }


def tiny_train_nodes() -> int:
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol

    info = get_dataset("csbm-tiny")
    return round(get_protocol(info.protocol).split.train * info.source["params"]["num_nodes"])


def test_a_synthetic_datasets_size_is_its_spec_and_a_built_graph_says_its_own(tmp_path, tiny_graph_dir):
    from nodedp.config import public_size
    from nodedp.io import read_json

    spec = public_size("csbm-tiny")
    meta = read_json(tiny_graph_dir / "meta.json")
    assert spec.num_nodes == meta["num_nodes"] and spec.num_train == tiny_train_nodes() and spec.num_edges is None
    built = public_size("csbm-tiny", graphs_dir=tiny_graph_dir.parent)
    assert built.num_nodes == meta["num_nodes"] and built.num_edges == meta["num_edges"] // 2
    assert built.source.endswith("meta.json")
    assert public_size("cora", graphs_dir=tmp_path) is None  # downloaded and not built: nothing public yet


def test_delta_must_lie_below_one_over_the_public_number_of_nodes():
    from nodedp.config import public_size

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
        monkeypatch.setattr("nodedp.config.tuned_blocks", dict)
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
    from nodedp.config import size_limits
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


def test_plugins_name_a_module_that_can_be_imported(monkeypatch, tmp_path):
    from nodedp.contract.registry import PLUGINS_ENV

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PLUGINS_ENV, raising=False)
    grid = {
        "plugins": ["no_such_nodedp_plugin.specs"],
        "studies": {"s": {"datasets": ["csbm-tiny"], "methods": ["mlp"], "epsilons": [1], "seeds": [0]}},
    }
    with pytest.raises(ConfigError, match=r"^plugins: cannot import the plugin module 'no_such_nodedp_plugin.specs'"):
        check_config(grid)


def test_variant_overrides_are_the_keys_set_on_top_of_the_base(config):
    from nodedp.config import variant_overrides

    overrides = variant_overrides(config)
    assert set(overrides) == set(method_variants(config))
    for name, (base, keys) in overrides.items():
        resolved_base, hparams = resolve_method(config, name)
        assert base == resolved_base and "base" not in keys
        assert all(hparams[k] == v for k, v in keys.items())


# --- sweeps: a hyperparameter the study's private variants set to at least two values ------------------------


def sweep_grid(sweeps: list[str], *methods: str) -> dict:
    return {
        "studies": {
            "s": {
                "datasets": ["csbm-tiny"],
                "methods": ["mlp", *methods],
                "epsilons": [1],
                "seeds": [0],
                "sweeps": sweeps,
            }
        },
        "methods": {
            "dp-mlp": {"batch_size": 16, "hidden_dim": 64},
            "dp-mlp-wide": {"base": "dp-mlp", "hidden_dim": 96},
            "mlp": {"hidden_dim": 128},
        },
    }


def test_a_sweep_over_two_private_values_passes():
    check_config(sweep_grid(["hidden_dim"], "dp-mlp", "dp-mlp-wide"))
    check_config(sweep_grid([], "dp-mlp"))  # no sweep: nothing to check


@pytest.mark.parametrize(
    ("sweeps", "methods", "message"),
    [
        # the non-private mlp's 128 is no second value: a sweep is over the private methods
        (["hidden_dim"], ("dp-mlp",), r"'hidden_dim' takes 1 numeric value\(s\)"),
        (["no_such"], ("dp-mlp", "dp-mlp-wide"), r"'no_such' takes 0 numeric value\(s\).*'hidden_dim'"),
        (["hidden_dim", "optimizer"], ("dp-mlp", "dp-mlp-wide"), r"'optimizer' takes 0 numeric"),
    ],
)
def test_a_sweep_without_two_values_names_the_study(sweeps, methods, message):
    with pytest.raises(ConfigError, match=rf"^studies\.s\.sweeps: {message}"):
        check_config(sweep_grid(sweeps, *methods))


def test_methods_verbose_prints_the_merge_rule_and_where_each_value_comes_from(tmp_path, capsys):
    from nodedp.cli import main

    assert main(["methods", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "on top of the suite's tuned block in nodedp/methods/tuned.yaml (tuned), key by key" in out
    dp_gcn = out.split("\ndp-gcn ", 1)[1].split("\ndp-gin ", 1)[0]
    assert "    in_degree_bound = 3  (tuned; default 0)" in dp_gcn and "    clip_percentile = 0.0\n" in dp_gcn
    assert "dp-gcn-k5                base dp-gcn       in_degree_bound=5" in out  # packaged variants, no --config
    grid = tmp_path / "grid.yaml"
    grid.write_text("methods:\n  dp-gcn: {epochs: 7}\n")
    assert main(["methods", "--verbose", "--config", str(grid)]) == 0
    out = capsys.readouterr().out
    assert "    epochs = 7  (config; default 20)" in out.split("\ndp-gcn ", 1)[1]
    assert "    epochs = 7\n" in out.split("\ndp-gcn-k5 ", 1)[1]


# --- size checks: before any job against a public size, in the split job against the split it cut --------------


def test_size_limits_keep_the_first_run_of_each_level_and_the_largest_batch_on_the_dataset():
    from nodedp.config import size_limits

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
    }  # mlp minibatches freely; dp-sage: not cora
    assert json.loads(json.dumps(limits)) == limits  # what the split job gets on its command line
    assert size_limits(grid, "csbm-tiny")["batch"]["size"] == 999
    assert size_limits({**grid, "privacy": {"delta": "auto"}}, "cora")["delta"] is None


def test_the_split_check_refuses_what_the_planner_refuses_for_the_same_size():
    from nodedp.config import check_size_limits, public_size, size_limits

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
    from nodedp.config import PublicSize, check_size_limits, size_limits

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
    from nodedp.config import size_limits

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


@pytest.mark.parametrize(
    ("regime", "message"),
    [
        ("nope", r"^studies\.t\.regime: no study 'nope' to draw from; true \(this study\) or one of \['s', 't'\]"),
        ("t", r"^studies\.t\.regime: .* study 't' has no dp-mlp \(its methods: \['mlp'\]\)"),
    ],
)
def test_a_regime_figure_needs_a_study_with_dp_mlp(regime, message):
    grid = sweep_grid([], "dp-mlp")
    grid["studies"]["t"] = {**grid["studies"]["s"], "methods": ["mlp"], "regime": regime}
    with pytest.raises(ConfigError, match=message):
        check_config(grid)
    grid["studies"]["t"]["regime"] = "s"  # the other study has dp-mlp: fine
    check_config(grid)
