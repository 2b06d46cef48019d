"""What the warm worker saves: the same grid of small cells trained by Snakemake with and without it.

    python benchmarks/warm_worker.py [--seeds 6] [--rounds 2] [--cores 2] [--json FILE]

Makes a workspace with a grid of DP-MLP (ε 1 and 8) and MLP cells on csbm-tiny (one epoch each: cells whose cost is
mostly start-up), builds its graph and splits once, then, round by round and alternating which goes first, copies
that workspace and times ``snakemake --cores C runs`` with ``NODEDP_WORKER=60`` (each cell a fork of the warm worker)
and with ``NODEDP_WORKER=0`` (each cell a fresh interpreter importing torch). Prints each run's wall time, the
seconds per cell, and the ratio cold / warm measured in this one session, and checks that both ways wrote the
same ledgers. A worker left from before is not reused: the first warm run of each round pays the worker's start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def snakemake(workdir: Path, *targets: str, cores: int, worker: str) -> float:
    env = dict(os.environ, NODEDP_WORKER=worker, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        str(cores),
        *targets,
        "--configfile",
        str(workdir / "config.yaml"),
    ]
    started = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"snakemake failed in {workdir}:\n{result.stderr[-3000:]}")
    return seconds


def ledgers(workdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(workdir.glob("results/runs/**/ledger.json"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6, help="seeds per (method, ε): cells = 3 × seeds (default 6)")
    parser.add_argument("--rounds", type=int, default=2, help="warm/cold pairs, alternating order (default 2)")
    parser.add_argument("--cores", type=int, default=2, help="Snakemake's --cores (default 2)")
    parser.add_argument("--json", help="also write the measurements to this JSON file")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.rounds < 1 or args.cores < 1:
        parser.error("--seeds, --rounds and --cores must be at least 1")
    grid = {
        "studies": {
            "bench": {
                "datasets": ["csbm-tiny"],
                "methods": ["mlp", "dp-mlp"],
                "epsilons": [1, 8],
                "seeds": list(range(args.seeds)),
            }
        },
        "methods": {"mlp": {"epochs": 1}, "dp-mlp": {"epochs": 1, "batch_size": 32}},
    }
    cells = args.seeds * 3
    with tempfile.TemporaryDirectory(prefix="nodedp-warm-worker-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        (base / "config.yaml").write_text(yaml.safe_dump(grid))
        splits = [f"results/splits/csbm-tiny/transductive/seed~{s}.pt" for s in range(args.seeds)]
        snakemake(base, *splits, cores=args.cores, worker="0")
        rows, written = [], {}
        for round_ in range(args.rounds):
            order = ["60", "0"] if round_ % 2 == 0 else ["0", "60"]
            for worker in order:
                workdir = Path(tmp) / f"run-{round_}-{worker}"
                shutil.copytree(base, workdir, symlinks=True)
                seconds = snakemake(workdir, "runs", cores=args.cores, worker=worker)
                mode = "warm" if worker != "0" else "cold"
                rows.append({"round": round_, "mode": mode, "seconds": seconds, "cells": cells})
                written.setdefault(mode, ledgers(workdir))
                print(
                    f"round {round_ + 1}: {mode:4} {seconds:7.1f} s for {cells} cells "
                    f"({seconds / cells:.2f} s per cell)",
                    flush=True,
                )
        same = written["warm"] == written["cold"] and len(written["warm"]) == cells
    warm = sorted(r["seconds"] for r in rows if r["mode"] == "warm")
    cold = sorted(r["seconds"] for r in rows if r["mode"] == "cold")
    print(
        f"\n{cells} cells, --cores {args.cores}: warm {warm[0]:.1f}–{warm[-1]:.1f} s, cold {cold[0]:.1f}–{cold[-1]:.1f} s;"
        f" cold / warm (medians) = {_median(cold) / _median(warm):.2f}"
    )
    print(f"ledgers of the two ways: {'byte for byte the same' if same else 'DIFFERENT'} ({cells} cells)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "same_ledgers": same}, indent=2))
    return 0 if same else 1


def _median(values: list[float]) -> float:
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


if __name__ == "__main__":
    sys.exit(main())
