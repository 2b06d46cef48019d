"""Per-cell overhead of a finished workspace: what each training job spends outside its own training.

    python benchmarks/cell_overhead.py [WORKSPACE] [--study demo]

Reads, for every training cell of the workspace (``results/runs/<dataset>/<method>/eps~<ε>/seed~<s>/``), the
job's wall time from Snakemake's benchmark file (``benchmarks/train/...tsv``, column ``s``) and the times the run
records itself in ``metrics.json`` (``timings.train_s``: training; ``timings.total_s``: the verb from its first
line to its output, i.e. loading, training and evaluation). Prints, over the cells:

* overhead per cell = wall − train_s (start-up, imports, loading, evaluation, writing), mean and median;
* start-up per cell = wall − total_s (the interpreter and its imports, before the verb's first line);
* cells per minute of job time, and the workspace's wall time (first to last line of its newest Snakemake log).

``--study`` keeps the cells of one study of the workspace's config (its ``config.yaml``). Nothing is run: the
figures come from the files a finished `make demo` (or any run) leaves behind.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

import yaml

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")


def cells(workspace: Path, study: dict | None) -> list[tuple[float, float, float]]:
    """(wall, train_s, total_s) of every training cell with both a benchmark file and metrics.json."""
    rows = []
    for metrics_path in sorted((workspace / "results/runs").glob("*/*/eps~*/seed~*/metrics.json")):
        run = metrics_path.parent
        dataset, method, eps, seed = run.parts[-4], run.parts[-3], run.parts[-2], run.parts[-1]
        if study is not None and (dataset not in study["datasets"] or method not in study["methods"]):
            continue
        bench = workspace / "benchmarks/train" / dataset / method / eps / f"{seed}.tsv"
        if not bench.exists():
            continue
        lines = bench.read_text().splitlines()
        wall = float(lines[-1].split("\t")[0])
        timings = json.loads(metrics_path.read_text())["timings"]
        rows.append((wall, float(timings["train_s"]), float(timings["total_s"])))
    return rows


def wall_time(workspace: Path) -> float | None:
    """Seconds between the first and the last time stamp of the newest Snakemake log, if any."""
    logs = sorted((workspace / ".snakemake/log").glob("*.snakemake.log"))
    if not logs:
        return None
    stamps = [datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
              for line in logs[-1].read_text().splitlines() if (m := _STAMP.match(line))]
    return (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", nargs="?", default=".", help="a finished workspace (default: .)")
    parser.add_argument("--study", default=None, help="only the cells of this study of the workspace's config.yaml")
    args = parser.parse_args()
    workspace = Path(args.workspace)
    study = None
    if args.study:
        config = yaml.safe_load((workspace / "config.yaml").read_text())
        if args.study not in config.get("studies", {}):
            sys.exit(f"{workspace / 'config.yaml'} has no study {args.study!r}; studies: {sorted(config['studies'])}")
        study = config["studies"][args.study]
    rows = cells(workspace, study)
    if not rows:
        sys.exit(f"{workspace}: no training cell with both benchmarks/train/...tsv and metrics.json")
    overhead = [wall - train for wall, train, _ in rows]
    startup = [wall - total for wall, _, total in rows]
    job_time = sum(wall for wall, _, _ in rows)
    print(f"{len(rows)} training cells in {workspace}")
    print(f"overhead per cell (wall - train_s): mean {statistics.mean(overhead):.2f} s, "
          f"median {statistics.median(overhead):.2f} s")
    print(f"start-up per cell (wall - total_s): mean {statistics.mean(startup):.2f} s, "
          f"median {statistics.median(startup):.2f} s")
    print(f"training per cell (train_s): mean {statistics.mean(t for _, t, _ in rows):.2f} s")
    print(f"cells per minute of job time: {60 * len(rows) / job_time:.1f}")
    total = wall_time(workspace)
    if total is not None:
        print(f"workspace wall time (newest Snakemake log): {total:.0f} s ({total / 60:.1f} min)")


if __name__ == "__main__":
    main()
