"""Audit files as `nodedp audit` writes them, and an audit summary of them, for the audit tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from nodedp.analysis.audit import read_audits, summarize_audits
from nodedp.audit.statistics import epsilon_one_run
from nodedp.io import write_json

DELTA = 1e-4
COMMAND = "nodedp audit-report a_b # 5%"


def audit_record(
    *,
    seed: int,
    strong: bool,
    m: int = 100,
    dataset: str = "cora",
    method: str = "dp_mlp",
    epsilon: float = 1.0,
    claimed: float = 0.98,
    accounting: str = "suite",
    mia: float | None = None,
    ties: bool = False,
    delta: float = DELTA,
) -> dict[str, Any]:
    """An audit JSON as `nodedp audit` writes it. ``strong``: included canaries score far above excluded ones, so
    the one-run bound is clearly positive; otherwise scores ignore inclusion and the bound is 0. ``ties``: scores
    on a coarse grid, so the tie-breaking seed matters."""
    rng = np.random.default_rng(1000 + seed)
    inclusion = rng.random(m) < 0.5
    scores = rng.normal(size=m) + (6.0 * inclusion if strong else 0.0)
    if ties:
        scores = np.round(scores)
    bound = epsilon_one_run(scores, inclusion, delta=delta, confidence=0.95, seed=seed)  # as nodedp.audit.run does
    return {
        "dataset": dataset,
        "name": method,
        "method": method,
        "base_method": method.split("@")[0],
        "seed": seed,
        "target_epsilon": epsilon,
        "claimed_epsilon": claimed,
        "ledger_epsilon": claimed,
        "delta": delta,
        "accounting": accounting,
        "guarantee": "unconditional",
        "canaries": m,
        "included": int(inclusion.sum()),
        "canary_degree_bound": 20,
        "epsilon_lower_one_run": bound.epsilon,
        "confidence": 0.95,
        "one_run_guesses": bound.guesses,
        "one_run_correct": bound.correct,
        "epsilon_lower_threshold": 0.0,
        "auc": 0.5,
        "tpr_at_1pct_fpr": 0.0,
        "test_accuracy": 0.6 + 0.01 * seed,
        "wall_seconds": 2.0,
        "violated": bound.epsilon > claimed,
        "scores": scores.tolist(),
        "inclusion": inclusion.tolist(),
        "mia": None if mia is None else {"accuracy": mia, "auc": mia + 0.05, "members": 10},
        "timings": {"total_s": 3.0},
        "version": {"git_commit": "abc", "nodedp": "0.1.0"},
    }


def write(tmp_path: Path, records: list[dict[str, Any]]) -> list[Path]:
    paths = []
    for i, record in enumerate(records):
        paths.append(write_json(tmp_path / f"audit-{i}.json", record))
    return paths


def report_summary(tmp_path: Path) -> pl.DataFrame:
    records = [
        audit_record(seed=0, strong=True, claimed=1.0, mia=0.6),
        audit_record(seed=1, strong=True, claimed=1.0, mia=0.5),
        audit_record(seed=0, strong=False, method="gap@paper", epsilon=4.0, claimed=4.0, accounting="paper"),
        audit_record(seed=1, strong=False, method="gap@paper", epsilon=4.0, claimed=4.0, accounting="paper"),
        audit_record(seed=0, strong=False, dataset="amazon", claimed=0.98),
        audit_record(seed=1, strong=False, dataset="amazon", claimed=0.98),
    ]
    return summarize_audits(read_audits(write(tmp_path, records)))
