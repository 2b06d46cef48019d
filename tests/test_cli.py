from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from unittest import mock

import pytest
import torch

from nodedp.cli import main
from nodedp.cli.common import parse_epsilon
from nodedp.contract.naming import format_epsilon


def test_help_lists_the_verbs_the_rules_call():
    out = subprocess.run([sys.executable, "-m", "nodedp", "--help"], capture_output=True, text=True, check=True).stdout
    for verb in (
        "datasets",
        "methods",
        "graph",
        "split",
        "bound-degree",
        "stability",
        "train",
        "collect",
        "summarize",
        "tables",
        "figures",
    ):
        assert verb in out


def test_epsilon_path_component():
    assert [format_epsilon(e) for e in (1, 1.0, 0.5, 16, float("inf"))] == ["1", "1", "0.5", "16", "inf"]
    # beyond 6 significant digits: exact, so that two ε never share a folder and a cell trains at its grid's ε
    assert format_epsilon(1.2345678) == "1.2345678" and format_epsilon(1.2345679) != format_epsilon(1.2345678)
    rng = __import__("random").Random(0)
    for eps in [rng.uniform(0.01, 100) for _ in range(200)] + [1 / 3, 0.1 + 0.2, 1e-3, 999.9999999]:
        assert parse_epsilon(format_epsilon(eps)) == eps


def train_args(graph, split, out, *extra):
    return ["train", "--graph", str(graph), "--split", str(split), "--out", str(out), "--no-progress", *extra]


def test_train_one_cell_writes_metrics_and_a_ledger_within_target(tiny_graph_dir, tiny_split_path, tmp_path):
    out = tmp_path / "run"
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        out,
        "--method",
        "dp-mlp",
        "--epsilon",
        "2",
        "--seed",
        "0",
        "--hparams",
        '{"epochs": 2, "batch_size": 32}',
    )
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    ledger = json.loads((out / "ledger.json").read_text())
    assert metrics["method"] == "dp-mlp" and metrics["private"] and metrics["level"] == "node"
    assert metrics["target_epsilon"] == 2.0 and 0.99 * 2 <= metrics["epsilon"] <= 2.0
    # δ auto: a power of ten strictly below 1/N.
    assert metrics["target_delta"] < 1 / 300 and ledger["target"]["delta"] == metrics["target_delta"]
    assert {"accuracy", "macro_f1"} <= set(metrics["test"]) and {"accuracy", "macro_f1"} <= set(metrics["val"])
    assert metrics["hyperparameters"]["epochs"] == 2 and metrics["version"]["nodedp"]
    assert ledger["mechanisms"][0]["kind"] == "subsampled_gaussian"


def test_train_without_hyperparameters_takes_the_suites_tuned_settings(tiny_graph_dir, tiny_split_path, tmp_path):
    """No --hparams, no --config: the tuned block, as a grid gets it; a tuned variant is named by itself."""
    from nodedp.config.variants import resolve_method

    out = tmp_path / "run"
    assert (
        main(
            train_args(tiny_graph_dir, tiny_split_path, out, "--method", "gcn-2hop", "--epsilon", "inf", "--seed", "0")
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    base, tuned = resolve_method({}, "gcn-2hop")
    assert metrics["base_method"] == base == "gcn" and metrics["method"] == "gcn-2hop"
    assert tuned["num_layers"] == 2 and all(metrics["hyperparameters"][k] == v for k, v in tuned.items())


def test_non_private_run_has_infinite_target_and_empty_ledger(tiny_graph_dir, tiny_split_path, tmp_path):
    out = tmp_path / "run"
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        out,
        "--method",
        "mlp",
        "--epsilon",
        "inf",
        "--seed",
        "1",
        "--hparams",
        '{"epochs": 2}',
    )
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    ledger = json.loads((out / "ledger.json").read_text())
    assert metrics["target_epsilon"] is None and metrics["epsilon"] is None and metrics["level"] == "none"
    assert ledger["mechanisms"] == [] and ledger["private"] is False


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "dp-foo", "--epsilon", "1"], "unknown method 'dp-foo'"),
        (["--method", "mlp", "--epsilon", "1"], "non-private"),
        (["--method", "dp-mlp", "--epsilon", "inf"], "must be finite"),
        (["--method", "dp-mlp", "--epsilon", "1", "--hparams", '{"lr": "fast"}'], "'lr' must be float"),
    ],
)
def test_bad_cells_fail_before_writing_anything(tiny_graph_dir, tiny_split_path, tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main(train_args(tiny_graph_dir, tiny_split_path, out, "--seed", "0", *extra)) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_impossible_epsilon_and_delta_are_refused_by_the_parser(tiny_graph_dir, tiny_split_path, tmp_path, capsys):
    for extra in (["--epsilon", "0"], ["--epsilon", "-1"], ["--epsilon", "1", "--delta", "1.5"]):
        with pytest.raises(SystemExit) as exc:
            main(
                train_args(tiny_graph_dir, tiny_split_path, tmp_path / "r", "--method", "dp-mlp", "--seed", "0", *extra)
            )
        assert exc.value.code == 2
    assert "must be" in capsys.readouterr().err


def test_delta_not_below_one_over_n_is_refused(tiny_graph_dir, tiny_split_path, tmp_path, capsys):
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        tmp_path / "r",
        "--method",
        "dp-mlp",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--delta",
        "0.1",
    )
    assert main(args) == 2
    assert "0.1" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["in-degree", "out-degree"])
def test_bound_degree_verb_enforces_the_bound(tiny_graph_dir, tiny_split_path, tmp_path, kind):
    out = tmp_path / f"{kind}.pt"
    args = [
        "bound-degree",
        "--graph",
        str(tiny_graph_dir),
        "--split",
        str(tiny_split_path),
        "--kind",
        kind,
        "--bound",
        "3",
        "--seed",
        "0",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    artifact = torch.load(out, weights_only=True)
    edges = artifact["edge_index"]
    assert artifact["kind"] == kind and artifact["bound"] == 3 and edges.size(1) > 0
    endpoint = edges[1] if kind == "in-degree" else edges[0]
    assert int(torch.bincount(endpoint).max()) <= 3
    # What the ledger's guarantee needs: the degree within which the sampling keeps every edge (public), and no
    # count of the input's nodes over it (analysis of the dataset: its stability report).
    assert artifact["identity_bound"] == (1 if kind == "in-degree" else 3) and "nodes_over" not in artifact


def test_stability_verb_reports_every_kind_against_the_accountants_counts(tiny_graph_dir, tiny_split_path, tmp_path):
    out = tmp_path / "stability.json"
    args = [
        "stability",
        "--graph",
        str(tiny_graph_dir),
        "--split",
        str(tiny_split_path),
        "--sample",
        "10",
        "--hubs",
        "2",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert json.loads(out.read_text())["about"].startswith("analysis of the dataset")  # never a run's release
    report = json.loads(out.read_text())["kinds"]
    assert set(report) >= {"out-degree", "in-degree"}
    rows = report["out-degree"]["rows"]
    assert rows["max"] >= rows["mean"] >= 1 and rows["accountant"] == report["out-degree"]["bound"] + 1


def test_download_refuses_synthetic_datasets_and_reports_unreachable_hosts(tmp_path, capsys):
    assert main(["download", "--dataset", "csbm-tiny", "--out", str(tmp_path / "raw")]) == 2
    assert "nothing to download" in capsys.readouterr().err
    # A mirror on a closed loopback port: the download fails with the URL named, nothing written, and the one line
    # reaches the console (a workflow job's $NODEDP_CONSOLE_FD), not only the job's log.
    read, write = os.pipe()
    try:
        with mock.patch.dict(os.environ, {"NODEDP_CONSOLE_FD": str(write)}):
            args = ["download", "--dataset", "cora", "--out", str(tmp_path / "raw"), "--no-progress"]
            assert main([*args, "--mirror", "http://127.0.0.1:9"]) == 1
        os.close(write)
        with os.fdopen(read) as console:
            said = console.read()
    finally:
        with contextlib.suppress(OSError):
            os.close(write)
    assert said.startswith("nodedp download: error: ") and "ind.cora" in said, said
    err = capsys.readouterr().err
    assert "ind.cora" in err and "Traceback" not in err and not (tmp_path / "raw").exists()


def test_every_option_of_every_verb_has_help():
    import argparse

    from nodedp.cli import build_parser

    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    undocumented = [
        f"{name} {action.dest}"
        for name, sub in verbs.choices.items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not undocumented, undocumented


def only_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_method_without_its_structure_artifact_is_refused_in_one_line(
    tiny_graph_dir, tiny_split_path, tmp_path, capsys
):
    out = tmp_path / "run"
    args = train_args(tiny_graph_dir, tiny_split_path, out, "--method", "dp-gcn", "--epsilon", "1", "--seed", "0")
    assert main(args) == 2
    line = only_line(capsys.readouterr().err)
    assert "'dp-gcn' needs the structure artifact(s) ['in-degree']" in line and "bound-degree --kind in-degree" in line
    assert not out.exists()


def test_damaged_inputs_are_one_line_naming_the_file(tiny_graph_dir, tiny_split_path, tmp_path, capsys):
    import shutil

    truncated = tmp_path / "split.pt"
    truncated.write_bytes(tiny_split_path.read_bytes()[:100])
    args = train_args(tiny_graph_dir, truncated, tmp_path / "run", "--method", "mlp", "--epsilon", "inf", "--seed", "0")
    assert main(args) == 2
    assert f"{truncated}: not a readable split file" in only_line(capsys.readouterr().err)

    graph = tmp_path / "graph"
    shutil.copytree(tiny_graph_dir, graph)
    (graph / "meta.json").write_text((graph / "meta.json").read_text()[:-20])
    args = train_args(graph, tiny_split_path, tmp_path / "run", "--method", "mlp", "--epsilon", "inf", "--seed", "0")
    assert main(args) == 2
    assert f"{graph / 'meta.json'}: not valid JSON" in only_line(capsys.readouterr().err)

    config = tmp_path / "grid.yaml"
    config.write_text("methods:\n  mlp: {epochs: 2\nprivacy: {}\n")
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        tmp_path / "run",
        "--method",
        "mlp",
        "--epsilon",
        "inf",
        "--seed",
        "0",
        "--config",
        str(config),
    )
    assert main(args) == 2
    assert f"{config}, line 3" in only_line(capsys.readouterr().err)
    assert not (tmp_path / "run").exists()


def test_methods_lists_a_configs_variants_with_their_base_and_keys(tmp_path, capsys):
    config = tmp_path / "grid.yaml"
    config.write_text("methods:\n  dp-mlp: {epochs: 3}\n  dp-mlp-wide: {base: dp-mlp, hidden_dim: 512}\n")
    assert main(["methods", "--config", str(config), "--verbose"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("dp-mlp-wide"))
    assert line.split()[1:3] == ["base", "dp-mlp"] and "hidden_dim=512" in line and "epochs" not in line
    # --verbose: the variant's resolved hyperparameters, its base's block underneath
    block = out.split(line, 1)[1]
    assert "    epochs = 3" in block and "    hidden_dim = 512" in block


def test_check_config_counts_the_cells_or_names_the_problem(tmp_path, capsys):
    import yaml

    grid = {
        "studies": {
            "a": {"datasets": ["csbm-tiny"], "methods": ["mlp", "dp-mlp"], "epsilons": [1, 2], "seeds": [0, 1]},
            "b": {"datasets": ["csbm-tiny"], "methods": ["mlp"], "epsilons": [1], "seeds": [0, 1, 2]},
        },
        "methods": {"dp-mlp": {"batch_size": 16}},
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    assert main(["check-config", str(path), "--graphs", str(tmp_path)]) == 0
    # mlp at ε = ∞ on seeds 0-2 (b's seeds 0, 1 are a's) + dp-mlp at 2 ε × 2 seeds
    assert "OK; studies a, b: 7 training cell(s)" in capsys.readouterr().out
    grid["privacy"] = {"delta": 0.5}
    path.write_text(yaml.safe_dump(grid))
    assert main(["check-config", str(path), "--graphs", str(tmp_path)]) == 2
    assert only_line(capsys.readouterr().err).startswith(f"nodedp check-config: error: {path}: privacy.delta: ")


def tqdm_run(stream, steps: int) -> None:
    from tqdm import tqdm

    for _ in tqdm(range(steps), file=stream, mininterval=0, miniters=1, desc="bar"):
        pass


@pytest.mark.parametrize("interval", [0.0, 3600.0])
def test_a_progress_bar_in_a_log_is_lines_at_most_one_per_interval_and_the_last(interval):
    import io

    from nodedp.cli.common import LogProgress

    log = io.StringIO()
    stream = LogProgress(log, interval=interval)
    stream.write("before\n")
    tqdm_run(stream, steps=20)
    stream.write("after\n")
    stream.finish()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and lines[0] == "before" and lines[-1] == "after"
    bars = lines[1:-1]
    assert all(line.startswith("bar:") for line in bars)
    assert "20/20" in bars[-1] and "0/20" in bars[0]
    # every redraw (the first, one per update, tqdm's last on closing) without an interval; else the first and last
    assert len(bars) >= 21 if interval == 0 else len(bars) == 2


def test_train_with_progress_writes_the_bar_as_lines_into_a_non_terminal(
    tiny_graph_dir, tiny_split_path, tmp_path, capsys
):
    args = [
        "train",
        "--graph",
        str(tiny_graph_dir),
        "--split",
        str(tiny_split_path),
        "--out",
        str(tmp_path / "run"),
        "--method",
        "dp-mlp",
        "--epsilon",
        "2",
        "--seed",
        "0",
        "--hparams",
        '{"epochs": 1, "batch_size": 32}',
        "--progress",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "100%" in err.splitlines()[-1]
    assert "training dp-mlp at ε = 2" in err  # a line before the work starts


# --- figures, paper tables and report pages from a summary ---------------------------------------------------


def tiny_summary(path, cells=None, *, n_resamples: int = 1000):
    """A summary parquet made by `summarize` from a runs frame: (dataset, method, ε) -> test accuracy per seed."""
    import math

    import polars as pl

    from nodedp.analysis import summarize, write_runs
    from nodedp.analysis.collect import RUNS_SCHEMA

    cells = cells or {
        ("cora-ml", "gap", 8.0): [0.50, 0.52],
        ("cora-ml", "dp-mlp", 8.0): [0.60, 0.62],
        ("cora-ml", "dp-mlp", 1.0): [0.40, 0.42],
        ("cora-ml", "mlp", math.inf): [0.77, 0.79],
    }
    rows = []
    for (dataset, method, eps), accs in cells.items():
        private = math.isfinite(eps)
        for seed, acc in enumerate(accs):
            row = {name: None for name in RUNS_SCHEMA}
            row.update(
                {
                    "dataset": dataset,
                    "method": method,
                    "base_method": method,
                    "seed": seed,
                    "private": private,
                    "target_epsilon": eps,
                    "epsilon": 0.98 * eps if private else 0.0,
                    "delta": 1e-4 if private else 0.0,
                    "level": "node" if private else "none",
                    "fully_accounted": True,
                    "guarantee": "unconditional" if private else "none",
                    "reference": False,
                    "test_accuracy": acc,
                    "test_macro_f1": acc,
                    "val_accuracy": acc,
                    "val_macro_f1": acc,
                    "train_s": 1.0,
                    "total_s": 2.0,
                    "hyperparameters": json.dumps({"lr": 0.01}),
                    "git_commit": "abc",
                }
            )
            rows.append(row)
    runs = pl.DataFrame(rows, schema=RUNS_SCHEMA)
    write_runs(summarize(runs, n_resamples=n_resamples), path)
    return runs


def test_figures_frontier_writes_the_png_and_its_caption(tmp_path, capsys):
    summary = tmp_path / "summary.parquet"
    tiny_summary(summary)
    png, caption = tmp_path / "fig" / "frontier.png", tmp_path / "fig" / "frontier.caption.txt"
    assert (
        main(["figures", "--summary", str(summary), "--png", str(png), "--kind", "frontier", "--caption", str(caption)])
        == 0
    )
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = caption.read_text(encoding="utf-8")
    assert "mean over 2 seeds per cell" in text and "1000 resamples" in text and text.endswith("\n")
    assert text.strip() in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--kind", "sweep"], "--kind sweep needs --parameter"),
        (["--kind", "accuracy", "--parameter", "lr"], "--parameter is for --kind sweep, not accuracy"),
    ],
)
def test_figures_refuses_a_parameter_that_does_not_fit_the_kind(tmp_path, capsys, extra, message):
    summary = tmp_path / "summary.parquet"
    tiny_summary(summary)
    png = tmp_path / "f.png"
    assert main(["figures", "--summary", str(summary), "--png", str(png), *extra]) == 2
    line = only_line(capsys.readouterr().err)
    assert line.startswith("nodedp figures: error: ") and message in line
    assert not png.exists()


@pytest.mark.parametrize("by", ["workflow", "hand"])
def test_paper_tables_writes_markdown_and_latex_naming_the_missing_cells(tmp_path, capsys, monkeypatch, by):
    summary = tmp_path / "summary.parquet"
    tiny_summary(summary)
    out = tmp_path / "paper" / "tables"
    argv = ["paper-tables", "--summary", str(summary), "--table", "dpar-t1", "--out-dir", str(out)]
    monkeypatch.setenv("NODEDP_WORKFLOW", "1" if by == "workflow" else "")
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == ["dpar-t1.md", "dpar-t1.tex"]
    md = (out / "dpar-t1.md").read_text(encoding="utf-8")
    assert "needs dp-sage at ε = 1" in md  # a missing cell says what would produce it
    assert "51.0 ± " in md  # gap at ε = 8 from the summary
    # A rule's output names its workflow target; one written by hand is no target, so it names its own command.
    command = (
        f"snakemake --cores 2 {out / 'dpar-t1'}.md {out / 'dpar-t1'}.tex"
        if by == "workflow"
        else shlex.join(["python", "-m", "nodedp", *argv])
    )
    assert f"Regenerate with: `{command}`" in md
    assert "{key}" not in md and "{key}" not in (out / "dpar-t1.tex").read_text(encoding="utf-8")
    assert str(out / "dpar-t1.md") in capsys.readouterr().out


def test_paper_tables_names_the_valid_keys_for_an_unknown_one(tmp_path, capsys):
    summary = tmp_path / "summary.parquet"
    tiny_summary(summary)
    out = tmp_path / "tables"
    assert main(["paper-tables", "--summary", str(summary), "--table", "dpar-t9", "--out-dir", str(out)]) == 2
    line = only_line(capsys.readouterr().err)
    assert "unknown paper table 'dpar-t9'" in line and "dpar-t1" in line and "progap-t2" in line
    assert not out.exists()


def test_main_tex_inputs_the_tables_relative_to_itself(tmp_path, capsys):
    summary = tmp_path / "summary.parquet"
    tiny_summary(summary)
    assert main(["paper-tables", "--summary", str(summary), "--table", "dpar-t1", "--out-dir", str(tmp_path)]) == 0
    document = tmp_path / "main.tex"
    assert main(["main-tex", "--out", str(document), str(tmp_path / "dpar-t1.tex")]) == 0
    text = document.read_text(encoding="utf-8")
    assert "\\input{dpar-t1.tex}" in text and text.index("\\begin{document}") < text.index("\\input{")
    assert main(["main-tex", "--out", str(document), str(tmp_path / "dpar-t1.md")]) == 2
    assert "not a .tex file" in only_line(capsys.readouterr().err)


def test_report_page_table_converts_one_markdown_file(tmp_path, capsys):
    md = tmp_path / "accuracy.md"
    md.write_text("Accuracy (%)\n\n| method | ε = 1 |\n|:---|---:|\n| dp-mlp | 51 & up |\n", encoding="utf-8")
    page = tmp_path / "report" / "accuracy.html"
    assert main(["report-page", "--kind", "table", "--title", "acc", "--out", str(page), str(md)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "<th>method</th>" in text and "<td>51 &amp; up</td>" in text and "<p>Accuracy (%)</p>" in text
    assert main(["report-page", "--kind", "table", "--out", str(tmp_path / "two.html"), str(md), str(md)]) == 2
    assert "--kind table converts one Markdown table; got 2 inputs" in only_line(capsys.readouterr().err)
    assert not (tmp_path / "two.html").exists()


def test_report_page_ledgers_summarises_run_tables(tmp_path):
    import math

    from nodedp.analysis import write_runs

    runs = tiny_summary(tmp_path / "summary.parquet")
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_runs(runs.filter(runs["seed"] == 0), first)
    write_runs(runs.filter(runs["seed"] == 1), second)
    page = tmp_path / "ledgers.html"
    assert (
        main(
            [
                "report-page",
                "--kind",
                "ledgers",
                "--title",
                "ledgers of demo",
                "--out",
                str(page),
                str(first),
                str(second),
            ]
        )
        == 0
    )
    text = page.read_text(encoding="utf-8")
    assert "<h1>ledgers of demo</h1>" in text and "<th>claim_actual_epsilon_max</th>" in text
    # one row per cell, seeds from both run tables
    assert text.count("<tr><td>cora-ml</td>") == 4 and text.count("<td>0, 1</td>") == 4
    assert f"<td>{0.98 * 8:.4g}</td>" in text and f"<td>{math.inf}</td>" in text


def test_report_page_about_states_the_config_and_version(tmp_path):
    from nodedp import __version__

    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "studies": {
                    "demo": {
                        "datasets": ["csbm-tiny"],
                        "methods": ["mlp", "dp-mlp"],
                        "epsilons": [1, 8],
                        "seeds": [0, 1],
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    page = tmp_path / "about.html"
    assert main(["report-page", "--kind", "about", "--config-name", "grid.yaml", "--out", str(page), str(config)]) == 0
    text = page.read_text(encoding="utf-8")
    assert f"<td>{__version__}</td>" in text and "<td>grid.yaml</td>" in text
    assert "<tr><td>demo</td><td>csbm-tiny</td><td>mlp, dp-mlp</td><td>1, 8</td><td>0, 1</td></tr>" in text
    assert "<th>git commit</th>" in text


def test_report_page_index_lists_a_studys_tables_and_figures(tmp_path):
    study = tmp_path / "paper" / "demo"
    (study / "tables").mkdir(parents=True)
    (study / "figures").mkdir()
    table = study / "tables" / "accuracy.md"
    table.write_text("| a |\n|---|\n| 1 |\n", encoding="utf-8")
    figure = study / "figures" / "a.png"
    figure.write_bytes(b"\x89PNG")
    (study / "figures" / "a.caption.txt").write_text("The caption of a.\n", encoding="utf-8")
    index = study / "index.md"
    assert (
        main(
            [
                "report-page",
                "--kind",
                "index",
                "--title",
                "demo",
                "--out",
                str(index),
                str(table),
                str(figure),
                str(study / "figures" / "a.caption.txt"),
            ]
        )
        == 0
    )
    text = index.read_text(encoding="utf-8")
    assert "[tables/accuracy.md](tables/accuracy.md)" in text
    assert text.index("![a](figures/a.png)") < text.index("The caption of a.")
    assert "a.caption.txt" not in text and str(tmp_path) not in text  # paths relative to the index


def audit_args(graph, split, out, *extra):
    return ["audit", "--graph", str(graph), "--split", str(split), "--out", str(out), "--seed", "0", *extra]


def test_audit_writes_one_json_with_the_bounds_the_scores_and_the_attack(
    tiny_graph_dir, tiny_split_path, tmp_path, capsys
):
    out = tmp_path / "audit.json"
    args = audit_args(
        tiny_graph_dir,
        tiny_split_path,
        out,
        "--method",
        "dp-mlp",
        "--epsilon",
        "2",
        "--canaries",
        "40",
        "--hparams",
        '{"epochs": 2, "batch_size": 32}',
    )
    assert main(args) == 0
    record = json.loads(out.read_text())
    assert record["method"] == record["name"] == "dp-mlp" and record["target_epsilon"] == 2.0
    assert record["canaries"] == 40 == len(record["scores"]) == len(record["inclusion"])
    assert 0 <= record["epsilon_lower_one_run"] <= record["claimed_epsilon"] <= 2.0 and not record["violated"]
    assert 0 <= record["mia"]["accuracy"] <= 1 and set(record["releases"]) == {"dpsgd"}  # DP-MLP: DP-SGD only
    assert "claim holds" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "mlp", "--epsilon", "1"], "non-private"),
        (["--method", "edgerand", "--epsilon", "1"], "edge-level"),
        (["--method", "dp-mlp", "--epsilon", "1", "--canaries", "5"], "--canaries 5"),
        (["--method", "dp-mlp", "--epsilon", "1", "--confidence", "1.5"], "--confidence"),
    ],
)
def test_audit_refuses_what_it_cannot_bound_in_one_line(
    tiny_graph_dir, tiny_split_path, tmp_path, capsys, extra, message
):
    out = tmp_path / "audit.json"
    assert main(audit_args(tiny_graph_dir, tiny_split_path, out, *extra)) == 2
    assert message in only_line(capsys.readouterr().err)
    assert not out.exists()


# --- train-cells: several cells of one method in one process (what each training job of the workflow runs) ---
# Methods covering the paths a cell can take: DP-SGD (RDP), a non-private GNN, DP-GNN on in-degree-bounded
# subgraphs (PLD), NIP-GNN's randomized structure on degree-bounded edges.
CELL_METHODS = {
    "dp-mlp": ({"epochs": 2, "batch_size": 32}, [], ["2", "8"]),
    "gcn": ({"epochs": 3}, [], ["inf", "inf"]),
    "dp-gcn": ({"epochs": 2, "batch_size": 32, "hidden_dim": 8, "in_degree_bound": 3}, ["in-degree"], ["1", "4"]),
    "nip-gnn": ({"epochs": 3}, ["degree"], ["4", "12"]),
}


def public_bound(method: str, hparams: str | dict, kind: str, dataset: str = "csbm-tiny") -> int:
    """The degree bound a method's plan takes for ``kind``: its hyperparameters', else the dataset's public one (the
    run refuses an artifact bounded to another)."""
    import dataclasses

    from nodedp.contract.registry import get_method
    from nodedp.contract.structure import structure_bounds
    from nodedp.data import get_dataset

    values = json.loads(hparams) if isinstance(hparams, str) else hparams
    hp = get_method(method).parse_hparams(values)
    return structure_bounds(get_dataset(dataset), dataclasses.asdict(hp))[kind]


def _artifacts(graph, split, root):
    paths = {}
    for kind, method in (("in-degree", "dp-gcn"), ("degree", "nip-gnn")):
        paths[kind] = root / f"{kind}.pt"
        bound = public_bound(method, CELL_METHODS[method][0], kind)
        assert (
            main(
                [
                    "bound-degree",
                    "--graph",
                    str(graph),
                    "--split",
                    str(split),
                    "--kind",
                    kind,
                    "--bound",
                    str(bound),
                    "--seed",
                    "0",
                    "--out",
                    str(paths[kind]),
                ]
            )
            == 0
        )
    return paths


def _comparable(run):
    """A run's metrics.json without its timings, and its ledger.json, as bytes apart from the timings."""
    metrics = json.loads((run / "metrics.json").read_text())
    metrics.pop("timings")
    return metrics, (run / "ledger.json").read_bytes()


def test_train_cells_in_one_process_write_what_one_process_per_cell_writes(tiny_graph_dir, tiny_split_path, tmp_path):
    artifacts = _artifacts(tiny_graph_dir, tiny_split_path, tmp_path)
    batches, singles = [], []
    for method, (hparams, needs, epsilons) in CELL_METHODS.items():
        settings = ["--method", method, "--hparams", json.dumps(hparams), "--threads", "1", "--no-progress"]
        cells = [
            {
                "graph": str(tiny_graph_dir),
                "epsilon": eps,
                "seed": seed,
                "split": str(tiny_split_path),
                "structure": [str(artifacts[k]) for k in needs],
                "out": str(tmp_path / "cells" / method / str(i)),
                "log": str(tmp_path / "logs" / method / f"{i}.log"),
            }
            for i, (eps, seed) in enumerate(zip(epsilons, (1, 0)))
        ]  # a second cell: other ε and seed
        batches.append(["train-cells", "--cells", json.dumps(cells), *settings])
        singles += [
            [
                "train",
                "--graph",
                cell["graph"],
                "--split",
                cell["split"],
                "--structure",
                *cell["structure"],
                "--epsilon",
                cell["epsilon"],
                "--seed",
                str(cell["seed"]),
                "--out",
                str(tmp_path / "single" / method / str(i)),
                *settings,
            ]
            for i, cell in enumerate(cells)
        ]
    # Every invocation a fresh interpreter, two at a time.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "nodedp", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for args in batches + singles
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
    for method in CELL_METHODS:
        for i in range(2):
            batch, single = tmp_path / "cells" / method / str(i), tmp_path / "single" / method / str(i)
            assert _comparable(batch) == _comparable(single), (method, i)
            # The cell's own output went to its log, as one process of its own would print it.
            assert (
                f"{method} on csbm-tiny seed {1 - i}: test accuracy"
                in (tmp_path / "logs" / method / f"{i}.log").read_text()
            )
    # The two cells of a method really differ (different seeds and ε), so equality above is not vacuous.
    assert _comparable(tmp_path / "cells/dp-mlp/0") != _comparable(tmp_path / "cells/dp-mlp/1")


def test_audit_cells_in_one_process_write_what_one_process_per_cell_writes(tiny_graph_dir, tiny_split_path, tmp_path):
    """An audit job's cells (DP-MLP and DP-GCN, whose structure the audit builds on the canaried graph; other ε,
    seed and canaries in the second cell) equal, timings aside, what `audit` writes for each in a fresh process."""
    methods = {"dp-mlp": {"epochs": 2, "batch_size": 32}, "dp-gcn": {"epochs": 2, "batch_size": 32, "hidden_dim": 8}}
    commands, cells = [], {}
    for method, hparams in methods.items():
        settings = ["--method", method, "--hparams", json.dumps(hparams), "--threads", "1", "--no-progress"]
        cells[method] = [
            {
                "graph": str(tiny_graph_dir),
                "epsilon": eps,
                "seed": seed,
                "split": str(tiny_split_path),
                "canaries": m,
                "out": str(tmp_path / "cells" / method / f"{i}.json"),
                "log": str(tmp_path / "logs" / method / f"{i}.log"),
            }
            for i, (eps, seed, m) in enumerate([("2", 1, 40), ("8", 0, 0)])
        ]
        commands.append(["audit-cells", "--cells", json.dumps(cells[method]), *settings])
        commands += [
            [
                "audit",
                "--graph",
                c["graph"],
                "--split",
                c["split"],
                "--epsilon",
                c["epsilon"],
                "--seed",
                str(c["seed"]),
                "--canaries",
                str(c["canaries"]),
                "--out",
                str(tmp_path / "single" / method / f"{i}.json"),
                *settings,
            ]
            for i, c in enumerate(cells[method])
        ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "nodedp", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for args in commands
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]

    def comparable(path):  # the record less its wall-clock times (its own and its releases')
        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k not in ("timings", "wall_seconds")}
            return [strip(v) for v in value] if isinstance(value, list) else value

        return strip(json.loads(path.read_text()))

    for method in methods:
        records = [comparable(tmp_path / "cells" / method / f"{i}.json") for i in range(2)]
        assert records == [comparable(tmp_path / "single" / method / f"{i}.json") for i in range(2)], method
        assert records[0] != records[1] and records[1]["canaries"] != 40  # two different audits
        assert f"{method} on csbm-tiny seed 1: claimed ε" in (tmp_path / "logs" / method / "0.log").read_text()


def test_audit_cells_refuse_a_cell_they_cannot_audit_before_any_training(
    tiny_graph_dir, tiny_split_path, tmp_path, capsys
):
    good = {
        "graph": str(tiny_graph_dir),
        "epsilon": 2,
        "seed": 0,
        "split": str(tiny_split_path),
        "out": str(tmp_path / "a.json"),
    }
    bad = {**good, "canaries": 5, "out": str(tmp_path / "b.json")}
    assert main(["audit-cells", "--method", "dp-mlp", "--cells", json.dumps([good, bad])]) == 2
    assert "--canaries 5" in only_line(capsys.readouterr().err)
    assert main(["audit-cells", "--method", "dp-mlp", "--cells", json.dumps([{**good, "canaries": -1}])]) == 2
    assert "canaries must be a non-negative integer" in only_line(capsys.readouterr().err)
    assert not (tmp_path / "a.json").exists()


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ("not json", "--cells: not JSON"),
        ("[]", "need a non-empty JSON list of cells"),
        ('[{"graph": "g", "epsilon": 2, "seed": 0, "split": "s.pt", "structure": []}]', "cell 0 lacks ['out']"),
        ('[{"epsilon": 2, "seed": 0, "split": "s.pt", "structure": [], "out": "o", "lr": 1}]', "has unknown ['lr']"),
        ('[{"epsilon": 0, "seed": 0, "split": "s.pt", "structure": [], "out": "o"}]', "cell 0: ε must be > 0"),
        ('[{"epsilon": 2, "seed": "0", "split": "s.pt", "structure": [], "out": "o"}]', "seed must be an integer"),
        (
            '[{"epsilon": 2, "seed": 0, "split": "s.pt", "structure": [], "out": "o"},'
            ' {"epsilon": 8, "seed": 0, "split": "s.pt", "structure": [], "out": "o"}]',
            "output o appears twice",
        ),
        ('[{"epsilon": "inf", "seed": 0, "split": "s.pt", "structure": [], "out": "o"}]', "'dp-mlp' is private"),
    ],
)
def test_train_cells_refuses_a_bad_cell_list_before_any_training(
    tiny_graph_dir, tmp_path, capsys, cells, message, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    cells = (
        cells.replace('"epsilon"', f'"graph": {json.dumps(str(tiny_graph_dir))}, "epsilon"')
        if ('"graph"' not in cells)
        else cells
    )
    assert main(["train-cells", "--method", "dp-mlp", "--cells", cells]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_failing_cell_stops_the_job_and_its_log_says_why(tiny_graph_dir, tiny_split_path, tmp_path, capsys):
    graph = str(tiny_graph_dir)
    cells = [
        {
            "graph": graph,
            "epsilon": 2,
            "seed": 0,
            "split": str(tiny_split_path),
            "structure": [],
            "out": str(tmp_path / "a"),
            "log": str(tmp_path / "a.log"),
        },
        {
            "graph": graph,
            "epsilon": 2,
            "seed": 0,
            "split": str(tmp_path / "missing.pt"),
            "structure": [],
            "out": str(tmp_path / "b"),
            "log": str(tmp_path / "b.log"),
        },
        {
            "graph": graph,
            "epsilon": 4,
            "seed": 0,
            "split": str(tiny_split_path),
            "structure": [],
            "out": str(tmp_path / "c"),
        },
    ]
    args = [
        "train-cells",
        "--method",
        "dp-mlp",
        "--cells",
        f"@{tmp_path / 'c.json'}",
        "--hparams",
        '{"epochs": 1, "batch_size": 32}',
        "--no-progress",
    ]
    (tmp_path / "c.json").write_text(json.dumps(cells))
    assert main(args) == 2
    assert "missing.pt" in capsys.readouterr().err and "missing.pt" in (tmp_path / "b.log").read_text()
    assert (tmp_path / "a/metrics.json").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_stage_timings_split_a_run_into_structure_training_and_evaluation(tiny_graph_dir, tiny_split_path, tmp_path):
    timings = tmp_path / "stages.json"
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        tmp_path / "run",
        "--method",
        "dp-mlp",
        "--epsilon",
        "2",
        "--seed",
        "0",
        "--hparams",
        '{"epochs": 2, "batch_size": 32}',
        "--stage-timings",
        str(timings),
    )
    assert main(args) == 0
    stages = json.loads(timings.read_text())["stages"]
    assert set(stages) == {"structure", "training", "evaluation"}
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert stages["training"]["seconds"] <= metrics["timings"]["total_s"]
    assert all(s["peak_mib"] > 0 for s in stages.values())
    out = tmp_path / "in.pt"
    assert (
        main(
            [
                "bound-degree",
                "--graph",
                str(tiny_graph_dir),
                "--split",
                str(tiny_split_path),
                "--kind",
                "in-degree",
                "--bound",
                "3",
                "--seed",
                "0",
                "--out",
                str(out),
                "--stage-timings",
                str(tmp_path / "bound.json"),
            ]
        )
        == 0
    )
    assert set(json.loads((tmp_path / "bound.json").read_text())["stages"]) == {"structure"}


# Counts of the private graph, which no run may write outside a mechanism. The hyperparameters are the
# public settings a run was asked for (DPAR's num_sources there is the planned M), so the walk skips them.
PRIVATE_COUNTS = {"nodes_over", "sample_size", "num_sources", "empty_source_rows"}
_QUICK_HPARAMS = {
    "epochs": 1,
    "batch_size": 64,
    "hidden_dim": 8,
    "encoder_epochs": 1,
    "hops": 1,
    "sample_rate": 0.5,
    "num_sources": 20,
    "k": 3,
    "max_rows": 2,
}


def _private_counts(value, path: str = ""):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "hyperparameters" and not path:
                continue
            if key in PRIVATE_COUNTS:
                yield f"{path}/{key}"
            yield from _private_counts(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _private_counts(item, f"{path}[{i}]")


def _private_methods() -> list[str]:
    from nodedp.contract.registry import get_method, method_names

    return sorted(m for m in method_names() if get_method(m).private)


@pytest.mark.parametrize("method", _private_methods())
def test_no_run_writes_a_count_of_the_private_graph(tiny_graph_dir, tiny_split_path, tmp_path, method):
    """metrics.json and ledger.json hold no number computed from the private graph outside a mechanism: not how
    many nodes exceed a degree bound, nor DPAR's realised sample, its sources or empty rows."""
    from dataclasses import fields

    from nodedp.contract.registry import get_method

    info = get_method(method)
    names = {f.name for f in fields(info.hparams)}
    hparams = json.dumps({k: v for k, v in _QUICK_HPARAMS.items() if k in names})
    common = ["--graph", str(tiny_graph_dir), "--split", str(tiny_split_path), "--seed", "0"]
    structure = []
    for need in info.needs:
        out = tmp_path / f"{need}.pt"
        if need == "dp-appr":
            args = ["dp-appr", *common, "--method", method, "--hparams", hparams, "--epsilon", "4"]
        else:  # at the bound the plan takes (the hyperparameters', else csbm-tiny's public one)
            args = ["bound-degree", *common, "--kind", need, "--bound", str(public_bound(method, hparams, need))]
        assert main([*args, "--out", str(out)]) == 0
        structure.append(str(out))
    run = tmp_path / "run"
    args = train_args(
        tiny_graph_dir,
        tiny_split_path,
        run,
        "--method",
        method,
        "--epsilon",
        "4",
        "--seed",
        "0",
        "--hparams",
        hparams,
        *(["--structure", *structure] if structure else []),
    )
    assert main(args) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    ledger = json.loads((run / "ledger.json").read_text())
    assert not [*_private_counts(metrics), *_private_counts(ledger)]
    assert metrics["guarantee"] == ledger["guarantee"]
    if ledger["level"] == "node":
        assert "the node count and the training-set size are public" in ledger["guarantee"]["relation"]
        assert ledger["guarantee"]["class"] == (
            "conditional" if ledger["guarantee"]["degree_bound"] or ledger["uncharged"] else "unconditional"
        )


def test_every_stage_verb_is_in_the_parser():
    """Each stage module's ``add_<verb>`` is listed once in ``nodedp.cli.VERBS`` (a verb left out has no parser)."""
    import inspect

    import nodedp.cli as cli

    adders = {
        function
        for module in (cli.data, cli.structure, cli.train, cli.audit, cli.report, cli.verify)
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("add_") and function.__module__ == module.__name__
    }
    assert len(cli.VERBS) == len(set(cli.VERBS)) == len(adders)
    assert set(cli.VERBS) == adders
