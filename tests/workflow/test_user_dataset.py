"""The README's "Your own dataset" example, as written: a graph of one's own (an .npz written with numpy) declared
in a config trains DP-MLP and GAP through the workflow, with no code; editing the file rebuilds its graph, and a
bad file stops the workflow before any job, naming the file."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workflow._snakemake import ROOT, snakemake

pytestmark = pytest.mark.workflow

README = ROOT / "README.md"
SECTION = "## Your own dataset"
# What keeps the test fast on top of the README's grid: its first ε and seed, a few epochs.
FAST = {"dp-mlp": {"epochs": 2, "batch_size": 32}, "gap": {"epochs": 2, "encoder_epochs": 2, "batch_size": 32}}


def readme_example() -> tuple[dict, list[list[str]]]:
    """The README section's config (its ```yaml block) and its commands (the lines of its ```bash block)."""
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = dict(re.findall(r"```(yaml|bash)\n(.*?)```", section, flags=re.S))
    assert {"yaml", "bash"} <= set(blocks), f"{SECTION}: needs a ```yaml config and a ```bash block of commands"
    commands = [shlex.split(line, comments=True) for line in blocks["bash"].splitlines()]
    return yaml.safe_load(blocks["yaml"]), [c for c in commands if c]


def write_graph(path: Path, *, seed: int = 0, num_nodes: int = 240) -> None:
    """A small graph of one's own: two classes whose Gaussian features differ, most edges within a class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, num_nodes)
    x = rng.normal(size=(num_nodes, 8)) + y[:, None]
    src = rng.integers(0, num_nodes, 4 * num_nodes)
    members = [np.flatnonzero(y == c) for c in (0, 1)]
    dst = np.array([rng.choice(members[y[s]]) if rng.random() < 0.8 else rng.integers(num_nodes) for s in src])
    np.savez(path, edge_index=np.stack([src, dst]), x=x.astype(np.float32), y=y)


def snakemake_args(command: list[str]) -> tuple[str, list[str]]:
    """The README's snakemake command as (its --configfile, the rest but --cores), for the tests' runner."""
    assert command[0] == "snakemake", command
    args, configfile, rest = command[1:], None, []
    while args:
        arg = args.pop(0)
        if arg in ("--cores", "-c", "--configfile"):
            value = args.pop(0)
            configfile = value if arg == "--configfile" else configfile
        else:
            rest.append(arg)
    assert configfile is not None, f"the README's command names no --configfile: {command}"
    return configfile, rest


def test_the_readmes_own_dataset_trains_dp_mlp_and_gap_through_the_workflow(tmp_path):
    config, commands = readme_example()
    (name, declared), *_ = config["datasets"].items()
    study = next(iter(config["studies"].values()))
    assert name in study["datasets"] and {"dp-mlp", "gap"} <= set(study["methods"])
    study.update(epsilons=study["epsilons"][:1], seeds=study["seeds"][:1])
    config["methods"] = {**(config.get("methods") or {}), **FAST}
    write_graph(tmp_path / declared["path"])

    snakemake_commands = [c for c in commands if c[0] == "snakemake"]
    check_commands = [c for c in commands if c[:4] == ["python", "-m", "nodedp", "check-config"]]
    assert snakemake_commands and check_commands, commands
    configfile, args = snakemake_args(snakemake_commands[0])
    (tmp_path / configfile).write_text(yaml.safe_dump(config))

    for command in check_commands:  # the README's check, as written
        checked = subprocess.run(
            [sys.executable, *command[1:]], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300
        )
        assert checked.returncode == 0 and f"{configfile}: OK" in checked.stdout, checked.stderr[-3000:]

    result = snakemake(tmp_path, *args, config=tmp_path / configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    meta = json.loads((tmp_path / f"resources/graphs/{name}/meta.json").read_text())
    assert meta["source"]["kind"] == "file" and meta["source"]["files"][0]["path"] == declared["path"]
    epsilon = study["epsilons"][0]
    for method in ("dp-mlp", "gap"):
        run = tmp_path / f"results/runs/{name}/{method}/eps~{epsilon:g}/seed~{study['seeds'][0]}"
        metrics, ledger = (json.loads((run / f).read_text()) for f in ("metrics.json", "ledger.json"))
        assert metrics["dataset"] == name and 0 <= metrics["test"]["accuracy"] <= 1
        assert metrics["guarantee"]["holds"] and 0.99 * epsilon <= ledger["epsilon"] <= epsilon
    assert sorted(p.name for p in (tmp_path / f"results/structure/{name}").glob("*/seed~0/*.pt")) == [
        f"out-degree~{declared['out_degree_bound']}.pt"  # GAP's, at the declared public bound
    ]

    dry = snakemake(tmp_path, *args, "--dry-run", config=tmp_path / configfile)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
    write_graph(tmp_path / declared["path"], seed=1)  # an edited file: its graph and what follows are rebuilt
    dry = snakemake(tmp_path, *args, "--dry-run", config=tmp_path / configfile)
    assert dry.returncode == 0 and re.search(r"^graph\s+1$", dry.stdout, flags=re.M), dry.stdout[-3000:]

    np.savez(tmp_path / declared["path"], edge_index=np.array([[0], [10_000]]), x=np.ones((3, 2)), y=np.zeros(3))
    bad = snakemake(tmp_path, *args, "--dry-run", config=tmp_path / configfile)
    assert bad.returncode != 0
    assert f"datasets.{name}: " in bad.stderr and "edge endpoint 10000 out of range for 3 nodes" in bad.stderr
    assert "Job stats" not in bad.stdout + bad.stderr  # stopped before planning any job
