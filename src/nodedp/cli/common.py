"""What every stage's verbs share: progress lines in a log, ε and δ arguments, a cell's method settings, the
device and timing options, and the console line of a failing verb."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A verb's parser: ``verb(name, func, help)`` adds the subcommand ``name`` that runs ``func(args)``.
AddVerb = Callable[[str, Callable[[argparse.Namespace], Any], str], argparse.ArgumentParser]

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
# "1": the verb runs as one of the workflow's rules (their shell prefix sets it), so its outputs are targets.
WORKFLOW_ENV = "NODEDP_WORKFLOW"


def note(message: str) -> None:
    """A line on stderr with the seconds since the verb started: what a rule's log shows while a long
    step runs (stdout, redirected to the same log, is buffered until the end)."""
    print(f"[{time.monotonic() - STARTED:8.1f} s] {message}", file=sys.stderr, flush=True)


def regenerate_command(args: argparse.Namespace, outputs: list[str]) -> str:
    """The command a table's or figure's footer gives to rebuild it: the workflow target when a rule of the
    workflow wrote it, else the very ``python -m nodedp`` command that did (a by-hand output is no target)."""
    if os.environ.get(WORKFLOW_ENV) == "1":
        return "snakemake --cores 2 " + " ".join(outputs)
    return shlex.join(["python", "-m", "nodedp", *getattr(args, "argv", sys.argv[1:])])


def restart_clock(started: float) -> float:
    """Count `note`'s seconds from ``started`` (a ``time.monotonic()`` value); returns the start it replaces."""
    global STARTED
    previous, STARTED = STARTED, started
    return previous


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


def method_settings(
    args: argparse.Namespace, epsilon: float | None = None
) -> tuple[str, str, Any, Any, float | str, str]:
    """(method, name, registry entry, parsed hyperparameters, δ, accountant) of a run from ``--method``,
    ``--name``, ``--epsilon`` (or ``epsilon``) and either ``--hparams``/``--delta``/``--accountant`` or
    ``--config`` (whose variant, privacy δ and accountant win)."""
    from nodedp.contract.registry import get_method

    method, name = args.method, args.name or args.method
    hparams, delta, accountant = args.hparams, args.delta, args.accountant
    if args.config:
        from nodedp.config.read import read_config
        from nodedp.config.variants import resolve_method

        config = read_config(args.config)
        method, hparams = resolve_method(config, args.method)  # a method or a variant of one
        privacy = config.get("privacy") or {}
        delta = privacy.get("delta", delta)
        accountant = privacy.get("accountant", accountant)
    elif hparams is None:  # the suite's tuned settings (nodedp/methods/tuned.yaml), as a grid gets them
        from nodedp.config.variants import resolve_method

        method, hparams = resolve_method({}, args.method)
    from nodedp.config.variants import check_run_name

    info = get_method(method)
    hp = info.parse_hparams(json.loads(hparams) if isinstance(hparams, str) else hparams)
    reference = getattr(hp, "accounting", "suite") == "paper"
    check_run_name(name, base=method, reference=reference, epsilon=args.epsilon if epsilon is None else epsilon)
    return method, name, info, hp, delta, accountant


def target_delta(info, meta: dict, delta: float | str) -> float:
    """δ of a private method: the configured one, or 'auto' from the number of private units, which is the
    dataset's public metadata (meta.json; nodedp.accounting.agreement.private_units), never a count of the graph
    in hand: a neighbouring graph gets the same δ."""
    from nodedp.accounting import resolve_delta
    from nodedp.accounting.agreement import private_units

    if not info.private:
        return 0.0
    return resolve_delta(delta, num_private_units=private_units(meta, level=info.level))


ACCOUNTANT_HELP = (
    "'auto' (default): PLD for DP-GNN and DPDGC, whose occurrence mixtures it bounds more "
    "tightly, RDP for the rest; or force 'rdp' or 'pld'"
)


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
    p.add_argument("--accountant", default="auto", choices=ACCOUNTANT_POLICIES, help=ACCOUNTANT_HELP)


def add_bootstrap_options(p: argparse.ArgumentParser) -> None:
    """The bootstrap's settings (config.yaml's ``bootstrap:``), for every verb that draws intervals."""
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default: 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling (default: 0)")


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
    add_progress_option(p)


def add_progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=progress_default(), help=PROGRESS_HELP)


class VerbFailure(Exception):
    """A verb's failure that is no bad input (a download the network refused): `main` prints its one line, without
    a traceback, on stderr and on the console, and exits 1."""


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
    with contextlib.suppress(OSError):
        os.write(fd, f"{line}{where}\n".encode("utf-8", "backslashreplace"))
