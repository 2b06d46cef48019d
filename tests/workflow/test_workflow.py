"""The DAG itself: lint, planning the shipped grid, and a whole run on a tiny config."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.workflow._snakemake import ROOT, TINY, snakemake, write_config

pytestmark = pytest.mark.workflow


def test_lint_reports_nothing(tmp_path):
    result = snakemake(ROOT, "--lint")
    assert result.returncode == 0, result.stderr
    assert "Lints for" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_shipped_config_plans_the_full_grid_one_rule_per_stage(tmp_path):
    result = snakemake(tmp_path, "--summary", config=ROOT / "config.yaml")  # every planned file and its rule
    assert result.returncode == 0, result.stderr
    from nodedp.config.variants import resolve_method
    from nodedp.contract.naming import format_epsilon
    from nodedp.contract.registry import get_method

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    cells = set()
    for study in config["studies"].values():
        for method in study["methods"]:
            for eps in study["epsilons"] if get_method(resolve_method(config, method)[0]).private else ["inf"]:
                cells.update(
                    f"results/runs/{d}/{method}/eps~{format_epsilon(float(eps))}/seed~{s}/metrics.json"
                    for d in study["datasets"]
                    for s in study["seeds"]
                )
    rules = {}  # planned file -> the rule that makes it
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) > 2 and fields[0].startswith("results/"):
            rules[fields[0]] = fields[2]
    planned = {path for path in rules if path.startswith("results/runs/") and path.endswith("/metrics.json")}
    assert planned == cells
    assert {rules[path] for path in planned} == {"train"}  # one job per cell, of one rule
    assert {rule for path, rule in rules.items() if path.startswith("results/audit/")} == {"audit_cell"}
    # A rule per stage, not per job: --list-rules, --until and --forcerun by rule name stay usable.
    listed = snakemake(tmp_path, "--list-rules", config=ROOT / "config.yaml")
    assert listed.returncode == 0, listed.stderr
    names = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    assert "train" in names and "audit_cell" in names and len(names) < 40, names


def _group_jobs(workdir: Path, *args: str) -> int:
    result = snakemake(workdir, "demo", "--dry-run", *args, config=ROOT / "config.yaml")
    assert result.returncode == 0, result.stderr
    return result.stdout.count("Group job")


def test_slurm_profile_dry_runs_in_group_jobs_and_a_local_dry_run_builds_none(tmp_path):
    """Rules name no group: the SLURM profile assigns them (`groups`, with its `group-components`), so a local
    run builds none. In a workspace of its own: never the checkout's (whatever a `make demo` left there)."""
    # data (both graphs and their splits), structure (30 jobs, 24 to a group job: 2), train (84 cells, 48 to a
    # group job: 2), audit (6 cells)
    assert _group_jobs(tmp_path, "--profile", str(ROOT / "slurm")) == 6
    assert _group_jobs(tmp_path, "--groups", "train=train", "--group-components", "train=2") > 4
    assert _group_jobs(tmp_path, "--group-components", "train=2") == 0
    assert _group_jobs(tmp_path) == 0
    assert not any("group:" in rules.read_text() for rules in (ROOT / "workflow/rules").glob("*.smk"))


def _rule_blocks(stdout: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    for block in stdout.split("rule ")[1:]:
        blocks.setdefault(block.split(":")[0], []).append(block)
    return blocks


def _resource(block: str, name: str) -> str:
    """A resource shown in a job's block of the dry run ("" where it is empty or absent)."""
    if f" {name}=" not in block:
        return ""
    return block.split(f" {name}=")[1].split("\n")[0].split(",")[0].strip()


def _wildcard(block: str, name: str) -> str:
    return block.split(f" {name}=")[1].split(",")[0].split()[0]


@pytest.mark.parametrize(("gres", "shown"), [("gpu:a100:1", "gpu:a100:1"), ("", "")])
def test_training_asks_for_the_configured_gres_and_grows_memory_per_attempt(tmp_path, gres, shown):
    config = write_config(tmp_path, {**TINY, "resources": {"train_gres": gres, "train_mem_mb": 1500}})
    result = snakemake(tmp_path, "demo", "--dry-run", config=config)
    assert result.returncode == 0, result.stderr
    train = _rule_blocks(result.stdout)["train"]
    assert len(train) == 12 + 4  # one job per cell
    assert all(
        _resource(b, "gres") == shown and _resource(b, "mem_mb") == "1500" and _resource(b, "runtime") == "60"
        for b in train
    )


def test_each_kind_of_job_goes_where_resources_jobs_sends_it(tmp_path):
    """`resources: {jobs: ...}` is the one place for partitions, accounts, GRES, memory and runtime per kind of
    job: the SLURM profile's dry run shows each setting on its kind's jobs and on no other."""
    kinds = {
        "train": {"partition": "gpu", "gres": "gpu:a100:1", "account": "lab"},
        "audit": {"partition": "gpu-audit", "runtime": 45},
        "structure": {"partition": "cpu", "mem_mb": 3000},
        "data": {"partition": "io", "account": "lab-data", "runtime": 20},
    }
    demo = {**TINY["studies"]["demo"], "methods": [*TINY["studies"]["demo"]["methods"], "gap"]}  # degree bounding
    config = write_config(
        tmp_path,
        {
            **TINY,
            "studies": {"demo": demo},
            "resources": {"jobs": kinds},
            "methods": {**TINY["methods"], "gap": {"batch_size": 32}},
        },
    )
    result = snakemake(tmp_path, "demo", "--dry-run", "--profile", str(ROOT / "slurm"), config=config)
    assert result.returncode == 0, result.stderr
    blocks = _rule_blocks(result.stdout)
    kind_of = {
        "train": "train",
        "audit_cell": "audit",
        "bound_degree": "structure",
        "bounding_stability": "structure",
        "graph": "data",
        "split": "data",
    }
    seen = set()
    for rule, kind in kind_of.items():
        for block in blocks.get(rule, []):
            seen.add(rule)
            assert _resource(block, "slurm_partition") == kinds[kind]["partition"], (rule, block)
            assert _resource(block, "slurm_account") == kinds[kind].get("account", ""), (rule, block)
            assert _resource(block, "gres") == kinds[kind].get("gres", ""), (rule, block)
            for key in ("mem_mb", "runtime"):
                if key in kinds[kind]:
                    assert _resource(block, key) == str(kinds[kind][key]), (rule, block)
    assert seen >= {"train", "audit_cell", "bound_degree", "graph", "split"}
    # Local rules (downloads, collection, tables, figures) ask for none of it.
    for rule in ("collect", "summarize", "tables", "figures"):
        assert all(_resource(b, "slurm_partition") == "" for b in blocks[rule])
    # A GPU partition and GRES for training alone: on training jobs, and on no other.
    only = write_config(
        tmp_path,
        {
            **TINY,
            "studies": {"demo": demo},
            "resources": {"train_gres": "", "jobs": {"train": kinds["train"]}},
            "methods": {**TINY["methods"], "gap": {"batch_size": 32}},
        },
    )
    result = snakemake(tmp_path, "demo", "--dry-run", "--profile", str(ROOT / "slurm"), config=only)
    assert result.returncode == 0, result.stderr
    for rule, found in _rule_blocks(result.stdout).items():
        for block in found:
            wanted = kinds["train"] if rule == "train" else {}
            assert _resource(block, "slurm_partition") == wanted.get("partition", ""), (rule, block)
            assert _resource(block, "gres") == wanted.get("gres", ""), (rule, block)


def test_the_profiles_own_examples_work_as_written(tmp_path):
    """Every `set-resources` / `default-resources` example in slurm/config.yaml's comments, put into a copy of the
    profile, reaches the jobs it names."""
    profile = (ROOT / "slurm/config.yaml").read_text()
    examples = [
        line.removeprefix("#").strip().split("  #")[0]
        for line in profile.splitlines()
        if line.startswith("#   ") and ("set-resources:" in line or "default-resources:" in line)
    ]
    assert examples, "the profile's comments show how to set resources"
    config = write_config(tmp_path, TINY)
    for i, example in enumerate(examples):
        copy = tmp_path / f"profile-{i}"
        copy.mkdir()
        settings = yaml.safe_load(profile)
        settings.update(yaml.safe_load(example))
        (copy / "config.yaml").write_text(yaml.safe_dump(settings))
        result = snakemake(tmp_path, "demo", "--dry-run", "--profile", str(copy), config=config)
        assert result.returncode == 0, (example, result.stderr[-3000:])
        blocks = _rule_blocks(result.stdout)
        for rule, wanted in (yaml.safe_load(example).get("set-resources") or {}).items():
            assert rule in blocks, (example, sorted(blocks))
            for key, value in wanted.items():
                assert all(_resource(b, key) == str(value) for b in blocks[rule]), (example, rule, key)
        for key, value in (yaml.safe_load(example).get("default-resources") or {}).items():
            if key in ("slurm_partition", "slurm_account"):
                assert all(_resource(b, key) == str(value) for b in blocks["split"]), (example, key)


def test_requests_follow_the_datasets_size_and_a_method_estimate_overrides_them(tmp_path):
    """A products-sized cell asks for more than the floors on its first attempt; a tiny one for the floors."""
    studies = {
        name: {"datasets": [dataset], "methods": ["dp-mlp", "gap"], "epsilons": [8], "seeds": [0]}
        for name, dataset in (("small", "csbm-tiny"), ("products", "synthetic-products"))
    }
    config = write_config(
        tmp_path,
        {
            "studies": studies,
            "methods": {"dp-mlp": {"epochs": 50, "batch_size": 32}, "gap": {"batch_size": 32}},
            "resources": {"estimates": {"gap": {"mem_mb": 12345, "runtime": 77}}},
        },
    )
    result = snakemake(tmp_path, "--dry-run", "--profile", str(ROOT / "slurm"), config=config)
    assert result.returncode == 0, result.stderr
    blocks = _rule_blocks(result.stdout)
    cells = {(_wildcard(b, "dataset"), _wildcard(b, "method")): b for b in blocks["train"]}
    small, large = cells["csbm-tiny", "dp-mlp"], cells["synthetic-products", "dp-mlp"]
    assert (_resource(small, "mem_mb"), _resource(small, "runtime")) == ("4000", "60")  # the floors
    assert int(_resource(large, "mem_mb")) > 8000 and int(_resource(large, "runtime")) > 60
    assert all(
        (_resource(cells[d, "gap"], "mem_mb"), _resource(cells[d, "gap"], "runtime")) == ("12345", "77")
        for d in ("csbm-tiny", "synthetic-products")
    )
    graphs = {_wildcard(b, "dataset"): b for b in blocks["graph"]}
    assert _resource(graphs["csbm-tiny"], "mem_mb") == "2000"
    assert int(_resource(graphs["synthetic-products"], "mem_mb")) > 2000
    assert int(_resource(graphs["synthetic-products"], "runtime")) > 30


def _said(result: subprocess.CompletedProcess) -> list[str]:
    """What a run printed, less Snakemake's note that it reads the workflow profile (profiles/default)."""
    return [
        line
        for line in (result.stdout + result.stderr).strip().splitlines()
        if not (line.startswith("Using ") and "profile" in line and "for setting default command line" in line)
    ]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda c: c["studies"]["demo"]["methods"].append("dp-foo"), "dp-foo"),
        (lambda c: c["studies"]["demo"].update({"epsilons": [0]}), "epsilons"),
        (lambda c: c.update({"privacy": {"delta": 1.5}}), "delta"),
        (lambda c: c["studies"]["demo"].update({"seeds": [0.5]}), "seeds"),
        (lambda c: c["studies"]["demo"].pop("datasets"), "datasets"),
        (lambda c: c["methods"].update({"dp-mlp": {"clip": 1.0}}), "clip_norm"),
        (lambda c: c.pop("studies"), "(top level): 'studies' is a required property"),
        # What the datasets' public sizes decide (csbm-tiny's spec: 300 nodes, 225 of them training nodes).
        (lambda c: c.update({"privacy": {"delta": 0.5}}), "privacy.delta: 0.5 is not below 1/N"),
        (lambda c: c["methods"]["dp-mlp"].update({"batch_size": 10_000}), "methods.dp-mlp.batch_size: 10000"),
    ],
)
def test_bad_config_stops_before_any_job_in_one_line_naming_file_and_field(tmp_path, edit, field):
    config = json.loads(json.dumps(TINY))
    edit(config)
    path = write_config(tmp_path, config)
    result = snakemake(tmp_path, "demo", config=path)
    assert result.returncode != 0
    output = _said(result)
    assert len(output) == 1 and output[0].startswith(f"{path}: ") and field in output[0], output
    assert not (tmp_path / "resources").exists() and not (tmp_path / "results").exists()


def test_a_yaml_error_in_config_yaml_names_its_line(tmp_path):
    (tmp_path / "config.yaml").write_text("studies:\n  demo:\n    datasets: [csbm-tiny\n    methods: [mlp]\n")
    result = snakemake(tmp_path, "demo")
    assert result.returncode != 0
    assert _said(result) == [
        "config.yaml, line 4, column 12: YAML syntax error: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence from line 3)"
    ]


def planned_jobs(result) -> dict[str, int]:
    """Rule -> job count from the table of `snakemake --dry-run --quiet rules`."""
    table = result.stdout + result.stderr
    rows = (line.split() for line in table.splitlines())
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


def test_a_configfile_replaces_config_yaml_so_a_one_cell_grid_plans_one_cell(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")  # where the Snakefile would read it
    one_cell = {
        "studies": {"mine": {"datasets": ["csbm-tiny"], "methods": ["dp-mlp"], "epsilons": [2], "seeds": [0]}},
        "methods": {"dp-mlp": {"batch_size": 32}},
    }
    (tmp_path / "mine").mkdir()
    result = snakemake(tmp_path, "--dry-run", "--quiet", "rules", config=write_config(tmp_path / "mine", one_cell))
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result)
    # the cell, its graph and split, and the study's paper stage (tables, 2 figures, report pages, index): nothing
    # of config.yaml's
    assert jobs["train"] == 1
    assert jobs["graph"] == jobs["split"] == jobs["collect"] == jobs["summarize"] == 1
    assert jobs["total"] == sum(count for rule, count in jobs.items() if rule != "total") <= 20


def test_tiny_study_end_to_end_then_redraw_without_retraining(tiny_study):
    tmp_path, config = tiny_study
    paper = tmp_path / "paper/demo"
    for path in ("tables/accuracy.md", "tables/accuracy.tex", "figures/accuracy_vs_epsilon.png"):
        assert (paper / path).stat().st_size > 0
    runs = sorted((tmp_path / "results/runs").glob("*/*/*/*/metrics.json"))
    assert len(runs) == 3 * 2 * 2 + 2 + 2  # dp-mlp, its variant, dp-mlp@paper at two ε; mlp, its variant at ∞; 2 seeds
    for metrics_path in runs:
        metrics = json.loads(metrics_path.read_text())
        if metrics["method"] == "mlp-1layer":
            assert metrics["base_method"] == "mlp"
            assert metrics["hyperparameters"]["num_layers"] == 1
            assert metrics["hyperparameters"]["epochs"] == 3  # the base's block, under the variant's keys
        ledger = json.loads((metrics_path.parent / "ledger.json").read_text())
        if metrics["method"] == "dp-mlp@paper":  # reference mode: the paper's claim beside the actual ε
            assert metrics["hyperparameters"]["accounting"] == "paper" and metrics["claim"] == ledger["claim"]
            assert ledger["claim"]["epsilon"] == metrics["target_epsilon"] and ledger["claim"]["actual_epsilon"] > 0
        elif metrics["private"]:
            assert ledger["epsilon"] <= metrics["target_epsilon"] and ledger["claim"] is None
    assert "dp-mlp" in (paper / "tables/accuracy.md").read_text()
    assert "mlp-1layer" in (paper / "tables/accuracy.md").read_text()
    assert "dp-mlp@paper" in (paper / "tables/claims.md").read_text()
    assert "¶" in (paper / "tables/accuracy.md").read_text()
    # A rule's table names the workflow target that rebuilds it (by hand, the verb names its own command).
    regenerate = "Regenerate with: `snakemake --cores 2 paper/demo/tables/accuracy.md paper/demo/tables/accuracy.tex`"
    assert regenerate in (paper / "tables/accuracy.md").read_text()
    assert "| csbm-tiny | dp-mlp |" not in (paper / "tables/crossover.md").read_text()  # the baseline itself

    # Every figure (with its caption), the report's pages and the index listing them.
    for figure in ("accuracy_vs_epsilon", "frontier", "sweep-hidden_dim"):
        assert (paper / f"figures/{figure}.png").stat().st_size > 0
        assert "mean over 2 seeds" in (paper / f"figures/{figure}.caption.txt").read_text()
    for page in ("accuracy", "reproduction", "claims", "crossover", "ledgers"):
        assert "<table>" in (paper / f"report/{page}.html").read_text() or page == "reproduction"
    index = (paper / "index.md").read_text()
    assert "![frontier](figures/frontier.png)" in index and "[tables/accuracy.md](tables/accuracy.md)" in index
    assert "The reader's first line: ε = 8, `quoted` and $(not run)." in index  # the study's note, as written
    assert (tmp_path / "paper/about.html").exists()

    # The demo's quick audit: one audited cell per (method, ε, seed), drawn into a table and a figure.
    audits = sorted((tmp_path / "results/audit").glob("csbm-tiny/*/eps~8/seed~0/canaries~40.json"))
    assert [a.parts[-4] for a in audits] == ["dp-mlp", "dp-mlp@paper"]
    for path in audits:
        audit = json.loads(path.read_text())
        assert audit["canaries"] == 40 == len(audit["scores"]) and audit["mia"]["accuracy"] >= 0
        assert 0 <= audit["epsilon_lower_one_run"] <= audit["claimed_epsilon"] <= 8  # correct runs: never above
    table = (paper / "tables/audit.md").read_text()
    assert "| csbm-tiny | dp-mlp |" in table and "| csbm-tiny | dp-mlp@paper |" in table
    assert (paper / "tables/audit.tex").stat().st_size > 0 and (paper / "figures/audit.png").stat().st_size > 0
    assert "| csbm-tiny | dp-mlp · DP-SGD release |" in table  # the ledger's DP-SGD, white-box, independent runs
    assert "40–20000 canaries" in (paper / "figures/audit.caption.txt").read_text()

    # Redrawing one study (`make paper STUDY=demo`) touches only the paper stage.
    (paper / "figures/accuracy_vs_epsilon.png").unlink()
    (paper / "tables/claims.md").unlink()
    redraw = make_paper(tmp_path, config, "STUDY=demo")
    assert redraw.returncode == 0, (redraw.stdout + redraw.stderr)[-4000:]
    assert (paper / "figures/accuracy_vs_epsilon.png").exists() and (paper / "tables/claims.md").exists()
    assert "rule train" not in redraw.stdout + redraw.stderr


def _planned_jobs(workdir: Path, config: Path, *args: str) -> dict[str, int]:
    """rule -> how many of its jobs `snakemake -n demo` plans in ``workdir`` (the dry run's job stats)."""
    result = snakemake(workdir, "demo", "--dry-run", *args, config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    stats, jobs = result.stdout.partition("Job stats:")[2].partition("\n\n")[0], {}
    for line in stats.strip().splitlines()[2:]:  # below the header and its rule
        rule, count = line.split()
        if rule != "total":
            jobs[rule] = int(count)
    return jobs


def _trained(workdir: Path, config: Path, *args: str) -> set[str]:
    """The cells (metrics.json) `snakemake -n demo` would train in ``workdir``."""
    result = snakemake(workdir, "demo", "--dry-run", *args, config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    return {block.split("output: ")[1].split(",")[0] for block in _rule_blocks(result.stdout).get("train", [])}


def test_a_missing_forced_or_edited_cell_reruns_that_cell_only(tiny_study, tmp_path):
    """A cell gone missing, a forced cell, an edited method: those cells retrain, and no other."""
    studied, config = tiny_study
    workdir = tmp_path / "workspace"
    shutil.copytree(studied, workdir, symlinks=True)  # with .snakemake's records; copies keep their times
    assert _planned_jobs(workdir, config) == {}  # finished: nothing to do
    cell = "results/runs/csbm-tiny/dp-mlp/eps~8/seed~1/metrics.json"
    (workdir / cell).unlink()
    result = snakemake(workdir, cell, config=config)  # that cell alone, not the tables
    assert result.returncode == 0 and (workdir / cell).exists(), result.stderr[-4000:]
    assert "rule collect" not in result.stdout
    forced = _planned_jobs(workdir, config, f"--forcerun={cell}")
    assert _trained(workdir, config, f"--forcerun={cell}") == {cell} and forced["collect"] == forced["summarize"] == 1
    edited = yaml.safe_load(config.read_text())
    edited["methods"]["dp-mlp-wide"]["hidden_dim"] = 80  # one variant's hyperparameters: its cells only
    wide = _trained(workdir, write_config(tmp_path, edited))
    assert wide and all("/dp-mlp-wide/" in path for path in wide)
    assert len(wide) == len(list((workdir / "results/runs/csbm-tiny/dp-mlp-wide").glob("*/*/metrics.json")))


def test_a_grown_grid_plans_only_its_new_cells(tiny_study, tmp_path):
    """More seeds, another ε, another dataset and another method: the dry run trains only cells that do not
    exist yet, and never rewrites a finished metrics.json."""
    studied, config = tiny_study
    workdir = tmp_path / "workspace"
    shutil.copytree(studied, workdir, symlinks=True)
    finished = {str(p.relative_to(workdir)) for p in (workdir / "results/runs").glob("**/metrics.json")}
    grown = yaml.safe_load(config.read_text())
    study = grown["studies"]["demo"]
    study["seeds"] += [2, 3]
    study["epsilons"] += [4]
    study["datasets"] += ["csbm-homophilous"]
    study["methods"] += ["dp-mlp-deep"]
    grown["methods"]["dp-mlp-deep"] = {"base": "dp-mlp", "num_layers": 3}
    trained = _trained(workdir, write_config(tmp_path, grown))
    assert trained and not trained & finished
    # every new cell: the new seeds, ε, dataset and method, each with all the others
    private = {"dp-mlp", "dp-mlp@paper", "dp-mlp-wide", "dp-mlp-deep"}
    expected = {
        f"results/runs/{d}/{m}/eps~{e}/seed~{s}/metrics.json"
        for d in ("csbm-tiny", "csbm-homophilous")
        for m in private
        for e in ("1", "4", "8")
        for s in range(4)
    }
    expected |= {
        f"results/runs/{d}/{m}/eps~inf/seed~{s}/metrics.json"
        for d in ("csbm-tiny", "csbm-homophilous")
        for m in ("mlp", "mlp-1layer")
        for s in range(4)
    }
    assert trained == expected - finished


def _interrupted(workdir: Path, config: Path, sig: int) -> tuple[set[str], set[str]]:
    """Train four slow cells one at a time and interrupt Snakemake once the first has finished: (finished, all).

    SIGINT goes to the whole process group once the first cell's metrics.json exists, as Ctrl-C does. SIGTERM goes
    to Snakemake alone, as a scheduler sends it, at the worst moment: raised while Snakemake's scheduler holds its
    lock to record the first finished cell (tests/workflow/_sigterm_at_finish.py), where Snakemake's own handler
    would wait for that lock for good."""
    import signal
    import time

    cells = [f"results/runs/csbm-tiny/dp-mlp-slow/eps~8/seed~{s}/metrics.json" for s in range(4)]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    entry = ["-m", "snakemake"] if sig == signal.SIGINT else [str(Path(__file__).with_name("_sigterm_at_finish.py"))]
    cmd = [sys.executable, *entry, "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), "--cores", "1"]
    cmd += [*cells, "--configfile", str(config)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        if sig == signal.SIGINT:
            deadline = time.monotonic() + 600
            while not any((workdir / c).exists() for c in cells):
                assert proc.poll() is None and time.monotonic() < deadline, "no cell finished"
                time.sleep(0.2)
            # A Ctrl-C that lands while Snakemake records a finished job can be swallowed (seen twice under load: all
            # four cells finished). A cell's file appears just as Snakemake records it, so press a moment later, while
            # the next cell trains, and, as a user would, again whenever another cell finishes meanwhile.
            time.sleep(_RECORDING_S)
            os.killpg(proc.pid, sig)
            seen = sum((workdir / c).exists() for c in cells)
            while proc.poll() is None and time.monotonic() < deadline:
                now = sum((workdir / c).exists() for c in cells)
                if now > seen:
                    seen = now
                    time.sleep(_RECORDING_S)
                    with contextlib.suppress(ProcessLookupError):  # it may just have exited
                        os.killpg(proc.pid, sig)
                time.sleep(0.2)
        try:
            proc.wait(timeout=300)  # generous: a loaded machine trains a cell slowly
        except subprocess.TimeoutExpired:
            pytest.fail(f"Snakemake still runs 300 s after {signal.Signals(sig).name}: it hangs")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _settled(workdir)
    finished = {c for c in cells if (workdir / c).exists()}
    return finished, set(cells)


_RECORDING_S = 0.5  # how long after a cell's file appears a Ctrl-C waits: Snakemake records the job meanwhile


def _settled(workdir: Path, timeout: float = 60.0) -> None:
    """Wait until no process works in ``workdir`` (a job's command, in the warm worker or not, may outlive Snakemake
    by the moment its interrupt takes), so that what exists now is what the interrupt left."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and Path(os.readlink(proc / "cwd")) == workdir.resolve():
                    busy = True
                    break
        if not busy:
            return
        time.sleep(0.2)
    pytest.fail(f"a command still works in {workdir} {timeout:.0f} s after Snakemake exited")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_keeps_its_finished_cells_and_the_plain_rerun_trains_the_rest(tmp_path, signame):
    import signal

    config = write_config(
        tmp_path,
        {
            "studies": {
                "demo": {"datasets": ["csbm-tiny"], "methods": ["dp-mlp-slow"], "epsilons": [8], "seeds": [0, 1, 2, 3]}
            },
            "methods": {"dp-mlp-slow": {"base": "dp-mlp", "epochs": 60, "batch_size": 16}},
        },
    )
    finished, cells = _interrupted(tmp_path, config, getattr(signal, signame))
    assert finished and finished != cells, "interrupt after the first cell, before the last"
    kept = {c: (tmp_path / c).stat().st_mtime_ns for c in finished}
    for c in finished:
        assert json.loads((tmp_path / c).read_text())["seed"] >= 0  # complete, readable runs
        assert (tmp_path / c).with_name("ledger.json").exists()
    # The plain rerun: no --rerun-incomplete, no IncompleteFilesException; it trains the rest only.
    assert _trained(tmp_path, config) == cells - finished
    result = snakemake(tmp_path, *sorted(cells), config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    assert all((tmp_path / c).exists() for c in cells)
    assert {c: (tmp_path / c).stat().st_mtime_ns for c in finished} == kept


def make_paper(workdir: Path, config: Path, *variables: str) -> subprocess.CompletedProcess:
    """`make paper` in ``workdir`` with ``config`` (and more Make variables)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # -o: the test's environment is set up already (the stamp of `make venv` may be missing or older)
    return subprocess.run(
        [
            "make",
            "-C",
            str(ROOT),
            "-o",
            ".venv/.installed",
            "paper",
            f"BIN={Path(sys.executable).parent}",
            f"CONFIG={config}",
            f"SNAKEMAKE_ARGS=--directory {workdir}",
            *variables,
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_paper_redraws_a_study_another_grid_drew_under_the_same_name(tiny_study, tmp_path):
    """Two grids name their study alike (the README's dataset and method examples both say `mine`): each
    `make paper CONFIG=…` redraws the study as its own grid says, never leaving the other's table."""
    studied, _ = tiny_study
    work = tmp_path / "workspace"
    shutil.copytree(studied, work, symlinks=True)
    demo = {key: value for key, value in TINY["studies"]["demo"].items() if key not in ("audit", "sweeps")}
    table = work / "paper/demo/tables/accuracy.md"
    for methods in (["mlp"], ["mlp", "dp-mlp"], ["mlp"]):
        config = write_config(tmp_path, {**TINY, "studies": {"demo": {**demo, "methods": methods}}})
        result = make_paper(work, config)
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
        rows = {line.split(" | ")[1] for line in table.read_text().splitlines() if line.startswith("| csbm-tiny")}
        assert rows - {"*majority class*"} == set(methods), (methods, rows)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_paper_redraws_every_study_from_the_runs_alone_on_a_fresh_workspace(tiny_study, tmp_path):
    studied, _ = tiny_study
    fresh = tmp_path / "fresh"
    shutil.copytree(studied / "results/runs", fresh / "results/runs")  # the runs, and nothing they came from
    runs = {p: p.stat().st_mtime_ns for p in (fresh / "results/runs").glob("**/*.json")}
    demo = {key: value for key, value in TINY["studies"]["demo"].items() if key != "audit"}  # runs only
    grid = {
        **TINY,
        "studies": {
            **TINY["studies"],
            # drawn for the first time from a subset of the cells that ran
            "mlp-only": {**demo, "methods": ["mlp"], "sweeps": []},
            # the same, under the name of a study that feeds DPAR's Table 1: the paper table and main.tex are drawn
            "dpar-gap-setting": {**demo, "methods": ["mlp"], "sweeps": []},
            # never ran: left out, and said so
            "later": {**demo, "epsilons": [2], "sweeps": []},
        },
    }
    config = write_config(tmp_path, grid)
    result = make_paper(fresh, config)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    drawn = {
        study: sorted(p.relative_to(fresh / "paper" / study) for p in (fresh / "paper" / study).glob("*/*"))
        for study in grid["studies"]
        if (fresh / "paper" / study).exists()
    }
    assert set(drawn) == {"demo", "mlp-only", "dpar-gap-setting"}
    assert Path("figures/frontier.png") in drawn["demo"] and Path("figures/sweep-hidden_dim.png") in drawn["demo"]
    assert set(drawn["demo"]) - set(drawn["mlp-only"]) == {
        Path(f"figures/{f}.{ext}") for f in ("frontier", "sweep-hidden_dim") for ext in ("png", "caption.txt")
    }
    assert "mlp" in (fresh / "paper/mlp-only/tables/accuracy.md").read_text()
    assert "dp-mlp" not in (fresh / "paper/mlp-only/tables/accuracy.md").read_text()
    assert "not redrawing study later: 6 of its 10 runs have not run" in result.stderr
    # DPAR Table 1 in its own layout: its Cora-ML cells say what they need; main.tex inputs it.
    dpar = (fresh / "paper/tables/dpar-t1.md").read_text()
    assert "cora-ml" in dpar.lower() and "needs" in dpar
    assert "\\input{tables/dpar-t1.tex}" in (fresh / "paper/main.tex").read_text()
    assert "nodedp version" in (fresh / "paper/about.html").read_text()
    output = result.stdout + result.stderr
    assert "rule train" not in output and "rule graph" not in output and not (fresh / "resources").exists()
    assert {p: p.stat().st_mtime_ns for p in runs} == runs  # never retrained

    # paper/main.tex builds where LaTeX is installed.
    if shutil.which("pdflatex"):
        built = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
            cwd=fresh / "paper",
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert built.returncode == 0 and (fresh / "paper/main.pdf").stat().st_size > 0, built.stdout[-3000:]

    # The report leaves out, and names, a study not fully drawn; it reports the rest.
    (fresh / "paper/mlp-only/figures/accuracy_vs_epsilon.png").unlink()
    report = subprocess.run(
        [
            "make",
            "-C",
            str(ROOT),
            "-o",
            ".venv/.installed",
            "report",
            f"BIN={Path(sys.executable).parent}",
            f"CONFIG={config}",
            f"SNAKEMAKE_ARGS=--directory {fresh}",
            f"REPORT={fresh / 'report.html'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
    )
    assert report.returncode == 0, (report.stdout + report.stderr)[-4000:]
    assert "the report leaves out mlp-only: not drawn yet" in report.stderr
    assert "sweep-hidden_dim.png" in (fresh / "report.html").read_text(encoding="utf-8")


def test_dpar_artifact_is_its_own_stage_shared_by_runs_with_its_settings(tmp_path):
    fast = {"epochs": 2, "batch_size": 16, "sample_rate": 0.5, "num_sources": 20}
    config = write_config(
        tmp_path,
        {
            "studies": {
                "demo": {
                    "datasets": ["csbm-tiny"],
                    "methods": ["dpar-em0", "dpar-em0-lr"],
                    "epsilons": [4],
                    "seeds": [0],
                }
            },
            # the variant differs in training only, so it shares the DP-APPR artifact
            "methods": {"dpar-em0": fast, "dpar-em0-lr": {"base": "dpar-em0", "lr": 0.05}},
        },
    )
    result = snakemake(tmp_path, "demo", config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    artifacts = sorted((tmp_path / "results/structure").glob("**/dp-appr/*/eps~4.pt"))
    assert len(artifacts) == 1 and artifacts[0].parent.name.startswith("em0-")
    appr_ledger = json.loads(artifacts[0].with_suffix(".ledger.json").read_text())
    assert appr_ledger["node_sample_rate"] == 0.5 and appr_ledger["epsilon"] < 4
    for method in ("dpar-em0", "dpar-em0-lr"):
        ledger = json.loads((tmp_path / f"results/runs/csbm-tiny/{method}/eps~4/seed~0/ledger.json").read_text())
        assert ledger["mechanisms"][: len(appr_ledger["mechanisms"])] == appr_ledger["mechanisms"]
        assert 0.99 * 4 <= ledger["epsilon"] <= 4


def test_nip_gnn_and_dpdgc_run_on_their_degree_bounds(tmp_path):
    config = write_config(
        tmp_path,
        {
            "studies": {
                "demo": {
                    "datasets": ["csbm-tiny"],
                    "methods": ["nip-gnn", "nip-gnn-uniform", "dpdgc"],
                    "epsilons": [4],
                    "seeds": [0],
                }
            },
            "methods": {
                "nip-gnn": {"epochs": 2},
                "nip-gnn-uniform": {"base": "nip-gnn", "budgets": "uniform"},
                "dpdgc": {"epochs": 1, "encoder_epochs": 1, "batch_size": 64, "hidden_dim": 8},
            },
        },
    )
    result = snakemake(tmp_path, "demo", config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    structure = tmp_path / "results/structure"
    assert len(sorted(structure.glob("csbm-tiny/*/seed~0/degree~*.pt"))) == 1  # one undirected bound, shared
    assert len(sorted(structure.glob("csbm-tiny/*/seed~0/out-degree~*.pt"))) == 1  # DPDGC's
    for method in ("nip-gnn", "nip-gnn-uniform"):
        ledger = json.loads((tmp_path / f"results/runs/csbm-tiny/{method}/eps~4/seed~0/ledger.json").read_text())
        assert ledger["epsilon"] == 4 and ledger["delta"] == 0
        assert [m["kind"] for m in ledger["mechanisms"]] == ["randomized_response", "laplace", "randomized_response"]
    ledger = json.loads((tmp_path / "results/runs/csbm-tiny/dpdgc/eps~4/seed~0/ledger.json").read_text())
    assert [m["kind"] for m in ledger["mechanisms"]] == [
        "poisson_occurrence_gaussian",
        "gaussian",
        "subsampled_gaussian",
    ]
    assert 0.99 * 4 <= ledger["epsilon"] <= 4


@pytest.mark.shared
def test_real_datasets_end_to_end_through_the_mirror(tmp_path):
    """cora, cora-ml and a Facebook100 school: downloaded by the workflow's local rule from the
    loopback mirror, preprocessed by their protocols, trained and tabulated."""
    from tests.data.conftest import SHARED_DATASETS, serve_directory

    if not SHARED_DATASETS.is_dir():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    datasets = ["cora", "cora-ml", "fb100-caltech36"]
    log = tmp_path / "mirror.log"
    with serve_directory(SHARED_DATASETS.resolve(), log_path=log) as mirror:
        config = {
            "studies": {
                "demo": {"datasets": datasets, "methods": ["mlp", "gcn", "dp-mlp"], "epsilons": [4], "seeds": [0]}
            },
            "download": {"mirror": mirror},
            "methods": {"mlp": {"epochs": 5}, "gcn": {"epochs": 5}, "dp-mlp": {"epochs": 2, "batch_size": 128}},
        }
        result = snakemake(tmp_path, "demo", config=write_config(tmp_path, config), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    requests = log.read_text()
    assert "ind.cora.graph" in requests and "cora_ml.npz" in requests and "Caltech36.mat" in requests
    lock = json.loads((tmp_path / "resources/raw/checksums.lock.json").read_text())
    assert any(url.endswith("cora_ml.npz") for url in lock)  # unpinned: recorded on first download
    table = (tmp_path / "paper/demo/tables/accuracy.md").read_text()
    for name in datasets:
        meta = json.loads((tmp_path / f"resources/graphs/{name}/meta.json").read_text())
        assert meta["source"]["kind"] == "download" and name in table
    cora_ml = json.loads((tmp_path / "results/runs/cora-ml/dp-mlp/eps~4/seed~0/metrics.json").read_text())
    assert cora_ml["setting"] == "inductive" and cora_ml["val"]["accuracy"] is None  # DPAR's 80/20
