"""`python -m nodedp <verb>`: what every workflow rule calls, usable by hand on one cell.

One module per stage holds its verbs, each beside its parser (``add_<verb>(verb)``): data, structure, train,
audit, report (aggregate and paper) and verify; ``common`` and ``cells`` hold what they share. A new verb's
``add_<verb>`` goes into ``VERBS`` below, in the order `--help` lists it. Importing this package is light: the
verbs import torch, polars and the rest when they run."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from nodedp.cli import audit, data, report, structure, train, verify
from nodedp.cli.common import AddVerb, LogProgress, VerbFailure, restart_clock, tell_console

__all__ = ["build_parser", "main"]

EPILOG = """\
Typical use on one cell of the grid (what the Snakemake rules run):
  python -m nodedp graph --dataset csbm-homophilous --out resources/graphs/csbm-homophilous
  python -m nodedp split --graph resources/graphs/csbm-homophilous --seed 0 --out split.pt
  python -m nodedp train --graph resources/graphs/csbm-homophilous --split split.pt \\
      --method dp-mlp --epsilon 4 --seed 0 --config config.yaml --out runs/dp-mlp-eps4
  python -m nodedp check-config my-grid.yaml   # what the workflow checks before any job
"""
# Every verb's parser, in the order `python -m nodedp --help` lists them.
VERBS: tuple[Callable[[AddVerb], None], ...] = (
    data.add_datasets,
    train.add_methods,
    data.add_check_config,
    data.add_download,
    data.add_graph,
    data.add_split,
    structure.add_bound_degree,
    structure.add_dp_appr,
    train.add_train,
    train.add_train_cells,
    audit.add_audit,
    audit.add_audit_cells,
    audit.add_audit_report,
    data.add_stability,
    verify.add_verify,
    report.add_collect,
    report.add_summarize,
    report.add_tables,
    report.add_reproduction,
    report.add_figures,
    report.add_regime,
    report.add_paper_tables,
    report.add_main_tex,
    report.add_report_page,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nodedp",
        description="nodedp: node-level differentially private GNN benchmark. "
        "Each verb does one step of the Snakemake DAG for one cell of the grid.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, func: Callable[[argparse.Namespace], Any], help: str) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        return p

    for add in VERBS:
        add(verb)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for a footer's by-hand command
    restart_clock(time.monotonic())
    stderr = sys.stderr
    if getattr(args, "progress", False) and not stderr.isatty():
        sys.stderr = LogProgress(stderr)  # a rule's log: bars as lines, not one growing line
    try:
        status = args.func(args)
    except VerbFailure as err:  # the network's fault, not the input's: one line, no traceback
        print(f"nodedp {args.verb}: error: {err}", file=sys.stderr)
        tell_console(f"nodedp {args.verb}: error: {err}")
        return 1
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
            if isinstance(sys.stderr, LogProgress):
                sys.stderr.finish()
            sys.stderr = stderr
    return status if isinstance(status, int) else 0  # a verb may return its exit status (verify)
