from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nodedp.config import ConfigError, check_config

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
    ],
)
def test_bad_configs_name_the_field(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(ConfigError, match=message):
        check_config(bad)
