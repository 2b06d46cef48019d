from __future__ import annotations

import copy
import json
import re

import pytest

from nodedp.config.check import check_config
from nodedp.config.read import ConfigError
from nodedp.config.variants import method_variants, resolve_method, tuned_blocks
from tests.config._grids import ROOT


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
    from nodedp.config.read import SCHEMA, check_schema
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

    from nodedp.config.variants import TUNED

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
    from nodedp.config.variants import check_run_name
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


def test_variant_overrides_are_the_keys_set_on_top_of_the_base(config):
    from nodedp.config.variants import variant_overrides

    overrides = variant_overrides(config)
    assert set(overrides) == set(method_variants(config))
    for name, (base, keys) in overrides.items():
        resolved_base, hparams = resolve_method(config, name)
        assert base == resolved_base and "base" not in keys
        assert all(hparams[k] == v for k, v in keys.items())


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
