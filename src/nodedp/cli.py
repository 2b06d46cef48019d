"""`python -m nodedp <verb>`: what every workflow rule calls, usable by hand on one cell."""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the verbs import what they use when they run
    from nodedp.data.splits import Split

EPILOG = """\
Typical use on one cell of the grid (what the Snakemake rules run):
  python -m nodedp graph --dataset csbm-homophilous --out resources/graphs/csbm-homophilous
  python -m nodedp split --graph resources/graphs/csbm-homophilous --seed 0 --out split.pt
  python -m nodedp train --graph resources/graphs/csbm-homophilous --split split.pt \\
      --method dp-mlp --epsilon 4 --seed 0 --config config.yaml --out runs/dp-mlp-eps4
  python -m nodedp check-config my-grid.yaml   # what the workflow checks before any job
"""
# A progress bar in a log file (not a terminal): one line per redraw, at most this often.
PROGRESS_INTERVAL_S = 30.0
PROGRESS_ENV = "NODEDP_PROGRESS"  # "1": progress on by default (the workflow's rules set it, for their logs)
# A file descriptor open on the console (the workflow's rules set it: their stdout and stderr go to their logs): a
# failing verb writes its one-line error there too, with the log's path, so the message reaches the user.
CONSOLE_ENV = "NODEDP_CONSOLE_FD"
PROGRESS_HELP = (
    f"progress bar on stderr (default: on when stderr is a terminal or ${PROGRESS_ENV}=1, as in the "
    f"workflow's rules); into a log file it is one line every {PROGRESS_INTERVAL_S:g} s"
)
STARTED = time.monotonic()


def note(message: str) -> None:
    """A line on stderr with the seconds since the verb started: what a rule's log shows while a long
    step runs (stdout, redirected to the same log, is buffered until the end)."""
    print(f"[{time.monotonic() - STARTED:8.1f} s] {message}", file=sys.stderr, flush=True)


class LogProgress:
    """stderr for a log file. tqdm redraws a bar in place with carriage returns, which a log file keeps as
    one line that grows all run long; this writes each redraw as a line of its own, at most one every
    ``interval`` seconds, and the latest one before any other output (so a finished bar shows its count).
    ``finish()`` writes a redraw still held back."""

    def __init__(self, stream, *, interval: float = PROGRESS_INTERVAL_S, clock=time.monotonic) -> None:
        self._stream, self._interval, self._clock = stream, interval, clock
        self._last = -math.inf
        self._pending: str | None = None  # the latest redraw not written yet
        self._line_open = False  # plain text written without its newline yet
        self._drop_newline = False  # tqdm ends a bar with "\n" after its last redraw, which has its own

    def write(self, text: str) -> int:
        head, *redraws = text.split("\r")
        if head:
            self._plain(head)
        for line in redraws:
            line = line.rstrip()
            if not line:  # tqdm clears a line with blanks
                continue
            if self._clock() - self._last >= self._interval:
                self._emit(line)
            else:
                self._pending = line
        return len(text)

    def _emit(self, line: str) -> None:
        self._stream.write(("\n" if self._line_open else "") + line + "\n")
        self._stream.flush()
        self._last, self._pending = self._clock(), None
        self._line_open, self._drop_newline = False, True

    def _plain(self, text: str) -> None:
        if self._pending is not None:
            self._emit(self._pending)
        if self._drop_newline and text.startswith("\n"):
            text = text[1:]
        self._drop_newline = False
        if text:
            self._stream.write(text)
            self._line_open = not text.endswith("\n")

    def finish(self) -> None:
        if self._pending is not None:
            self._emit(self._pending)
        self.flush()

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):  # encoding, fileno, ... of the real stream
        return getattr(self._stream, name)


def progress_default() -> bool:
    return sys.stderr.isatty() or os.environ.get(PROGRESS_ENV) == "1"


def format_epsilon(eps: float) -> str:
    """The `eps~{eps}` path component: `inf` for non-private, else the shortest exact form."""
    return "inf" if math.isinf(eps) else f"{float(eps):g}"


def parse_epsilon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"ε must be a number or 'inf', got {text!r}") from None
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"ε must be > 0 (or 'inf' for non-private methods), got {text!r}")
    return value


def parse_delta(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"δ must be 'auto' or a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"δ must be in (0, 1), got {text!r}")
    return value


# --- verbs -----------------------------------------------------------------


def recorded_stages(args: argparse.Namespace, run: Callable[[], Any], *, device: str = "cpu") -> Any:
    """``run()``, its time and peak memory per stage written to ``--stage-timings`` when given
    (``nodedp.train.stages``: the training loop and the evaluator mark theirs; the rest is 'structure')."""
    path = getattr(args, "stage_timings", None)
    if path is None:
        return run()
    import dataclasses

    from nodedp.io import write_json
    from nodedp.train.seeding import resolve_device
    from nodedp.train.stages import StageRecorder

    with StageRecorder(resolve_device(device)) as recorder:
        result = run()
    write_json(
        Path(path),
        {
            "stages": {name: dataclasses.asdict(t) for name, t in recorder.totals().items()},
            "segments": [dataclasses.asdict(t) for t in recorder.timings],
        },
    )
    return result


def cmd_datasets(args: argparse.Namespace) -> None:
    from nodedp.data import DATASETS

    for name in sorted(DATASETS):
        info = DATASETS[name]
        print(f"{name:24s} {info.kind:10s} {info.description}")


def cmd_methods(args: argparse.Namespace) -> None:
    import dataclasses

    from nodedp.config import read_config, resolve_method, variant_overrides
    from nodedp.methods import get_method, method_names

    config = read_config(args.config) if args.config else {}
    grid = config.get("methods") or {}
    if args.verbose:
        print(
            "hyperparameters: a config's `methods:` entry (config), on top of the suite's tuned block in "
            "nodedp/methods/tuned.yaml (tuned), key by key; a key set in neither takes the method's default\n"
        )
    for name in method_names():
        info = get_method(name)
        print(f"{name:12s} {info.level:5s} {info.description}")
        if args.verbose:
            configured, defaults = resolve_method(config, name)[1], info.hparams()
            for f in dataclasses.fields(info.hparams):
                default = getattr(defaults, f.name)
                if f.name not in configured:
                    print(f"    {f.name} = {default!r}")
                    continue
                where = "config" if f.name in (grid.get(name) or {}) else "tuned"
                print(f"    {f.name} = {configured[f.name]!r}  ({where}; default {default!r})")
    source = "nodedp/methods/tuned.yaml" + (f" and {args.config}" if args.config else "")
    print(f"\nvariants in {source} (a base method with keys on top; `methods:` entries with `base:`):")
    for name, (base, keys) in sorted(variant_overrides(config).items()):
        overrides = ", ".join(f"{k}={v!r}" for k, v in keys.items()) or "(none: the base's block)"
        print(f"{name:24s} base {base:12s} {overrides}")
        if args.verbose:
            for key, value in sorted(resolve_method(config, name)[1].items()):
                print(f"    {key} = {value!r}")


def cmd_check_config(args: argparse.Namespace) -> None:
    from nodedp.config import SCHEMA, ConfigError, check_config, check_schema, public_size, read_config, resolve_method
    from nodedp.methods import get_method

    config = read_config(args.config)  # a YAML error names the file and line
    schema = Path(args.schema) if args.schema else SCHEMA
    if not schema.is_file():
        raise ConfigError(f"no config schema at {schema}; pass --schema workflow/schemas/config.schema.yaml")
    try:
        check_schema(config, schema)
        check_config(config, graphs_dir=Path(args.graphs))
    except ConfigError as err:
        raise ConfigError(f"{args.config}: {err}") from None
    cells = set()
    for study in config["studies"].values():
        for method in study["methods"]:
            private = get_method(resolve_method(config, method)[0]).private
            cells |= {
                (d, method, e, s)
                for d in study["datasets"]
                for e in (study["epsilons"] if private else ["inf"])
                for s in study["seeds"]
            }
    print(f"{args.config}: OK; studies {', '.join(config['studies'])}: {len(cells)} training cell(s)")
    unsized = sorted(
        {
            d
            for study in config["studies"].values()
            for d in study["datasets"]
            if public_size(d, graphs_dir=Path(args.graphs)) is None
        }
    )
    if unsized:
        print(
            f"not built yet, so their δ and batch sizes are checked when the workflow cuts their splits (before "
            f"any training): {', '.join(unsized)}"
        )


def cmd_download(args: argparse.Namespace) -> None:
    from nodedp.data import get_dataset
    from nodedp.data.download import DownloadError, fetch_files, resolve_mirror

    info = get_dataset(args.dataset)
    if info.kind != "download":
        raise ValueError(f"dataset {args.dataset!r} is {info.kind}: it has nothing to download")
    out = Path(args.out)
    lock = Path(args.lock) if args.lock else None
    try:
        paths = fetch_files(info.files, out, mirror=resolve_mirror(args.mirror), lock_path=lock, progress=args.progress)
    except DownloadError as err:  # the network's fault, not the input's: no traceback either
        raise SystemExit(f"nodedp download: error: {err}") from None
    print(f"{args.dataset}: {len(paths)} file(s) in {out}")


def cmd_graph(args: argparse.Namespace) -> None:
    from nodedp.data import build_dataset

    note(f"building {args.dataset}" + (f" from {args.raw}" if args.raw else " from its spec"))
    meta = build_dataset(args.dataset, Path(args.out), raw_dir=Path(args.raw) if args.raw else None)
    print(json.dumps({k: meta[k] for k in ("name", "num_nodes", "num_edges", "num_classes")}))


def cmd_split(args: argparse.Namespace) -> None:
    from nodedp.data import make_split, save_split

    split = make_split(Path(args.graph), seed=args.seed, setting=args.setting, fractions=args.fractions)
    if args.check_limits is not None:  # before saving: no split is left for a grid that cannot train on it
        check_split_limits(json.loads(args.check_limits), split, graph=Path(args.graph))
    save_split(split, Path(args.out))
    print(f"{split.setting} split: {split.train.numel()} train / {split.val.numel()} val / {split.test.numel()} test")


def check_split_limits(limits: dict, split: Split, *, graph: Path) -> None:
    """The grid's size checks (``nodedp.config.size_limits``, with the config file(s) under ``config``) against
    the graph's meta.json and the training nodes of the split just cut: what a planner could not check before the
    dataset was built."""
    from nodedp.config import ConfigError, PublicSize, check_size_limits
    from nodedp.io import read_json

    meta = read_json(graph / "meta.json")
    size = PublicSize(
        num_nodes=meta["num_nodes"],
        num_edges=meta["num_edges"] // 2 if meta.get("is_undirected") else meta["num_edges"],
        num_train=split.train.numel(),
        source=f"{graph / 'meta.json'} and its {split.setting} split of seed {split.seed}",
    )
    try:
        check_size_limits(limits, size)
    except ConfigError as err:
        where = limits.get("config")
        raise ConfigError(f"{where}: {err}" if where else str(err)) from None


def cmd_bound_degree(args: argparse.Namespace) -> None:
    from nodedp.data import degree_artifact, load_graph_tensors, load_split, remove_cross_split_edges
    from nodedp.io import torch_save_atomic

    graph = load_graph_tensors(Path(args.graph))  # no torch_geometric: seconds less per structure job
    num_nodes = graph["x"].size(0)
    split = load_split(Path(args.split), num_nodes=num_nodes)
    edges = graph["edge_index"]
    if split.setting == "inductive":
        edges = remove_cross_split_edges(edges, split)
    artifact = recorded_stages(
        args,
        lambda: degree_artifact(
            edges, kind=args.kind, bound=args.bound, seed=args.seed, num_nodes=num_nodes, train_nodes=split.train
        ),
    )
    torch_save_atomic(artifact, Path(args.out))
    # Counts of the input graph, for this log alone (analysis of the dataset, never part of a run's release).
    print(
        f"{args.kind} ≤ {args.bound}: kept {artifact['edge_index'].size(1)} of {edges.size(1)} edges (analysis of "
        f"the dataset; nodes over {artifact['identity_bound']}: the dataset's stability report)"
    )


def cmd_stability(args: argparse.Namespace) -> None:
    from nodedp.data import get_dataset, load_graph_meta, load_graph_tensors, load_split, remove_cross_split_edges
    from nodedp.data.stability import bounding_report
    from nodedp.io import write_json

    graph_dir = Path(args.graph)
    meta = load_graph_meta(graph_dir)
    graph = load_graph_tensors(graph_dir)
    num_nodes = graph["x"].size(0)
    split = load_split(Path(args.split), num_nodes=num_nodes)
    edges = graph["edge_index"]
    if split.setting == "inductive":  # as bound-degree does
        edges = remove_cross_split_edges(edges, split)
    info = get_dataset(meta["name"])
    # Every removal re-runs the whole bounding: on large graphs a smaller sample keeps the work ~ 2·10⁷ edges.
    sample = args.sample or max(20, min(200, int(2e7 // max(1, edges.size(1)))))
    note(f"{meta['name']}: re-running each degree bounding without each of {sample} + {args.hubs} node(s)")
    report = bounding_report(
        edges,
        num_nodes=num_nodes,
        train_nodes=split.train,
        in_degree_bound=info.in_degree_bound,
        out_degree_bound=info.out_degree_bound,
        seed=args.seed,
        sample=sample,
        hubs=args.hubs,
    )
    write_json(
        Path(args.out),
        {
            "about": "analysis of the dataset (counts of the input graph), never part of a run",
            "dataset": meta["name"],
            "split": args.split,
            "sample": sample,
            "hubs": args.hubs,
            "seed": args.seed,
            "kinds": report,
        },
    )
    for kind, r in report.items():
        units = ", ".join(
            f"{u} max {v['max']:g} (mean {v['mean']:.3g}) / {v['accountant']:g}"
            for u, v in r.items()
            if isinstance(v, dict) and "accountant" in v
        )
        print(f"{kind} <= {r.get('bound')}: {100 * r['frac_over_bound']:.1f}% of nodes over; {units}")


def load_structure(paths: Sequence[str]) -> dict:
    import torch

    structure = {}
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: missing structure artifact")
        try:
            artifact = torch.load(path, weights_only=True)
        except Exception as err:  # a truncated file: torch raises many types, with long messages
            problem = (str(err).strip().splitlines() or [""])[0]
            raise ValueError(
                f"{path}: not a readable structure artifact ({type(err).__name__}: {problem}); "
                "rebuild it (`python -m nodedp bound-degree` or `dp-appr`)"
            ) from err
        if not isinstance(artifact, dict) or "kind" not in artifact:
            raise ValueError(
                f"{path}: not a structure artifact (no 'kind'); made by `python -m nodedp bound-degree` or `dp-appr`"
            )
        # degree bounds: {"kind", "bound", "seed", "edge_index"}; DPAR's: see nodedp.methods.dpar.build_dp_appr
        structure[artifact["kind"]] = artifact
    return structure


def check_structure(method: str, needs: Sequence[str], structure: dict) -> None:
    """Every artifact a method declares it needs, before any work: one line naming the kinds and their verbs."""
    missing = [kind for kind in needs if kind not in structure]
    if missing:
        made_by = ", ".join("`dp-appr`" if kind == "dp-appr" else f"`bound-degree --kind {kind}`" for kind in missing)
        raise ValueError(
            f"method {method!r} needs the structure artifact(s) {missing}: pass --structure with the "
            f"file(s) made by {made_by} (got {sorted(structure) or 'none'})"
        )


def check_reference_name(name: str, hp) -> None:
    """A run sized by a paper's accounting is named ``<method>@paper``, and only such a run (nodedp.config)."""
    from nodedp.config import REFERENCE_SUFFIX

    paper = getattr(hp, "accounting", "suite") == "paper"
    if paper != name.endswith(REFERENCE_SUFFIX):
        raise ValueError(
            f"run name {name!r}: a run with the paper's accounting (accounting: paper) must be named "
            f"'<method>{REFERENCE_SUFFIX}', and only such a run; got accounting "
            f"{getattr(hp, 'accounting', 'suite')!r}"
        )


def method_settings(
    args: argparse.Namespace, epsilon: float | None = None
) -> tuple[str, str, Any, Any, float | str, str]:
    """(method, name, registry entry, parsed hyperparameters, δ, accountant) of a run from ``--method``,
    ``--name``, ``--epsilon`` (or ``epsilon``) and either ``--hparams``/``--delta``/``--accountant`` or
    ``--config`` (whose variant, privacy δ and accountant win)."""
    from nodedp.methods import get_method

    method, name = args.method, args.name or args.method
    hparams, delta, accountant = args.hparams, args.delta, args.accountant
    if args.config:
        from nodedp.config import read_config, resolve_method

        config = read_config(args.config)
        method, hparams = resolve_method(config, args.method)  # a method or a variant of one
        privacy = config.get("privacy") or {}
        delta = privacy.get("delta", delta)
        accountant = privacy.get("accountant", accountant)
    elif hparams is None:  # the suite's tuned settings (nodedp/methods/tuned.yaml), as a grid gets them
        from nodedp.config import resolve_method

        method, hparams = resolve_method({}, args.method)
    info = get_method(method)
    info.check_epsilon(args.epsilon if epsilon is None else epsilon)
    hp = info.parse_hparams(json.loads(hparams) if isinstance(hparams, str) else hparams)
    check_reference_name(name, hp)
    return method, name, info, hp, delta, accountant


def add_settings_options(p: argparse.ArgumentParser) -> None:
    """A cell's settings, as ``method_settings`` reads them: --hparams or --config, --delta, --accountant."""
    from nodedp.accounting import ACCOUNTANT_POLICIES

    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--hparams",
        help="the method's hyperparameters as JSON, on top of its code defaults "
        "(default: the suite's tuned settings, nodedp/methods/tuned.yaml; "
        "--method may then name a tuned variant)",
    )
    source.add_argument(
        "--config",
        help="read hyperparameters (the tuned settings with the config's `methods:` "
        "on top) and privacy settings from this config.yaml",
    )
    p.add_argument("--delta", type=parse_delta, default="auto", help="target δ, or 'auto' (a power of ten below 1/N)")
    p.add_argument(
        "--accountant",
        default="auto",
        choices=ACCOUNTANT_POLICIES,
        help="'auto' (default): PLD for DP-GNN and DPDGC, whose occurrence mixtures it bounds more "
        "tightly, RDP for the rest; or force 'rdp' or 'pld'",
    )


def add_stage_timings_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--stage-timings",
        metavar="FILE",
        help=f"also write the wall time and peak memory {what} to this JSON file, as benchmarks/scaling.py reads them",
    )


def add_device_options(p: argparse.ArgumentParser) -> None:
    """Where and how a training verb runs: --device, --threads, --progress."""
    p.add_argument("--device", default="auto", help="'auto' (CUDA when present), 'cpu' or 'cuda'")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=progress_default(), help=PROGRESS_HELP)


def _target_delta(info, meta: dict, graph, delta: float | str) -> float:
    """δ of a private method: the configured one, or 'auto' from the number of private units."""
    from nodedp.accounting import resolve_delta

    if not info.private:
        return 0.0
    # Private units are nodes (node level) or edges (edge level, an undirected edge once);
    # their number is public metadata of the dataset.
    units = graph.num_nodes
    if info.level == "edge":
        units = graph.num_edges // 2 if meta.get("is_undirected") else graph.num_edges
    return resolve_delta(delta, num_private_units=units)


def cmd_dp_appr(args: argparse.Namespace) -> None:
    from types import SimpleNamespace

    from nodedp.accounting import Ledger, write_ledger
    from nodedp.data import load_graph_meta, load_graph_tensors, load_split
    from nodedp.io import torch_save_atomic
    from nodedp.methods import get_method
    from nodedp.methods.dpar import OPTIONS, build_dp_appr

    if args.method not in OPTIONS:
        raise ValueError(
            f"dp-appr builds DPAR's artifact; --method must be one of {list(OPTIONS)}, got {args.method!r}"
        )
    info = get_method(args.method)
    info.check_epsilon(args.epsilon)
    if args.hparams is not None:
        hparams = json.loads(args.hparams)
    else:  # the suite's tuned settings
        from nodedp.config import resolve_method

        hparams = resolve_method({}, args.method)[1]
    hp = info.parse_hparams(hparams)
    graph_dir = Path(args.graph)
    meta = load_graph_meta(graph_dir)
    # The artifact needs the edges and sizes only: the checked tensors, without torch_geometric's import.
    tensors = load_graph_tensors(graph_dir)
    edges = tensors["edge_index"]
    graph = SimpleNamespace(edge_index=edges, num_nodes=tensors["x"].size(0), num_edges=edges.size(1))
    split = load_split(Path(args.split), num_nodes=graph.num_nodes)
    note(f"{meta['name']}: loaded; DP-APPR for {args.method} at ε = {args.epsilon:g}")
    target_delta = _target_delta(info, meta, graph, args.delta)
    artifact = recorded_stages(
        args,
        lambda: build_dp_appr(
            graph,
            split,
            method=args.method,
            hp=hp,
            target_epsilon=args.epsilon,
            dataset=meta["name"],
            target_delta=target_delta,
            seed=args.seed,
            accountant=info.resolve_accountant(args.accountant),
        ),
    )
    out = Path(args.out)
    ledger = Ledger.from_dict(json.loads(artifact["ledger"]))
    # The ledger beside the artifact is for reading; training composes the copy inside the artifact.
    write_ledger(ledger, out.with_suffix(".ledger.json"))
    torch_save_atomic(artifact, out)
    spent = "non-private" if not ledger.private else f"ε = {ledger.composed()[0]:.4f} of {args.epsilon}"
    print(
        f"{args.method} DP-APPR: {artifact['sources'].numel()} sources in a sample of {artifact['sample'].numel()} "
        f"nodes, APPR in {artifact['appr_seconds']:.2f} s; {spent}"
    )


def cmd_train(args: argparse.Namespace) -> None:
    cell = {
        "graph": args.graph,
        "epsilon": args.epsilon,
        "seed": args.seed,
        "split": args.split,
        "structure": args.structure,
        "out": args.out,
    }
    _train_cells(args, [cell])


def cmd_train_cells(args: argparse.Namespace) -> None:
    _train_cells(args, parse_cells(args.cells))


CELL_KEYS = {
    "graph": "canonical graph directory",
    "epsilon": "target ε (a number, or 'inf' for a non-private method)",
    "seed": "an integer",
    "split": "the stored split (.pt)",
    "structure": "a list of structure artifacts (.pt)",
    "out": "the run directory",
    "log": "optional: a file that gets the cell's output",
}
AUDIT_CELL_KEYS = {
    "graph": "canonical graph directory",
    "epsilon": "target (or, @paper, claimed) ε",
    "seed": "an integer",
    "split": "the stored split (.pt)",
    "canaries": "optional: the number of canaries (0, the default: as --canaries 0)",
    "out": "the audit JSON file",
    "log": "optional: a file that gets the cell's output",
}


def parse_cells(text: str, keys: dict[str, str] = CELL_KEYS) -> list[dict]:
    """The cells of `train-cells` (``keys`` = ``CELL_KEYS``) or `audit-cells` (``AUDIT_CELL_KEYS``): a JSON list
    (or @FILE holding one) of objects with those keys (the ones described as optional may be left out)."""
    optional = {key for key, what in keys.items() if what.startswith("optional:")}
    where = "--cells"
    if text.startswith("@"):
        where = text[1:]
        try:
            text = Path(where).read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(f"--cells {text}: cannot read the cell list ({err.strerror})") from None
    try:
        cells = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from None
    valid = "; ".join(f"{k}: {v}" for k, v in keys.items())
    if not isinstance(cells, list) or not cells:
        raise ValueError(f"{where}: need a non-empty JSON list of cells, each an object with {valid}")
    outs = set()
    for i, cell in enumerate(cells):
        missing = set(keys) - optional - (set(cell) if isinstance(cell, dict) else set())
        unknown = set(cell) - set(keys) if isinstance(cell, dict) else set()
        if missing or unknown:
            raise ValueError(
                f"{where}: cell {i} lacks {sorted(missing)} / has unknown {sorted(unknown)}; a cell has {valid}"
            )
        try:
            cell["epsilon"] = parse_epsilon(str(cell["epsilon"]))
        except argparse.ArgumentTypeError as err:
            raise ValueError(f"{where}: cell {i}: {err}") from None
        if (
            not isinstance(cell["seed"], int)
            or isinstance(cell["seed"], bool)
            or not isinstance(cell.get("structure", []), list)
        ):
            raise ValueError(
                f"{where}: cell {i}: seed must be an integer and structure a list, got "
                f"{cell['seed']!r} and {cell.get('structure')!r}"
            )
        canaries = cell.get("canaries", 0)
        if not isinstance(canaries, int) or isinstance(canaries, bool) or canaries < 0:
            raise ValueError(f"{where}: cell {i}: canaries must be a non-negative integer, got {canaries!r}")
        if cell["out"] in outs:
            raise ValueError(f"{where}: cell {i}: output {cell['out']} appears twice")
        outs.add(cell["out"])
    return cells


@functools.lru_cache(maxsize=1)  # a job's cells come graph by graph: hold one
def _loaded_graph(graph_dir: str):
    """A graph directory's meta.json and graph, read once for a run of cells on it (each trains on a copy)."""
    from nodedp.data import load_graph, load_graph_meta

    return load_graph_meta(Path(graph_dir)), load_graph(Path(graph_dir))


def _train_cells(args: argparse.Namespace, cells: list[dict]) -> None:
    """Train one method on each cell in turn, in this process: each graph is read once, every cell trains on a
    fresh copy of it with its own seed, so a cell's metrics and ledger are those a process of its own writes."""
    settings = [method_settings(args, cell["epsilon"]) for cell in cells]  # every cell checked before any trains
    _run_cells(args, cells, settings, _train_cell)


def _run_cells(args: argparse.Namespace, cells: list[dict], settings: list, run: Callable) -> None:
    """``run(args, cell, its settings)`` for each cell in turn, in this process. A cell with a ``log`` writes its
    output there; the first failing cell stops the job."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    for i, (cell, cell_settings) in enumerate(zip(cells, settings)):
        log = cell.get("log")
        if len(cells) > 1:
            note(
                f"cell {i + 1}/{len(cells)}: {Path(cell['graph']).name}, ε = {format_epsilon(cell['epsilon'])}, "
                f"seed {cell['seed']}" + (f" (log: {log})" if log else "")
            )
        if log is None:
            run(args, cell, cell_settings)
            continue
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w", encoding="utf-8") as stream, _redirected(stream, progress=args.progress):
            try:
                run(args, cell, cell_settings)
            except Exception:
                import traceback

                traceback.print_exc()
                raise


class _redirected:
    """stdout and stderr into a cell's log (progress bars as lines, as in a rule's log), restored after."""

    def __init__(self, stream, *, progress: bool) -> None:
        self._stream, self._progress = stream, progress

    def __enter__(self) -> None:
        global STARTED
        self._saved = sys.stdout, sys.stderr, STARTED
        STARTED = time.monotonic()
        sys.stdout = self._stream
        sys.stderr = LogProgress(self._stream) if self._progress else self._stream

    def __exit__(self, *exc) -> None:
        global STARTED
        if isinstance(sys.stderr, LogProgress):
            sys.stderr.finish()
        sys.stdout.flush()
        sys.stdout, sys.stderr, STARTED = self._saved


def _train_cell(args: argparse.Namespace, cell: dict, settings: tuple) -> None:
    import dataclasses

    import torch

    from nodedp.data import load_split
    from nodedp.io import write_json
    from nodedp.methods import RunInputs, RunSpec
    from nodedp.provenance import provenance

    started = time.perf_counter()
    method, name, info, hp, delta, accountant = settings  # method_settings(args, cell["epsilon"])
    structure = load_structure(cell["structure"])
    check_structure(method, info.needs, structure)

    meta, graph = _loaded_graph(str(cell["graph"]))
    graph = graph.clone()  # a method may change its input in place: the next cell gets the graph as read
    split = load_split(Path(cell["split"]), num_nodes=graph.num_nodes)
    note(
        f"{meta['name']}: {graph.num_nodes} nodes, {split.train.numel()} training; training {name} "
        f"at ε = {cell['epsilon']:g}, seed {cell['seed']}"
    )
    target_delta = _target_delta(info, meta, graph, delta)
    spec = RunSpec(
        dataset=meta["name"],
        method=name,
        seed=cell["seed"],
        target_epsilon=cell["epsilon"],
        target_delta=target_delta,
        accountant=info.resolve_accountant(accountant),
        device=args.device,
        progress=args.progress,
    )
    inputs = RunInputs(graph=graph, split=split, num_classes=meta["num_classes"], structure=structure)
    result = recorded_stages(args, lambda: info.run(inputs, spec, hp), device=args.device)

    ledger = result.ledger
    if (ledger.target_epsilon, ledger.target_delta) != (spec.target_epsilon, spec.target_delta):
        raise ValueError(
            f"{name}: ledger target ({ledger.target_epsilon}, {ledger.target_delta}) "
            f"differs from the run's ({spec.target_epsilon}, {spec.target_delta})"
        )
    if (ledger.claim is not None) != (getattr(hp, "accounting", "suite") == "paper"):
        raise ValueError(
            f"{name}: a run with the paper's accounting must record the paper's claim in its ledger, "
            "and only such a run"
        )
    ledger.check()
    epsilon, spent_delta = ledger.composed()
    out = Path(cell["out"])
    out.mkdir(parents=True, exist_ok=True)
    metrics = {
        "dataset": spec.dataset,
        "method": spec.method,
        "base_method": method,
        "seed": spec.seed,
        "private": info.private,
        "level": ledger.level,
        "setting": split.setting,
        "target_epsilon": spec.target_epsilon if info.private else None,
        "target_delta": spec.target_delta if info.private else None,
        "epsilon": epsilon if info.private else None,
        "delta": spent_delta if info.private else None,
        "accountant": ledger.accountant,  # the ledger's own (a reference run may fall back to rdp)
        "guarantee": ledger.guarantee(),  # what ε guarantees, and under which condition (the ledger's own)
        # Reference mode: the paper's claimed (ε, δ) for this noise and the actual ε at that δ (the ledger's).
        "claim": ledger.to_dict()["claim"],
        "val": dict(result.val),
        "test": dict(result.test),
        "timings": {"train_s": result.train_seconds, "total_s": time.perf_counter() - started},
        "hyperparameters": dataclasses.asdict(hp),
        "details": dict(result.details),
        "device": str(torch.device("cuda" if torch.cuda.is_available() and args.device != "cpu" else "cpu")),
        "version": provenance(),
    }
    # The ledger first: metrics.json is what marks a run complete.
    write_json(out / "ledger.json", ledger.to_dict())
    write_json(out / "metrics.json", metrics)
    eps_text = f"ε = {epsilon:.4f} ≤ {spec.target_epsilon} (δ = {spent_delta:g})" if info.private else "non-private"
    if ledger.claim is not None:
        eps_text = (
            f"reference mode: the paper claims ε = {ledger.claim.epsilon:g} at δ = {ledger.claim.delta:g}; "
            f"actual ε = {ledger.actual_claim_epsilon():.4g} there, {epsilon:.4g} at δ = {spent_delta:g}"
        )
    print(f"{spec.method} on {spec.dataset} seed {spec.seed}: test accuracy {result.test['accuracy']:.4f}; {eps_text}")


def cmd_audit(args: argparse.Namespace) -> None:
    cell = {
        "graph": args.graph,
        "epsilon": args.epsilon,
        "seed": args.seed,
        "split": args.split,
        "canaries": args.canaries,
        "out": args.out,
    }
    _audit_cells(args, [cell])


def cmd_audit_cells(args: argparse.Namespace) -> None:
    _audit_cells(args, parse_cells(args.cells, AUDIT_CELL_KEYS))


def _audit_cells(args: argparse.Namespace, cells: list[dict]) -> None:
    """Audit one method on each cell in turn, in this process (each graph read once, every cell on a fresh copy
    with its own seed): each cell's JSON is the one a process of its own writes."""
    settings = [_audit_settings(args, cell) for cell in cells]  # every cell checked before any trains
    _run_cells(args, cells, settings, _audit_cell)


def _audit_settings(args: argparse.Namespace, cell: dict) -> tuple:
    method, name, info, hp, delta, accountant = settings = method_settings(args, cell["epsilon"])
    if not info.private or info.level != "node":
        raise ValueError(
            f"method {name!r} is {'not private' if not info.private else info.level + '-level'}: the "
            "audit bounds node-level ε (audit a node-level private method; see `methods`)"
        )
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must be in (0, 1), got {args.confidence}")
    canaries = cell.get("canaries", 0)
    if canaries and canaries < 20:
        raise ValueError(f"--canaries {canaries}: at least 20 (fewer give a bound of 0), or 0 for the default")
    return settings


def _audit_cell(args: argparse.Namespace, cell: dict, settings: tuple) -> None:
    import dataclasses

    from nodedp.audit.run import audit_run, method_trainer
    from nodedp.config import structure_bounds
    from nodedp.data import get_dataset, load_split
    from nodedp.io import write_json
    from nodedp.methods import RunInputs, RunSpec
    from nodedp.provenance import provenance

    started = time.perf_counter()
    method, name, info, hp, delta, accountant = settings  # _audit_settings(args, cell)
    epsilon, seed, canaries = cell["epsilon"], cell["seed"], cell.get("canaries", 0)
    meta, graph = _loaded_graph(str(cell["graph"]))
    graph = graph.clone()  # the next cell gets the graph as read
    split = load_split(Path(cell["split"]), num_nodes=graph.num_nodes)
    spec = RunSpec(
        dataset=meta["name"],
        method=name,
        seed=seed,
        target_epsilon=epsilon,
        target_delta=_target_delta(info, meta, graph, delta),
        accountant=info.resolve_accountant(accountant),
        device=args.device,
        progress=args.progress,
    )
    inputs = RunInputs(graph=graph, split=split, num_classes=meta["num_classes"])
    bounds = structure_bounds(get_dataset(meta["name"]), dataclasses.asdict(hp))
    note(
        f"{meta['name']}: auditing {name} at ε = {epsilon:g}, seed {seed}"
        f" with {canaries or 'the default number of'} canaries"
    )
    result = audit_run(
        inputs,
        spec,
        hp,
        method=method,
        bounds=bounds,
        m=canaries or None,
        seed=seed,
        confidence=args.confidence,
        dataset=meta["name"],
    )
    record: dict[str, Any] = {
        "dataset": meta["name"],
        "name": name,
        "base_method": method,
        "seed": seed,
        "target_epsilon": epsilon,
        **result.as_dict(),
        "method": name,
        "mia": None,
    }
    if args.mia:
        from nodedp.audit.mia import tstf_attack

        note(f"{name}: membership-inference attack (TSTF: a target and a shadow model)")
        train = method_trainer(info, spec, hp, bounds=bounds, num_classes=meta["num_classes"], dataset=meta["name"])
        record["mia"] = tstf_attack(graph, split, train=train, seed=seed).as_dict()
    record["timings"] = {"total_s": time.perf_counter() - started}
    record["version"] = provenance()
    write_json(Path(cell["out"]), record)
    verdict = "VIOLATED" if result.violated else "holds"
    releases = [r for r in (result.nap_release, result.dpsgd_release) if r is not None]
    verdict += "".join(
        f"; its {r.target} ε̂ = {r.lower_bound:.4g}{' (VIOLATED)' if r.violated else ''}" for r in releases
    )
    mia = "" if record["mia"] is None else f"; TSTF attack accuracy {record['mia']['accuracy']:.3f}"
    print(
        f"{name} on {meta['name']} seed {seed}: claimed ε = {result.claimed_epsilon:.4g} ({result.accounting}); "
        f"empirical lower bound {result.lower_bound:.4g} at {result.one_run.confidence:.0%} confidence "
        f"({result.included} of {result.canaries} canaries in); AUC {result.auc:.3f}; claim {verdict}{mia}"
    )


def cmd_verify(args: argparse.Namespace) -> int:
    from nodedp.verify import find_runs, verify_run

    runs = find_runs(args.paths)
    if not runs:
        raise ValueError(f"no run (a folder with metrics.json) under {' '.join(args.paths)}")
    refused, self_only = 0, {}
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


def cmd_collect(args: argparse.Namespace) -> None:
    from nodedp.analysis import collect_runs, write_runs

    runs = collect_runs([Path(p) for p in args.metrics])
    write_runs(runs, Path(args.out))
    print(f"collected {runs.height} runs into {args.out}")


def cmd_summarize(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis import summarize, write_runs

    runs = pl.concat([pl.read_parquet(p) for p in args.runs], how="vertical")
    summary = summarize(runs, n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
    write_runs(summary, Path(args.out))
    print(f"summarised {runs.height} runs into {summary.height} cells")


def cmd_tables(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis import write_tables

    summary = pl.read_parquet(args.summary)
    write_tables(
        summary,
        markdown_path=Path(args.markdown),
        latex_path=Path(args.latex),
        regenerate_command=f"snakemake --cores 2 {args.markdown} {args.latex}",
    )


def cmd_reproduction(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.reproduction import write_reproduction_tables

    out = Path(args.out_dir)
    names = ("reproduction", "claims", "crossover")
    paths = {f"{n}_{ext}": out / f"{n}.{ext}" for n in names for ext in ("md", "tex")}
    counts = write_reproduction_tables(
        pl.read_parquet(args.summary),
        **paths,
        regenerate_command="snakemake --cores 2 " + " ".join(str(paths[f"{n}_md"]) for n in names),
    )
    print(", ".join(f"{n}: {c} rows" for n, c in zip(names, counts, strict=True)) + f" in {out}")


def cmd_figures(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.figures import plot_accuracy_vs_epsilon, plot_frontier, plot_sweep

    if args.kind == "sweep" and not args.parameter:
        raise ValueError("--kind sweep needs --parameter (a hyperparameter the study's variants vary)")
    if args.kind != "sweep" and args.parameter:
        raise ValueError(f"--parameter is for --kind sweep, not {args.kind}")
    summary = pl.read_parquet(args.summary)
    png = Path(args.png)
    if args.kind == "accuracy":
        caption = plot_accuracy_vs_epsilon(summary, png)
    elif args.kind == "frontier":
        caption = plot_frontier(summary, png)
    else:
        caption = plot_sweep(summary, png, parameter=args.parameter)
    if args.caption:
        from nodedp.io import atomic_write

        atomic_write(Path(args.caption), lambda tmp: tmp.write_text(caption + "\n", encoding="utf-8"))
    print(f"{png}: {caption}")


def cmd_audit_report(args: argparse.Namespace) -> None:
    from nodedp.analysis.audit import plot_audit, read_audits, summarize_audits, write_audit_tables
    from nodedp.io import atomic_write

    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must be in (0, 1), got {args.confidence}")
    frame = read_audits([Path(p) for p in args.audits])
    summary = summarize_audits(frame, confidence=args.confidence)
    if args.mia_summary:
        from nodedp.analysis import write_runs
        from nodedp.analysis.audit import mia_summary

        write_runs(mia_summary(frame, confidence=args.confidence), Path(args.mia_summary))
    command = "snakemake --cores 2 " + " ".join(args.markdown.rsplit(".", 1)[0] + ext for ext in (".md", ".tex"))
    write_audit_tables(summary, markdown=Path(args.markdown), latex=Path(args.latex), regenerate_command=command)
    caption = plot_audit(summary, Path(args.png))
    atomic_write(Path(args.caption), lambda tmp: tmp.write_text(caption + "\n", encoding="utf-8"))
    violated = summary.filter(summary["violated"])
    print(
        f"{summary.height} audited cell(s) into {args.markdown}, {args.latex}, {args.png}; "
        f"{violated.height} with the lower bound above the claimed ε"
        + "".join(
            f"\n  {r['dataset']} {r['method']} ε = {r['claimed_epsilon']:.3g}: lower bound {r['epsilon_lower']:.3g}"
            for r in violated.iter_rows(named=True)
        )
    )


def cmd_paper_tables(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.paper_tables import write_paper_tables

    summary = pl.concat([pl.read_parquet(p) for p in args.summary], how="diagonal_relaxed")
    out = Path(args.out_dir)
    command = "snakemake --cores 2 " + " ".join(f"{out / '{key}'}.{ext}" for ext in ("md", "tex"))
    written = write_paper_tables(summary, out, args.table, regenerate_command=command, interval=args.interval)
    print("wrote " + ", ".join(map(str, written)))


def cmd_main_tex(args: argparse.Namespace) -> None:
    from nodedp.analysis.paper_tables import write_main_tex

    print(f"wrote {write_main_tex(Path(args.out), [Path(t) for t in args.tables])}")


def cmd_report_page(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.report import (
        about_html,
        ledger_summary,
        markdown_table_html,
        study_index,
        table_html,
        write_html,
    )
    from nodedp.provenance import provenance

    if args.kind == "index":
        from nodedp.io import atomic_write

        text = study_index(args.title, [Path(i) for i in args.inputs], root=Path(args.out).parent)
        print(f"wrote {atomic_write(Path(args.out), lambda tmp: tmp.write_text(text, encoding='utf-8'))}")
        return
    if args.kind == "table":
        if len(args.inputs) != 1:
            raise ValueError(f"--kind table converts one Markdown table; got {len(args.inputs)} inputs")
        page = markdown_table_html(Path(args.inputs[0]).read_text(encoding="utf-8"), title=args.title)
    elif args.kind == "ledgers":
        runs = pl.concat([pl.read_parquet(p) for p in args.inputs], how="diagonal_relaxed")
        page = table_html(
            ledger_summary(runs),
            title=args.title,
            notes="One row per cell (dataset, method, target ε): what its runs' verified ledgers "
            "spent, the largest over its seeds. Reference-mode cells (reference = true) also give "
            "the paper's δ and the ε actually spent there (claim_actual_epsilon_max).",
        )
    else:
        if len(args.inputs) != 1:
            raise ValueError("--kind about reads one file: the resolved configuration as JSON")
        source = args.inputs[0]
        config = json.loads(sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8"))
        page = about_html(config, provenance(), config_name=args.config_name)
    print(f"wrote {write_html(Path(args.out), page)}")


# --- parser ----------------------------------------------------------------


def _paper_table_keys() -> list[str]:
    from nodedp.analysis.paper_tables import PAPER_TABLES

    return sorted(PAPER_TABLES)


def build_parser() -> argparse.ArgumentParser:
    from nodedp.accounting import ACCOUNTANT_POLICIES

    parser = argparse.ArgumentParser(
        prog="python -m nodedp",
        description="nodedp: node-level differentially private GNN benchmark. "
        "Each verb does one step of the Snakemake DAG for one cell of the grid.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, func, help: str) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        return p

    verb("datasets", cmd_datasets, "list the dataset registry")
    p = verb("methods", cmd_methods, "list the method registry and its variants (the suite's tuned ones, a config's)")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print each method's hyperparameters (tuned, the config's, or the default) and each variant's",
    )
    p.add_argument(
        "--config",
        default=None,
        help="resolve with this config file's `methods:` on top of the tuned settings, and list the "
        "variants it defines (name, base method, keys set on top)",
    )

    p = verb(
        "check-config",
        cmd_check_config,
        "check a config file as the workflow does before any job: YAML syntax, schema, methods and "
        "hyperparameters, δ and batch sizes against the datasets' public sizes",
    )
    p.add_argument("config", nargs="?", default="config.yaml", help="the config file (default: config.yaml)")
    p.add_argument(
        "--graphs",
        default="resources/graphs",
        help="folder of built graphs, whose meta.json give the sizes of downloaded datasets "
        "(default: resources/graphs, the workflow's)",
    )
    p.add_argument(
        "--schema", default=None, help="the JSON schema (default: workflow/schemas/config.schema.yaml of this checkout)"
    )

    p = verb("download", cmd_download, "fetch a dataset's upstream files (checksums verified; mirror: $NODEDP_MIRROR)")
    p.add_argument("--dataset", required=True, help="a downloaded dataset id (see `datasets`)")
    p.add_argument("--out", required=True, help="download directory (appears complete or not at all)")
    p.add_argument(
        "--mirror",
        default=None,
        help="base URL that serves https://HOST/PATH as MIRROR/HOST/PATH (default: $NODEDP_MIRROR)",
    )
    p.add_argument(
        "--lock", default=None, help="checksum lock file for unpinned files (default: checksums.lock.json beside --out)"
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=progress_default(), help=PROGRESS_HELP)

    p = verb("graph", cmd_graph, "build a dataset into the canonical format (graph.pt + meta.json)")
    p.add_argument("--dataset", required=True, help="a dataset id (see `datasets`)")
    p.add_argument("--raw", default=None, help="download directory of a downloaded dataset (from `download`)")
    p.add_argument("--out", required=True, help="output directory")

    p = verb("split", cmd_split, "store a train/val/test split as the dataset's protocol says")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument(
        "--setting", default=None, choices=["transductive", "inductive"], help="override the protocol's setting"
    )
    p.add_argument("--seed", type=int, required=True, help="seed of a random split (an official split ignores it)")
    p.add_argument(
        "--fractions",
        type=float,
        nargs=3,
        default=None,
        metavar=("TRAIN", "VAL", "TEST"),
        help="override the protocol's random fractions",
    )
    p.add_argument("--out", required=True, help="output .pt file")
    p.add_argument(
        "--check-limits",
        default=None,
        metavar="JSON",
        help="what the grid's runs ask of the dataset's size (the workflow's, from the config: δ, "
        "the largest batch of training nodes), checked on the split before it is saved",
    )

    p = verb("bound-degree", cmd_bound_degree, "sample edges so every in- or out-degree is within a public bound")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt); in-degree bounding uses its training nodes")
    p.add_argument(
        "--kind",
        required=True,
        choices=["in-degree", "out-degree", "degree"],
        help="in-degree (DP-GNN), out-degree (GAP), or degree: undirected, both ends (NIP-GNN)",
    )
    p.add_argument("--bound", type=int, required=True, help="the public degree bound (K or D)")
    p.add_argument("--seed", type=int, required=True, help="seed of the edge sampling (the split's seed)")
    p.add_argument("--out", required=True, help="output .pt file")
    add_stage_timings_option(p, "of building the artifact (stage 'structure')")

    p = verb("dp-appr", cmd_dp_appr, "build DPAR's DP-APPR matrix (a structure artifact, with its ledger beside it)")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument(
        "--split", required=True, help="stored split (.pt); APPR runs on a node sample of its training nodes"
    )
    p.add_argument("--method", required=True, help="dpar-em0, dpar-em1, dpar-gm, dpar-features or dpar-nodp")
    p.add_argument(
        "--hparams",
        help="the method's hyperparameters as JSON, on top of its code defaults "
        "(default: the suite's tuned settings, nodedp/methods/tuned.yaml)",
    )
    p.add_argument(
        "--epsilon",
        type=parse_epsilon,
        required=True,
        help="the run's total target ε ('inf' for dpar-nodp); DP-APPR spends its `ratio` of it",
    )
    p.add_argument("--delta", type=parse_delta, default="auto", help="the run's target δ, or 'auto'")
    p.add_argument(
        "--accountant",
        default="auto",
        choices=ACCOUNTANT_POLICIES,
        help="'auto' (default): PLD for DP-GNN and DPDGC, whose occurrence mixtures it bounds more "
        "tightly, RDP for the rest; or force 'rdp' or 'pld'",
    )
    p.add_argument("--seed", type=int, required=True, help="the training seed that will use it")
    p.add_argument("--out", required=True, help="output .pt file (the ledger goes to <out>.ledger.json)")
    add_stage_timings_option(p, "of building the artifact (stage 'structure')")

    p = verb("train", cmd_train, "train and evaluate one method on one cell; writes metrics.json and ledger.json")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt)")
    p.add_argument("--structure", nargs="*", default=[], help="DP structure artifacts the method needs")
    p.add_argument(
        "--method",
        required=True,
        help="a method id (see `methods`); with --config also a variant named in its `methods:`",
    )
    p.add_argument("--name", help="the name the run is recorded under (a variant's name; default: --method)")
    p.add_argument("--epsilon", type=parse_epsilon, required=True, help="target ε ('inf' for non-private methods)")
    p.add_argument("--seed", type=int, required=True, help="seed of initialisation, sampling and noise")
    add_settings_options(p)
    add_device_options(p)
    p.add_argument("--out", required=True, help="run directory")
    add_stage_timings_option(p, "per stage (structure: everything but training and evaluation)")

    p = verb(
        "train-cells",
        cmd_train_cells,
        "train one method on several cells in one process (what each training job of the workflow runs): "
        "Python, torch and each graph are loaded once, and each cell writes the metrics.json and ledger.json "
        "that `train` would write for it alone",
    )
    p.add_argument(
        "--method",
        required=True,
        help="a method id (see `methods`); with --config also a variant named in its `methods:`",
    )
    p.add_argument("--name", help="the name the runs are recorded under (a variant's name; default: --method)")
    p.add_argument(
        "--cells",
        required=True,
        help="the cells, as a JSON list (or @FILE holding one) of objects with "
        + "; ".join(f"{k}: {v}" for k, v in CELL_KEYS.items()),
    )
    add_settings_options(p)
    add_device_options(p)

    p = verb(
        "audit",
        cmd_audit,
        "empirical privacy audit of one cell: plant canary nodes (each in with probability 1/2), train once, "
        "and bound ε from below (one-run audit, at the claimed δ) beside the ledger's claimed ε; white-box "
        "audits of the run's NAP and DP-SGD releases where its ledger records them; optionally a TSTF "
        "membership-inference attack. Writes one JSON file",
    )
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt); canaries join its training nodes")
    p.add_argument(
        "--method",
        required=True,
        help="a node-level private method id (see `methods`); with --config also a variant or "
        "<method>@paper (audited against its paper's claimed ε)",
    )
    p.add_argument("--name", help="the name the audit is recorded under (default: --method)")
    p.add_argument("--epsilon", type=parse_epsilon, required=True, help="target (or, @paper, claimed) ε")
    p.add_argument("--seed", type=int, required=True, help="seed of canaries, inclusion bits, training and noise")
    add_settings_options(p)
    p.add_argument(
        "--canaries",
        type=int,
        default=0,
        help="number of canaries m (0, the default: the count a perfect attack pays best at the run's "
        "δ, 100 at 1e-4, at most N/4 and 1000)",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bounds (default: 0.95)")
    p.add_argument(
        "--mia",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the TSTF membership-inference attack (two more trainings; default: on)",
    )
    add_device_options(p)
    p.add_argument("--out", required=True, help="output audit JSON file")

    p = verb(
        "audit-cells",
        cmd_audit_cells,
        "audit one method on several cells in one process (what each audit job of the workflow runs): Python, "
        "torch and each graph are loaded once, and each cell writes the JSON that `audit` would write for it "
        "alone",
    )
    p.add_argument(
        "--method",
        required=True,
        help="a node-level private method id (see `methods`); with --config also a variant or <method>@paper",
    )
    p.add_argument("--name", help="the name the audits are recorded under (default: --method)")
    p.add_argument(
        "--cells",
        required=True,
        help="the cells, as a JSON list (or @FILE holding one) of objects with "
        + "; ".join(f"{k}: {v}" for k, v in AUDIT_CELL_KEYS.items()),
    )
    add_settings_options(p)
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bounds (default: 0.95)")
    p.add_argument(
        "--mia",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the TSTF membership-inference attack (two more trainings; default: on)",
    )
    add_device_options(p)

    p = verb(
        "audit-report",
        cmd_audit_report,
        "draw the audit table (Markdown, LaTeX) and the lower-bound-vs-claimed-ε figure from audit JSON files; "
        "each cell's seeds are pooled into one bound",
    )
    p.add_argument("--markdown", required=True, help="output Markdown table (.md)")
    p.add_argument("--latex", required=True, help="output LaTeX table (.tex)")
    p.add_argument("--png", required=True, help="output figure (.png)")
    p.add_argument("--caption", required=True, help="output caption text file (beside the figure)")
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence of the pooled bounds and of the attack's bootstrap intervals (default: 0.95)",
    )
    p.add_argument(
        "--mia-summary",
        default=None,
        help="also write the membership-inference accuracy per cell as a summary (.parquet) for the "
        "paper tables that report it (NIP-GNN Table 4)",
    )
    p.add_argument("audits", nargs="+", help="audit JSON files (from `audit`)")

    p = verb(
        "stability",
        cmd_stability,
        "how far a graph is from its public degree bounds and how much one node removal moves the bounding",
    )
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt): its training nodes feed DP-GNN's Algorithm 1")
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        help="nodes removed one at a time, drawn uniformly (0: 200, fewer on graphs over 10⁵ edges)",
    )
    p.add_argument("--hubs", type=int, default=20, help="plus this many highest-degree nodes (count in max only)")
    p.add_argument("--seed", type=int, default=0, help="the bounding's seed")
    p.add_argument("--out", required=True, help="output JSON (beside the graph's meta.json in the workflow)")

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

    p = verb("collect", cmd_collect, "collect runs (metrics.json + verified ledger.json) into a parquet table")
    p.add_argument("--out", required=True, help="output .parquet file")
    p.add_argument("metrics", nargs="+", help="metrics.json files")

    p = verb("summarize", cmd_summarize, "bootstrap confidence intervals per dataset, method and ε")
    p.add_argument("--out", required=True, help="output summary .parquet file")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default: 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling (default: 0)")
    p.add_argument("runs", nargs="+", help="run tables (.parquet) from `collect`")

    p = verb("tables", cmd_tables, "write the Markdown and LaTeX accuracy tables from a summary")
    p.add_argument("--summary", required=True, help="a study's summary.parquet (from `summarize`)")
    p.add_argument("--markdown", required=True, help="output Markdown table (.md)")
    p.add_argument("--latex", required=True, help="output LaTeX table (.tex)")

    p = verb(
        "reproduction",
        cmd_reproduction,
        "write the reproduction (published vs reference mode vs suite), claimed-vs-actual ε and crossover "
        "tables (Markdown and LaTeX) from a summary",
    )
    p.add_argument("--summary", required=True, help="a study's summary.parquet (from `summarize`)")
    p.add_argument(
        "--out-dir", required=True, help="folder for reproduction.{md,tex}, claims.{md,tex} and crossover.{md,tex}"
    )
    p = verb(
        "figures",
        cmd_figures,
        "draw a study's figure from its summary: accuracy vs ε with CI bands and the published points, the "
        "privacy-utility frontier, or accuracy against one hyperparameter",
    )
    p.add_argument("--summary", required=True, help="a study's summary.parquet (from `summarize`)")
    p.add_argument("--png", required=True, help="output figure (.png)")
    p.add_argument(
        "--kind",
        default="accuracy",
        choices=["accuracy", "frontier", "sweep"],
        help="accuracy (default): accuracy vs target ε; frontier: accuracy vs the ε actually spent, "
        "with each dataset's best envelope; sweep: accuracy vs --parameter",
    )
    p.add_argument("--parameter", default=None, help="with --kind sweep: the hyperparameter on the x axis")
    p.add_argument(
        "--caption", default=None, help="also write the figure's caption (interval, seeds, marks) to this text file"
    )

    p = verb(
        "paper-tables",
        cmd_paper_tables,
        "write seed papers' tables in their own layouts (Markdown and LaTeX) from the summaries of the studies "
        "that feed them, with the published values, the difference and the missing cells' needs",
    )
    p.add_argument("--summary", nargs="+", required=True, help="summary.parquet files (from `summarize`)")
    p.add_argument(
        "--table", nargs="+", default=None, help="paper table keys (default: all): " + ", ".join(_paper_table_keys())
    )
    p.add_argument("--out-dir", required=True, help="folder for <key>.md and <key>.tex")
    p.add_argument(
        "--interval",
        default="half-width",
        choices=["half-width", "range"],
        help="a cell's interval as mean ± half-width (default) or (low–high)",
    )

    p = verb("main-tex", cmd_main_tex, "write a LaTeX document that inputs the given tables (paper/main.tex)")
    p.add_argument("--out", required=True, help="output .tex document")
    p.add_argument("tables", nargs="+", help=".tex tables to input, in order")

    p = verb(
        "report-page",
        cmd_report_page,
        "write an HTML page for `snakemake --report`: a Markdown table as a browsable table, a study's ledger "
        "summary (one row per cell), or the configuration with the package version and commit; or a "
        "study's index.md",
    )
    p.add_argument(
        "--kind",
        required=True,
        choices=["table", "ledgers", "about", "index"],
        help="table: one Markdown table file; ledgers: run tables (.parquet) from `collect`; "
        "about: the resolved configuration as a JSON file ('-': standard input); index: a study's "
        "drawn tables and figures, as a Markdown page (--out .md) showing each figure with its caption",
    )
    p.add_argument("--title", default="nodedp", help="the page's title (with --kind index: the study's name)")
    p.add_argument("--config-name", default="config.yaml", help="with --kind about: the configuration file's name")
    p.add_argument("--out", required=True, help="output .html page")
    p.add_argument("inputs", nargs="+", help="the input file(s), as --kind says")
    return parser


def tell_console(line: str) -> None:
    """``line`` (and where the full output went) on ``$NODEDP_CONSOLE_FD``, unless that is this process's stderr."""
    try:
        fd = int(os.environ.get(CONSOLE_ENV, ""))
        console, stderr = os.fstat(fd), os.fstat(2)
    except (ValueError, OSError):
        return
    if (console.st_dev, console.st_ino) == (stderr.st_dev, stderr.st_ino):
        return  # already said on stderr
    try:
        log = os.readlink("/proc/self/fd/2")
    except OSError:
        log = ""
    where = f" (full output: {os.path.relpath(log)})" if log.startswith("/") and os.path.exists(log) else ""
    try:
        os.write(fd, f"{line}{where}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    global STARTED
    args = build_parser().parse_args(argv)
    STARTED = time.monotonic()
    stderr = sys.stderr
    if getattr(args, "progress", False) and not stderr.isatty():
        sys.stderr = LogProgress(stderr)  # a rule's log: bars as lines, not one growing line
    try:
        status = args.func(args)
    except (ValueError, KeyError, FileNotFoundError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"nodedp {args.verb}: error: {message}", file=sys.stderr)
        tell_console(f"nodedp {args.verb}: error: {message}")
        return 2
    except Exception as err:
        import traceback

        traceback.print_exc()
        tell_console(f"nodedp {args.verb}: {type(err).__name__}: {err}")
        return 1
    finally:
        if sys.stderr is not stderr:
            sys.stderr.finish()
            sys.stderr = stderr
    return status if isinstance(status, int) else 0  # a verb may return its exit status (verify)
