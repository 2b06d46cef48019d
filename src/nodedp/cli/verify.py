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
    self_only: dict[str, list[Path]] = {}  # method -> its runs checked against themselves only (no planner yet)
    unloaded: dict[str, list[Path]] = {}  # why the method is not registered here -> its runs
    for run in runs:
        check = verify_run(run)
        if check.refusals:
            refused += 1
            print(f"REFUSED {run}: " + "; ".join(str(r) for r in check.refusals))
        elif check.unplanned:
            unloaded.setdefault(check.unplanned, []).append(run)
        elif not check.replanned:
            self_only.setdefault(check.method, []).append(run)
    for reason, those in unloaded.items():
        print(f"NOT RE-PLANNED {len(those)} run(s), e.g. {those[0]}: {reason}")
    unplanned = sum(len(v) for v in self_only.values())
    not_loaded = sum(len(v) for v in unloaded.values())
    print(
        f"{len(runs)} run(s): {len(runs) - refused - unplanned - not_loaded} re-planned from public inputs and "
        f"verified, {refused} refused"
        + (
            f", {unplanned} checked against themselves and their metrics only (no planner "
            f"yet for {', '.join(sorted(self_only))})"
            if unplanned
            else ""
        )
        + (f", {not_loaded} not checked (their method's plugin is not loaded)" if not_loaded else "")
    )
    # the worst status over all runs: a refusal (1) over runs that could not be re-planned (2)
    return 1 if refused else 2 if self_only or unloaded else 0


def add_verify(verb: AddVerb) -> None:
    p = verb(
        "verify",
        cmd_verify,
        "re-derive each run's privacy plan from public inputs (its method, hyperparameters, seed and target; "
        "the dataset's meta.json and the seed's training-set size) and compare it with ledger.json and "
        "metrics.json field by field; run from the workspace root. Every run is checked (a malformed one is "
        "refused, the rest go on); one line per refused run; exit status 0: all verified, 1: a run refused, 2: none "
        "refused but some methods have no planner yet (their ledgers checked against themselves and their metrics "
        "only) or come from a plugin not loaded (the line names the module and how to load it)",
    )
    p.add_argument("paths", nargs="+", help="run folders, or folders searched for them (e.g. results/)")
