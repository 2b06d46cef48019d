"""The DAG itself: lint, planning the shipped grid, and a whole run on a tiny config."""

from __future__ import annotations

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


def test_shipped_config_plans_the_full_grid(tmp_path):
    result = snakemake(tmp_path, "--summary", config=ROOT / "config.yaml")  # every planned file and its rule
    assert result.returncode == 0, result.stderr
    from nodedp.cli import format_epsilon
    from nodedp.config import resolve_method
    from nodedp.methods import get_method

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    cells = {}  # study -> its runs
    for name, study in config["studies"].items():
        for method in study["methods"]:
            for eps in study["epsilons"] if get_method(resolve_method(config, method)[0]).private else ["inf"]:
                cells.setdefault(name, set()).update(
                    f"results/runs/{d}/{method}/eps~{format_epsilon(float(eps))}/seed~{s}/metrics.json"
                    for d in study["datasets"] for s in study["seeds"])
    planned = {}  # metrics.json -> the rule (one job) that trains it
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if fields[0].startswith("results/runs/") and fields[0].endswith("/metrics.json"):
            planned[fields[0]] = fields[2]
    assert set(planned) == set().union(*cells.values())
    # A job trains at most cells_per_job cells of one method; the demo's jobs hold only its cells.
    jobs = {}
    for path, rule in planned.items():
        jobs.setdefault(rule, []).append(path)
    assert all(rule.startswith("train_") and len({p.split("/")[3] for p in runs}) == 1 for rule, runs in jobs.items())
    assert max(len(runs) for runs in jobs.values()) == config["resources"]["cells_per_job"]
    demo_jobs = {planned[path] for path in cells["demo"]}
    assert {p for rule in demo_jobs for p in jobs[rule]} == cells["demo"]
    assert len(demo_jobs) == len(config["studies"]["demo"]["methods"])  # one job (process) per method
    # Audited cells likewise: a job audits at most cells_per_job // 3 cells of one method.
    audits = {}
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if fields[0].startswith("results/audit/"):
            audits.setdefault(fields[2], []).append(fields[0])
    assert audits and all(rule.startswith("audit_") and len({p.split("/")[3] for p in cells}) == 1
                          for rule, cells in audits.items())
    assert max(len(cells) for cells in audits.values()) == config["resources"]["cells_per_job"] // 3
    assert sum(len(cells) for cells in audits.values()) > 2 * len(audits)  # far fewer processes than cells


def test_slurm_profile_dry_runs_in_group_jobs_and_a_local_dry_run_builds_none(tmp_path):
    """Groups are named where jobs may be bundled (the profile's group-components, another executor, --groups);
    a local run ignores them, so its dry run does not build them."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")

    def dry_run(*args):
        result = subprocess.run([sys.executable, "-m", "snakemake", "demo", "--dry-run", *args], cwd=ROOT,
                                check=False, capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stdout.count("Group job")

    assert dry_run("--profile", "slurm") == 4  # prepare, two of train (8 jobs, 4 to a group job), audit
    assert dry_run("--group-components", "train=2") > 4 and dry_run("--groups", "about=page") > 0
    assert dry_run() == 0


@pytest.mark.parametrize(("gres", "shown"), [("gpu:a100:1", "gres=gpu:a100:1,"), ("", "gres=,")])
def test_training_asks_for_the_configured_gres_and_grows_memory_per_attempt(tmp_path, gres, shown):
    config = write_config(tmp_path, {**TINY, "resources": {"train_gres": gres, "train_mem_mb": 1500}})
    result = snakemake(tmp_path, "demo", "--dry-run", config=config)
    assert result.returncode == 0, result.stderr
    train = {block.split(":")[0]: block for block in result.stdout.split("rule ") if block.startswith("train_")}
    assert train and all(shown in block and "mem_mb=1500," in block for block in train.values())
    # A job of 4 cells (2 ε × 2 seeds) asks for 4 × train_runtime (60 min), one of 2 cells (ε = ∞) for 2 ×.
    assert "runtime=240," in train["train_dp-mlp_demo-0"] and "runtime=120," in train["train_mlp_demo-0"]


def _rule_blocks(stdout: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    for block in stdout.split("rule ")[1:]:
        blocks.setdefault(block.split(":")[0], []).append(block)
    return blocks


def _resource(block: str, name: str) -> int:
    return int(block.split(f"{name}=")[1].split(",")[0].split()[0])


def test_requests_follow_the_datasets_size_and_a_method_estimate_overrides_them(tmp_path):
    """A products-sized cell asks for more than the floors on its first attempt; a tiny one for the floors."""
    studies = {name: {"datasets": [dataset], "methods": ["dp-mlp", "gap"], "epsilons": [8], "seeds": [0]}
               for name, dataset in (("small", "csbm-tiny"), ("products", "synthetic-products"))}
    config = write_config(tmp_path, {"studies": studies, "methods": {"dp-mlp": {"epochs": 50, "batch_size": 32}, "gap": {"batch_size": 32}},
                                     "resources": {"estimates": {"gap": {"mem_mb": 12345, "runtime": 77}}}})
    result = snakemake(tmp_path, "--dry-run", "--profile", str(ROOT / "slurm"), config=config)
    assert result.returncode == 0, result.stderr
    blocks = _rule_blocks(result.stdout)
    small, large = blocks["train_dp-mlp_small-0"][0], blocks["train_dp-mlp_products-0"][0]
    assert (_resource(small, "mem_mb"), _resource(small, "runtime")) == (4000, 60)  # the floors
    assert _resource(large, "mem_mb") > 8000 and _resource(large, "runtime") > 60
    assert all((_resource(b, "mem_mb"), _resource(b, "runtime")) == (12345, 77)
               for name in ("train_gap_small-0", "train_gap_products-0") for b in blocks[name])
    graphs = {b.split("wildcards: dataset=")[1].split()[0]: b for b in blocks["graph"]}
    assert _resource(graphs["csbm-tiny"], "mem_mb") == 2000
    assert _resource(graphs["synthetic-products"], "mem_mb") > 2000
    assert _resource(graphs["synthetic-products"], "runtime") > 30


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
    output = (result.stdout + result.stderr).strip().splitlines()
    assert len(output) == 1 and output[0].startswith(f"{path}: ") and field in output[0], output
    assert not (tmp_path / "resources").exists() and not (tmp_path / "results").exists()


def test_a_yaml_error_in_config_yaml_names_its_line(tmp_path):
    (tmp_path / "config.yaml").write_text("studies:\n  demo:\n    datasets: [csbm-tiny\n    methods: [mlp]\n")
    result = snakemake(tmp_path, "demo")
    assert result.returncode != 0
    assert (result.stdout + result.stderr).strip().splitlines() == [
        "config.yaml, line 4, column 12: YAML syntax error: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence from line 3)"]


def planned_jobs(result) -> dict[str, int]:
    """Rule -> job count from the table of `snakemake --dry-run --quiet rules`."""
    table = result.stdout + result.stderr
    rows = (line.split() for line in table.splitlines())
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


def test_a_configfile_replaces_config_yaml_so_a_one_cell_grid_plans_one_cell(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")  # where the Snakefile would read it
    one_cell = {"studies": {"mine": {"datasets": ["csbm-tiny"], "methods": ["dp-mlp"], "epsilons": [2],
                                     "seeds": [0]}},
                "methods": {"dp-mlp": {"batch_size": 32}}}
    (tmp_path / "mine").mkdir()
    result = snakemake(tmp_path, "--dry-run", "--quiet", "rules", config=write_config(tmp_path / "mine", one_cell))
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result)
    # the cell, its graph and split, and the study's paper stage (tables, 2 figures, report pages, index): nothing
    # of config.yaml's
    train = [rule for rule in jobs if rule.startswith("train_")]
    assert train == ["train_dp-mlp_mine-0"] and jobs[train[0]] == 1
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
    assert "| csbm-tiny | dp-mlp |" not in (paper / "tables/crossover.md").read_text()  # the baseline itself

    # Every figure (with its caption), the report's pages and the index listing them.
    for figure in ("accuracy_vs_epsilon", "frontier", "sweep-hidden_dim"):
        assert (paper / f"figures/{figure}.png").stat().st_size > 0
        assert "mean over 2 seeds" in (paper / f"figures/{figure}.caption.txt").read_text()
    for page in ("accuracy", "reproduction", "claims", "crossover", "ledgers"):
        assert "<table>" in (paper / f"report/{page}.html").read_text() or page == "reproduction"
    index = (paper / "index.md").read_text()
    assert "![frontier](figures/frontier.png)" in index and "[tables/accuracy.md](tables/accuracy.md)" in index
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


def test_a_missing_forced_or_edited_cell_reruns_its_training_job_only(tiny_study, tmp_path):
    """`collect` waits on one metrics.json per training job; every cell of a job still reruns that job (and its
    tables), and no other: a cell gone missing, a forced cell that is not its job's first, an edited method."""
    studied, config = tiny_study
    workdir = tmp_path / "workspace"
    shutil.copytree(studied, workdir, symlinks=True)  # with .snakemake's records; copies keep their times
    assert _planned_jobs(workdir, config) == {}  # finished: nothing to do
    not_first = "results/runs/csbm-tiny/dp-mlp/eps~8/seed~1/metrics.json"  # dp-mlp's job: ε 1 then 8, seeds 0, 1
    assert "eps~8/seed~1" not in _first_metrics(workdir, "dp-mlp")
    (workdir / not_first).unlink()
    planned = _planned_jobs(workdir, config)
    assert {rule for rule in planned if rule.startswith("train_")} == {"train_dp-mlp_demo-0"}
    assert planned["collect"] == planned["summarize"] == 1
    result = snakemake(workdir, not_first, config=config)  # that cell alone: its job, not the tables
    assert result.returncode == 0 and (workdir / not_first).exists(), result.stderr[-4000:]
    forced = _planned_jobs(workdir, config, f"--forcerun={not_first}")
    assert {rule for rule in forced if rule.startswith("train_")} == {"train_dp-mlp_demo-0"} and forced["collect"]
    edited = yaml.safe_load(config.read_text())
    edited["methods"]["dp-mlp-wide"]["hidden_dim"] = 80  # one variant's hyperparameters: its cells only
    other = write_config(tmp_path, edited)
    planned = _planned_jobs(workdir, other)
    assert {rule for rule in planned if rule.startswith("train_")} == {"train_dp-mlp-wide_demo-0"}


def _first_metrics(workdir: Path, method: str) -> str:
    """The first metrics.json the training job of ``method`` writes (its cells in (dataset, ε, seed) order)."""
    runs = sorted((workdir / f"results/runs/csbm-tiny/{method}").glob("eps~*/seed~*/metrics.json"),
                  key=lambda p: (float(p.parts[-3].removeprefix("eps~")), int(p.parts[-2].removeprefix("seed~"))))
    return str(runs[0])


def make_paper(workdir: Path, config: Path, *variables: str) -> subprocess.CompletedProcess:
    """`make paper` in ``workdir`` with ``config`` (and more Make variables)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # -o: the test's environment is set up already (the stamp of `make venv` may be missing or older)
    return subprocess.run(
        ["make", "-C", str(ROOT), "-o", ".venv/.installed", "paper", f"BIN={Path(sys.executable).parent}",
         f"CONFIG={config}", f"SNAKEMAKE_ARGS=--directory {workdir}", *variables],
        check=False, capture_output=True, text=True, env=env, timeout=600,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_paper_redraws_every_study_from_the_runs_alone_on_a_fresh_workspace(tiny_study, tmp_path):
    studied, _ = tiny_study
    fresh = tmp_path / "fresh"
    shutil.copytree(studied / "results/runs", fresh / "results/runs")  # the runs, and nothing they came from
    runs = {p: p.stat().st_mtime_ns for p in (fresh / "results/runs").glob("**/*.json")}
    demo = {key: value for key, value in TINY["studies"]["demo"].items() if key != "audit"}  # runs only
    grid = {**TINY, "studies": {
        **TINY["studies"],
        # drawn for the first time from a subset of the cells that ran
        "mlp-only": {**demo, "methods": ["mlp"], "sweeps": []},
        # the same, under the name of a study that feeds DPAR's Table 1: the paper table and main.tex are drawn
        "dpar-gap-setting": {**demo, "methods": ["mlp"], "sweeps": []},
        # never ran: left out, and said so
        "later": {**demo, "epsilons": [2], "sweeps": []},
    }}
    config = write_config(tmp_path, grid)
    result = make_paper(fresh, config)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    drawn = {study: sorted(p.relative_to(fresh / "paper" / study) for p in (fresh / "paper" / study).glob("*/*"))
             for study in grid["studies"] if (fresh / "paper" / study).exists()}
    assert set(drawn) == {"demo", "mlp-only", "dpar-gap-setting"}
    assert Path("figures/frontier.png") in drawn["demo"] and Path("figures/sweep-hidden_dim.png") in drawn["demo"]
    assert set(drawn["demo"]) - set(drawn["mlp-only"]) == {
        Path(f"figures/{f}.{ext}") for f in ("frontier", "sweep-hidden_dim") for ext in ("png", "caption.txt")}
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
        built = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
                               cwd=fresh / "paper", capture_output=True, text=True, timeout=300, check=False)
        assert built.returncode == 0 and (fresh / "paper/main.pdf").stat().st_size > 0, built.stdout[-3000:]

    # The report leaves out, and names, a study not fully drawn; it reports the rest.
    (fresh / "paper/mlp-only/figures/accuracy_vs_epsilon.png").unlink()
    report = subprocess.run(
        ["make", "-C", str(ROOT), "-o", ".venv/.installed", "report", f"BIN={Path(sys.executable).parent}",
         f"CONFIG={config}", f"SNAKEMAKE_ARGS=--directory {fresh}", f"REPORT={fresh / 'report.html'}"],
        check=False, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"))
    assert report.returncode == 0, (report.stdout + report.stderr)[-4000:]
    assert "the report leaves out mlp-only: not drawn yet" in report.stderr
    assert "sweep-hidden_dim.png" in (fresh / "report.html").read_text(encoding="utf-8")


def test_dpar_artifact_is_its_own_stage_shared_by_runs_with_its_settings(tmp_path):
    fast = {"epochs": 2, "batch_size": 16, "sample_rate": 0.5, "num_sources": 20}
    config = write_config(tmp_path, {
        "studies": {"demo": {"datasets": ["csbm-tiny"], "methods": ["dpar-em0", "dpar-em0-lr"], "epsilons": [4],
                             "seeds": [0]}},
        # the variant differs in training only, so it shares the DP-APPR artifact
        "methods": {"dpar-em0": fast, "dpar-em0-lr": {"base": "dpar-em0", "lr": 0.05}},
    })
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
    config = write_config(tmp_path, {
        "studies": {"demo": {"datasets": ["csbm-tiny"], "methods": ["nip-gnn", "nip-gnn-uniform", "dpdgc"],
                             "epsilons": [4], "seeds": [0]}},
        "methods": {"nip-gnn": {"epochs": 2}, "nip-gnn-uniform": {"base": "nip-gnn", "budgets": "uniform"},
                    "dpdgc": {"epochs": 1, "encoder_epochs": 1, "batch_size": 64, "hidden_dim": 8}},
    })
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
    assert [m["kind"] for m in ledger["mechanisms"]] == ["poisson_occurrence_gaussian", "gaussian",
                                                         "subsampled_gaussian"]
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
            "studies": {"demo": {"datasets": datasets, "methods": ["mlp", "gcn", "dp-mlp"],
                                 "epsilons": [4], "seeds": [0]}},
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
