"""docs/adding-a-method.md's recipe, as written: its two files and grid in a workspace, trained and verified."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._runs import lay_out_workspace

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "docs" / "adding-a-method.md"
# A file of the recipe: a heading naming it, then its code block.
FILE_BLOCK = re.compile(r"^### `(?P<path>[^`]+)`\n+```[a-z]*\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def recipe_files() -> dict[str, str]:
    return {m["path"]: m["body"] for m in FILE_BLOCK.finditer(RECIPE.read_text(encoding="utf-8"))}


def nodedp(workspace: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("NODEDP_PLUGINS", "NODEDP_WORKER")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "nodedp", *args],
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def workspace(tiny_graph_dir: Path, tiny_split_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = recipe_files()
    assert sorted(files) == ["my-grid.yaml", "mymethods/dp_linear.py", "mymethods/specs.py"], sorted(files)
    root = tmp_path_factory.mktemp("workspace")
    for path, body in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(body, encoding="utf-8")
    lay_out_workspace(root, tiny_graph_dir, tiny_split_path)
    return root


def test_the_recipe_is_two_files_and_a_grid(workspace):
    assert sorted(p.name for p in (workspace / "mymethods").iterdir()) == ["dp_linear.py", "specs.py"]
    listed = nodedp(workspace, "methods", "--config", "my-grid.yaml")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^dp-linear\s+node\s+linear classifier", listed.stdout, re.MULTILINE), listed.stdout
    checked = nodedp(workspace, "check-config", "my-grid.yaml")
    assert checked.returncode == 0, checked.stderr
    assert "my-grid.yaml: OK" in checked.stdout and "1 training cell" in checked.stdout, checked.stdout


def test_the_method_trains_through_the_cli_and_its_ledger_verifies(workspace):
    run = workspace / "results/runs/csbm-tiny/dp-linear/eps~2/seed~0"
    split = "results/splits/csbm-tiny/transductive/seed~0.pt"
    trained = nodedp(
        workspace,
        *("train", "--graph", "resources/graphs/csbm-tiny", "--split", split, "--method", "dp-linear"),
        *("--epsilon", "2", "--seed", "0", "--config", "my-grid.yaml", "--device", "cpu", "--out", str(run)),
    )
    assert trained.returncode == 0, trained.stdout + trained.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    ledger = json.loads((run / "ledger.json").read_text())
    assert metrics["base_method"] == "dp-linear" and metrics["private"] and metrics["level"] == "node"
    assert metrics["hyperparameters"]["epochs"] == 5 and metrics["hyperparameters"]["batch_size"] == 32  # the grid's
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0
    # The plan's one DP-SGD record, calibrated to the target: ε at most the target, and not far below it.
    assert [r["name"] for r in ledger["mechanisms"]] == ["dp-sgd:dp-linear"]
    assert ledger["target"]["epsilon"] == 2.0 and 0.9 * 2.0 < ledger["epsilon"] <= 2.0
    assert metrics["epsilon"] == ledger["epsilon"] and ledger["delta"] <= ledger["target"]["delta"]
    assert metrics["plugin"] == "mymethods.specs"  # the module a reader must load, as the grid names it

    verified = nodedp(workspace, "verify", "results/runs", env={"NODEDP_PLUGINS": "mymethods.specs"})
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "1 run(s): 1 re-planned from public inputs and verified, 0 refused" in verified.stdout, verified.stdout
    # Without the plugin: not refused, not verified; the line names the module and how to load it; status 2.
    unloaded = nodedp(workspace, "verify", "results/runs")
    assert unloaded.returncode == 2, unloaded.stdout + unloaded.stderr
    assert "comes from the plugin module 'mymethods.specs', not loaded here" in unloaded.stdout, unloaded.stdout
    assert "NODEDP_PLUGINS=mymethods.specs" in unloaded.stdout and "REFUSED" not in unloaded.stdout
    assert "1 not checked (their method's plugin is not loaded)" in unloaded.stdout

    # A forged noise multiplier is not the plan: verify refuses the run, naming the field.
    forged = json.loads((run / "ledger.json").read_text())
    forged["mechanisms"][0]["params"]["noise_multiplier"] *= 0.5
    (run / "ledger.json").write_text(json.dumps(forged))
    try:
        refused = nodedp(workspace, "verify", "results/runs", env={"NODEDP_PLUGINS": "mymethods.specs"})
    finally:
        (run / "ledger.json").write_text(json.dumps(ledger))
    assert refused.returncode == 1 and "REFUSED" in refused.stdout and "noise_multiplier" in refused.stdout


def test_without_its_plugin_the_method_is_unknown_and_the_error_says_how_to_register_it(workspace):
    grid = (workspace / "my-grid.yaml").read_text().replace("plugins: [mymethods.specs]\n", "")
    (workspace / "no-plugin.yaml").write_text(grid)
    checked = nodedp(workspace, "check-config", "no-plugin.yaml")
    assert checked.returncode != 0
    assert "unknown method 'dp-linear'" in checked.stderr and "plugins:" in checked.stderr, checked.stderr
    (workspace / "bad-plugin.yaml").write_text(grid.replace("studies:", "plugins: [mymethod.specs]\nstudies:", 1))
    checked = nodedp(workspace, "check-config", "bad-plugin.yaml")
    assert checked.returncode != 0
    assert "cannot import the plugin module 'mymethod.specs'" in checked.stderr, checked.stderr
