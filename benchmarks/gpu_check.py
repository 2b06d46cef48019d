"""Every private method's cell on a GPU against the same cell on CPU: same ledger, close accuracy, its cost.

    python benchmarks/gpu_check.py [--device cuda] [--targets csbm-homophilous arxiv:169343]
        [--methods ...] [--epochs 1] [--tolerance 5] [--out gpu-check]

For each target (a registered synthetic dataset, or ``SHAPE:NODES``, a stand-in of a headline graph at that
size) it runs ``benchmarks/scaling.py`` twice on the same graph (built from code, the same on both), once with
training on CPU and once on ``--device``, the two at the same time (the CPU one with ``CUDA_VISIBLE_DEVICES``
empty); every method's structure artifacts and one training cell at ε = ``--epsilon``, seed 0, with every
``*epochs`` hyperparameter at ``--epochs``. Then, per cell, it checks that

* the ledger is byte-identical on both devices (a run's privacy plan never depends on where it trains), and
* the test accuracies differ by at most ``--tolerance`` points (the devices draw different random numbers,
  so the noise, the batches and the initialisation differ; the tolerance is a few points on these graphs),

and writes ``gpu-check.json`` and ``gpu-check.md`` under ``--out``: per cell both accuracies, the seconds per
training epoch on each device and the device's peak memory (CUDA's peak allocation). Exit status 1 where a
check fails or a cell does not run. ``--device cpu`` runs the whole check on CPU (two CPU runs: the test suite
does this, so the script cannot rot). On a GPU node: ``make gpu-check`` (docs/scaling.md, "GPU check").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCALING = ROOT / "benchmarks" / "scaling.py"
DEFAULT_TARGETS = ("csbm-homophilous", "arxiv:169343")


def private_methods() -> list[str]:
    """Every registered private method (node and edge level)."""
    from nodedp.contract.registry import get_method, method_names

    return [name for name in method_names() if get_method(name).private]


def _target_args(target: str) -> list[str]:
    if ":" in target:
        shape, nodes = target.split(":", 1)
        return ["--shape", shape, "--nodes", nodes]
    return ["--dataset", target]


def _label(target: str) -> str:
    return target.replace(":", "-")


def _launch(target: str, side: str, device: str, args: argparse.Namespace, out: Path) -> subprocess.Popen:
    """One scaling.py run of every method on ``target`` with training on ``device`` (a child process), in the
    folder of its ``side`` of the comparison ("reference": CPU, or "checked")."""
    workdir = out / "work" / _label(target) / side
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        str(SCALING),
        *_target_args(target),
        "--methods",
        *args.methods,
        "--epochs",
        str(args.epochs),
        "--epsilon",
        str(args.epsilon),
        "--device",
        device,
        "--threads",
        str(args.threads),
        "--workdir",
        str(workdir),
        "--json",
        str(workdir / "scaling.json"),
    ]
    env = dict(os.environ)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU reference never touches the GPU
    with open(workdir / "scaling.log", "w", encoding="utf-8") as log:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)


def _runs_dir(workdir: Path) -> Path:
    """The folder of the run directories in a scaling.py workdir (one graph per target; it may hold none)."""
    found = [p / "runs" for p in workdir.iterdir() if p.is_dir() and (p / "runs").is_dir()]
    return found[0] if found else workdir / "runs"


def _stage(rows: list[dict[str, Any]], method: str, stage: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["method"] == method and r["stage"] == stage), None)


def compare(target: str, cpu_dir: Path, dev_dir: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One row per method: ledger identity, accuracies and their difference, seconds per epoch, peak memory."""
    rows_cpu = json.loads((cpu_dir / "scaling.json").read_text())["rows"]
    rows_dev = json.loads((dev_dir / "scaling.json").read_text())["rows"]
    runs_cpu, runs_dev = _runs_dir(cpu_dir), _runs_dir(dev_dir)
    out = []
    for method in args.methods:
        row: dict[str, Any] = {"target": target, "method": method, "problems": []}
        device = "checked"
        paths = {side: base / method for side, base in (("cpu", runs_cpu), (device, runs_dev))}
        missing = [side for side, path in paths.items() if not (path / "ledger.json").is_file()]
        if missing:
            row["problems"].append(f"no run on {', '.join(missing)} (see the scaling.log under {args.out})")
            out.append(row)
            continue
        ledgers = {side: (path / "ledger.json").read_bytes() for side, path in paths.items()}
        row["ledger_identical"] = ledgers["cpu"] == ledgers[device]
        if not row["ledger_identical"]:
            row["problems"].append("ledgers differ")
        metrics = {side: json.loads((path / "metrics.json").read_text()) for side, path in paths.items()}
        row["accuracy_cpu"] = metrics["cpu"]["test"]["accuracy"]
        row["accuracy_checked"] = metrics[device]["test"]["accuracy"]
        row["accuracy_difference_points"] = 100 * abs(row["accuracy_cpu"] - row["accuracy_checked"])
        if row["accuracy_difference_points"] > args.tolerance:
            row["problems"].append(
                f"test accuracy differs by {row['accuracy_difference_points']:.1f} points (> {args.tolerance:g})"
            )
        row["device_recorded"] = metrics[device].get("device")
        if not str(row["device_recorded"]).startswith(args.device):
            row["problems"].append(f"the checked run trained on {row['device_recorded']}, not {args.device}")
        for side, rows in (("cpu", rows_cpu), (device, rows_dev)):
            epoch = _stage(rows, method, "epoch")
            row[f"epoch_s_{side}"] = epoch["seconds"] if epoch else None
            peaks = [r.get("gpu_peak_mib") for r in rows if r["method"] == method]
            row[f"gpu_peak_mib_{side}"] = max((p for p in peaks if p is not None), default=None)
            row[f"peak_rss_mib_{side}"] = max((r["peak_mib"] for r in rows if r["method"] == method), default=None)
        out.append(row)
    return out


def _fmt(value: Any, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    device, checked = args.device, "checked"
    lines = [
        f"GPU check: training on {device} against CPU, ε = {args.epsilon:g}, seed 0, {args.epochs} epoch(s); "
        f"accuracy tolerance {args.tolerance:g} points.",
        "",
        f"| target | method | ledger identical | test acc. CPU | test acc. {device} | epoch s CPU | epoch s {device} "
        f"| peak {device} memory (MiB) | result |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['target']} | {r['method']} | {'yes' if r.get('ledger_identical') else 'no'} "
            f"| {_fmt(r.get('accuracy_cpu') and 100 * r['accuracy_cpu'], '.1f')} "
            f"| {_fmt(r.get('accuracy_checked') and 100 * r['accuracy_checked'], '.1f')} "
            f"| {_fmt(r.get('epoch_s_cpu'), '.2f')} | {_fmt(r.get(f'epoch_s_{checked}'), '.2f')} "
            f"| {_fmt(r.get(f'gpu_peak_mib_{checked}') or r.get(f'peak_rss_mib_{checked}'), '.0f')} "
            f"| {'ok' if not r['problems'] else '; '.join(r['problems'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="the device checked against CPU")
    p.add_argument(
        "--targets",
        nargs="+",
        default=list(DEFAULT_TARGETS),
        help="registered synthetic datasets or SHAPE:NODES stand-ins (default: %(default)s)",
    )
    p.add_argument("--methods", nargs="+", help="method ids or tuned variants (default: every private method)")
    p.add_argument("--epochs", type=int, default=1, help="every *epochs hyperparameter (default 1)")
    p.add_argument("--epsilon", type=float, default=8.0, help="target ε (default 8)")
    p.add_argument("--tolerance", type=float, default=5.0, help="largest accuracy difference, in points (default 5)")
    p.add_argument("--threads", type=int, default=4, help="torch CPU threads per process (default 4)")
    p.add_argument("--out", default="gpu-check", help="folder of the JSON, the Markdown table and the runs")
    args = p.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            p.error("--device cuda: torch sees no CUDA device here (use --device cpu to run the check on CPU)")
    args.methods = args.methods or private_methods()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    # Every target on both sides at once: the CPU reference on the CPU cores, the checked runs on the device.
    children = [
        (target, side, _launch(target, side, device, args, out))
        for target in args.targets
        for side, device in (("reference", "cpu"), ("checked", args.device))
    ]
    failed = []
    for target, side, proc in children:
        result = out / "work" / _label(target) / side / "scaling.json"
        if proc.wait() != 0 and not result.is_file():
            failed.append(f"{target} ({side}): scaling.py exit {proc.returncode} (log: {result.parent}/scaling.log)")
    rows = []
    for target in args.targets:
        work = out / "work" / _label(target)
        if (work / "reference" / "scaling.json").is_file() and (work / "checked" / "scaling.json").is_file():
            rows += compare(target, work / "reference", work / "checked", args)
    wall = time.perf_counter() - started
    report = {
        "device": args.device,
        "targets": args.targets,
        "methods": args.methods,
        "epochs": args.epochs,
        "epsilon": args.epsilon,
        "tolerance_points": args.tolerance,
        "wall_s": wall,
        "rows": rows,
        "failures": failed,
    }
    (out / "gpu-check.json").write_text(json.dumps(report, indent=1))
    table = markdown(rows, args) + f"\nWall time of the whole check: {wall:.0f} s.\n"
    (out / "gpu-check.md").write_text(table)
    print(table)
    problems = failed + [f"{r['target']} {r['method']}: {'; '.join(r['problems'])}" for r in rows if r["problems"]]
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
