"""Several cells of one method in one process (`train-cells`, `audit-cells`): the cell list read and checked,
each graph read once, each cell's output in its own log."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nodedp.cli.common import LogProgress, note, parse_epsilon, restart_clock
from nodedp.contract.naming import format_epsilon


def read_cell_list(text: str) -> tuple[str, object]:
    """(where, parsed JSON) of ``--cells``: the JSON text itself or, with ``@FILE``, that file's."""
    where = "--cells"
    if text.startswith("@"):
        where = text[1:]
        try:
            text = Path(where).read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(f"--cells {text}: cannot read the cell list ({err.strerror})") from None
    try:
        return where, json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from None


def parse_cells(text: str, keys: dict[str, str]) -> list[dict]:
    """The cells of `train-cells` (``keys`` = ``train.CELL_KEYS``) or `audit-cells` (``audit.AUDIT_CELL_KEYS``): a
    JSON list (or @FILE holding one) of objects with those keys (the ones described as optional may be left out)."""
    optional = {key for key, what in keys.items() if what.startswith("optional:")}
    where, cells = read_cell_list(text)
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
        check_cell_values(cell, f"{where}: cell {i}")
        if cell["out"] in outs:
            raise ValueError(f"{where}: cell {i}: output {cell['out']} appears twice")
        outs.add(cell["out"])
    return cells


def flag_cell(args: argparse.Namespace, keys: dict[str, str]) -> dict:
    """The one cell of `train` or `audit` from its flags: every key of ``keys`` but the log (its output is the
    terminal's)."""
    return {key: getattr(args, key) for key in keys if key != "log"}


def add_cell_list_options(
    parser: argparse.ArgumentParser, keys: dict[str, str], *, method_help: str, name_help: str
) -> None:
    """``--method``, ``--name`` and ``--cells`` of `train-cells` and `audit-cells`, the last naming each key of a
    cell."""
    parser.add_argument("--method", required=True, help=method_help)
    parser.add_argument("--name", help=name_help)
    parser.add_argument(
        "--cells",
        required=True,
        help="the cells, as a JSON list (or @FILE holding one) of objects with "
        + "; ".join(f"{k}: {v}" for k, v in keys.items()),
    )


def check_cell_values(cell: dict, where: str) -> None:
    """A cell's ε parsed in place; its seed, structure list and canaries checked."""
    try:
        cell["epsilon"] = parse_epsilon(str(cell["epsilon"]))
    except argparse.ArgumentTypeError as err:
        raise ValueError(f"{where}: {err}") from None
    if (
        not isinstance(cell["seed"], int)
        or isinstance(cell["seed"], bool)
        or not isinstance(cell.get("structure", []), list)
    ):
        raise ValueError(
            f"{where}: seed must be an integer and structure a list, got {cell['seed']!r} and {cell.get('structure')!r}"
        )
    canaries = cell.get("canaries", 0)
    if not isinstance(canaries, int) or isinstance(canaries, bool) or canaries < 0:
        raise ValueError(f"{where}: canaries must be a non-negative integer, got {canaries!r}")


@functools.lru_cache(maxsize=1)  # a job's cells come graph by graph: hold one
def loaded_graph(graph_dir: str):
    """A graph directory's meta.json and graph, read once for a run of cells on it (each trains on a copy)."""
    from nodedp.data import load_graph, load_graph_meta

    return load_graph_meta(Path(graph_dir)), load_graph(Path(graph_dir))


def run_cells(args: argparse.Namespace, cells: list[dict], settings: list, run: Callable) -> None:
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
        self._saved = sys.stdout, sys.stderr, restart_clock(time.monotonic())
        sys.stdout = self._stream
        sys.stderr = LogProgress(self._stream) if self._progress else self._stream

    def __exit__(self, *exc) -> None:
        if isinstance(sys.stderr, LogProgress):
            sys.stderr.finish()
        sys.stdout.flush()
        sys.stdout, sys.stderr, started = self._saved
        restart_clock(started)
