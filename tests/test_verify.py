"""`nodedp verify`: a real run verifies; copies of it, each edited as a reviewer would forge it (the ledger's ε
recomputed with the project's own Ledger API, so that it agrees with itself), are refused by field."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from nodedp.analysis.collect import InvalidRunError, collect_runs
from nodedp.cli import main
from nodedp.verify import verify_run
from tests._runs import forge, lay_out_workspace


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir, tiny_split_path, tmp_path_factory):
    """A workspace laid out as the workflow's, with a DP-MLP run, its reference-mode twin and an MLP run."""
    root = tmp_path_factory.mktemp("verify")
    _, split = lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    runs = (
        ("dp-mlp", "2", '{"epochs": 2, "batch_size": 32}'),
        ("mlp", "inf", '{"epochs": 1}'),
        ("dp-mlp@paper", "2", '{"epochs": 2, "batch_size": 32, "accounting": "paper"}'),
    )
    for method, eps, extra in runs:
        out = root / f"results/runs/csbm-tiny/{method}/eps~{eps}/seed~0"
        assert (
            main(
                [
                    "train",
                    "--graph",
                    str(root / "resources/graphs/csbm-tiny"),
                    "--split",
                    str(split),
                    "--method",
                    method.removesuffix("@paper"),
                    "--name",
                    method,
                    "--epsilon",
                    eps,
                    "--seed",
                    "0",
                    "--hparams",
                    extra,
                    "--no-progress",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
    return root


def _run(workspace: Path) -> Path:
    return workspace / "results/runs/csbm-tiny/dp-mlp/eps~2/seed~0"


def _forged(workspace: Path, tmp_path: Path, edit_ledger=None, edit_metrics=None) -> Path:
    """A copy of the DP-MLP run edited (``tests._runs.forge``)."""
    return forge(_run(workspace), tmp_path / "forged", edit_ledger, edit_metrics)


def _dpsgd(ledger: dict) -> dict:
    return ledger["mechanisms"][0]


def _set_rate(ledger: dict, rate: float) -> None:
    record = _dpsgd(ledger)
    record["params"]["sampling_rate"] = rate
    record["dp_event"]["event"]["sampling_probability"] = rate


def test_real_runs_verify_and_a_method_without_planner_is_said_so(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    for method, eps in (("dp-mlp", "2"), ("mlp", "inf")):
        check = verify_run(Path(f"results/runs/csbm-tiny/{method}/eps~{eps}/seed~0"))
        assert check.refusals == () and check.replanned, check.refusals
    assert main(["verify", "results"]) == 0


FORGERIES = {
    # node sampling rate 0.01 on a DP-SGD ledger: amplification it never had
    "node_sample_rate": (lambda d: d.update(node_sample_rate=0.01), None),
    # δ = 0.5: ε near 0 at a δ that releases a node outright
    "target.delta": (lambda d: d["target"].update(delta=0.5), None),
    # 10 × the training examples, its sampling rate and event edited to match
    "num_examples": (
        lambda d: (
            _dpsgd(d)["params"].update(num_examples=_dpsgd(d)["params"]["num_examples"] * 10),
            _set_rate(d, _dpsgd(d)["params"]["sampling_rate"] / 10),
        ),
        None,
    ),
    # fewer steps than its epochs imply
    "steps": (lambda d: (_dpsgd(d)["params"].update(steps=2), _dpsgd(d)["dp_event"].update(count=2)), None),
    # more noise stated than drawn (a larger σ: a smaller ε)
    "noise_multiplier": (
        lambda d: (
            _dpsgd(d)["params"].update(noise_multiplier=50.0, noise_std=50.0),
            _dpsgd(d)["dp_event"]["event"]["event"].update(noise_multiplier=50.0),
        ),
        None,
    ),
    # the level
    "level": (lambda d: d.update(level="edge"), None),
    # a smaller clip norm in the ledger than the run's hyperparameters
    "clip_norm": (
        lambda d: (
            _dpsgd(d)["params"].update(clip_norm=0.1, noise_std=_dpsgd(d)["params"]["noise_multiplier"] * 0.1),
            _dpsgd(d).update(sensitivity=0.1),
        ),
        None,
    ),
    # metrics saying another ε than the ledger's
    "epsilon": (None, lambda m: m.update(epsilon=0.5)),
    # hyperparameters in metrics that are not the ones the ledger was planned for
    "batch": (None, lambda m: m["hyperparameters"].update(batch_size=16)),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_every_forgery_of_a_real_run_is_refused_naming_the_field(workspace, tmp_path, monkeypatch, name):
    monkeypatch.chdir(workspace)
    edit_ledger, edit_metrics = FORGERIES[name]
    forged = _forged(workspace, tmp_path, edit_ledger, edit_metrics)
    check = verify_run(forged)
    assert check.refusals, f"the {name} forgery verified"
    assert any(name.split(".")[-1] in r.field or name in str(r) for r in check.refusals) or name == "batch", [
        str(r) for r in check.refusals
    ]


@pytest.mark.parametrize(("factor", "verifies"), [(1 + 1e-7, True), (1 - 1e-7, True), (1 + 1e-5, False)])
def test_a_stated_cost_is_held_to_the_accountant_s_tolerance_its_raw_parameters_to_the_plan_s(
    workspace, tmp_path, monkeypatch, factor, verifies
):
    """ε is what the accountant derives from the raw parameters: a ledger whose ε differs in the 7th digit (written
    by a version whose accountant summed in another order) states the same cost; one off in the 5th does not. The
    raw parameters themselves must be re-derived to a relative 1e-9 (the noise forgery above)."""
    monkeypatch.chdir(workspace)

    forged = _forged(workspace, tmp_path, None, lambda m: m.update(epsilon=m["epsilon"] * factor))
    stated = json.loads((forged / "ledger.json").read_text())
    stated["epsilon"] *= factor  # as written (forge would recompute it)
    (forged / "ledger.json").write_text(json.dumps(stated))
    refusals = verify_run(forged).refusals
    assert (refusals == ()) is verifies, [str(r) for r in refusals]
    nudged = _forged(
        workspace,
        tmp_path / "noise",
        lambda d: _dpsgd(d)["params"].update(clip_norm=_dpsgd(d)["params"]["clip_norm"] * (1 + 1e-7)),
    )
    assert verify_run(nudged).refusals, "a raw parameter off in the 7th digit is not the plan's"


def test_verify_prints_one_line_per_refused_run_and_exits_1(workspace, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    forged = _forged(workspace, tmp_path, FORGERIES["steps"][0])
    assert main(["verify", str(forged), str(_run(workspace).relative_to(workspace))]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REFUSED ")]
    assert len(lines) == 1 and str(forged) in lines[0] and "steps" in lines[0]


def test_an_untouched_copy_verifies_and_a_deep_copy_of_the_plan_is_stable(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(workspace)
    same = _forged(workspace, tmp_path, lambda d: None)
    assert verify_run(same).refusals == ()
    before = copy.deepcopy(json.loads((same / "ledger.json").read_text()))
    verify_run(same)
    assert json.loads((same / "ledger.json").read_text()) == before  # verify writes nothing


def test_every_planner_resolves_and_imports_no_torch():
    """A plan is a torch-free function of public inputs: every private method registers a planner, and importing
    all of them loads no torch."""
    import os
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from nodedp.contract.registry import get_method, method_names\n"
        "from nodedp.plans import planner_of\n"
        "found = [n for n in method_names() if get_method(n).private and planner_of(get_method(n)) is not None]\n"
        "print(json.dumps({'planned': found, 'heavy': [m for m in ('torch', 'torch_geometric') "
        "if m in sys.modules]}))\n"
    )
    src = Path(__file__).resolve().parents[1] / "src"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    from nodedp.contract.registry import get_method, method_names

    private = sorted(n for n in method_names() if get_method(n).private)
    assert sorted(report["planned"]) == private and report["heavy"] == [], report  # every private method planned


# A run filed under a name that says another method or mode (the run, its new name).
MISFILED = {
    "a DP-MLP run filed as dp-gcn": ("dp-mlp/eps~2", "dp-gcn", "registered method 'dp-gcn', but the run is method"),
    "a non-private MLP filed as dp-gcn": ("mlp/eps~inf", "dp-gcn", "registered method 'dp-gcn', but the run is method"),
    "a suite run filed as dp-mlp@paper": ("dp-mlp/eps~2", "dp-mlp@paper", "this run is accounted by the suite"),
    "a reference run filed as nip-gnn": ("dp-mlp@paper/eps~2", "nip-gnn", "registered method 'nip-gnn', but the run"),
    "a reference run without @paper": ("dp-mlp@paper/eps~2", "dp-mlp-x", "this run is in reference mode"),
    "a non-private run flagged private": ("mlp/eps~inf", None, "'private' is True, but method 'mlp' is False"),
}


@pytest.mark.parametrize("case", sorted(MISFILED))
def test_a_run_filed_under_another_name_is_refused_by_verify_and_collect(workspace, tmp_path, monkeypatch, case):
    monkeypatch.chdir(workspace)
    run, name, message = MISFILED[case]
    edit = (lambda m: m.update(method=name)) if name else (lambda m: m.update(private=True))
    forged = forge(workspace / "results/runs/csbm-tiny" / run / "seed~0", tmp_path / "forged", edit_metrics=edit)
    check = verify_run(forged)
    assert [r.field for r in check.refusals] == ["method"] and message in str(check.refusals[0]), check.refusals
    assert main(["verify", str(forged)]) == 1
    # collect refuses it too (a forged private flag first fails its privacy fields: refused, for another reason)
    with pytest.raises(InvalidRunError, match=re.escape(message) if name else "a private run needs"):
        collect_runs([forged / "metrics.json"])


def test_train_refuses_a_name_that_says_another_method(workspace, tmp_path, capsys):
    graph, split = workspace / "resources/graphs/csbm-tiny", workspace / "results/splits/csbm-tiny/transductive"
    args = ["train", "--graph", str(graph), "--split", str(split / "seed~0.pt"), "--seed", "0", "--no-progress"]
    args += ["--hparams", '{"epochs": 1}', "--out", str(tmp_path / "run")]
    assert main([*args, "--method", "dp-mlp", "--epsilon", "2", "--name", "dp-gcn"]) == 2
    assert main([*args, "--method", "mlp", "--epsilon", "inf", "--name", "dp-gcn"]) == 2
    assert main([*args, "--method", "dp-mlp", "--epsilon", "2", "--name", "dp-mlp@paper"]) == 2
    assert "registered method 'dp-gcn', but the run is method 'mlp'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_one_malformed_run_does_not_stop_the_check_of_the_rest(workspace, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    malformed = forge(_run(workspace), tmp_path / "a-malformed", edit_metrics=lambda m: m.update(seed="zero"))
    forged = forge(_run(workspace), tmp_path / "b-forged", FORGERIES["steps"][0])
    assert main(["verify", str(malformed), str(forged), str(_run(workspace).relative_to(workspace))]) == 1
    out = capsys.readouterr().out
    refused = [line for line in out.splitlines() if line.startswith("REFUSED ")]
    assert len(refused) == 2 and "malformed" in refused[0] and "steps" in refused[1], out
    assert "3 run(s): 1 re-planned from public inputs and verified, 2 refused" in out


def test_collect_marks_a_run_it_cannot_re_derive_and_a_table_says_so(workspace, tmp_path):
    from nodedp.analysis import summarize, write_tables
    from nodedp.analysis.tables import UNVERIFIED_MARK

    def accuracy_table(summary, regenerate_command):
        md, tex = tmp_path / "t.md", tmp_path / "t.tex"
        write_tables(summary, markdown_path=md, latex_path=tex, regenerate_command=regenerate_command)
        assert (UNVERIFIED_MARK in md.read_text()) == ("oslash" in tex.read_text())
        return md.read_text()

    inside = workspace / "results/runs/csbm-tiny/dp-mlp/eps~2/seed~0"
    outside = forge(inside, tmp_path / "copied")  # an untouched copy, outside any workspace: no meta.json, no split
    rows = collect_runs([inside / "metrics.json", workspace / "results/runs/csbm-tiny/mlp/eps~inf/seed~0/metrics.json"])
    assert rows["replanned"].to_list() == [True, True]
    copied = collect_runs([outside / "metrics.json"])
    assert copied["replanned"].to_list() == [False]
    table = accuracy_table(summarize(copied), regenerate_command="x")
    assert UNVERIFIED_MARK in table and "not re-derived here" in table
    assert UNVERIFIED_MARK not in accuracy_table(summarize(rows), regenerate_command="x")
