from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from nodedp.analysis.collect import (
    RUNS_SCHEMA,
    InvalidRunError,
    collect_runs,
    write_runs,
)


class LedgerOverspent(ValueError):
    pass


def fake_verify(ledger: dict) -> float:
    """Stands in for nodedp.accounting.verify_ledger_dict: the ledger states its own ε."""
    if ledger["epsilon"] > ledger["target_epsilon"]:
        raise LedgerOverspent(f"ε {ledger['epsilon']} > target {ledger['target_epsilon']}")
    return ledger["epsilon"]


def unchecked(metrics: dict, ledger: dict, *, num_private_units: int | None, where: str) -> None:
    """Stands in for nodedp.accounting.agreement.check_run_agreement: these fake ledgers are no real ones (the
    real check is tested on real runs below)."""


def write_run(
    root: Path,
    *,
    dataset: str = "csbm",
    method: str = "dp-mlp",
    eps: float | None = 4.0,
    seed: int = 0,
    spent: float | None = None,
    ledger: dict[str, Any] | None = None,
    drop: str | None = None,
    guarantee: str = "unconditional",
    claim: dict[str, Any] | None = None,
    hyperparameters: Any = None,
    base_method: str | None = None,
) -> Path:
    """One run directory; ``eps=None`` is a non-private run. Returns its metrics.json."""
    private = eps is not None
    spent = (eps * 0.99 if private else None) if spent is None else spent
    metrics: dict[str, Any] = {
        "dataset": dataset,
        "method": method,
        "seed": seed,
        "private": private,
        "target_epsilon": eps,
        "target_delta": 1e-4 if private else None,
        "epsilon": spent,
        "delta": 1e-4 if private else None,
        "level": "node" if private else "none",
        "guarantee": {"class": guarantee if private else "none"},
        "test": {"accuracy": 0.7 + 0.01 * seed, "macro_f1": 0.6},
        "val": {"accuracy": 0.72, "macro_f1": 0.61},
        "timings": {"total_s": 3.0, "train_s": 2.5},
        "hyperparameters": {} if hyperparameters is None else hyperparameters,
        "version": {"nodedp": "0.1.0", "git_commit": "abc"},
        "claim": claim,
    }
    if base_method is not None:
        metrics["base_method"] = base_method
    if drop is not None:
        *parents, leaf = drop.split(".")
        node = metrics
        for part in parents:
            node = node[part]
        del node[leaf]
    run_dir = root / dataset / method / f"eps~{eps if private else 'inf'}" / f"seed~{seed}"
    run_dir.mkdir(parents=True)
    if ledger is None:
        ledger = (
            {"epsilon": spent, "target_epsilon": eps, "guarantee": {"class": guarantee}, "claim": claim}
            if private
            else {}
        )
    (run_dir / "ledger.json").write_text(json.dumps(ledger))
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    return run_dir / "metrics.json"


def test_collects_private_and_non_private_runs(tmp_path: Path) -> None:
    paths = [
        write_run(tmp_path, eps=1.0, seed=0),
        write_run(tmp_path, eps=1.0, seed=1),
        write_run(tmp_path, method="gcn", eps=None, seed=0),
    ]
    runs = collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs.schema == pl.Schema(RUNS_SCHEMA)
    assert runs.height == 3
    assert runs["seed"].to_list() == [0, 1, 0]
    assert runs["test_accuracy"].to_list() == pytest.approx([0.70, 0.71, 0.70])
    gcn = runs.row(2, named=True)
    assert gcn["private"] is False
    assert gcn["target_epsilon"] == math.inf and gcn["epsilon"] == math.inf
    assert gcn["delta"] is None and gcn["level"] == "none"
    assert runs.row(0, named=True)["epsilon"] == pytest.approx(0.99)


def test_a_run_outside_a_git_checkout_has_a_null_commit(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0)
    metrics = json.loads(path.read_text())
    metrics["version"]["git_commit"] = None
    path.write_text(json.dumps(metrics))
    assert collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)["git_commit"].to_list() == [None]


def test_no_paths_give_an_empty_frame_with_the_schema() -> None:
    runs = collect_runs([], verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs.is_empty() and runs.schema == pl.Schema(RUNS_SCHEMA)


def test_non_private_runs_are_not_sent_to_the_verifier(tmp_path: Path) -> None:
    def refuse_all(ledger: dict) -> float:
        raise AssertionError("a non-private ledger was verified")

    runs = collect_runs(
        [write_run(tmp_path, method="gcn", eps=None)], verify_ledger=refuse_all, check_agreement=unchecked
    )
    assert runs.height == 1


def test_refuses_a_ledger_that_fails_verification(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0, ledger={"epsilon": 1.5, "target_epsilon": 1.0})
    with pytest.raises(InvalidRunError, match="ledger failed verification") as info:
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)
    assert info.value.run_dir == path.parent
    assert str(path.parent) in str(info.value)


def test_refuses_a_ledger_whose_target_is_looser_than_the_run(tmp_path: Path) -> None:
    # The ledger passes against its own target of 8 but spends more than the run's 1.
    path = write_run(tmp_path, eps=1.0, ledger={"epsilon": 3.0, "target_epsilon": 8.0})
    with pytest.raises(InvalidRunError, match="ledger epsilon 3.0 exceeds target 1.0"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_refuses_a_recorded_epsilon_above_target(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0, spent=1.01, ledger={"epsilon": 0.9, "target_epsilon": 1.0})
    with pytest.raises(InvalidRunError, match="recorded epsilon 1.01 exceeds target 1.0"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_refuses_a_missing_ledger(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0)
    (path.parent / "ledger.json").unlink()
    with pytest.raises(InvalidRunError, match="ledger.json is missing"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_a_non_private_run_also_needs_its_ledger(tmp_path: Path) -> None:
    path = write_run(tmp_path, method="gcn", eps=None)
    (path.parent / "ledger.json").unlink()
    with pytest.raises(InvalidRunError, match="ledger.json is missing"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


@pytest.mark.parametrize("key", ["seed", "test.macro_f1", "timings.train_s", "version.git_commit"])
def test_refuses_metrics_missing_a_key(tmp_path: Path, key: str) -> None:
    path = write_run(tmp_path, eps=1.0, drop=key)
    with pytest.raises(InvalidRunError, match=f"lacks \\['{key}'\\]"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_refuses_a_private_run_without_a_target(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0)
    metrics = json.loads(path.read_text())
    metrics["target_epsilon"] = None
    path.write_text(json.dumps(metrics))
    with pytest.raises(InvalidRunError, match="needs target_epsilon"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_refuses_duplicate_runs_naming_both(tmp_path: Path) -> None:
    first = write_run(tmp_path / "a", eps=1.0, seed=3)
    second = write_run(tmp_path / "b", eps=1.0, seed=3)
    with pytest.raises(InvalidRunError, match="duplicates") as info:
        collect_runs([first, second], verify_ledger=fake_verify, check_agreement=unchecked)
    assert info.value.run_dir == second.parent
    assert str(first.parent) in str(info.value)


def test_same_seed_at_another_budget_is_not_a_duplicate(tmp_path: Path) -> None:
    paths = [write_run(tmp_path, eps=1.0, seed=0), write_run(tmp_path, eps=2.0, seed=0)]
    assert collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked).height == 2


def test_defaults_to_the_accounting_verifier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict] = []

    def verify_ledger_dict(ledger: dict) -> float:
        seen.append(ledger)
        return fake_verify(ledger)

    fake_accounting = types.ModuleType("nodedp.accounting")
    fake_accounting.verify_ledger_dict = verify_ledger_dict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nodedp.accounting", fake_accounting)
    collect_runs([write_run(tmp_path, eps=1.0)], check_agreement=unchecked)
    assert seen == [{"epsilon": 0.99, "target_epsilon": 1.0, "guarantee": {"class": "unconditional"}, "claim": None}]


def test_write_runs_round_trips_and_leaves_no_temporary(tmp_path: Path) -> None:
    runs = collect_runs(
        [write_run(tmp_path / "runs", eps=1.0), write_run(tmp_path / "runs", method="gcn", eps=None)],
        verify_ledger=fake_verify,
        check_agreement=unchecked,
    )
    out = tmp_path / "out" / "runs.parquet"
    write_runs(runs, out)
    assert pl.read_parquet(out).equals(runs)
    assert [p.name for p in out.parent.iterdir()] == ["runs.parquet"]


def test_a_run_with_an_uncharged_read_is_not_fully_accounted(tmp_path: Path) -> None:
    read = {"name": "clip-thresholds", "touches": ["labels"], "reason": "percentile at init"}
    paths = [
        write_run(tmp_path, eps=1.0, seed=0),
        write_run(
            tmp_path,
            eps=1.0,
            seed=1,
            ledger={
                "epsilon": 0.99,
                "target_epsilon": 1.0,
                "uncharged": [read],
                "guarantee": {"class": "unconditional"},
            },
        ),
        write_run(
            tmp_path,
            eps=1.0,
            seed=2,
            ledger={"epsilon": 0.99, "target_epsilon": 1.0, "uncharged": [], "guarantee": {"class": "unconditional"}},
        ),
        write_run(tmp_path, method="gcn", eps=None, seed=0),
    ]
    runs = collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs["fully_accounted"].to_list() == [True, False, True, True]


def test_the_guarantee_class_travels_from_the_ledger_to_the_summary(tmp_path: Path) -> None:
    from nodedp.analysis.bootstrap import summarize

    paths = [
        write_run(tmp_path, eps=1.0, seed=0, guarantee="unconditional"),
        write_run(tmp_path, eps=1.0, seed=1, guarantee="conditional"),
        write_run(tmp_path, eps=1.0, seed=2, guarantee="unconditional"),
    ]
    runs = collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked)
    assert sorted(runs["guarantee"].to_list()) == ["conditional", "unconditional", "unconditional"]
    (cell,) = summarize(runs, n_resamples=1000).iter_rows(named=True)
    assert cell["guarantee"] == "conditional"  # a cell is as weak as its weakest run


def test_metrics_and_ledger_must_state_the_same_guarantee(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0)
    metrics = json.loads(path.read_text())
    metrics["guarantee"] = {"class": "unconditional"}
    ledger = json.loads((path.parent / "ledger.json").read_text())
    ledger["guarantee"] = {"class": "conditional"}
    (path.parent / "ledger.json").write_text(json.dumps(ledger))
    with pytest.raises(InvalidRunError, match="guarantee"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def reference_verify(ledger: dict) -> float:
    """Stands in for the verifier of a reference ledger: exempt from its target (the claim)."""
    return ledger["epsilon"]


def test_a_reference_run_enters_with_its_actual_epsilon_above_the_claim(tmp_path: Path) -> None:
    from nodedp.analysis.bootstrap import summarize

    claim = {"epsilon": 8.0, "delta": 2e-3, "rule": "ε·q", "source": "paper", "actual_epsilon": 40.0}
    paths = [
        write_run(tmp_path, method="dpar-em0@paper", eps=8.0, seed=s, spent=50.0 + s, claim=claim) for s in range(3)
    ]
    runs = collect_runs(paths, verify_ledger=reference_verify, check_agreement=unchecked)
    assert runs["reference"].to_list() == [True] * 3
    assert runs["epsilon"].to_list() == [50.0, 51.0, 52.0] and runs["target_epsilon"].unique().to_list() == [8.0]
    assert runs["claim_actual_epsilon"].to_list() == [40.0] * 3 and runs["claimed_delta"].to_list() == [2e-3] * 3
    (cell,) = summarize(runs, n_resamples=1000).iter_rows(named=True)
    assert cell["reference"] and cell["epsilon_max"] == 52.0 and cell["claim_actual_epsilon_max"] == 40.0


def test_a_suite_run_over_its_target_is_still_refused(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=8.0, spent=9.0)
    with pytest.raises(InvalidRunError, match="exceeds target"):
        collect_runs([path], verify_ledger=reference_verify, check_agreement=unchecked)


def test_metrics_and_ledger_must_state_the_same_claim(tmp_path: Path) -> None:
    claim = {"epsilon": 8.0, "delta": 2e-3, "rule": "ε·q", "source": "paper", "actual_epsilon": 40.0}
    path = write_run(tmp_path, method="x@paper", eps=8.0, spent=50.0, claim=claim)
    metrics = json.loads(path.read_text())
    metrics["claim"] = None
    path.write_text(json.dumps(metrics))
    with pytest.raises(InvalidRunError, match="claim"):
        collect_runs([path], verify_ledger=reference_verify, check_agreement=unchecked)
    wrong = write_run(tmp_path / "b", method="x@paper", eps=4.0, spent=50.0, claim=claim)
    with pytest.raises(InvalidRunError, match="claimed"):
        collect_runs([wrong], verify_ledger=reference_verify, check_agreement=unchecked)


def test_hyperparameters_and_base_method_travel_as_columns(tmp_path: Path) -> None:
    hp = {"ratio": 0.25, "k": 2, "accounting": "suite"}
    paths = [
        write_run(tmp_path, method="dpar-em0-r25", eps=1.0, hyperparameters=hp, base_method="dpar-em0"),
        write_run(tmp_path, method="gcn", eps=None, drop="hyperparameters"),
    ]
    runs = collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs["base_method"].to_list() == ["dpar-em0", None]  # runs recorded before base_method: null
    stored = runs["hyperparameters"][0]
    assert json.loads(stored) == hp and list(json.loads(stored)) == sorted(hp)  # one key order for every run
    assert runs["hyperparameters"][1] is None


def test_refuses_hyperparameters_that_are_not_an_object(tmp_path: Path) -> None:
    path = write_run(tmp_path, eps=1.0, hyperparameters=[0.5])
    with pytest.raises(InvalidRunError, match="'hyperparameters' must be an object, got list"):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


def test_a_swept_hyperparameter_reaches_the_figures(tmp_path: Path) -> None:
    from nodedp.analysis.bootstrap import summarize
    from nodedp.analysis.sweep import sweep_cells

    paths = [
        write_run(
            tmp_path,
            method=f"dpar-em0-r{ratio}",
            eps=1.0,
            seed=s,
            base_method="dpar-em0",
            hyperparameters={"ratio": ratio / 100, "k": 2},
        )
        for ratio in (25, 50, 75)
        for s in range(2)
    ]
    summary = summarize(collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked), n_resamples=1000)
    cells = sweep_cells(summary, parameter="ratio")
    assert cells["line"].unique().to_list() == ["dpar-em0"]
    assert cells["value"].to_list() == [0.25, 0.5, 0.75]
    assert cells["mean"].to_list() == summary.sort("method")["test_accuracy_mean"].to_list()


def with_test_extras(path: Path, **extras: Any) -> Path:
    metrics = json.loads(path.read_text())
    metrics["test"].update(extras)
    path.write_text(json.dumps(metrics))
    return path


def test_constant_predictions_and_the_majority_class_reach_the_summary(tmp_path: Path) -> None:
    from nodedp.analysis.bootstrap import summarize

    paths = [
        with_test_extras(
            write_run(tmp_path, eps=1.0, seed=s), predicted_classes=classes, majority_accuracy=0.3 + 0.01 * s
        )
        for s, classes in enumerate([1, 7, 1])
    ]
    paths.append(
        with_test_extras(write_run(tmp_path, method="gcn", eps=None), predicted_classes=7, majority_accuracy=0.3)
    )
    ledgers = {p: (p.parent / "ledger.json").read_bytes() for p in paths}
    runs = collect_runs(paths, verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs["test_predicted_classes"].to_list() == [1, 7, 1, 7]
    assert runs["test_majority_accuracy"].to_list() == pytest.approx([0.30, 0.31, 0.32, 0.30])
    summary = summarize(runs).sort("method")
    assert summary["n_one_class_runs"].to_list() == [2, 0]  # dp-mlp: seeds 0 and 2; gcn: none
    assert summary["test_majority_accuracy"].to_list() == pytest.approx([0.31, 0.30])
    assert summary["n_runs"].to_list() == [3, 1]
    assert all((p.parent / "ledger.json").read_bytes() == ledger for p, ledger in ledgers.items())


def test_runs_recorded_without_them_leave_the_columns_null(tmp_path: Path) -> None:
    from nodedp.analysis.bootstrap import summarize

    old = write_run(tmp_path, eps=1.0, seed=0)
    new = with_test_extras(write_run(tmp_path, eps=1.0, seed=1), predicted_classes=1, majority_accuracy=0.3)
    runs = collect_runs([old, new], verify_ledger=fake_verify, check_agreement=unchecked)
    assert runs["test_predicted_classes"].to_list() == [None, 1]
    (cell,) = summarize(runs).iter_rows(named=True)
    # one run's count is unknown: the cell's count is unknown too, not a guess from the others
    assert cell["n_one_class_runs"] is None and cell["test_majority_accuracy"] is None


@pytest.mark.parametrize(
    ("extras", "match"),
    [
        ({"predicted_classes": 0}, "predicted_classes must be a count >= 1"),
        ({"predicted_classes": 2.5}, "predicted_classes must be a count >= 1"),
        ({"predicted_classes": True}, "predicted_classes must be a count >= 1"),
        ({"majority_accuracy": 1.5}, r"majority_accuracy must lie in \[0, 1\]"),
    ],
)
def test_refuses_a_malformed_count_or_reference(tmp_path: Path, extras: dict, match: str) -> None:
    path = with_test_extras(write_run(tmp_path, eps=1.0), **extras)
    with pytest.raises(InvalidRunError, match=match):
        collect_runs([path], verify_ledger=fake_verify, check_agreement=unchecked)


# --- real runs: metrics.json must agree with its ledger (nodedp.accounting.agreement) ---------------------------


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir: Path, tiny_split_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace as the workflow lays it out: one dp-mlp run under results/runs, its graph under
    resources/graphs and the seed's split under results/splits (what a re-plan reads)."""
    from nodedp.cli import main
    from tests._runs import lay_out_workspace

    root = tmp_path_factory.mktemp("workspace")
    graph, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    out = root / "results" / "runs" / "csbm-tiny" / "dp-mlp" / "eps~2" / "seed~0"
    assert (
        main(
            [
                "train",
                "--graph",
                str(graph),
                "--split",
                str(split),
                "--out",
                str(out),
                "--no-progress",
                "--method",
                "dp-mlp",
                "--epsilon",
                "2",
                "--seed",
                "0",
                "--hparams",
                '{"epochs": 2, "batch_size": 32, "clip_norm": 1.0}',
            ]
        )
        == 0
    )
    return root


def real_run(workspace: Path, tmp_path: Path, *, metrics: dict | None = None, ledger=None) -> Path:
    """A copy of the workspace with the run's metrics.json updated by ``metrics`` and its ledger edited by
    ``ledger`` (then its derived fields recomputed, so that it agrees with itself); returns its metrics.json."""
    import shutil

    from nodedp.accounting import Ledger

    root = tmp_path / "workspace"
    shutil.copytree(workspace, root)
    (path,) = root.glob("results/runs/*/*/*/*/metrics.json")
    if metrics:
        path.write_text(json.dumps({**json.loads(path.read_text()), **metrics}))
    if ledger is not None:
        stored = json.loads((path.parent / "ledger.json").read_text())
        ledger(stored)
        (path.parent / "ledger.json").write_text(json.dumps(Ledger.from_dict(stored).to_dict()))
    return path


def test_an_unedited_real_run_is_accepted(workspace: Path, tmp_path: Path) -> None:
    runs = collect_runs([real_run(workspace, tmp_path)])
    assert runs.height == 1 and runs["epsilon"][0] <= 2.0


def test_a_ledger_that_agrees_with_itself_and_its_metrics_but_not_its_plan_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """A node sampling rate the run never had, ε recomputed and metrics matched: only the re-plan can tell."""
    path = real_run(workspace, tmp_path, ledger=lambda d: d.update(node_sample_rate=0.01))
    ledger = json.loads((path.parent / "ledger.json").read_text())
    path.write_text(json.dumps({**json.loads(path.read_text()), "epsilon": ledger["epsilon"]}))
    with pytest.raises(InvalidRunError, match="node_sample_rate"):
        collect_runs([path])
    assert collect_runs([path], replan=None).height == 1  # what the agreement checks alone would let through


def refused_naming(path: Path, field: str, *values: Any) -> InvalidRunError:
    with pytest.raises(InvalidRunError) as info:
        collect_runs([path])
    message = str(info.value)
    assert info.value.run_dir == path.parent and str(path.parent) in message
    assert f"on {field}:" in message and all(str(v) in message for v in values), message
    return info.value


def test_a_small_epsilon_beside_a_ledger_at_a_large_delta_is_refused(workspace: Path, tmp_path: Path) -> None:
    # The forgery: metrics.json says ε = 0.5 at its δ; the ledger (consistent with itself) is at δ = 0.3.
    path = real_run(workspace, tmp_path, metrics={"epsilon": 0.5}, ledger=lambda d: d["target"].update(delta=0.3))
    stated = json.loads(path.read_text())["target_delta"]
    refused_naming(path, "target_delta", stated, 0.3)


def test_a_delta_not_below_one_over_n_is_refused(workspace: Path, tmp_path: Path) -> None:
    from nodedp.accounting import Ledger

    ledger = json.loads(next(workspace.glob("results/runs/*/*/*/*/ledger.json")).read_text())
    ledger["target"]["delta"] = 0.3
    epsilon = Ledger.from_dict(ledger).composed()[0]
    path = real_run(
        workspace,
        tmp_path,
        metrics={"target_delta": 0.3, "delta": 0.3, "epsilon": epsilon},
        ledger=lambda d: d["target"].update(delta=0.3),
    )
    refused_naming(path, "target_delta", 0.3, "1/N", "N = 300")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epsilon", 0.5),
        ("level", "edge"),
        ("target_delta", 1e-6),
        ("accountant", "pld"),
    ],
)
def test_a_metrics_field_other_than_the_ledgers_is_refused(
    workspace: Path, tmp_path: Path, field: str, value: Any
) -> None:
    refused_naming(real_run(workspace, tmp_path, metrics={field: value}), field, repr(value))


@pytest.mark.parametrize(("name", "value"), [("clip_norm", 2.0), ("batch_size", 64), ("epochs", 3)])
def test_hyperparameters_other_than_the_ledgers_are_refused(
    workspace: Path, tmp_path: Path, name: str, value: Any
) -> None:
    (stored,) = workspace.glob("results/runs/*/*/*/*/metrics.json")
    hparams = {**json.loads(stored.read_text())["hyperparameters"], name: value}
    refused_naming(
        real_run(workspace, tmp_path, metrics={"hyperparameters": hparams}), f"hyperparameters.{name}", repr(value)
    )


def test_a_ledger_clip_norm_edited_consistently_is_refused(workspace: Path, tmp_path: Path) -> None:
    def clip(ledger: dict) -> None:
        record = ledger["mechanisms"][0]
        record["params"].update(clip_norm=2.0, noise_std=record["params"]["noise_multiplier"] * 2.0)
        record["sensitivity"] = 2.0

    refused_naming(real_run(workspace, tmp_path, ledger=clip), "hyperparameters.clip_norm", "1.0", "2.0")
