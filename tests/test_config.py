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


def test_a_reference_name_is_its_method_with_the_papers_accounting(config):
    config["methods"]["dp-gcn-2hop"] = {"base": "dp-gcn", "num_layers": 2}
    config["methods"]["dp-gcn-2hop@paper"] = {"epochs": 7}  # the paper's own settings on top
    config["studies"]["demo"]["methods"] += ["dp-gcn@paper", "dp-gcn-2hop@paper"]
    check_config(config)
    base, hparams = resolve_method(config, "dp-gcn-2hop@paper")
    assert base == "dp-gcn" and hparams["accounting"] == "paper" and hparams["epochs"] == 7
    assert hparams["num_layers"] == 2 and "accounting" not in resolve_method(config, "dp-gcn-2hop")[1]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["studies"]["demo"]["methods"].append("mlp@paper"), "unknown method 'mlp@paper'"),
    (lambda c: c["methods"].update({"dp-gcn": {"accounting": "paper"}}), "set by the name alone"),
    (lambda c: c["methods"].update({"dp-gcn@paper": {"base": "dp-gcn"}}), "takes its method from its prefix"),
])
def test_reference_mode_is_named_and_only_by_name(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError, match=message):
        check_config(bad)
    with pytest.raises(ConfigError, match="no paper reference mode"):
        resolve_method(config, "mlp@paper")


def test_train_refuses_the_papers_accounting_under_another_name():
    from nodedp.cli import check_reference_name
    from nodedp.methods import get_method

    hp = get_method("dp-gcn").parse_hparams({"accounting": "paper"})
    check_reference_name("dp-gcn@paper", hp)
    with pytest.raises(ValueError, match="must be named"):
        check_reference_name("dp-gcn", hp)
    with pytest.raises(ValueError, match="must be named"):
        check_reference_name("dp-gcn@paper", get_method("dp-gcn").parse_hparams({}))
    with pytest.raises(ValueError, match="accounting must be one of"):
        get_method("dp-gcn").parse_hparams({"accounting": "papers"})
