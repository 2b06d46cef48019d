"""How long Snakemake takes to plan the grid, against Snakemake alone planning the very same jobs.

    python benchmarks/planning.py [--workspace DIR] [--repeat 5] [--without-logs] [-- SNAKEMAKE_ARGS ...]

    e.g. python benchmarks/planning.py                       # the whole config.yaml
         python benchmarks/planning.py -- demo                # the demo only
         python benchmarks/planning.py -- --configfile my.yaml

Runs ``snakemake -n`` once in the workspace (default: this checkout) to read every planned job: its rule, input,
output and log files, as the dry run prints them. It then writes, in a temporary directory, a skeleton
workflow with one rule per job and exactly those files (shell ``true``; a loop over the jobs, no workflow code)
and an empty workflow (one rule, no file), and times ``snakemake -n --quiet rules`` on the three, alternating, ``--repeat``
times each. Printed: jobs and files, the best and median wall time of each, and the ratio workflow / skeleton.

The skeleton is Snakemake's own cost for this DAG: reading rules, building and checking the DAG, scheduling
and printing the jobs. What the workflow spends beyond it (its imports, config checks, input functions) is
the difference; the empty workflow is Snakemake's start-up (imports, its plugins'). The skeleton has a rule
per job where the workflow has wildcard rules for most stages, which costs it some reading time of its own.
``--without-logs`` leaves the log files out of the skeleton: how much the logs cost Snakemake.

Nothing is trained or written in the workspace; the dry run only reads it. Timings vary with the machine's load:
compare the figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
_FIELDS = ("input", "output", "log")


def snakemake_exe() -> str:
    """The snakemake beside this Python (a venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("snakemake")
    found = str(beside) if beside.is_file() else shutil.which("snakemake")
    if found is None:
        raise SystemExit(
            "benchmarks/planning.py: no snakemake found (beside this python or on PATH); "
            "run it with the project's venv: .venv/bin/python benchmarks/planning.py"
        )
    return found


def planned_jobs(printout: str) -> list[dict]:
    """Every job of a ``snakemake -n`` printout: {"rule", "input", "output", "log"} (file lists)."""
    jobs, job = [], None
    for line in printout.splitlines():
        match = _RULE.match(line)
        if match:
            job = {"rule": match.group(1), **{field: [] for field in _FIELDS}}
            jobs.append(job)
            continue
        if job is not None and line.startswith("    "):
            field, _, value = line.strip().partition(": ")
            if field in _FIELDS and value:
                job[field] = value.split(", ")
    return jobs


def skeleton(jobs: list[dict], target: str, with_logs: bool) -> tuple[str, list[dict]]:
    """A Snakefile planning the same jobs with no Python but a loop over them (one rule each; the target job
    first: the default target), and the jobs in its order (its jobs.json)."""
    ordered = sorted(jobs, key=lambda job: job["rule"] != target)
    if not with_logs:
        ordered = [{**job, "log": []} for job in ordered]
    text = f"""import json

for i, job in enumerate(json.load(open("jobs.json"))):
    rule:
        name: {target!r} if i == 0 else f"j{{i}}"
        input: job["input"]
        output: job["output"]
        log: job["log"]
        shell: "true"
"""
    return text, ordered


def timed(command: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise SystemExit(f"benchmarks/planning.py: `{' '.join(command)}` failed in {cwd}:\n{tail}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workspace",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the workflow's directory (default: this checkout)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each workflow (default 5)")
    parser.add_argument("--without-logs", action="store_true", help="leave the log files out of the skeleton")
    parser.add_argument("snakemake_args", nargs="*", help="after --: targets and options for the dry run")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    exe = snakemake_exe()
    env = {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    workspace = args.workspace.resolve()
    if not (workspace / "Snakefile").is_file():
        raise SystemExit(f"benchmarks/planning.py: {workspace} has no Snakefile; pass the workflow's directory")

    print(f"reading the plan: snakemake -n {' '.join(args.snakemake_args)}", file=sys.stderr)
    dry = subprocess.run([exe, *args.snakemake_args, "-n"], cwd=workspace, capture_output=True, text=True, env=env)
    if dry.returncode != 0:
        raise SystemExit(f"benchmarks/planning.py: the dry run failed:\n{dry.stderr[-3000:]}")
    jobs = planned_jobs(dry.stdout + "\n" + dry.stderr)
    if not jobs:
        raise SystemExit("benchmarks/planning.py: the dry run printed no job (is everything already built?)")
    # The target: the one job without outputs (a rule like `all` or `demo`); the skeleton asks for it by name.
    no_output = [job["rule"] for job in jobs if not job["output"]]
    target = no_output[0] if len(no_output) == 1 else None
    if target is None:
        raise SystemExit(
            "benchmarks/planning.py: expected one target job without outputs (a rule like `all`), "
            f"got {no_output or 'none'}; pass one target rule after --"
        )
    files = {field: sum(len(job[field]) for job in jobs) for field in _FIELDS}

    with tempfile.TemporaryDirectory(prefix="nodedp-planning-") as tmp:
        skel_dir, empty_dir = Path(tmp, "skeleton"), Path(tmp, "empty")
        skel_dir.mkdir()
        empty_dir.mkdir()
        text, ordered = skeleton(jobs, target, with_logs=not args.without_logs)
        (skel_dir / "Snakefile").write_text(text, encoding="utf-8")
        (skel_dir / "jobs.json").write_text(json.dumps(ordered), encoding="utf-8")
        (empty_dir / "Snakefile").write_text("rule nothing:\n    shell: 'true'\n", encoding="utf-8")
        runs = {
            "workflow": ([exe, *args.snakemake_args, "-n", "--quiet", "rules"], workspace),  # targets first
            "skeleton": ([exe, target, "-n", "--quiet", "rules"], skel_dir),
            "empty": ([exe, "-n", "--quiet", "rules"], empty_dir),
        }
        walls = {name: [] for name in runs}
        for r in range(args.repeat):
            for name, (command, cwd) in runs.items():
                walls[name].append(timed(command, cwd, env))
            print(
                f"run {r + 1}/{args.repeat}: " + ", ".join(f"{n} {w[-1]:.2f} s" for n, w in walls.items()),
                file=sys.stderr,
            )

    logs = "" if not args.without_logs else " (skeleton without logs)"
    print(
        f"jobs planned: {len(jobs)}; files: {files['input']} input, {files['output']} output, {files['log']} log{logs}"
    )
    print("| | best | median |\n|---|---|---|")
    labels = {
        "workflow": "this workflow",
        "skeleton": "skeleton: the same jobs and files, no workflow code",
        "empty": "empty workflow (Snakemake's start-up)",
    }
    for name, label in labels.items():
        print(f"| {label} | {min(walls[name]):.2f} s | {statistics.median(walls[name]):.2f} s |")
    work, skel, empty = (statistics.median(walls[n]) for n in ("workflow", "skeleton", "empty"))
    print(
        f"workflow / skeleton (medians): {work / skel:.2f}; workflow beyond the skeleton: {work - skel:+.2f} s; "
        f"skeleton beyond Snakemake's start-up: {skel - empty:.2f} s"
    )


if __name__ == "__main__":
    main()
