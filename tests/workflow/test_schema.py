"""The config schema: enums equal the registries, bad configs are rejected with the field named."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from nodedp.accounting import ACCOUNTANT_POLICIES
from nodedp.contract.registry import method_names
from nodedp.data import dataset_names

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / "src/nodedp/config/config.schema.yaml").read_text())


def validate(config: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(config)


def test_enums_equal_the_registries():
    dataset = jsonschema.Draft202012Validator(SCHEMA["$defs"]["dataset"])  # no enum: nodedp.config checks the names
    assert all(dataset.is_valid(name) for name in dataset_names())
    method = jsonschema.Draft202012Validator(SCHEMA["$defs"]["method"])  # no enum: nodedp.config checks the names
    assert all(method.is_valid(name) for name in method_names())
    assert sorted(SCHEMA["properties"]["privacy"]["properties"]["accountant"]["enum"]) == sorted(ACCOUNTANT_POLICIES)


def test_shipped_config_is_valid():
    validate(yaml.safe_load((ROOT / "config.yaml").read_text()))


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c["studies"]["demo"]["methods"].append("DP GCN"),
        lambda c: c["methods"].update({"dp-gcn-2hop": {"base": "DP GCN"}}),  # unknown ids: nodedp.config
        lambda c: c.update({"plugins": ["my-methods.specs"]}),
        lambda c: c["studies"]["demo"]["datasets"].append("No Such Graph"),  # unknown ids: nodedp.config
        lambda c: c.update({"datasets": {"g": {"path": "g.npz", "format": "graphml"}}}),
        lambda c: c["studies"]["demo"].update({"epsilons": [0]}),
        lambda c: c["studies"]["demo"].update({"epsilons": [-1]}),
        lambda c: c["studies"]["demo"].update({"seeds": [1.5]}),
        lambda c: c["studies"]["demo"].update({"seeds": ["a"]}),
        lambda c: c["studies"]["demo"].pop("seeds"),
        lambda c: c.pop("studies"),
        lambda c: c["privacy"].update({"delta": 1.0}),
        lambda c: c["privacy"].update({"delta": "tiny"}),
        lambda c: c["privacy"].update({"accountant": "moments"}),
        lambda c: c.update({"typo": 1}),
        lambda c: c["bootstrap"].update({"resamples": 10}),
        lambda c: c["resources"].update({"train_mem_mb": 0}),
        lambda c: c["resources"].update({"train_runtime": 1.5}),
        lambda c: c["resources"].update({"train_mem_growth": 0.5}),
        lambda c: c["resources"].update({"train_gres": "'gpu:1'"}),  # quoted: the plugin would refuse it
        lambda c: c["resources"].update({"gpus": 1}),
    ],
)
def test_bad_configs_are_rejected(edit):
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
