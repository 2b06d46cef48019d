from __future__ import annotations

import copy

import pytest
import yaml

from nodedp.config.check import check_config
from nodedp.config.read import ConfigError
from tests.config._grids import ROOT


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


def test_a_yaml_syntax_error_names_the_file_and_its_line(tmp_path):
    from nodedp.config.read import read_config

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
    from nodedp.config.read import SCHEMA, check_schema

    check_schema(config, SCHEMA)
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError) as err:
        check_schema(bad, SCHEMA)
    message = str(err.value)
    assert message.startswith(f"{field}: ") and problem in message and "\n" not in message


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


def test_the_schema_ships_with_the_package():
    """An installed nodedp checks a grid against its own schema: no checkout, no --schema."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    from nodedp.config.read import SCHEMA

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert SCHEMA.relative_to(ROOT / "src" / "nodedp").as_posix() in package_data["package-data"]["nodedp"]
    assert yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"]["studies"]
