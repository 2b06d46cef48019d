"""Paper tables from a bootstrap summary: one row per (dataset, method), one column per ε."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nodedp.io import atomic_write

if TYPE_CHECKING:  # imported where a table is built: planning reads this module's marks without polars
    import polars as pl

NON_PRIVATE = "non-private"
DAGGER = "†"
UNACCOUNTED_NOTE = f"{DAGGER} thresholds or other parameters read from private data without charge; see the runs' ledgers."
# Guarantee classes weaker than unconditional get a mark (nodedp.accounting.GUARANTEE_CLASSES; the README's
# privacy section says which methods are in which class).
GUARANTEE_MARKS = {"bounded-degree": "§", "conditional": "‡"}
GUARANTEE_NOTES = {
    "bounded-degree": ("§ node-level DP for all neighbouring graphs within the method's public degree bound; "
                       "this graph is within it, so the degree sampling kept every edge."),
    "conditional": ("‡ this graph exceeds the method's public degree bound: ε holds for neighbouring graphs "
                    "compared on the same sampled edge list (as in the papers), not for every pair."),
}
REFERENCE_MARK = "¶"
REFERENCE_NOTE = (f"{REFERENCE_MARK} reference mode (`@paper`): the noise the paper's own accounting gives the "
                  "column's ε; [ε = x] is what that noise actually spends under the suite's accountant (at the "
                  "suite's δ, the largest over seeds). Not private at the column's ε unless x ≤ it.")
_LATEX_MARKS = {"§": r"\S{}", "‡": r"\textsuperscript{\ddag}", REFERENCE_MARK: r"\P{}"}

_METRIC_LABELS = {
    "test_accuracy": "test accuracy",
    "test_macro_f1": "test macro-F1",
    "val_accuracy": "validation accuracy",
    "val_macro_f1": "validation macro-F1",
}

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


_LATEX_DAGGER = r"\textsuperscript{\dag}"  # text mode: no package, no unicode needed


_LATEX_UNICODE = {"ε": r"$\varepsilon$", "δ": r"$\delta$", "∞": r"$\infty$", "≤": r"$\le$", "≈": r"$\approx$", "–": "--", "−": "-"}


def _latex_unicode(text: str) -> str:
    """``text`` (already escaped) with the Unicode the tables print replaced by LaTeX that needs no package."""
    return "".join(_LATEX_UNICODE.get(ch, ch) for ch in text)


def metric_label(metric: str) -> str:
    """Human name of a metric column, e.g. ``test_accuracy`` -> ``test accuracy``."""
    return _METRIC_LABELS.get(metric, metric.replace("_", " "))


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters so ``text`` prints verbatim."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


@dataclass(frozen=True)
class _Cell:
    mean: float
    low: float
    high: float
    n_runs: int
    best: bool
    accounted: bool  # false: some run read private data without charge (marked with DAGGER)
    guarantee: str | None = None  # the cell's guarantee class; marked where weaker than unconditional
    actual_epsilon: float | None = None  # reference mode: the ε its noise actually spends (REFERENCE_NOTE)

    @property
    def marks(self) -> str:
        return (("" if self.accounted else DAGGER) + GUARANTEE_MARKS.get(self.guarantee or "", "")
                + ("" if self.actual_epsilon is None else REFERENCE_MARK))

    def text(self, *, max_runs: int) -> str:
        # Percent with one decimal; a cell with fewer runs than the rest says so.
        body = f"{100 * self.mean:.1f} ({100 * self.low:.1f}–{100 * self.high:.1f})"
        if self.actual_epsilon is not None:
            body += f" [ε = {format_epsilon_value(self.actual_epsilon)}]"
        return body if self.n_runs == max_runs else f"{body} [n={self.n_runs}]"


def format_epsilon_value(epsilon: float) -> str:
    """An ε for a table: three significant digits, "∞" for infinity, powers of ten past 10⁴."""
    if math.isinf(epsilon):
        return "∞"
    return f"{epsilon:.3g}" if epsilon < 1e4 else f"{epsilon:.1e}"


@dataclass(frozen=True)
class _Table:
    epsilons: tuple[float, ...]
    rows: tuple[tuple[str, str, tuple[_Cell | None, ...]], ...]  # (dataset, method, cells)
    max_runs: int
    caption: str

    @property
    def any_unaccounted(self) -> bool:
        return any(c is not None and not c.accounted for _, _, cells in self.rows for c in cells)

    @property
    def guarantee_notes(self) -> list[str]:
        shown = {c.guarantee for _, _, cells in self.rows for c in cells if c is not None}
        notes = [note for cls, note in GUARANTEE_NOTES.items() if cls in shown]
        if any(c is not None and c.actual_epsilon is not None for _, _, cells in self.rows for c in cells):
            notes.append(REFERENCE_NOTE)
        return notes


def _build(summary: pl.DataFrame, *, metric: str) -> _Table:
    import polars as pl

    if summary.is_empty():
        raise ValueError("summary is empty: no table to write")
    mean, low, high = f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"
    needed = ["dataset", "method", "target_epsilon", "n_runs", "confidence", "n_resamples", mean, low, high]
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        metrics = sorted(
            c.removesuffix("_mean") for c in summary.columns if c.endswith("_mean") and c != "epsilon_mean"
        )
        raise ValueError(f"summary lacks columns {missing}; metrics available: {metrics}")

    epsilons = tuple(sorted(set(summary["target_epsilon"].to_list())))  # inf sorts last
    # Bold only where at least two private methods compete for the same (dataset, ε).
    has_reference = "reference" in summary.columns
    # Reference-mode cells are not private at their column's ε, and a cell with uncharged reads (†) is not
    # covered by its ε: neither competes for bold.
    competing = summary.filter(~pl.col("reference").fill_null(False)) if has_reference else summary
    if "fully_accounted" in summary.columns:
        competing = competing.filter(pl.col("fully_accounted").fill_null(True))
    contests = (
        competing.filter(pl.col("target_epsilon").is_finite())
        .group_by("dataset", "target_epsilon")
        .agg(pl.col(mean).max().alias("best"), pl.len().alias("n_methods"))
        .filter(pl.col("n_methods") > 1)
    )
    best_mean = {(r["dataset"], r["target_epsilon"]): r["best"] for r in contests.iter_rows(named=True)}
    # Optional: summaries of runs collected before uncharged reads were recorded lack it.
    has_accounted = "fully_accounted" in summary.columns
    cells: dict[tuple[str, str], dict[float, _Cell]] = {}
    for r in summary.iter_rows(named=True):
        eps = r["target_epsilon"]
        cells.setdefault((r["dataset"], r["method"]), {})[eps] = _Cell(
            mean=r[mean],
            low=r[low],
            high=r[high],
            n_runs=r["n_runs"],
            best=(r[mean] == best_mean.get((r["dataset"], eps)) and not (has_reference and r["reference"])
                  and (not has_accounted or bool(r["fully_accounted"]))),
            accounted=bool(r["fully_accounted"]) if has_accounted else True,
            guarantee=r.get("guarantee"),
            actual_epsilon=r["epsilon_max"] if has_reference and r["reference"] else None,
        )
    # Private methods first, non-private references below them, each alphabetical.
    order = sorted(cells, key=lambda dm: (dm[0], all(math.isinf(e) for e in cells[dm]), dm[1]))
    rows = tuple((d, m, tuple(cells[(d, m)].get(e) for e in epsilons)) for d, m in order)

    n_runs = summary["n_runs"]
    seeds = f"{n_runs.max()}" if n_runs.min() == n_runs.max() else f"{n_runs.min()}–{n_runs.max()}"
    confidence = _single(summary, "confidence")
    n_resamples = _single(summary, "n_resamples")
    caption = (
        f"{metric_label(metric).capitalize()} (%) by privacy budget ε: mean over {seeds} seeds "
        f"with {100 * confidence:g}% percentile-bootstrap interval ({n_resamples} resamples)."
    )
    if n_runs.min() != n_runs.max():
        caption += " [n=k] marks a cell with fewer runs."
    if best_mean:
        caption += (" Bold: best private method per dataset and ε among cells whose ε covers every read "
                    "(not reference mode, no uncharged reads).")
    return _Table(epsilons=epsilons, rows=rows, max_runs=int(n_runs.max()), caption=caption)


def _single(summary: pl.DataFrame, column: str) -> float | int:
    values = summary[column].unique().to_list()
    if len(values) != 1:
        raise ValueError(f"summary mixes several {column} values {values}; summarize all runs in one call")
    return values[0]


def _markdown(table: _Table, *, regenerate_command: str) -> str:
    def esc(text: str) -> str:
        return text.replace("|", r"\|")

    header = [
        "Dataset",
        "Method",
        *(f"ε = {e:g}" if math.isfinite(e) else NON_PRIVATE for e in table.epsilons),
    ]
    lines = [
        f"Table: {table.caption}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join([":---", ":---", *(["---:"] * len(table.epsilons))]) + "|",
    ]
    for dataset, method, cells in table.rows:
        texts = []
        for cell in cells:
            if cell is None:
                texts.append("—")
            else:
                text = cell.text(max_runs=table.max_runs)
                text = f"**{text}**" if cell.best else text
                texts.append(text + cell.marks)
        lines.append("| " + " | ".join(map(esc, [dataset, method, *texts])) + " |")
    if table.any_unaccounted:
        lines += ["", UNACCOUNTED_NOTE]
    lines += [line for note in table.guarantee_notes for line in ("", note)]
    lines += ["", f"Regenerate with: `{regenerate_command}`", ""]
    return "\n".join(lines)


def _latex(table: _Table, *, regenerate_command: str) -> str:
    header = [
        "Dataset",
        "Method",
        *(f"$\\varepsilon = {e:g}$" if math.isfinite(e) else NON_PRIVATE for e in table.epsilons),
    ]
    lines = [
        "% Generated by nodedp.analysis.tables; do not edit by hand.",
        f"% Regenerate with: {regenerate_command}",
        f"% {table.caption}",
        "\\begin{tabular}{ll" + "r" * len(table.epsilons) + "}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for dataset, method, cells in table.rows:
        if previous is not None and dataset != previous:
            lines.append("\\midrule")
        texts = []
        for cell in cells:
            if cell is None:
                texts.append("--")
            else:
                text = _latex_unicode(latex_escape(cell.text(max_runs=table.max_runs)))
                text = f"\\textbf{{{text}}}" if cell.best else text
                marks = cell.marks.replace(DAGGER, _LATEX_DAGGER)
                for mark, latex in _LATEX_MARKS.items():
                    marks = marks.replace(mark, latex)
                texts.append(text + marks)
        shown = latex_escape(dataset) if dataset != previous else ""
        lines.append(" & ".join([shown, latex_escape(method), *texts]) + " \\\\")
        previous = dataset
    # The note is a paragraph below the tabular, so it wraps at the float's width
    # instead of stretching a table column.
    note = latex_escape(table.caption).replace("ε", "$\\varepsilon$").replace("–", "--")
    if table.any_unaccounted:
        note += " " + latex_escape(UNACCOUNTED_NOTE).replace(DAGGER, _LATEX_DAGGER)
    for extra in table.guarantee_notes:
        extra = _latex_unicode(latex_escape(extra.replace("`", "")))
        for mark, latex in _LATEX_MARKS.items():
            extra = extra.replace(mark, latex)
        note += " " + extra
    lines += ["\\bottomrule", "\\end{tabular}", "\\par\\smallskip", f"{{\\footnotesize {note}\\par}}", ""]
    return "\n".join(lines)


def write_tables(
    summary: pl.DataFrame,
    *,
    markdown_path: Path,
    latex_path: Path,
    metric: str = "test_accuracy",
    regenerate_command: str,
) -> None:
    """Write the ``metric`` table as Markdown and as a booktabs LaTeX tabular, atomically.

    Cells read ``mean (low–high)`` in percent; the footer states seeds, confidence and
    resamples, and both files name the command that regenerates them. Where the
    summary has a ``fully_accounted`` column, cells whose runs read private data
    without charge carry a dagger, explained below the table; where it has a
    ``guarantee`` column, cells weaker than unconditional node-level DP carry
    ``GUARANTEE_MARKS``, explained the same way. The LaTeX file
    is a tabular followed by its note paragraph, to ``\\input`` inside a table float.
    """
    table = _build(summary, metric=metric)
    for path, text in (
        (markdown_path, _markdown(table, regenerate_command=regenerate_command)),
        (latex_path, _latex(table, regenerate_command=regenerate_command)),
    ):
        atomic_write(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))

