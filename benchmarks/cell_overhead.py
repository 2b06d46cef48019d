"""Per-cell overhead of a finished workspace: what each training job spends outside its own training.

    python benchmarks/cell_overhead.py [WORKSPACE] [--study demo]

Reads the training jobs' wall times from Snakemake's benchmark files (``benchmarks/train/``, column ``s``) and
the times each run records itself in ``metrics.json`` (``timings.train_s``: training; ``timings.total_s``: the
cell from its first line to its output, i.e. loading, training and evaluation). The workflow trains each cell in a
job of its own (``benchmarks/train/<dataset>/<method>/eps~<ε>/seed~<s>.tsv``); a benchmark file of a job that
trained several cells of one method in one process (``benchmarks/train/<method>/job~<study>-<k>.tsv``) is read
too, its wall time shared by its cells. Prints, over the cells:

* overhead per cell = (job wall − Σ train_s) / cells: start-up, imports, loading, evaluation, writing;
* start-up per cell = (job wall − Σ total_s) / cells: Snakemake's job start and the process (a fork of the warm
  worker, or an interpreter and its imports), outside every cell;
* training jobs (processes) and cells per job; cells per minute of job time; the workspace's wall time (first
  to last line of its newest Snakemake log).

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


def jobs(workspace: Path, study: str | None, spec: dict | None) -> list[tuple[float, int, list[tuple[float, float]]]]:
    """(wall, processes, [(train_s, total_s) of each cell]) for each method: its training jobs together (walls
    summed) against its cells with metrics.json (with a study: those of its grid). Reads both kinds of benchmark
    file: one job per cell (``benchmarks/train/<dataset>/<method>/eps~<ε>/seed~<s>.tsv``) and one job (one
    process) for several cells of one method (``benchmarks/train/<method>/job~<study>-<k>.tsv``)."""
    bench = workspace / "benchmarks/train"
    rows = []
    for method_dir in sorted(p for p in bench.glob("*") if p.is_dir() and any(p.glob("job~*.tsv"))):
        method = method_dir.name
        timings = _timings(workspace, "*", method, spec)
        job_files = sorted(method_dir.glob(f"job~{study + '-' if study else ''}*.tsv"))
        if job_files and timings:
            rows.append((sum(_wall(f) for f in job_files), len(job_files), list(timings.values())))
    for cell_file in sorted(bench.glob("*/*/eps~*/seed~*.tsv")):
        dataset, method = cell_file.parts[-4], cell_file.parts[-3]
        timing = _timings(workspace, dataset, method, spec).get((dataset, cell_file.parent.name, cell_file.stem))
        if timing is not None:
            rows.append((_wall(cell_file), 1, [timing]))
    return rows


def _timings(workspace: Path, dataset: str, method: str, spec: dict | None) -> dict[tuple[str, str, str], tuple]:
    """(train_s, total_s) of a method's cells on ``dataset`` (a glob), by (dataset, eps~ε, seed~s)."""
    timings = {}
    for metrics_path in (workspace / "results/runs").glob(f"{dataset}/{method}/eps~*/seed~*/metrics.json"):
        d, eps, seed = metrics_path.parts[-5], metrics_path.parts[-3], metrics_path.parts[-2]
        if spec is not None and (
            d not in spec["datasets"]
            or method not in spec["methods"]
            or int(seed.removeprefix("seed~")) not in spec["seeds"]
            or (eps != "eps~inf" and float(eps.removeprefix("eps~")) not in spec["epsilons"])
        ):
            continue
        t = json.loads(metrics_path.read_text())["timings"]
        timings[(d, eps, seed)] = (float(t["train_s"]), float(t["total_s"]))
    return timings


def _wall(path: Path) -> float:
    return float(path.read_text().splitlines()[-1].split("\t")[0])


def wall_time(workspace: Path) -> float | None:
    """Seconds between the first and the last time stamp of the newest Snakemake log, if any."""
    logs = sorted((workspace / ".snakemake/log").glob("*.snakemake.log"))
    if not logs:
        return None
    stamps = [
        datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        for line in logs[-1].read_text().splitlines()
        if (m := _STAMP.match(line))
    ]
    return (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", nargs="?", default=".", help="a finished workspace (default: .)")
    parser.add_argument("--study", default=None, help="only the cells of this study of the workspace's config.yaml")
    args = parser.parse_args()
    workspace = Path(args.workspace)
    study = None  # the study's grid
    if args.study:
        config = yaml.safe_load((workspace / "config.yaml").read_text())
        if args.study not in config.get("studies", {}):
            sys.exit(f"{workspace / 'config.yaml'} has no study {args.study!r}; studies: {sorted(config['studies'])}")
        study = config["studies"][args.study]
    rows = jobs(workspace, args.study, study)
    cells = [cell for _, _, group in rows for cell in group]
    if not cells:
        sys.exit(f"{workspace}: no training job with both benchmarks/train/... and its cells' metrics.json")
    job_time = sum(wall for wall, _, _ in rows)
    processes = sum(n for _, n, _ in rows)
    overhead = job_time - sum(train for train, _ in cells)
    startup = job_time - sum(total for _, total in cells)
    print(
        f"{len(cells)} training cells in {processes} training jobs (processes) in {workspace}: "
        f"{len(cells) / processes:.2f} cells per job"
    )
    print(f"overhead per cell (job wall - train_s): {overhead / len(cells):.2f} s")
    print(f"start-up per cell (job wall - total_s): {startup / len(cells):.2f} s")
    print(f"training per cell (train_s): {statistics.mean(t for t, _ in cells):.2f} s")
    print(f"cells per minute of job time: {60 * len(cells) / job_time:.1f}")
    total = wall_time(workspace)
    if total is not None:
        print(f"workspace wall time (newest Snakemake log): {total:.0f} s ({total / 60:.1f} min)")


if __name__ == "__main__":
    main()
