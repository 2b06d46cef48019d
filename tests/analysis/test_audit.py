from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from nodedp.analysis.audit import (
    VIOLATION_MARK,
    read_audits,
    summarize_audits,
    write_audit_tables,
)
from nodedp.audit.statistics import epsilon_one_run
from tests.analysis._audits import COMMAND, DELTA, audit_record, report_summary, write


def test_read_audits_one_row_per_file(tmp_path: Path) -> None:
    paths = write(tmp_path, [audit_record(seed=0, strong=True, mia=0.6), audit_record(seed=1, strong=False)])
    frame = read_audits(paths)
    assert frame.height == 2 and frame["seed"].to_list() == [0, 1]
    assert frame["scores"].list.len().to_list() == [100, 100]
    assert frame["mia_accuracy"].to_list() == [0.6, None] and frame["path"].to_list() == [str(p) for p in paths]
    assert frame["total_seconds"].to_list() == [3.0, 3.0] and frame["git_commit"][0] == "abc"


def test_read_audits_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json"):
        read_audits([bad])

    record = audit_record(seed=0, strong=True)
    del record["scores"], record["delta"]
    (path,) = write(tmp_path, [record])
    with pytest.raises(ValueError, match=r"audit-0\.json lacks keys \['delta', 'scores'\]"):
        read_audits([path])

    record = audit_record(seed=0, strong=True)
    record["inclusion"] = record["inclusion"][:-1]
    (path,) = write(tmp_path, [record])
    with pytest.raises(ValueError, match=r"audit-0\.json: 100 canaries but 100 scores and 99 inclusion bits"):
        read_audits([path])

    record = audit_record(seed=0, strong=True)
    record["seed"], record["violated"] = "0", 1
    (path,) = write(tmp_path, [record])
    with pytest.raises(ValueError, match=r"audit-0\.json: wrong types in seed='0', violated=1"):
        read_audits([path])

    record = audit_record(seed=0, strong=True)
    record["mia"] = {"auc": 0.5}
    (path,) = write(tmp_path, [record])
    with pytest.raises(ValueError, match="audit-0.json: mia must be null"):
        read_audits([path])

    # The same cell and seed twice would pool one run's canaries twice.
    paths = write(tmp_path, [audit_record(seed=3, strong=True), audit_record(seed=3, strong=False)])
    with pytest.raises(ValueError, match=r"seed 3, is audited more than once: .*audit-0\.json, .*audit-1\.json"):
        read_audits(paths)


def test_one_seed_reproduces_its_stored_bound(tmp_path: Path) -> None:
    # Tied scores: the bound depends on the tie-breaking seed, which must be the run's own (7 here).
    record = audit_record(seed=7, strong=True, ties=True)
    summary = summarize_audits(read_audits(write(tmp_path, [record])))
    assert summary.height == 1 and summary["tie_break_seed"][0] == 7
    assert summary["epsilon_lower"][0] == record["epsilon_lower_one_run"] > 0
    assert summary["epsilon_lower_best_seed"][0] == record["epsilon_lower_one_run"]
    assert summary["one_run_correct"][0] == record["one_run_correct"]
    # An explicit seed overrides it for every cell.
    override = summarize_audits(read_audits(write(tmp_path, [record])), seed=0)
    expected = epsilon_one_run(record["scores"], record["inclusion"], delta=DELTA, seed=0).epsilon
    assert override["tie_break_seed"][0] == 0 and override["epsilon_lower"][0] == expected


def test_pooling_two_strong_seeds_tightens_the_bound(tmp_path: Path) -> None:
    # A small δ: the bound's δ term (2·m·δ) stays negligible for the pooled 200 canaries.
    records = [audit_record(seed=0, strong=True, delta=1e-6), audit_record(seed=1, strong=True, delta=1e-6)]
    frame = read_audits(write(tmp_path, records))
    pooled = summarize_audits(frame).row(0, named=True)
    singles = [r["epsilon_lower_one_run"] for r in records]
    assert min(singles) > 1.0
    assert pooled["epsilon_lower"] > max(singles) + 0.3
    assert pooled["seeds"] == 2 and pooled["canaries"] == 200 and pooled["canaries_per_seed"] == 100
    assert pooled["included"] == sum(r["included"] for r in records)
    # It is the bound on the concatenated canaries (first seed breaks ties), not a mean of the seeds'.
    scores = records[0]["scores"] + records[1]["scores"]
    inclusion = records[0]["inclusion"] + records[1]["inclusion"]
    assert pooled["epsilon_lower"] == epsilon_one_run(scores, inclusion, delta=1e-6, seed=0).epsilon
    assert pooled["auc"] > 0.99
    # The best seed alone, at confidence split over the two seeds: below its stored (95%) bound.
    assert 0 < pooled["epsilon_lower_best_seed"] < max(singles)


def test_large_delta_makes_pooling_looser_and_best_seed_is_bonferroni(tmp_path: Path) -> None:
    # The δ term 2·m·δ is 0.02 per seed (m = 100, δ = 1e-4) but 0.04 for the 200 canaries pooled: with
    # near-perfect guesses the pooled bound falls below each seed's own.
    records = [audit_record(seed=s, strong=True) for s in range(2)]
    row = summarize_audits(read_audits(write(tmp_path, records))).row(0, named=True)
    singles = [r["epsilon_lower_one_run"] for r in records]
    assert 0 < row["epsilon_lower"] < min(singles)
    expected = max(
        epsilon_one_run(r["scores"], r["inclusion"], delta=DELTA, confidence=1 - 0.05 / 2, seed=r["seed"]).epsilon
        for r in records
    )
    assert 0 < row["epsilon_lower_best_seed"] == expected < max(singles)


def test_summary_max_claim_violation_mia_and_order(tmp_path: Path) -> None:
    records = [
        audit_record(seed=0, strong=True, claimed=0.5, mia=0.6),
        audit_record(seed=1, strong=True, claimed=0.8, mia=0.5, m=120),
        audit_record(seed=0, strong=False, dataset="amazon", epsilon=8.0, claimed=7.9),
        audit_record(seed=1, strong=False, dataset="amazon", epsilon=8.0, claimed=7.9),
    ]
    summary = summarize_audits(read_audits(write(tmp_path, records)))
    assert summary["dataset"].to_list() == ["amazon", "cora"]  # sorted by cell
    weak, strong = summary.row(0, named=True), summary.row(1, named=True)
    assert strong["claimed_epsilon"] == 0.8  # the largest claim of its seeds
    assert strong["epsilon_lower"] > 0.8 and strong["violated"]
    # Seeds refuting their own claim at the confidence split over the seeds (97.5% each).
    alone = [
        epsilon_one_run(r["scores"], r["inclusion"], delta=DELTA, confidence=0.975, seed=r["seed"]).epsilon
        for r in records[:2]
    ]
    assert strong["seeds_violated"] == (alone[0] > 0.5) + (alone[1] > 0.8) >= 1
    assert strong["canaries"] == 220 and strong["canaries_per_seed"] is None
    assert strong["mia_accuracy_mean"] == pytest.approx(0.55) and strong["mia_seeds"] == 2
    assert (strong["mia_accuracy_min"], strong["mia_accuracy_max"]) == (0.5, 0.6)
    assert strong["mia_auc_mean"] == pytest.approx(0.6)
    assert strong["test_accuracy_mean"] == pytest.approx(0.605) and strong["wall_seconds"] == 4.0
    assert weak["epsilon_lower"] == 0.0 and not weak["violated"]
    assert weak["mia_accuracy_mean"] is None and weak["mia_seeds"] == 0


def test_summary_refuses_seeds_of_different_cells(tmp_path: Path) -> None:
    records = [audit_record(seed=0, strong=True), audit_record(seed=1, strong=True, accounting="paper")]
    with pytest.raises(ValueError, match="disagree on accounting"):
        summarize_audits(read_audits(write(tmp_path, records)))


def test_tables_mark_violations_and_explain_them(tmp_path: Path) -> None:
    summary = report_summary(tmp_path)
    md, tex = tmp_path / "out" / "audit.md", tmp_path / "out" / "audit.tex"
    write_audit_tables(summary, markdown=md, latex=tex, regenerate_command=COMMAND)
    markdown, latex = md.read_text(encoding="utf-8"), tex.read_text(encoding="utf-8")
    lines = markdown.splitlines()
    rows = [line for line in lines if line.startswith("| cora") or line.startswith("| amazon")]
    assert len(rows) == 3
    violated = next(line for line in rows if "dp_mlp" in line and "cora" in line)
    assert VIOLATION_MARK in violated and "(95%)" in violated and "55.0 [50.0–60.0]" in violated
    assert "| 100 × 2 |" in violated and "suite (ledger)" in violated and "| 1 (δ = 0.0001) |" in violated
    paper = next(line for line in rows if "gap@paper" in line)
    assert "| 0 (95%) |" in paper and "paper (its claim)" in paper and VIOLATION_MARK not in paper
    assert sum(VIOLATION_MARK in line for line in rows) == 1
    assert any("a bug in the method" in line and "refutes the paper's claimed ε" in line for line in lines)
    assert any("one-run audits are loose" in line for line in lines)
    assert f"Regenerate with: `{COMMAND}`" in lines

    tex_lines = latex.splitlines()
    assert latex.isascii() and "\\begin{tabular}{llll" in latex
    assert tex_lines.index("\\toprule") < tex_lines.index("\\bottomrule")
    assert "dp\\_mlp" in latex and "gap@paper" in latex and "55.0 [50.0--60.0]" in latex
    assert "\\textbf{!} $\\hat{\\varepsilon}$ $>$ claimed" in latex
    assert tex_lines.count("\\midrule") == 2  # below the header, and between the two datasets


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (a TeX distribution)")
def test_latex_table_compiles(tmp_path: Path) -> None:
    write_audit_tables(
        report_summary(tmp_path), markdown=tmp_path / "a.md", latex=tmp_path / "audit.tex", regenerate_command=COMMAND
    )
    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        "\\begin{table}\\input{audit.tex}\\end{table}\n\\end{document}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (tmp_path / "main.log").read_text(errors="replace")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Undefined control sequence" not in log and "Missing character" not in log


def test_audit_without_canary_bits_is_refused(tmp_path: Path) -> None:
    # Audits written before the scores and bits were stored cannot be pooled.
    record = audit_record(seed=0, strong=True)
    del record["inclusion"]
    (path,) = write(tmp_path, [record])
    with pytest.raises(ValueError, match=r"lacks keys \['inclusion'\].*rerun"):
        read_audits([path])


def test_the_attack_summary_feeds_nip_gnn_table_4(tmp_path: Path) -> None:
    from nodedp.analysis.audit import mia_summary
    from nodedp.analysis.paper_tables import PAPER_TABLES, render_paper_table

    assert PAPER_TABLES["nip-gnn-t4"].summary == "mia" and PAPER_TABLES["nip-gnn-t1"].summary == "summary"
    records = [audit_record(seed=s, strong=False, method="gap", epsilon=4.0, mia=a) for s, a in ((0, 0.50), (1, 0.54))]
    summary = mia_summary(read_audits(write(tmp_path, records)), n_resamples=1000)
    row = summary.row(0, named=True)
    assert (row["dataset"], row["method"], row["target_epsilon"], row["n_runs"]) == ("cora", "gap", 4.0, 2)
    assert row["mia_accuracy_mean"] == pytest.approx(0.52) and 0.50 <= row["mia_accuracy_ci_low"] < 0.52
    md, _ = render_paper_table("nip-gnn-t4", summary, regenerate_command="x")
    assert "52.0 ± " in md and "paper 50.12 ± 2.17" in md
    with pytest.raises(ValueError, match="membership-inference"):
        mia_summary(read_audits(write(tmp_path / "none", [audit_record(seed=0, strong=False)])))


def test_a_nap_release_audit_is_a_cell_of_its_own(tmp_path: Path) -> None:
    record = audit_record(seed=0, strong=False, method="gap", mia=0.5)
    release = {
        k: v
        for k, v in audit_record(seed=0, strong=True, method="x").items()
        if k not in ("dataset", "name", "method", "base_method", "seed", "target_epsilon")
    }
    record["releases"] = {"nap": {**release, "label": "NAP release"}}
    frame = read_audits(write(tmp_path, [record]))
    assert frame["method"].to_list() == ["gap", "gap · NAP release"]
    # an audit file written before the releases were one table keeps its rows
    legacy = {k: v for k, v in record.items() if k != "releases"} | {"nap_release": release}
    assert read_audits(write(tmp_path / "legacy", [legacy]))["method"].to_list() == ["gap", "gap · NAP release"]
    record["releases"] = {"nap": release}  # a release audit without its label
    with pytest.raises(ValueError, match="release nap must be an audit object with a label"):
        read_audits(write(tmp_path / "unlabelled", [record]))
    assert frame["mia_accuracy"].to_list() == [0.5, None]
    summary = summarize_audits(frame)
    release = summary.filter(pl.col("method") == "gap · NAP release").row(0, named=True)
    assert release["violated"] and release["epsilon_lower"] > release["claimed_epsilon"]


def test_a_dp_sgd_release_of_independent_runs_is_bounded_by_its_threshold_bound(tmp_path: Path) -> None:
    record = audit_record(seed=0, strong=False, method="dpar-features@paper", mia=0.5)
    release = audit_record(seed=0, strong=True, m=2000, delta=5e-3, method="x")  # δ where one-run bounds are 0
    record["releases"] = {
        "dpsgd": {
            **{
                k: v
                for k, v in release.items()
                if k not in ("dataset", "name", "method", "base_method", "seed", "target_epsilon")
            },
            "bound": "runs",
            "label": "DP-SGD release",
        }
    }
    frame = read_audits(write(tmp_path, [record]))
    assert frame["method"].to_list() == ["dpar-features@paper", "dpar-features@paper · DP-SGD release"]
    assert frame["bound"].to_list() == ["one-run", "runs"]
    row = summarize_audits(frame).filter(pl.col("bound") == "runs").row(0, named=True)
    assert row["epsilon_lower"] == row["epsilon_lower_threshold"] > row["claimed_epsilon"] and row["violated"]
    assert epsilon_one_run(np.asarray(release["scores"]), np.asarray(release["inclusion"]), delta=5e-3).epsilon == 0
    write_audit_tables(
        summarize_audits(frame), markdown=tmp_path / "a.md", latex=tmp_path / "a.tex", regenerate_command=COMMAND
    )
    assert "independent runs" in (tmp_path / "a.md").read_text()
