"""`verify`: re-derive each run's privacy plan from public inputs and compare it with its ledger and metrics."""

from __future__ import annotations

import argparse
from pathlib import Path

from nodedp.cli.common import AddVerb


def cmd_verify(args: argparse.Namespace) -> int:
    from nodedp.verify import find_runs, verify_run

    runs = find_runs(args.paths)
    if not runs:
        raise ValueError(f"no run (a folder with metrics.json) under {' '.join(args.paths)}")
    refused = 0
    self_only: dict[str, list[Path]] = {}  # method -> its runs checked against themselves only
    for run in runs:
        check = verify_run(run)
        if check.refusals:
            refused += 1
            print(f"REFUSED {run}: " + "; ".join(str(r) for r in check.refusals))
        elif not check.replanned:
            self_only.setdefault(check.method, []).append(run)
    unplanned = sum(len(v) for v in self_only.values())
    print(
        f"{len(runs)} run(s): {len(runs) - refused - unplanned} re-planned from public inputs and verified, "
        f"{refused} refused"
        + (
            f", {unplanned} checked against themselves and their metrics only (no planner "
            f"yet for {', '.join(sorted(self_only))})"
            if unplanned
            else ""
        )
    )
    return 1 if refused else 2 if self_only else 0


def add_verify(verb: AddVerb) -> None:
    p = verb(
        "verify",
        cmd_verify,
        "re-derive each run's privacy plan from public inputs (its method, hyperparameters, seed and target; "
        "the dataset's meta.json and the seed's training-set size) and compare it with ledger.json and "
        "metrics.json field by field; run from the workspace root. One line per refused run; exit status 0: "
        "all verified, 1: a run refused, 2: none refused but some methods have no planner yet (their ledgers "
        "checked against themselves and their metrics only)",
    )
    p.add_argument("paths", nargs="+", help="run folders, or folders searched for them (e.g. results/)")
