from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nodedp.config import ConfigError, check_config, method_variants, resolve_method

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
        (lambda c: c["methods"].update({"gcn-x": {"base": "dp-foo"}}), "methods.gcn-x.base: 'dp-foo' is not a registered"),
        (lambda c: c["methods"].update({"gcn": {"base": "gcn"}}), "methods.gcn: a registered method cannot have a 'base'"),
        (lambda c: c["methods"].update({"gcn-x": {"base": "gcn", "num_layers": 0}}), "methods.gcn-x: .*num_layers"),
    ],
)
def test_bad_configs_name_the_field(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError, match=message):
        check_config(bad)


def test_a_variant_is_its_base_with_its_own_keys_on_top(config):
    config["methods"]["gcn"] = {"hidden_dim": 64, "num_layers": 1, "lr": 0.01}
    config["methods"]["gcn-deep"] = {"base": "gcn", "num_layers": 2}
    config["studies"]["demo"]["methods"].append("gcn-deep")
    check_config(config)
    assert method_variants(config)["gcn-deep"] == "gcn"
    assert "gcn" not in method_variants(config)
    assert resolve_method(config, "gcn-deep") == ("gcn", {"hidden_dim": 64, "num_layers": 2, "lr": 0.01})
    assert resolve_method(config, "gcn") == ("gcn", {"hidden_dim": 64, "num_layers": 1, "lr": 0.01})
    with pytest.raises(ConfigError, match="unknown method 'gcn-3hop'.*gcn-deep"):
        resolve_method(config, "gcn-3hop")
