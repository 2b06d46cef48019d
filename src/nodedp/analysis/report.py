"""What `snakemake --report` shows beside the figures: tables as HTML, each cell's ledger summary, and a page with
the configuration, the package version and its git commit.

Snakemake's report shows an HTML result in a frame and anything else as text or a download, so every table it
lists is HTML: the Markdown tables of ``nodedp.analysis.tables`` and ``paper_tables`` converted as they are
(``markdown_table_html``), and the ledger summary built from a study's run tables (``ledger_summary``).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from nodedp.io import atomic_write

__all__ = [
    "LEDGER_COLUMNS",
    "about_html",
    "about_page_digest",
    "config_digest",
    "ledger_summary",
    "markdown_table_html",
    "study_index",
    "table_html",
    "write_html",
]

_STYLE = (
    "<style>body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top}th{background:#eee}"
    "pre{background:#f6f6f6;padding:8px}</style>"
)

# One row per cell (dataset, method, target ε): what its runs' ledgers say, over its seeds.
LEDGER_COLUMNS = (
    "dataset",
    "method",
    "target_epsilon",
    "seeds",
    "level",
    "guarantee",
    "epsilon_max",
    "delta_max",
    "fully_accounted",
    "reference",
    "claimed_delta",
    "claim_actual_epsilon_max",
    "git_commits",
)


def _page(title: str, body: str, *, head: str = "") -> str:
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{head}<title>{html.escape(title)}</title>{_STYLE}'
        f"</head><body>\n<h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_table_html(markdown: str, *, title: str) -> str:
    """A standalone HTML page of a Markdown document made of pipe tables and paragraphs: each table as an HTML
    table (its first row the header, the ``|---|`` line dropped), each other line as a paragraph, escaped. A
    document without a table (a study with no cell for it says so in a line) is a page of paragraphs."""
    body: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, *rest = rows
            body.append(
                "<table>\n<thead><tr>"
                + "".join(f"<th>{html.escape(c)}</th>" for c in head)
                + "</tr></thead>\n<tbody>\n"
                + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>\n" for r in rest)
                + "</tbody>\n</table>"
            )
            rows.clear()

    for line in markdown.splitlines():
        if line.lstrip().startswith("|"):
            cells = _cells(line)
            if not all(set(c) <= set(":- ") and c for c in cells):  # the separator line
                rows.append(cells)
            continue
        flush()
        if line.strip():
            body.append(f"<p>{html.escape(line.strip().lstrip('#').strip())}</p>")
    flush()
    if not body:
        raise ValueError(f"{title}: the Markdown file is empty")
    return _page(title, "\n".join(body))


def table_html(frame: pl.DataFrame, *, title: str, notes: str = "") -> str:
    """A standalone HTML page of ``frame`` as one table (floats with 4 significant digits, nulls empty)."""

    def text(value: Any) -> str:
        if value is None:
            return ""
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(text(v))}</td>" for v in row) + "</tr>\n" for row in frame.iter_rows()
    )
    note = f"<p>{html.escape(notes)}</p>\n" if notes else ""
    return _page(title, f"{note}<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>")


def ledger_summary(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per cell (dataset, method, target ε) of a runs table (``collect_runs``): its seeds, privacy level,
    guarantee class(es), the largest ε and δ its ledgers spent, whether every run was fully accounted, and for
    reference mode the paper's δ and the largest actual ε there; the git commits the runs came from."""
    needed = [
        "dataset",
        "method",
        "target_epsilon",
        "seed",
        "level",
        "guarantee",
        "epsilon",
        "delta",
        "fully_accounted",
        "reference",
        "claimed_delta",
        "claim_actual_epsilon",
        "git_commit",
    ]
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        raise ValueError(
            f"runs table lacks columns {missing} (made by `python -m nodedp collect`); it has {runs.columns}"
        )
    if runs.is_empty():
        raise ValueError("runs table is empty: no cell to summarise")

    def joined(column: str) -> pl.Expr:
        return pl.col(column).cast(pl.String).fill_null("unknown").unique().sort().str.join(", ")

    return (
        runs.group_by("dataset", "method", "target_epsilon")
        .agg(
            pl.col("seed").unique().sort().cast(pl.String).str.join(", ").alias("seeds"),
            joined("level").alias("level"),
            joined("guarantee").alias("guarantee"),
            pl.col("epsilon").max().alias("epsilon_max"),
            pl.col("delta").max().alias("delta_max"),
            pl.col("fully_accounted").all().alias("fully_accounted"),
            pl.col("reference").any().alias("reference"),
            pl.col("claimed_delta").max().alias("claimed_delta"),
            pl.col("claim_actual_epsilon").max().alias("claim_actual_epsilon_max"),
            joined("git_commit").alias("git_commits"),
        )
        .select(LEDGER_COLUMNS)
        .sort("dataset", "method", "target_epsilon")
    )


_DIGEST_META = "nodedp-config-digest"


def config_digest(config: Mapping[str, Any]) -> str:
    """A digest of a resolved configuration, the same for the mapping and for its JSON read back (the `about` rule
    passes it as JSON): what tells an about page drawn for one grid from one drawn for another."""
    canonical = json.dumps(json.loads(json.dumps(config, sort_keys=True, default=str)), sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def about_page_digest(page: str) -> str | None:
    """The configuration digest an about page (``about_html``) carries; None for a page without one."""
    match = re.search(rf'<meta name="{_DIGEST_META}" content="([0-9a-f]+)">', page)
    return match.group(1) if match else None


def about_html(config: Mapping[str, Any], provenance: Mapping[str, Any], *, config_name: str) -> str:
    """A page stating the package version, the git commit (``unknown`` outside a git checkout; ``(dirty)`` with
    uncommitted changes) and the configuration the workflow ran with; it carries the configuration's digest
    (``config_digest``), so a report can tell whether the page is its grid's (``about_page_digest``)."""
    commit = provenance.get("git_commit") or "unknown"
    if provenance.get("git_dirty"):
        commit += " (dirty: uncommitted changes)"
    digest = config_digest(config)
    facts = (
        ("nodedp version", str(provenance.get("nodedp") or "unknown")),
        ("git commit", commit),
        ("configuration", config_name),
        ("configuration digest", digest),
    )
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>\n" for k, v in facts)
    studies = config.get("studies") or {}
    study_rows = "".join(
        f"<tr><td>{html.escape(name)}</td>"
        + "".join(
            f"<td>{html.escape(', '.join(map(str, spec.get(key, []))))}</td>"
            for key in ("datasets", "methods", "epsilons", "seeds")
        )
        + "</tr>\n"
        for name, spec in studies.items()
    )
    body = (
        f"<table>\n{rows}</table>\n<h2>Studies</h2>\n<table>\n<thead><tr><th>study</th><th>datasets</th>"
        f"<th>methods</th><th>ε</th><th>seeds</th></tr></thead>\n<tbody>\n{study_rows}</tbody>\n</table>\n"
        f"<h2>Configuration (as resolved, defaults filled in)</h2>\n"
        f"<pre>{html.escape(json.dumps(config, indent=2, sort_keys=True, default=str))}</pre>"
    )
    return _page("Configuration and version", body, head=f'<meta name="{_DIGEST_META}" content="{digest}">')


def write_html(path: Path, text: str) -> Path:
    return atomic_write(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def study_index(study: str, files: list[Path], *, root: Path, note: str = "") -> str:
    """A Markdown page listing what was drawn for ``study`` (``files``, under ``root``, the study's folder): its
    tables (.md, .tex and the report's .html) and its figures, each shown with the caption written beside it
    (``.caption.txt``); the audit's table and figure (named ``audit``), where given, in a section of their own.
    ``note`` (the study's config `note`), where given, comes first."""
    sections: dict[str, tuple[list[str], list[str]]] = {"study": ([], []), "audit": ([], [])}
    for path in map(Path, files):
        rel = Path(os.path.relpath(path, root)).as_posix()
        if path.name.endswith(".caption.txt"):
            continue  # shown under its figure
        tables, figures = sections["audit" if path.stem == "audit" else "study"]
        if path.suffix == ".png":
            caption_path = path.with_suffix(".caption.txt")
            if not caption_path.exists():
                raise FileNotFoundError(f"figure {path} has no caption {caption_path} (drawn by `nodedp figures`)")
            figures.append(
                f"### {path.stem}\n\n![{path.stem}]({rel})\n\n{caption_path.read_text(encoding='utf-8').strip()}\n"
            )
        elif path.suffix in (".md", ".tex", ".html"):
            tables.append(f"* [{rel}]({rel})")
        else:
            raise ValueError(f"{path}: not a table (.md, .tex, .html) or a figure (.png) of study {study}")
    (tables, figures), (audit_tables, audit_figures) = sections["study"], sections["audit"]
    if not figures and not tables and not audit_figures and not audit_tables:
        raise ValueError(f"study {study}: nothing to index")
    lines = [
        f"# Study {study}",
        "",
        "Regenerate: `make paper STUDY=" + study + "` (never trains).",
        "",
        *([" ".join(note.split()), ""] if note.strip() else []),
        "## Tables",
        "",
        *tables,
        "",
        "## Figures",
        "",
        *figures,
    ]
    if audit_tables or audit_figures:
        about = (
            f"Lower bounds on ε beside the claimed ε (the study's `audit:` block): `make audit STUDY={study}` "
            "audits what has not been audited and draws them; `make paper` redraws them."
        )
        lines += ["## Empirical privacy audit", "", about, "", *audit_tables, "", *audit_figures]
    return "\n".join(lines)
