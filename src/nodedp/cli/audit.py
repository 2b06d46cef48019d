"""The audit stage's verbs: bound a method's ε from below on one cell (`audit`) or on several in one process
(`audit-cells`), and draw the audit table and figure from their JSON files (`audit-report`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from nodedp.cli.cells import add_cell_list_options, flag_cell, loaded_graph, parse_cells, run_cells
from nodedp.cli.common import (
    AddVerb,
    add_device_options,
    add_settings_options,
    method_settings,
    note,
    parse_epsilon,
    regenerate_command,
    target_delta,
)

AUDIT_CELL_KEYS = {
    "graph": "canonical graph directory",
    "epsilon": "target (or, @paper, claimed) ε",
    "seed": "an integer",
    "split": "the stored split (.pt)",
    "canaries": "optional: the number of canaries (0, the default: as --canaries 0)",
    "out": "the audit JSON file",
    "log": "optional: a file that gets the cell's output",
}
CONFIDENCE_HELP = "confidence of the lower bounds (default: 0.95)"
MIA_HELP = "also run the TSTF membership-inference attack (two more trainings; default: on)"


def cmd_audit(args: argparse.Namespace) -> None:
    audit_cells(args, [flag_cell(args, AUDIT_CELL_KEYS)])


def add_audit(verb: AddVerb) -> None:
    p = verb(
        "audit",
        cmd_audit,
        "empirical privacy audit of one cell: plant canary nodes (each in with probability 1/2), train once, "
        "and bound ε from below (one-run audit, at the claimed δ) beside the ledger's claimed ε; white-box "
        "audits of every release its ledger records (NAP and DP-SGD drawn with the noise the run drew); "
        "optionally a TSTF membership-inference attack. Writes one JSON file",
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
    p.add_argument("--confidence", type=float, default=0.95, help=CONFIDENCE_HELP)
    p.add_argument("--mia", action=argparse.BooleanOptionalAction, default=True, help=MIA_HELP)
    add_device_options(p)
    p.add_argument("--out", required=True, help="output audit JSON file")


def cmd_audit_cells(args: argparse.Namespace) -> None:
    audit_cells(args, parse_cells(args.cells, AUDIT_CELL_KEYS))


def add_audit_cells(verb: AddVerb) -> None:
    p = verb(
        "audit-cells",
        cmd_audit_cells,
        "audit one method on several cells in one process (what each audit job of the workflow runs): Python, "
        "torch and each graph are loaded once, and each cell writes the JSON that `audit` would write for it "
        "alone",
    )
    add_cell_list_options(
        p,
        AUDIT_CELL_KEYS,
        method_help="a node-level private method id (see `methods`); with --config also a variant or <method>@paper",
        name_help="the name the audits are recorded under (default: --method)",
    )
    add_settings_options(p)
    p.add_argument("--confidence", type=float, default=0.95, help=CONFIDENCE_HELP)
    p.add_argument("--mia", action=argparse.BooleanOptionalAction, default=True, help=MIA_HELP)
    add_device_options(p)


def audit_cells(args: argparse.Namespace, cells: list[dict]) -> None:
    """Audit one method on each cell in turn, in this process (each graph read once, every cell on a fresh copy
    with its own seed): each cell's JSON is the one a process of its own writes."""
    settings = [audit_settings(args, cell) for cell in cells]  # every cell checked before any trains
    run_cells(args, cells, settings, audit_cell)


def audit_settings(args: argparse.Namespace, cell: dict) -> tuple:
    """A cell's ``method_settings``, checked to be auditable: a node-level private method, a confidence in (0, 1)
    and no fewer than 20 canaries."""
    settings = method_settings(args, cell["epsilon"])
    _, name, info, *_ = settings
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


def audit_cell(args: argparse.Namespace, cell: dict, settings: tuple) -> None:
    """One cell: plant canaries, train, bound ε from below (and attack, with --mia); write the cell's JSON."""
    import dataclasses

    from nodedp.audit.run import audit_run
    from nodedp.contract.base import RunInputs, RunSpec
    from nodedp.contract.structure import structure_bounds
    from nodedp.data import get_dataset, load_split
    from nodedp.io import write_json
    from nodedp.provenance import provenance

    started = time.perf_counter()
    method, name, info, hp, delta, accountant = settings  # audit_settings(args, cell)
    epsilon, seed, canaries = cell["epsilon"], cell["seed"], cell.get("canaries", 0)
    meta, graph = loaded_graph(str(cell["graph"]))
    graph = graph.clone()  # the next cell gets the graph as read
    split = load_split(Path(cell["split"]), num_nodes=graph.num_nodes)
    spec = RunSpec(
        dataset=meta["name"],
        method=name,
        seed=seed,
        target_epsilon=epsilon,
        target_delta=target_delta(info, meta, delta),
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
        record["mia"] = membership_attack(args, settings, spec, graph, split, bounds=bounds, meta=meta, seed=seed)
    record["timings"] = {"total_s": time.perf_counter() - started}
    record["version"] = provenance()
    write_json(Path(cell["out"]), record)
    print(audit_line(result, record, name=name, dataset=meta["name"], seed=seed))


def membership_attack(args: argparse.Namespace, settings: tuple, spec, graph, split, *, bounds, meta, seed) -> dict:
    """The TSTF membership-inference attack on the cell's method (a target and a shadow model), as a dict."""
    from nodedp.audit.mia import tstf_attack
    from nodedp.audit.run import method_trainer

    _, name, info, hp, _, _ = settings
    note(f"{name}: membership-inference attack (TSTF: a target and a shadow model)")
    train = method_trainer(info, spec, hp, bounds=bounds, num_classes=meta["num_classes"], dataset=meta["name"])
    return tstf_attack(graph, split, train=train, seed=seed).as_dict()


def audit_line(result, record: dict, *, name: str, dataset: str, seed: int) -> str:
    """An audited cell's closing line: the claimed ε, the lower bound and whether the claim holds."""
    verdict = "VIOLATED" if result.violated else "holds"
    verdict += "".join(
        f"; its {r.label} ε̂ = {r.lower_bound:.4g}{' (VIOLATED)' if r.violated else ''}"
        for r in result.releases.values()
    )
    mia = "" if record["mia"] is None else f"; TSTF attack accuracy {record['mia']['accuracy']:.3f}"
    return (
        f"{name} on {dataset} seed {seed}: claimed ε = {result.claimed_epsilon:.4g} ({result.accounting}); "
        f"empirical lower bound {result.lower_bound:.4g} at {result.one_run.confidence:.0%} confidence "
        f"({result.included} of {result.canaries} canaries in); AUC {result.auc:.3f}; claim {verdict}{mia}"
    )


def cmd_audit_report(args: argparse.Namespace) -> None:
    from nodedp.analysis.audit import read_audits, summarize_audits, write_audit_tables
    from nodedp.analysis.audit_figure import plot_audit
    from nodedp.io import write_text

    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must be in (0, 1), got {args.confidence}")
    if (args.claims_markdown is None) != (args.claims_latex is None):
        raise ValueError("--claims-markdown and --claims-latex go together: give both or neither")
    frame = read_audits([Path(p) for p in args.audits])
    summary = summarize_audits(frame, confidence=args.confidence)
    if args.mia_summary:
        from nodedp.analysis import write_runs
        from nodedp.analysis.audit import mia_summary

        write_runs(mia_summary(frame, confidence=args.confidence), Path(args.mia_summary))
    command = regenerate_command(args, [args.markdown.rsplit(".", 1)[0] + ext for ext in (".md", ".tex")])
    write_audit_tables(summary, markdown=Path(args.markdown), latex=Path(args.latex), regenerate_command=command)
    caption = plot_audit(summary, Path(args.png))
    write_text(Path(args.caption), caption + "\n")
    if args.claims_markdown is not None:
        from nodedp.analysis.claims import claims_frame, write_claims_tables

        claims = claims_frame(summary)
        outputs = [args.claims_markdown, args.claims_latex]
        write_claims_tables(
            claims,
            markdown=Path(args.claims_markdown),
            latex=Path(args.claims_latex),
            regenerate_command=regenerate_command(args, outputs),
        )
        print(f"{claims['refuted'].sum()} of {claims.height} audited run(s) refuted in {args.claims_markdown}")
    violated = summary.filter(summary["violated"])
    print(
        f"{summary.height} audited cell(s) into {args.markdown}, {args.latex}, {args.png}; "
        f"{violated.height} with the lower bound above the claimed ε"
        + "".join(
            f"\n  {r['dataset']} {r['method']} ε = {r['claimed_epsilon']:.3g}: lower bound {r['epsilon_lower']:.3g}"
            for r in violated.iter_rows(named=True)
        )
    )


def add_audit_report(verb: AddVerb) -> None:
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
        "--claims-markdown",
        default=None,
        help="also write the broken-claims table (one row per audited run: claimed ε, the ledger's actual ε, the "
        "best lower bound over its audits, which audit gave it, the verdict) as Markdown (.md)",
    )
    p.add_argument("--claims-latex", default=None, help="the broken-claims table as LaTeX (.tex)")
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
