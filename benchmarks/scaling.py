"""How each method's cost grows with the graph: one cell per method on stand-ins of growing size.

    python benchmarks/scaling.py --methods dp-mlp gap progap dp-gcn dpar-em0 nip-gnn dpdgc-fast \\
        --nodes 10000 30000 100000 --epochs 1 [--shape arxiv] [--device cpu|cuda] [--json out.json] [--markdown out.md]

For every size it generates the stand-in of ``--shape`` (``nodedp.data.standins``: the real graph's mean
degree, features, classes, homophily and split proportions, power-law degrees) with that many nodes, and
splits it; then, per method, builds the structure artifacts the method needs (degree bounding at the
dataset's public bounds, DPAR's DP-APPR) and trains one cell at ``--epsilon`` with every ``*epochs``
hyperparameter set to ``--epochs`` (the rest as config.yaml's ``methods:`` block gives them). Each step is a
fresh process (`python -m nodedp <verb> --stage-timings`), which reports its own stages:

* structure: the artifact jobs plus everything in the run that is neither training nor evaluation
  (cached aggregations, budgets, subgraphs, noise, calibration); peak = the largest of its parts;
* epoch: the training loop's time divided by the epochs (all of a method's training loops: GAP's encoder
  and classifier, ProGAP's stages, DPDGC's encoder and classifier);
* evaluation: validation and test predictions.

Peak memory is the process's resident high-water mark during the stage (torch and the loaded graph
included); ``added_mib`` is what the stage added to the memory it started with. Per method and stage it
fits the exponent b of seconds ≈ a·edges^b (and of added memory) by least squares over the sizes.
Without ``--workdir`` the graphs go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("structure", "epoch", "evaluation")


def _run(cmd: list[str], *, log: Path, timeout: float) -> tuple[int, float, float]:
    """(return code, wall seconds, peak RSS MiB) of ``cmd`` as a child process, its output into ``log``."""
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.send_signal(signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                status = -1
                break
            time.sleep(0.05)
    proc.returncode = 0  # reaped above: keep Popen from waiting again
    code = os.waitstatus_to_exitcode(status) if status != -1 else 124
    return code, time.perf_counter() - start, usage.ru_maxrss / 1024


def _tail(log: Path, lines: int = 3) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


def make_graph(args: argparse.Namespace) -> None:
    """Child: generate the stand-in of ``--shape`` at ``--nodes`` nodes (or build the registered synthetic
    ``--dataset``) into ``--out``."""
    from nodedp.data.graph import save_graph
    from nodedp.data.registry import build_dataset
    from nodedp.data.standins import standin_name, standin_spec
    from nodedp.data.synthetic import generate_csbm
    from nodedp.train.stages import StageRecorder

    if args.dataset:
        with StageRecorder() as recorder:
            build_dataset(args.dataset, Path(args.out))
        timing = recorder.totals()["structure"]
        Path(args.stage_timings).write_text(json.dumps({"stages": {"graph": asdict(timing)}}))
        return
    spec = standin_spec(args.shape, num_nodes=args.nodes[0])
    with StageRecorder() as recorder:
        save_graph(
            generate_csbm(spec),
            Path(args.out),
            name=standin_name(args.shape),
            source={
                "kind": "synthetic",
                "protocol": f"stand-in-{args.shape}",
                "generator": "csbm",
                "params": asdict(spec),
            },
        )
    timing = recorder.totals()["structure"]
    Path(args.stage_timings).write_text(json.dumps({"stages": {"graph": asdict(timing)}}))


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x (None with fewer than two positive points)."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(points) < 2:
        return None
    mx = sum(p[0] for p in points) / len(points)
    my = sum(p[1] for p in points) / len(points)
    var = sum((p[0] - mx) ** 2 for p in points)
    return sum((p[0] - mx) * (p[1] - my) for p in points) / var if var > 0 else None


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        from nodedp.config.read import read_config

        self.args, self.workdir = args, workdir
        self.config = read_config(args.config) if args.config else {"methods": {}}
        self.rows: list[dict[str, Any]] = []
        self.failures: list[str] = []

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def step(self, what: str, cmd: list[str], timings: Path, log: Path) -> dict[str, Any] | None:
        code, wall, peak = _run(cmd, log=log, timeout=self.args.timeout)
        if code != 0 or not timings.is_file():
            problem = "timed out" if code == 124 else f"exit {code}"
            self.failures.append(f"{what}: {problem} after {wall:.0f} s ({_tail(log)}; log: {log})")
            self.say(f"  {what}: FAILED, {problem} after {wall:.1f} s (log: {log})")
            return None
        stages = json.loads(timings.read_text())["stages"]
        self.say(
            f"  {what}: {wall:.1f} s in all, process peak {peak:.0f} MiB; "
            + ", ".join(f"{k} {v['seconds']:.2f} s / {v['peak_mib']:.0f} MiB" for k, v in stages.items())
        )
        return stages

    def size(self, nodes: int) -> None:
        from nodedp.data import get_dataset, load_graph_meta
        from nodedp.data.standins import standin_name

        args = self.args
        here = self.workdir / (args.dataset or f"n{nodes}")
        here.mkdir(parents=True, exist_ok=True)
        graph, split = here / "graph", here / "split.pt"
        what = ["--dataset", args.dataset] if args.dataset else ["--shape", args.shape, "--nodes", str(nodes)]
        self.say(f"[{args.dataset}]" if args.dataset else f"[{nodes:,} nodes] stand-in of {args.shape}")
        data = self.step(
            "graph",
            [
                sys.executable,
                __file__,
                "--make-graph",
                *what,
                "--out",
                str(graph),
                "--stage-timings",
                str(here / "graph.json"),
            ],
            here / "graph.json",
            here / "graph.log",
        )
        if data is None:
            return
        meta = load_graph_meta(graph)
        nodes = meta["num_nodes"]
        edges = meta["num_edges"] // 2 if meta["is_undirected"] else meta["num_edges"]
        self._row("(data)", "graph", nodes, edges, data["graph"])
        code, _, _ = _run(
            [sys.executable, "-m", "nodedp", "split", "--graph", str(graph), "--seed", "0", "--out", str(split)],
            log=here / "split.log",
            timeout=args.timeout,
        )
        if code != 0:
            self.failures.append(f"split at {nodes}: exit {code} ({_tail(here / 'split.log')})")
            return
        dataset = get_dataset(args.dataset or standin_name(args.shape))
        artifacts: dict[tuple[str, Any], tuple[Path, dict[str, Any]] | None] = {}
        for method in args.methods:
            self.method(method, nodes, edges, here, graph, split, dataset, artifacts)

    def method(
        self, method: str, nodes: int, edges: int, here: Path, graph: Path, split: Path, dataset: Any, artifacts: dict
    ) -> None:
        import dataclasses

        from nodedp.config.variants import resolve_method
        from nodedp.contract.registry import get_method
        from nodedp.contract.specs.dpar import appr_spec
        from nodedp.contract.structure import structure_bounds

        args = self.args
        base, hparams = resolve_method(self.config, method)
        info = get_method(base)
        epochs = {f.name: args.epochs for f in dataclasses.fields(info.hparams) if f.name.endswith("epochs")}
        hparams = {**hparams, **epochs}
        hjson = json.dumps(hparams, sort_keys=True)
        bounds = structure_bounds(dataset, hparams)
        eps = args.epsilon if info.private else "inf"
        parts, paths = [], []
        for kind in info.needs:
            if kind == "dp-appr":
                key = (kind, json.dumps(appr_spec(base, info.parse_hparams(hparams)), sort_keys=True))
                name = f"dp-appr-{len(artifacts)}"
                cmd = ["dp-appr", "--method", base, "--hparams", hjson, "--epsilon", str(eps)]
            else:
                key, name = (kind, bounds[kind]), f"{kind}~{bounds[kind]}"
                cmd = ["bound-degree", "--kind", kind, "--bound", str(bounds[kind])]
            if key not in artifacts:
                out = here / f"{name}.pt"
                timings = here / f"{name}.json"
                stages = self.step(
                    name,
                    [
                        sys.executable,
                        "-m",
                        "nodedp",
                        *cmd,
                        "--graph",
                        str(graph),
                        "--split",
                        str(split),
                        "--seed",
                        "0",
                        "--out",
                        str(out),
                        "--stage-timings",
                        str(timings),
                    ],
                    timings,
                    here / f"{name}.log",
                )
                artifacts[key] = None if stages is None else (out, stages["structure"])
            if artifacts[key] is None:
                self.failures.append(f"{method} at {nodes}: its {kind} artifact failed")
                return
            paths.append(str(artifacts[key][0]))
            parts.append(artifacts[key][1])
        run_dir, timings = here / "runs" / method, here / f"{method}.json"
        cmd = [
            sys.executable,
            "-m",
            "nodedp",
            "train",
            "--method",
            base,
            "--name",
            method,
            "--hparams",
            hjson,
            "--graph",
            str(graph),
            "--split",
            str(split),
            "--epsilon",
            str(eps),
            "--seed",
            "0",
            "--device",
            args.device,
            "--out",
            str(run_dir),
            "--stage-timings",
            str(timings),
        ]
        if paths:
            cmd += ["--structure", *paths]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        stages = self.step(method, cmd, timings, here / f"{method}.log")
        if stages is None:
            return
        structure = [stages["structure"], *parts]
        self._row(
            method,
            "structure",
            nodes,
            edges,
            {
                "seconds": sum(p["seconds"] for p in structure),
                "peak_mib": max(p["peak_mib"] for p in structure),
                "added_mib": max(_added(p) for p in structure),
                "gpu_peak_mib": _max_gpu(structure),
            },
        )
        if "training" in stages:
            t = stages["training"]
            self._row(method, "epoch", nodes, edges, {**t, "seconds": t["seconds"] / args.epochs})
        if "evaluation" in stages:
            self._row(method, "evaluation", nodes, edges, stages["evaluation"])

    def _row(self, method: str, stage: str, nodes: int, edges: int, t: dict[str, Any]) -> None:
        self.rows.append(
            {
                "method": method,
                "stage": stage,
                "nodes": nodes,
                "edges": edges,
                "seconds": t["seconds"],
                "peak_mib": t["peak_mib"],
                "added_mib": t.get("added_mib", _added(t)),
                "gpu_peak_mib": t.get("gpu_peak_mib"),
            }
        )

    def exponents(self) -> list[dict[str, Any]]:
        out = []
        for method in dict.fromkeys(r["method"] for r in self.rows):
            for stage in ("graph", *STAGES):
                rows = sorted(
                    (r for r in self.rows if r["method"] == method and r["stage"] == stage), key=lambda r: r["edges"]
                )
                if len(rows) < 2:
                    continue
                edges = [r["edges"] for r in rows]
                out.append(
                    {
                        "method": method,
                        "stage": stage,
                        "exponent_time": fit_exponent(edges, [r["seconds"] for r in rows]),
                        "exponent_memory": fit_exponent(edges, [r["added_mib"] for r in rows]),
                    }
                )
        return out


def _added(t: dict[str, Any]) -> float:
    start = t.get("start_mib")
    return max(0.0, t["peak_mib"] - start) if start is not None else t["peak_mib"]


def _max_gpu(parts: list[dict[str, Any]]) -> float | None:
    values = [p["gpu_peak_mib"] for p in parts if p.get("gpu_peak_mib") is not None]
    return max(values) if values else None


def _fmt_exp(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown(bench: Bench, args: argparse.Namespace) -> str:
    sizes = sorted({(r["nodes"], r["edges"]) for r in bench.rows})
    head = "| method | stage | " + " | ".join(f"{n:,} nodes ({e:,} edges)" for n, e in sizes) + " |"
    lines = [head, "|" + "---|" * (2 + len(sizes))]
    cell = {(r["method"], r["stage"], r["nodes"]): r for r in bench.rows}
    for method in dict.fromkeys(r["method"] for r in bench.rows):
        for stage in ("graph", *STAGES):
            got = [cell.get((method, stage, n)) for n, _ in sizes]
            if not any(got):
                continue
            text = [
                "–"
                if r is None
                else f"{r['seconds']:.2f} s, {r['peak_mib'] / 1024:.2f} GiB"
                + ("" if r["gpu_peak_mib"] is None else f" (GPU {r['gpu_peak_mib'] / 1024:.2f} GiB)")
                for r in got
            ]
            lines.append(f"| {method} | {stage} | " + " | ".join(text) + " |")
    lines += ["", "| method | stage | exponent of time | exponent of added memory |", "|---|---|---|---|"]
    for e in bench.exponents():
        lines.append(
            f"| {e['method']} | {e['stage']} | {_fmt_exp(e['exponent_time'])} | {_fmt_exp(e['exponent_memory'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--methods", nargs="+", help="method ids or config.yaml variants (e.g. dpdgc-fast)")
    p.add_argument("--nodes", nargs="+", type=int, help="stand-in sizes in nodes (required without --dataset)")
    p.add_argument("--shape", default="arxiv", help="which headline graph's shape: arxiv (default), reddit, products")
    p.add_argument(
        "--dataset",
        help="instead of stand-ins: one registered synthetic dataset, built from code (e.g. csbm-homophilous)",
    )
    p.add_argument("--epochs", type=int, default=1, help="every *epochs hyperparameter (default 1)")
    p.add_argument("--epsilon", type=float, default=8.0, help="target ε of the private methods (default 8)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"], help="where training runs")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads per process (0: torch's default)")
    p.add_argument(
        "--config",
        default=str(ROOT / "config.yaml"),
        help="hyperparameters from this config's methods: block ('' for the methods' defaults)",
    )
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per step before it is killed")
    p.add_argument("--workdir", help="keep graphs, artifacts, runs and logs here (default: a temporary folder)")
    p.add_argument(
        "--json",
        help="write the figures here: rows (method, stage, nodes, edges, seconds, peak_mib, "
        "added_mib, gpu_peak_mib) and exponents (exponent_time, exponent_memory)",
    )
    p.add_argument("--markdown", help="write the tables (as printed) to this Markdown file")
    p.add_argument("--make-graph", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--stage-timings", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.make_graph:
        make_graph(args)
        return 0
    from nodedp.data.registry import DATASETS
    from nodedp.data.standins import SHAPES

    if args.shape not in SHAPES:
        p.error(f"--shape {args.shape!r}: valid choices: {sorted(SHAPES)}")
    if args.dataset:
        synthetic = sorted(name for name, info in DATASETS.items() if info.kind == "synthetic")
        if args.dataset not in synthetic or args.nodes:
            p.error(f"--dataset: one of {synthetic}, without --nodes (its size is its own)")
        args.nodes = [0]  # one graph, its size read from its meta.json
    elif not args.nodes:
        p.error("--nodes: give the stand-in sizes (or --dataset)")
    if not args.methods:
        p.error("--methods: name at least one method")
    if args.epochs < 1 or (not args.dataset and min(args.nodes) < 100):
        p.error("--epochs must be >= 1 and every --nodes >= 100")
    from nodedp.config.read import ConfigError, read_config
    from nodedp.config.variants import resolve_method

    config = read_config(args.config) if args.config else {"methods": {}}
    for method in args.methods:  # every name checked before any graph is made
        try:
            resolve_method(config, method)
        except ConfigError as err:
            p.error(f"--methods: {err}")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="nodedp-scaling-"))
    bench = Bench(args, workdir)
    try:
        for nodes in sorted(args.nodes):
            bench.size(nodes)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    table = markdown(bench, args)
    print(
        f"\n{args.dataset or 'Shape ' + args.shape}, ε = {args.epsilon:g}, {args.epochs} epoch(s), device "
        f"{args.device}; each cell: seconds, process peak resident memory\n"
    )
    print(table)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "shape": args.shape,
                    "dataset": args.dataset,
                    "epochs": args.epochs,
                    "epsilon": args.epsilon,
                    "device": args.device,
                    "rows": bench.rows,
                    "exponents": bench.exponents(),
                    "failures": bench.failures,
                },
                indent=1,
            )
        )
    if args.markdown:
        Path(args.markdown).write_text(table)
    for failure in bench.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
