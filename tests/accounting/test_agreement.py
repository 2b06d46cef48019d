"""metrics.json against its ledger: each forgery is an edit of a real run's files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from nodedp.accounting import Ledger, verify_ledger_dict
from nodedp.accounting.agreement import RunDisagreement, check_run_agreement, private_units
from nodedp.cli import main

N = 300  # csbm-tiny's nodes


def _train(graph: Path, split: Path, out: Path, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    args = ["train", "--graph", str(graph), "--split", str(split), "--out", str(out), "--no-progress", *extra]
    assert main(args) == 0
    return json.loads((out / "metrics.json").read_text()), json.loads((out / "ledger.json").read_text())


@pytest.fixture(scope="module")
def dp_run(tiny_graph_dir, tiny_split_path, tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
    return _train(
        tiny_graph_dir,
        tiny_split_path,
        tmp_path_factory.mktemp("runs") / "dp-mlp",
        "--method",
        "dp-mlp",
        "--epsilon",
        "2",
        "--seed",
        "0",
        "--hparams",
        '{"epochs": 2, "batch_size": 32, "clip_norm": 1.0}',
    )


@pytest.fixture(scope="module")
def plain_run(tiny_graph_dir, tiny_split_path, tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
    return _train(
        tiny_graph_dir,
        tiny_split_path,
        tmp_path_factory.mktemp("runs") / "mlp",
        "--method",
        "mlp",
        "--epsilon",
        "inf",
        "--seed",
        "0",
        "--hparams",
        '{"epochs": 2}',
    )


def check(metrics: dict, ledger: dict, *, units: int | None = N) -> None:
    check_run_agreement(metrics, ledger, num_private_units=units, where="results/runs/x")


def refused(metrics: dict, ledger: dict, field: str, *, units: int | None = N) -> RunDisagreement:
    with pytest.raises(RunDisagreement) as info:
        check(metrics, ledger, units=units)
    assert info.value.field == field and "results/runs/x" in str(info.value) and field in str(info.value)
    return info.value


def restated(ledger: dict, edit) -> dict:
    """The ledger edited and its derived fields recomputed, so that it agrees with itself."""
    ledger = copy.deepcopy(ledger)
    edit(ledger)
    ledger = Ledger.from_dict(ledger).to_dict()
    verify_ledger_dict(ledger)
    return ledger


def test_unedited_runs_agree(dp_run, plain_run) -> None:
    check(*dp_run)
    check(*plain_run)
    check(*dp_run, units=None)


def test_a_small_epsilon_beside_a_ledger_at_a_large_delta_is_refused(dp_run) -> None:
    metrics, ledger = copy.deepcopy(dp_run[0]), restated(dp_run[1], lambda d: d["target"].update(delta=0.3))
    metrics["epsilon"] = 0.5
    error = refused(metrics, ledger, "target_delta")
    assert repr(metrics["target_delta"]) in str(error) and "0.3" in str(error)
    # The metrics restated at δ = 0.3 too: the ε now agrees, but δ is not below 1/N.
    metrics.update(target_delta=0.3, delta=0.3, epsilon=Ledger.from_dict(ledger).composed()[0])
    error = refused(metrics, ledger, "target_delta")
    assert "1/N" in str(error) and f"N = {N}" in str(error)
    check(metrics, ledger, units=None)  # N out of reach: that one check is skipped


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epsilon", 0.5),
        ("delta", 1e-7),
        ("target_delta", 1e-6),
        ("target_epsilon", 4.0),
        ("level", "edge"),
        ("accountant", "pld"),
        ("private", False),
        ("claim", {"epsilon": 2.0}),
    ],
)
def test_a_metrics_field_other_than_the_ledgers_is_refused(dp_run, field: str, value: Any) -> None:
    metrics = {**dp_run[0], field: value}
    error = refused(metrics, dp_run[1], field)
    assert repr(value) in str(error)


def test_a_guarantee_other_than_the_one_recomputed_from_the_ledger_is_refused(dp_run) -> None:
    metrics = copy.deepcopy(dp_run[0])
    metrics["guarantee"]["relation"] = "add or remove one edge"
    refused(metrics, dp_run[1], "guarantee")


@pytest.mark.parametrize(("name", "value"), [("clip_norm", 2.0), ("batch_size", 64), ("epochs", 3)])
def test_hyperparameters_other_than_the_ledgers_records_are_refused(dp_run, name: str, value: Any) -> None:
    metrics = copy.deepcopy(dp_run[0])
    metrics["hyperparameters"][name] = value
    error = refused(metrics, dp_run[1], f"hyperparameters.{name}")
    assert repr(value) in str(error) and "dp-sgd:dp-mlp" in str(error)


def test_a_ledger_edited_to_agree_with_itself_still_disagrees_with_its_run(dp_run) -> None:
    def clip(ledger: dict) -> None:  # C = 2 with the same noise multiplier: a consistent, cheaper-looking record
        params = ledger["mechanisms"][0]["params"]
        params.update(clip_norm=2.0, noise_std=params["noise_multiplier"] * 2.0)
        ledger["mechanisms"][0]["sensitivity"] = 2.0

    error = refused(dp_run[0], restated(dp_run[1], clip), "hyperparameters.clip_norm")
    assert "1.0" in str(error) and "2.0" in str(error)


def test_a_non_private_run_states_no_privacy_figures(plain_run) -> None:
    metrics, ledger = plain_run
    assert ledger["mechanisms"] == []
    refused({**metrics, "epsilon": 0.5}, ledger, "epsilon")
    refused({**metrics, "private": True}, ledger, "private")


def test_private_units_are_nodes_or_edges_of_the_public_metadata() -> None:
    meta = {"num_nodes": 10, "num_edges": 40, "is_undirected": True}
    assert private_units(meta, level="node") == 10
    assert private_units(meta, level="edge") == 20
    assert private_units({**meta, "is_undirected": False}, level="edge") == 40


def test_a_run_written_before_the_guarantee_named_what_is_not_private_still_agrees(dp_run) -> None:
    from nodedp.accounting.ledger import NOT_PRIVATE

    metrics, ledger = copy.deepcopy(dp_run[0]), copy.deepcopy(dp_run[1])
    for stated in (metrics["guarantee"], ledger["guarantee"]):
        assert stated["holds"].endswith(NOT_PRIVATE)
        stated["holds"] = stated["holds"].removesuffix(NOT_PRIVATE)  # as older runs word it
    verify_ledger_dict(ledger)
    check(metrics, ledger)
    metrics["guarantee"]["holds"] += "; and more"
    refused(metrics, ledger, "guarantee")
