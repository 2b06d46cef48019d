"""Check that a refactor of the analysis stage is a pure move: every table and figure comes out byte for byte the same.

    python benchmarks/pure_move_check.py stage --workspace WS STAGED
    python benchmarks/pure_move_check.py draw --workspace STAGED OUT [--study NAME=DATASET,...] [--regime NAME]
        [--sweep PARAM ...]
    python benchmarks/pure_move_check.py compare BEFORE AFTER
    python benchmarks/pure_move_check.py compare-workspaces BEFORE AFTER

``stage`` copies a workspace's finished runs (each run folder's metrics.json and ledger.json), its graphs'
meta.json and its splits into STAGED, so that both drawings read the same runs while training goes on.
``draw`` runs, through ``python -m nodedp`` (the code on PYTHONPATH), what the paper stage runs: ``collect`` per
dataset, ``summarize`` per study, then per study ``tables``, ``figures`` of every kind (accuracy, frontier, a sweep
per ``--sweep``), ``reproduction`` and ``report-page --kind index``; ``regime`` over the ``--regime`` study's
datasets; ``paper-tables`` (both interval styles) from every summary and ``main-tex``; and ``audit-report`` over
audit files it writes itself (seeded, with a violation, reference and release rows and an attack). Each step's
exit status, standard output and last line of standard error are written too, so a step that fails must fail
alike. Every verb runs in OUT with relative paths, so the commands that footers print are the same in any OUT.
``compare`` hashes (SHA-256) every file of both folders and exits 1 naming each file missing on one side or
different, 0 when all are equal. Run ``draw`` once with the code before the change and once after, then
``compare``. ``compare-workspaces`` compares two workspaces that ran the same grid with the code before and after
(``snakemake demo`` in two checkouts): every file under results/ and paper/, ledgers, metrics, audits, summaries,
tables and figures, with wall-clock times and the stamped commit left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

# The shipped config's Facebook100 studies (config.yaml): the suite's accounting, reference mode and non-private
# methods on the 45-school union, the size sweep of the regime study and the feature variants.
DEFAULT_STUDIES = (
    "fb100-scale=fb100-union-45",
    "fb100-regime=fb100-union-caltech36,fb100-union-swarthmore42,fb100-union-williams40,fb100-union-lehigh96,"
    "fb100-union-tulane29,fb100-union-gwu54,fb100-union-rutgers89,fb100-union-5,fb100-union-15,fb100-union-45",
    "fb100-features=fb100-union-45,fb100-union-45-all,fb100-union-45-years",
)
DEFAULT_SWEEPS = ("batch_size", "hops")
# The keys a release's record shares with its run's (it names no cell of its own).
CELL_KEYS = ("dataset", "name", "method", "base_method", "seed", "target_epsilon")
BOOTSTRAP = ("--resamples", "1000", "--confidence", "0.95", "--seed", "0")


def stage(workspace: Path, staged: Path) -> None:
    """Copy the finished runs, the graphs' meta.json and the splits of ``workspace`` into ``staged``."""
    runs = 0
    for metrics in sorted((workspace / "results" / "runs").glob("*/*/*/*/metrics.json")):
        run = metrics.parent
        if not (run / "ledger.json").is_file():
            continue  # still training
        target = staged / run.relative_to(workspace)
        target.mkdir(parents=True, exist_ok=True)
        for name in ("metrics.json", "ledger.json"):
            shutil.copy2(run / name, target / name)
        runs += 1
    for meta in sorted((workspace / "resources" / "graphs").glob("*/meta.json")):
        (staged / meta.parent.relative_to(workspace)).mkdir(parents=True, exist_ok=True)
        shutil.copy2(meta, staged / meta.relative_to(workspace))
    if (workspace / "results" / "splits").is_dir():
        shutil.copytree(workspace / "results" / "splits", staged / "results" / "splits", dirs_exist_ok=True)
    print(f"staged {runs} finished runs of {workspace} in {staged}")


class Drawing:
    """The verbs run into one output folder, each step's outcome recorded in ``steps/``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.env = {**os.environ, "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}
        self.env.pop("NODEDP_WORKFLOW", None)  # footers give the command itself, not a workflow target
        self.count = 0

    def run(self, name: str, *args: str, cwd: Path | None = None) -> bool:
        """``python -m nodedp ARGS`` in ``cwd`` (the output folder); its outcome written to ``steps/<n>-<name>.txt``
        (the output folder's path replaced by ``<out>``)."""
        self.count += 1
        done = subprocess.run(
            [sys.executable, "-m", "nodedp", *args],
            cwd=cwd or self.out,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        error = done.stderr.strip().splitlines()[-1:] if done.returncode else []
        record = "\n".join([f"exit status {done.returncode}", done.stdout.strip(), *error, ""])
        step = self.out / "steps" / f"{self.count:02d}-{name}.txt"
        step.parent.mkdir(parents=True, exist_ok=True)
        step.write_text(record.replace(str(self.out.resolve()), "<out>"), encoding="utf-8")
        status = "ok" if done.returncode == 0 else f"exit status {done.returncode}: {' '.join(error)}"
        print(f"{name}: {status}", flush=True)
        return done.returncode == 0


def audit_record(
    rng: np.random.Generator,
    *,
    dataset: str,
    method: str,
    seed: int,
    epsilon: float,
    claimed: float,
    strong: bool,
    canaries: int = 200,
    delta: float = 1e-4,
    accounting: str = "suite",
    mia: float | None = None,
) -> dict:
    """One audit JSON as ``python -m nodedp audit`` writes it; ``strong``: the included canaries score far above
    the others, so the bound is positive."""
    from nodedp.audit.statistics import epsilon_one_run

    inclusion = rng.random(canaries) < 0.5
    scores = rng.normal(size=canaries) + (6.0 * inclusion if strong else 0.0)
    bound = epsilon_one_run(scores, inclusion, delta=delta, confidence=0.95, seed=seed)
    return {
        "dataset": dataset,
        "name": method,
        "method": method,
        "base_method": method.split("@")[0],
        "seed": seed,
        "target_epsilon": epsilon,
        "claimed_epsilon": claimed,
        "ledger_epsilon": claimed if accounting == "suite" else 40 * claimed,
        "delta": delta,
        "accounting": accounting,
        "guarantee": "unconditional",
        "canaries": canaries,
        "included": int(inclusion.sum()),
        "canary_degree_bound": 20,
        "epsilon_lower_one_run": bound.epsilon,
        "confidence": 0.95,
        "one_run_guesses": bound.guesses,
        "one_run_correct": bound.correct,
        "epsilon_lower_threshold": 0.0,
        "auc": float(0.5 + 0.4 * strong),
        "tpr_at_1pct_fpr": float(0.3 * strong),
        "test_accuracy": 0.6 + 0.01 * seed,
        "wall_seconds": 2.0,
        "violated": bound.epsilon > claimed,
        "scores": scores.tolist(),
        "inclusion": inclusion.tolist(),
        "mia": None if mia is None else {"accuracy": mia, "auc": mia + 0.05, "members": 10},
        "timings": {"total_s": 3.0},
        "version": {"git_commit": "0" * 40, "nodedp": "0.1.0"},
    }


def audit_records() -> list[dict]:
    """A small audit: two datasets, suite and reference rows, a violation, bounds at 0, a bound past the axis,
    NAP and DP-SGD releases, and the membership-inference attack on some seeds."""
    rng = np.random.default_rng(20240607)
    records = []
    for seed in (0, 1, 2):
        records.append(
            audit_record(rng, dataset="cora", method="dp-mlp", seed=seed, epsilon=1.0, claimed=0.99, strong=True)
        )
        records.append(
            audit_record(
                rng,
                dataset="cora",
                method="gap",
                seed=seed,
                epsilon=4.0,
                claimed=3.98,
                strong=False,
                mia=0.5 + seed / 50,
            )
        )
        records.append(
            audit_record(
                rng,
                dataset="cora",
                method="gap@paper",
                seed=seed,
                epsilon=1.0,
                claimed=1.0,
                strong=False,
                accounting="paper",
            )
        )
        record = audit_record(
            rng,
            dataset="csbm-homophilous",
            method="progap",
            seed=seed,
            epsilon=8.0,
            claimed=7.98,
            strong=False,
            mia=0.52,
        )
        release = audit_record(rng, dataset="x", method="x", seed=seed, epsilon=8.0, claimed=0.5, strong=True)
        record["nap_release"] = {k: v for k, v in release.items() if k not in CELL_KEYS}
        records.append(record)
    record = audit_record(
        rng, dataset="csbm-homophilous", method="dp-mlp", seed=0, epsilon=8.0, claimed=7.98, strong=False, mia=0.5
    )
    release = audit_record(rng, dataset="x", method="x", seed=0, epsilon=8.0, claimed=0.02, strong=True, canaries=2000)
    # Independent simulated runs, bounded by the threshold bound: past the axis.
    record["dpsgd_release"] = {
        **{k: v for k, v in release.items() if k not in CELL_KEYS},
        "bound": "runs",
        "epsilon_lower_threshold": 12.5,
    }
    records.append(record)
    return records


def small_audit_records() -> list[dict]:
    """An audit of one cell at one ε whose bound lies past the axis end (1.2 times its claim)."""
    rng = np.random.default_rng(7)
    return [
        audit_record(
            rng, dataset="cora", method="dp-gcn", seed=seed, epsilon=1.0, claimed=0.5, strong=True, canaries=1000
        )
        for seed in (0, 1)
    ]


def parse_study(text: str) -> tuple[str, list[str]]:
    name, _, datasets = text.partition("=")
    if not name or not datasets:
        raise argparse.ArgumentTypeError(f"--study {text!r}: write NAME=DATASET[,DATASET...]")
    return name, datasets.split(",")


def draw(workspace: Path, out: Path, studies: list[tuple[str, list[str]]], regime: str, sweeps: list[str]) -> None:
    workspace = workspace.resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: draw into a new folder")
    out.mkdir(parents=True, exist_ok=True)
    drawing = Drawing(out.resolve())
    import nodedp

    print(f"drawing with {Path(nodedp.__file__).parent}", flush=True)
    run = drawing.run
    graphs = {d: workspace / "resources" / "graphs" / d / "meta.json" for _, ds in studies for d in ds}
    for dataset in sorted(graphs):
        metrics = sorted((workspace / "results" / "runs" / dataset).glob("*/*/*/metrics.json"))
        runs = [str(m.relative_to(workspace)) for m in metrics if (m.parent / "ledger.json").is_file()]
        # In the workspace, whose graphs name the declared datasets and whose splits let collect re-plan each run.
        run(
            f"collect-{dataset}",
            "collect",
            "--out",
            str(drawing.out / "runs" / f"{dataset}.parquet"),
            *runs,
            cwd=workspace,
        )

    summaries = []
    for study, datasets in studies:
        summary = f"summary/{study}.parquet"
        summaries.append(summary)
        run(f"summarize-{study}", "summarize", *BOOTSTRAP, "--out", summary, *(f"runs/{d}.parquet" for d in datasets))
        metas = [str(graphs[d]) for d in datasets]
        notes = json.dumps([f"The {study} study: {len(datasets)} dataset(s)."])
        tables, figures = f"{study}/tables", f"{study}/figures"
        run(
            f"tables-{study}",
            "tables",
            "--summary",
            summary,
            "--markdown",
            f"{tables}/accuracy.md",
            "--latex",
            f"{tables}/accuracy.tex",
            "--notes",
            notes,
            "--graph-meta",
            *metas,
        )
        kinds = [("accuracy_vs_epsilon", ["--kind", "accuracy"]), ("frontier", ["--kind", "frontier"])]
        kinds += [(f"sweep-{p}", ["--kind", "sweep", "--parameter", p]) for p in sweeps]
        for figure, options in kinds:
            run(
                f"figures-{study}-{figure}",
                "figures",
                "--summary",
                summary,
                *options,
                "--png",
                f"{figures}/{figure}.png",
                "--caption",
                f"{figures}/{figure}.caption.txt",
            )
        run(f"reproduction-{study}", "reproduction", "--summary", summary, "--out-dir", tables)
        captions = sorted((drawing.out / figures).glob("*.caption.txt"))
        run(
            f"index-{study}",
            "report-page",
            "--kind",
            "index",
            "--title",
            study,
            "--note",
            f"The {study} study.",
            "--out",
            f"{study}/index.md",
            f"{tables}/accuracy.md",
            *(str(c.relative_to(drawing.out)) for c in captions),
        )

    datasets = dict(studies)[regime]
    run(
        "regime",
        "regime",
        "--runs",
        *(f"runs/{d}.parquet" for d in datasets),
        "--graph-meta",
        *(str(graphs[d]) for d in datasets),
        "--png",
        f"{regime}/figures/regime.png",
        "--caption",
        f"{regime}/figures/regime.caption.txt",
        "--markdown",
        f"{regime}/tables/regime.md",
        *BOOTSTRAP,
    )

    for name, records in (("audit", audit_records()), ("audit-small", small_audit_records())):
        audits = []
        for i, record in enumerate(records):
            path = drawing.out / f"{name}-files" / f"audit-{i:02d}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
            audits.append(str(path.relative_to(drawing.out)))
        mia = ["--mia-summary", f"{name}/mia.parquet"] if name == "audit" else []
        run(
            name,
            "audit-report",
            "--markdown",
            f"{name}/tables/audit.md",
            "--latex",
            f"{name}/tables/audit.tex",
            "--png",
            f"{name}/figures/audit.png",
            "--caption",
            f"{name}/figures/audit.caption.txt",
            *mia,
            "--confidence",
            "0.95",
            *audits,
        )

    run("paper-tables", "paper-tables", "--summary", *summaries, "--out-dir", "tables")
    run("paper-tables-range", "paper-tables", "--summary", *summaries, "--interval", "range", "--out-dir", "range")
    run(
        "paper-tables-mia",
        "paper-tables",
        "--summary",
        "audit/mia.parquet",
        "--table",
        "nip-gnn-t4",
        "--out-dir",
        "mia",
    )
    inputs = sorted(str(p.relative_to(drawing.out)) for p in drawing.out.glob("*/tables/*.tex"))
    inputs += sorted(str(p.relative_to(drawing.out)) for p in (drawing.out / "tables").glob("*.tex"))
    run("main-tex", "main-tex", "--out", "main.tex", *inputs)
    files = sum(1 for p in drawing.out.rglob("*") if p.is_file())
    print(f"{files} files in {out}")


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def compare(before: Path, after: Path) -> int:
    a, b = digests(before), digests(after)
    problems = [f"only in {before}: {name}" for name in sorted(a.keys() - b.keys())]
    problems += [f"only in {after}: {name}" for name in sorted(b.keys() - a.keys())]
    problems += [f"differs: {name}" for name in sorted(a.keys() & b.keys()) if a[name] != b[name]]
    for problem in problems:
        print(problem)
    kinds: dict[str, int] = {}
    for name in a:
        suffix = Path(name).suffix or "(none)"
        kinds[suffix] = kinds.get(suffix, 0) + 1
    shown = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    if problems:
        print(f"{len(problems)} difference(s) between {len(a)} and {len(b)} files")
        return 1
    print(f"all {len(a)} files identical (SHA-256): {shown}")
    return 0


# What differs between two runs of the same cells for reasons other than the code's results: wall-clock times and
# the commit the run was stamped with.
VOLATILE = frozenset(
    {"timings", "version", "wall_seconds", "train_s", "total_s", "appr_seconds", "git_commit", "git_dirty"}
)


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _normalized(path: Path, commits: tuple[str, ...]) -> bytes:
    """A workspace file's content without its volatile parts: JSON without ``VOLATILE`` keys, parquet without those
    columns (as CSV), HTML with the stamped commits blanked; anything else as it is."""
    if path.suffix == ".json":
        return json.dumps(_strip(json.loads(path.read_text(encoding="utf-8"))), sort_keys=True).encode()
    if path.suffix == ".parquet":
        import polars as pl

        frame = pl.read_parquet(path)
        return frame.drop([c for c in frame.columns if c in VOLATILE]).write_csv().encode()
    if path.suffix == ".pt":  # a torch artifact (split, degree-bounded edges, DP-APPR release): its tensors' bytes
        import torch

        return _canonical(_strip(torch.load(path, map_location="cpu", weights_only=False)))
    data = path.read_bytes()
    if path.suffix == ".html":
        for commit in commits:
            data = data.replace(commit.encode(), b"<commit>").replace(commit[:7].encode(), b"<commit>")
    return data


def _canonical(value: object) -> bytes:
    """A loaded artifact as bytes that equal exactly when its content does: tensors by dtype, shape and data."""
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        return f"tensor {tensor.dtype} {tuple(tensor.shape)} ".encode() + tensor.numpy().tobytes()
    if isinstance(value, dict):
        return b"{" + b",".join(repr(k).encode() + b":" + _canonical(v) for k, v in sorted(value.items())) + b"}"
    if isinstance(value, (list, tuple)):
        return b"[" + b",".join(_canonical(v) for v in value) + b"]"
    if hasattr(value, "__dict__"):  # a dataclass or other object holding tensors (a split): its fields, not its repr
        return type(value).__name__.encode() + _canonical(vars(value))
    return repr(value).encode()


def _commits(root: Path) -> set[str]:
    found = set()
    for metrics in root.glob("results/runs/*/*/*/*/metrics.json"):
        found.add(json.loads(metrics.read_text(encoding="utf-8"))["version"]["git_commit"])
    return found


def compare_workspaces(before: Path, after: Path) -> int:
    """Compare two workspaces that ran the same grid (e.g. `snakemake demo` before and after a change): every file
    under results/ and paper/, volatile parts left out (``_normalized``)."""
    commits = tuple(sorted(_commits(before) | _commits(after)))
    files = {
        root: {
            p.relative_to(root).as_posix(): hashlib.sha256(_normalized(p, commits)).hexdigest()
            for folder in ("results", "paper")
            for p in sorted((root / folder).rglob("*"))
            if p.is_file()
        }
        for root in (before, after)
    }
    a, b = files[before], files[after]
    problems = [f"only in {before}: {name}" for name in sorted(a.keys() - b.keys())]
    problems += [f"only in {after}: {name}" for name in sorted(b.keys() - a.keys())]
    problems += [f"differs: {name}" for name in sorted(a.keys() & b.keys()) if a[name] != b[name]]
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} difference(s) between {len(a)} and {len(b)} files")
        return 1
    kinds: dict[str, int] = {}
    for name in a:
        kinds[Path(name).suffix or "(none)"] = kinds.get(Path(name).suffix or "(none)", 0) + 1
    print(
        f"all {len(a)} files identical (times and commit left out): "
        + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    )
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("stage", help="copy a workspace's finished runs, graphs' meta.json and splits")
    p.add_argument("--workspace", type=Path, required=True, help="the workspace root (results/, resources/)")
    p.add_argument("staged", type=Path, help="the copy to make")
    p = verbs.add_parser("draw", help="every table and figure of the analysis verbs into OUT")
    p.add_argument("--workspace", type=Path, required=True, help="a (staged) workspace root")
    p.add_argument(
        "--study",
        action="append",
        type=parse_study,
        help="NAME=DATASET[,DATASET...] (repeat; default: the config's Facebook100 studies)",
    )
    p.add_argument("--regime", default=None, help="the study whose datasets the regime figure reads (default: 2nd)")
    p.add_argument("--sweep", action="append", help=f"a sweep figure's hyperparameter (default: {DEFAULT_SWEEPS})")
    p.add_argument("out", type=Path, help="an empty or new folder")
    p = verbs.add_parser("compare", help="compare two folders file by file (SHA-256)")
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p = verbs.add_parser(
        "compare-workspaces",
        help="compare two workspaces that ran the same grid (results/ and paper/), times and commit left out",
    )
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.verb == "stage":
        stage(args.workspace, args.staged)
    elif args.verb == "draw":
        studies = args.study or [parse_study(s) for s in DEFAULT_STUDIES]
        regime = args.regime or studies[min(1, len(studies) - 1)][0]
        draw(args.workspace, args.out, studies, regime, args.sweep or list(DEFAULT_SWEEPS))
    elif args.verb == "compare-workspaces":
        sys.exit(compare_workspaces(args.before, args.after))
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
