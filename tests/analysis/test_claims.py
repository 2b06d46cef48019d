"""The broken-claims table: one row per audited run, the best ε̂ over its model audit and its release audits, the
audit that gave it and a verdict that says why a claim stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodedp.analysis.audit import read_audits, summarize_audits
from nodedp.analysis.claims import CLAIMS_COLUMNS, claims_frame, write_claims_tables
from tests.analysis._audits import COMMAND, audit_record, write

_CELL = ("dataset", "name", "method", "base_method", "seed", "target_epsilon")


def _release(strong: bool, label: str, **kwargs) -> dict:
    record = audit_record(seed=0, strong=strong, method="x", **kwargs)
    return {**{k: v for k, v in record.items() if k not in _CELL}, "label": label}


def _claims(tmp_path: Path, records: list[dict]):
    return claims_frame(summarize_audits(read_audits(write(tmp_path, records))))


def test_a_reference_run_refuted_by_a_release_and_its_suite_twin_that_holds(tmp_path: Path) -> None:
    paper = audit_record(seed=0, strong=False, method="gap@paper", accounting="paper", claimed=1.0)
    paper["ledger_epsilon"] = 22.0
    paper["releases"] = {
        "nap": _release(True, "NAP release", claimed=1.0, accounting="paper"),
        "dpsgd": {**_release(False, "DP-SGD release", claimed=1.0, accounting="paper"), "bound": "runs"},
    }
    suite = audit_record(seed=0, strong=False, method="gap", claimed=1.0)
    suite["releases"] = {"nap": _release(False, "NAP release", claimed=1.0)}
    claims = _claims(tmp_path, [paper, suite])
    assert claims.columns[: len(CLAIMS_COLUMNS)] == list(CLAIMS_COLUMNS) and claims.height == 2
    rows = {r["method"]: r for r in claims.iter_rows(named=True)}
    refuted = rows["gap@paper"]
    assert refuted["refuted"] and refuted["verdict"] == "refuted" and refuted["audit"] == "NAP release"
    assert refuted["best ε̂"] > refuted["claimed ε"] == 1.0 and refuted["actual ε (ledger)"] == 22.0
    twin = rows["gap"]
    assert not twin["refuted"] and twin["verdict"].startswith("not refuted: suite-accounted")
    assert twin["best ε̂"] <= 1.0


@pytest.mark.parametrize(("ledger", "why"), [(0.9, "within the claim"), (8.0, "8× the claim")])
def test_an_unrefuted_reference_run_says_why(tmp_path: Path, ledger: float, why: str) -> None:
    paper = audit_record(seed=0, strong=False, method="dp-gcn@paper", accounting="paper", claimed=1.0)
    paper["ledger_epsilon"] = ledger
    (row,) = _claims(tmp_path, [paper]).iter_rows(named=True)
    assert not row["refuted"] and why in row["verdict"] and row["audit"].startswith("black-box")


def test_the_tables_name_every_run_and_the_command(tmp_path: Path) -> None:
    paper = audit_record(seed=0, strong=True, method="dpar_em0@paper", accounting="paper", claimed=1.0)
    claims = _claims(tmp_path / "audits", [paper])
    write_claims_tables(claims, markdown=tmp_path / "c.md", latex=tmp_path / "c.tex", regenerate_command=COMMAND)
    md, tex = (tmp_path / "c.md").read_text(), (tmp_path / "c.tex").read_text()
    assert "| dpar_em0@paper | cora | 1 |" in md and "| refuted |" in md and COMMAND in md
    assert r"dpar\_em0@paper" in tex and f"% Regenerate with: {COMMAND}" in tex and r"$\hat\varepsilon$" in tex


def test_the_audit_report_verb_writes_the_claims_tables_only_with_both_flags(tmp_path: Path) -> None:
    from nodedp.cli import main

    paths = write(tmp_path, [audit_record(seed=0, strong=True, method="gap@paper", accounting="paper", claimed=1.0)])
    out = {k: str(tmp_path / f"out.{k}") for k in ("md", "tex", "png", "txt")}
    common = ["audit-report", "--markdown", out["md"], "--latex", out["tex"], "--png", out["png"]]
    common += ["--caption", out["txt"], *map(str, paths)]
    claims_md, claims_tex = tmp_path / "claims.md", tmp_path / "claims.tex"
    assert main([*common, "--claims-markdown", str(claims_md)]) != 0  # half a pair: refused before writing
    assert not Path(out["md"]).exists() and not claims_md.exists()
    assert main([*common, "--claims-markdown", str(claims_md), "--claims-latex", str(claims_tex)]) == 0
    assert "| gap@paper | cora | 1 |" in claims_md.read_text() and claims_tex.is_file()
