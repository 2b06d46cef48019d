"""The aggregate and paper stages' verbs: collect runs into a table, summarise them with bootstrap intervals, and
write the tables, figures, paper tables, LaTeX document and report pages drawn from the summaries."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nodedp.cli.common import AddVerb, add_bootstrap_options, regenerate_command


def cmd_collect(args: argparse.Namespace) -> None:
    from nodedp.analysis import collect_runs, write_runs

    runs = collect_runs([Path(p) for p in args.metrics])
    write_runs(runs, Path(args.out))
    print(f"collected {runs.height} runs into {args.out}")


def add_collect(verb: AddVerb) -> None:
    p = verb("collect", cmd_collect, "collect runs (metrics.json + verified ledger.json) into a parquet table")
    p.add_argument("--out", required=True, help="output .parquet file")
    p.add_argument("metrics", nargs="+", help="metrics.json files")


def cmd_summarize(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis import summarize, write_runs

    runs = pl.concat([pl.read_parquet(p) for p in args.runs], how="vertical")
    summary = summarize(runs, n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
    write_runs(summary, Path(args.out))
    print(f"summarised {runs.height} runs into {summary.height} cells")


def add_summarize(verb: AddVerb) -> None:
    p = verb("summarize", cmd_summarize, "bootstrap confidence intervals per dataset, method and ε")
    p.add_argument("--out", required=True, help="output summary .parquet file")
    add_bootstrap_options(p)
    p.add_argument("runs", nargs="+", help="run tables (.parquet) from `collect`")


def cmd_tables(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis import write_tables
    from nodedp.analysis.tables import dataset_note
    from nodedp.io import read_json

    summary = pl.read_parquet(args.summary)
    notes = list(json.loads(args.notes)) if args.notes else []
    for meta_path in args.graph_meta:
        meta = read_json(Path(meta_path))
        if meta.get("name") in set(summary["dataset"].to_list()):
            note = dataset_note(str(meta["name"]), meta)
            notes += [note] if note else []
    write_tables(
        summary,
        markdown_path=Path(args.markdown),
        latex_path=Path(args.latex),
        regenerate_command=regenerate_command(args, [args.markdown, args.latex]),
        dataset_notes=notes,
    )


def add_tables(verb: AddVerb) -> None:
    p = verb("tables", cmd_tables, "write the Markdown and LaTeX accuracy tables from a summary")
    p.add_argument("--summary", required=True, help="a study's summary.parquet (from `summarize`)")
    p.add_argument("--markdown", required=True, help="output Markdown table (.md)")
    p.add_argument("--latex", required=True, help="output LaTeX table (.tex)")
    p.add_argument(
        "--graph-meta",
        nargs="*",
        default=[],
        help="graphs' meta.json files: the schools a Facebook100 union was built from are named below the table",
    )
    p.add_argument("--notes", default=None, help="more lines below the table, as a JSON list of strings")


def cmd_reproduction(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.reproduction import write_reproduction_tables

    out = Path(args.out_dir)
    names = ("reproduction", "claims", "crossover")
    paths = {f"{n}_{ext}": out / f"{n}.{ext}" for n in names for ext in ("md", "tex")}
    counts = write_reproduction_tables(
        pl.read_parquet(args.summary),
        **paths,
        regenerate_command=regenerate_command(args, [str(paths[f"{n}_md"]) for n in names]),
    )
    print(", ".join(f"{n}: {c} rows" for n, c in zip(names, counts, strict=True)) + f" in {out}")


def add_reproduction(verb: AddVerb) -> None:
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


def cmd_figures(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.accuracy_figure import plot_accuracy_vs_epsilon
    from nodedp.analysis.frontier import plot_frontier
    from nodedp.analysis.sweep import plot_sweep

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
        from nodedp.io import write_text

        write_text(Path(args.caption), caption + "\n")
    print(f"{png}: {caption}")


def add_figures(verb: AddVerb) -> None:
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


def cmd_regime(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.regime import graph_sizes, write_regime

    runs = pl.concat([pl.read_parquet(p) for p in args.runs], how="vertical")
    caption = write_regime(
        runs,
        graph_sizes([Path(p) for p in args.graph_meta]),
        png=Path(args.png),
        caption_path=Path(args.caption),
        markdown_path=Path(args.markdown),
        baseline=args.baseline,
        n_resamples=args.resamples,
        confidence=args.confidence,
        seed=args.seed,
        regenerate_command=regenerate_command(args, [args.png, args.markdown]),
    )
    print(f"{args.png}: {caption}")


def add_regime(verb: AddVerb) -> None:
    p = verb(
        "regime",
        cmd_regime,
        "draw each private graph method's test accuracy minus DP-MLP's (paired by seed, with intervals) against "
        "the graph's node count, and its table",
    )
    p.add_argument("--runs", nargs="+", required=True, help="run tables (.parquet) from `collect`")
    p.add_argument("--graph-meta", nargs="+", required=True, help="the datasets' graph meta.json (node counts)")
    p.add_argument("--png", required=True, help="output figure (.png)")
    p.add_argument("--caption", required=True, help="output caption (.txt)")
    p.add_argument("--markdown", required=True, help="output table (.md)")
    p.add_argument("--baseline", default="dp-mlp", help="the method every gap is taken from (default: dp-mlp)")
    add_bootstrap_options(p)


def cmd_paper_tables(args: argparse.Namespace) -> None:
    import polars as pl

    from nodedp.analysis.paper_tables import write_paper_tables

    summary = pl.concat([pl.read_parquet(p) for p in args.summary], how="diagonal_relaxed")
    out = Path(args.out_dir)
    command = regenerate_command(args, [f"{out / '{key}'}.{ext}" for ext in ("md", "tex")])
    written = write_paper_tables(summary, out, args.table, regenerate_command=command, interval=args.interval)
    print("wrote " + ", ".join(map(str, written)))


def add_paper_tables(verb: AddVerb) -> None:
    from nodedp.analysis.paper_tables import PAPER_TABLES

    p = verb(
        "paper-tables",
        cmd_paper_tables,
        "write seed papers' tables in their own layouts (Markdown and LaTeX) from the summaries of the studies "
        "that feed them, with the published values, the difference and the missing cells' needs",
    )
    p.add_argument("--summary", nargs="+", required=True, help="summary.parquet files (from `summarize`)")
    p.add_argument(
        "--table", nargs="+", default=None, help="paper table keys (default: all): " + ", ".join(sorted(PAPER_TABLES))
    )
    p.add_argument("--out-dir", required=True, help="folder for <key>.md and <key>.tex")
    p.add_argument(
        "--interval",
        default="half-width",
        choices=["half-width", "range"],
        help="a cell's interval as mean ± half-width (default) or (low–high)",
    )


def cmd_main_tex(args: argparse.Namespace) -> None:
    from nodedp.analysis.paper_tables import write_main_tex

    print(f"wrote {write_main_tex(Path(args.out), [Path(t) for t in args.tables])}")


def add_main_tex(verb: AddVerb) -> None:
    p = verb("main-tex", cmd_main_tex, "write a LaTeX document that inputs the given tables (paper/main.tex)")
    p.add_argument("--out", required=True, help="output .tex document")
    p.add_argument("tables", nargs="+", help=".tex tables to input, in order")


def cmd_report_page(args: argparse.Namespace) -> None:
    from nodedp.analysis.report import study_index, write_html

    if args.kind == "index":
        from nodedp.io import write_text

        text = study_index(args.title, [Path(i) for i in args.inputs], root=Path(args.out).parent, note=args.note)
        print(f"wrote {write_text(Path(args.out), text)}")
        return
    print(f"wrote {write_html(Path(args.out), report_page(args))}")


def report_page(args: argparse.Namespace) -> str:
    """The HTML page of ``--kind`` table, ledgers or about."""
    import polars as pl

    from nodedp.analysis.report import about_html, ledger_summary, markdown_table_html, table_html
    from nodedp.provenance import provenance

    if args.kind == "table":
        if len(args.inputs) != 1:
            raise ValueError(f"--kind table converts one Markdown table; got {len(args.inputs)} inputs")
        return markdown_table_html(Path(args.inputs[0]).read_text(encoding="utf-8"), title=args.title)
    if args.kind == "ledgers":
        runs = pl.concat([pl.read_parquet(p) for p in args.inputs], how="diagonal_relaxed")
        return table_html(
            ledger_summary(runs),
            title=args.title,
            notes="One row per cell (dataset, method, target ε): what its runs' verified ledgers "
            "spent, the largest over its seeds. Reference-mode cells (reference = true) also give "
            "the paper's δ and the ε actually spent there (claim_actual_epsilon_max).",
        )
    if len(args.inputs) != 1:
        raise ValueError("--kind about reads one file: the resolved configuration as JSON")
    source = args.inputs[0]
    config = json.loads(sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8"))
    return about_html(config, provenance(), config_name=args.config_name)


def add_report_page(verb: AddVerb) -> None:
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
    p.add_argument("--note", default="", help="with --kind index: what a reader should know first (the study's `note`)")
    p.add_argument("--out", required=True, help="output .html page")
    p.add_argument("inputs", nargs="+", help="the input file(s), as --kind says")
