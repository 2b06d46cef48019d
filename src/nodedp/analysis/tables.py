"""Paper tables from a bootstrap summary: one row per (dataset, method), one column per ε, and per dataset a
majority-class reference row in the accuracy table."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodedp.io import write_text

if TYPE_CHECKING:  # imported where a table is built: planning reads this module's marks without polars
    import polars as pl

NON_PRIVATE = "non-private"
DAGGER = "†"
UNACCOUNTED_NOTE = (
    f"{DAGGER} thresholds or other parameters read from private data without charge; see the runs' ledgers."
)
# Guarantee classes weaker than unconditional get a mark (nodedp.accounting.GUARANTEE_CLASSES; docs/privacy.md
# says which methods are in which class). The class is the plan's, never the data's.
GUARANTEE_MARKS = {"conditional": "‡"}
GUARANTEE_NOTES = {
    "conditional": (
        "‡ every degree-bounded method carries this mark, whatever the graph: ε holds for every pair "
        "of neighbouring graphs within the method's public degree bound (there its degree sampling "
        "keeps every edge), and for other graphs for neighbours compared on the same sampled edge list "
        "(as in the papers), not for every pair; runs with uncharged reads (†) carry it too."
    ),
}
REFERENCE_MARK = "¶"
REFERENCE_NOTE = (
    f"{REFERENCE_MARK} reference mode (`@paper`): the noise the paper's own accounting gives the "
    "column's ε; [ε = x] is what that noise actually spends under the suite's accountant (at the "
    "suite's δ, the largest over seeds). Not private at the column's ε unless x ≤ it."
)
# A cell some of whose runs predict one class for every test node (summary column n_one_class_runs).
# Cells with a run whose plan was not re-derived from public inputs where the table was drawn (collect's replanned).
UNVERIFIED_MARK = "⊘"
UNVERIFIED_NOTE = (
    f"{UNVERIFIED_MARK} not re-derived here: a run's plan could not be re-derived from public inputs where these "
    "tables were drawn (its dataset's meta.json or the seed's split is not beside the runs, or its method's plugin "
    "is not loaded); its ledger checked itself only. `python -m nodedp verify results/` in the workspace that "
    "trained it re-derives it."
)
ONE_CLASS_MARK = "◇"
ONE_CLASS_NOTE = (
    f"{ONE_CLASS_MARK} a constant predictor: every seed's model predicts one class for all test nodes "
    f"({ONE_CLASS_MARK}k/n: k of the cell's n seeds do), so its accuracy is that class's share of the "
    "test set, not learned signal."
)
MAJORITY_LABEL = "majority class"
MAJORITY_NOTE = (
    f"{MAJORITY_LABEL.capitalize()}: the test accuracy of always predicting the training set's most frequent "
    "class (mean over the seeds' splits), a non-private reference line computed from the labels, "
    "not a trained method; a method at or below it has learned nothing useful."
)
_LATEX_MARKS = {
    "§": r"\S{}",
    "‡": r"\textsuperscript{\ddag}",
    REFERENCE_MARK: r"\P{}",
    ONE_CLASS_MARK: r"$^{\diamond}$",
    UNVERIFIED_MARK: r"$^{\oslash}$",
}

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


_LATEX_UNICODE = {
    ONE_CLASS_MARK: r"$\diamond$",
    "ε": r"$\varepsilon$",
    "δ": r"$\delta$",
    "∞": r"$\infty$",
    "≤": r"$\le$",
    "≈": r"$\approx$",
    "–": "--",
    "−": "-",
}


def latex_unicode(text: str) -> str:
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
    one_class_runs: int | None = None  # runs predicting one class for every test node (ONE_CLASS_NOTE)
    verified: bool = True  # false: some run's plan was not re-derived where the table was drawn (UNVERIFIED_MARK)

    @property
    def marks(self) -> str:
        return (
            ("" if self.verified else UNVERIFIED_MARK)
            + ("" if self.accounted else DAGGER)
            + GUARANTEE_MARKS.get(self.guarantee or "", "")
            + ("" if self.actual_epsilon is None else REFERENCE_MARK)
            + one_class_mark(self.one_class_runs, self.n_runs)
        )

    def text(self, *, max_runs: int) -> str:
        # Percent with one decimal; one run has no interval (the caption says so); a cell with fewer runs than
        # the rest says so.
        body = f"{100 * self.mean:.1f}"
        if self.n_runs > 1:
            body += f" ({100 * self.low:.1f}–{100 * self.high:.1f})"
        if self.actual_epsilon is not None:
            body += f" [ε = {format_epsilon_value(self.actual_epsilon)}]"
        return body if self.n_runs == max_runs else f"{body} [n={self.n_runs}]"


def one_class_mark(n_one_class_runs: int | None, n_runs: int) -> str:
    """A cell's mark for runs that predict one class (``ONE_CLASS_NOTE``): "◇" when all its runs do, "◇k/n" when
    k of its n do, "" when none does or it is unknown (null)."""
    if not n_one_class_runs:
        return ""
    return ONE_CLASS_MARK + ("" if n_one_class_runs == n_runs else f"{n_one_class_runs}/{n_runs}")


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
    # dataset -> its majority-class accuracy (accuracy tables of summaries that carry it): one row below its rows
    majority: dict[str, float] = field(default_factory=dict)
    dataset_notes: tuple[str, ...] = ()  # what a dataset is beyond its id (a Facebook100 union's schools)

    def groups(self) -> Iterator[tuple[str, list, float | None, tuple[bool, ...]]]:
        """(dataset, its rows, its majority-class accuracy or None, which columns it fills), datasets in order."""
        for dataset, grouped in itertools.groupby(self.rows, key=lambda row: row[0]):
            group = list(grouped)
            filled = tuple(any(cells[i] is not None for _, _, cells in group) for i in range(len(self.epsilons)))
            yield dataset, group, self.majority.get(dataset), filled

    @property
    def any_unaccounted(self) -> bool:
        return any(c is not None and not c.accounted for _, _, cells in self.rows for c in cells)

    @property
    def any_unverified(self) -> bool:
        return any(c is not None and not c.verified for _, _, cells in self.rows for c in cells)

    @property
    def guarantee_notes(self) -> list[str]:
        shown = {c.guarantee for _, _, cells in self.rows for c in cells if c is not None}
        notes = [note for cls, note in GUARANTEE_NOTES.items() if cls in shown]
        if any(c is not None and c.actual_epsilon is not None for _, _, cells in self.rows for c in cells):
            notes.append(REFERENCE_NOTE)
        if any(c is not None and c.one_class_runs for _, _, cells in self.rows for c in cells):
            notes.append(ONE_CLASS_NOTE)
        return notes


def _build(summary: pl.DataFrame, *, metric: str) -> _Table:
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
    best_mean = _best_means(summary, mean)
    cells = _cells(summary, metric, best_mean)
    # Private methods first, non-private references below them, each alphabetical.
    order = sorted(cells, key=lambda dm: (dm[0], all(math.isinf(e) for e in cells[dm]), dm[1]))
    rows = tuple((d, m, tuple(cells[(d, m)].get(e) for e in epsilons)) for d, m in order)
    majority = majority_accuracy(summary) if metric == "test_accuracy" else {}
    caption = _caption(summary, metric, bold=bool(best_mean), majority=bool(majority))
    return _Table(
        epsilons=epsilons, rows=rows, max_runs=int(summary["n_runs"].max()), caption=caption, majority=majority
    )


def _best_means(summary: pl.DataFrame, mean: str) -> dict[tuple[str, float], float]:
    """(dataset, ε) -> the best mean of the private cells competing there, where at least two do: a cell with
    uncharged reads (†) is not covered by its ε and a reference-mode cell is not private at it, so neither
    competes."""
    import polars as pl

    competing = summary.filter(~pl.col("reference").fill_null(False)) if "reference" in summary.columns else summary
    if "fully_accounted" in summary.columns:
        competing = competing.filter(pl.col("fully_accounted").fill_null(True))
    contests = (
        competing.filter(pl.col("target_epsilon").is_finite())
        .group_by("dataset", "target_epsilon")
        .agg(pl.col(mean).max().alias("best"), pl.len().alias("n_methods"))
        .filter(pl.col("n_methods") > 1)
    )
    return {(r["dataset"], r["target_epsilon"]): r["best"] for r in contests.iter_rows(named=True)}


def _cells(
    summary: pl.DataFrame, metric: str, best_mean: dict[tuple[str, float], float]
) -> dict[tuple[str, str], dict[float, _Cell]]:
    """(dataset, method) -> ε -> its cell: the interval, runs, marks, and whether it is bold (``best_mean``)."""
    mean, low, high = f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high"
    has_reference = "reference" in summary.columns
    # Optional: summaries of runs collected before uncharged reads (or constant predictions) were recorded lack it.
    has_accounted = "fully_accounted" in summary.columns
    has_one_class = "n_one_class_runs" in summary.columns
    has_replanned = "replanned" in summary.columns
    cells: dict[tuple[str, str], dict[float, _Cell]] = {}
    for r in summary.iter_rows(named=True):
        eps = r["target_epsilon"]
        cells.setdefault((r["dataset"], r["method"]), {})[eps] = _Cell(
            mean=r[mean],
            low=r[low],
            high=r[high],
            n_runs=r["n_runs"],
            best=(
                r[mean] == best_mean.get((r["dataset"], eps))
                and not (has_reference and r["reference"])
                and (not has_accounted or bool(r["fully_accounted"]))
                and r.get("replanned") is not False
            ),
            accounted=bool(r["fully_accounted"]) if has_accounted else True,
            verified=r["replanned"] is not False if has_replanned else True,
            guarantee=r.get("guarantee"),
            actual_epsilon=r["epsilon_max"] if has_reference and r["reference"] else None,
            one_class_runs=r["n_one_class_runs"] if has_one_class else None,
        )
    return cells


def _caption(summary: pl.DataFrame, metric: str, *, bold: bool, majority: bool) -> str:
    """The table's caption: the interval (seeds, confidence, resamples), then what [n=k], bold and the majority-class
    row mean where the table has them."""
    from nodedp.analysis.bootstrap import interval_text

    n_runs = summary["n_runs"]
    caption = f"{metric_label(metric).capitalize()} (%) by privacy budget ε: " + interval_text(
        n_runs.to_list(),
        confidence=single_value(summary, "confidence"),
        n_resamples=int(single_value(summary, "n_resamples")),
    )
    if n_runs.min() != n_runs.max():
        caption += " [n=k] marks a cell with fewer runs."
    if bold:
        caption += (
            " Bold: best private method per dataset and ε among cells whose ε covers every read "
            "(not reference mode, no uncharged reads)."
        )
    if majority:
        caption += f" {MAJORITY_NOTE}"
    return caption


def majority_accuracy(summary: pl.DataFrame) -> dict[str, float]:
    """Dataset -> its majority-class test accuracy: the mean over its cells with the most seeds (which share the
    seeds' splits) that carry ``test_majority_accuracy``; datasets without one are left out."""
    import polars as pl

    if "test_majority_accuracy" not in summary.columns:
        return {}
    known = summary.filter(pl.col("test_majority_accuracy").is_not_null())
    most = known.group_by("dataset").agg(pl.col("n_runs").max().alias("most"))
    rows = known.join(most, on="dataset").filter(pl.col("n_runs") == pl.col("most"))
    means = rows.group_by("dataset").agg(pl.col("test_majority_accuracy").mean())
    return dict(zip(means["dataset"].to_list(), means["test_majority_accuracy"].to_list()))


def single_value(summary: pl.DataFrame, column: str) -> float | int:
    """The one value of ``column`` in the summary (its confidence, its resamples); refuses a mix."""
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
    for dataset, group, majority, filled in table.groups():
        for _, method, cells in group:
            texts = []
            for cell in cells:
                if cell is None:
                    texts.append("—")
                else:
                    text = cell.text(max_runs=table.max_runs)
                    text = f"**{text}**" if cell.best else text
                    texts.append(text + cell.marks)
            lines.append("| " + " | ".join(map(esc, [dataset, method, *texts])) + " |")
        if majority is not None:
            texts = [f"{100 * majority:.1f}" if f else "—" for f in filled]
            lines.append("| " + " | ".join(map(esc, [dataset, f"*{MAJORITY_LABEL}*", *texts])) + " |")
    if table.any_unaccounted:
        lines += ["", UNACCOUNTED_NOTE]
    if table.any_unverified:
        lines += ["", UNVERIFIED_NOTE]
    lines += [line for note in table.guarantee_notes for line in ("", note)]
    lines += [line for note in table.dataset_notes for line in ("", esc(note))]
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
    for number, (dataset, group, majority, filled) in enumerate(table.groups()):
        if number:
            lines.append("\\midrule")
        for row, (_, method, cells) in enumerate(group):
            texts = []
            for cell in cells:
                if cell is None:
                    texts.append("--")
                else:
                    text = latex_unicode(latex_escape(cell.text(max_runs=table.max_runs)))
                    text = f"\\textbf{{{text}}}" if cell.best else text
                    marks = cell.marks.replace(DAGGER, _LATEX_DAGGER)
                    marks = re.sub(
                        rf"{ONE_CLASS_MARK}(\d+/\d+)?", lambda m: rf"\textsuperscript{{$\diamond${m[1] or ''}}}", marks
                    )
                    for mark, latex in _LATEX_MARKS.items():
                        marks = marks.replace(mark, latex)
                    texts.append(text + marks)
            shown = latex_escape(dataset) if row == 0 else ""
            lines.append(" & ".join([shown, latex_escape(method), *texts]) + " \\\\")
        if majority is not None:
            texts = [f"{100 * majority:.1f}" if f else "--" for f in filled]
            lines.append(" & ".join(["", f"\\textit{{{MAJORITY_LABEL}}}", *texts]) + " \\\\")
    # The note is a paragraph below the tabular, so it wraps at the float's width
    # instead of stretching a table column.
    note = latex_escape(table.caption).replace("ε", "$\\varepsilon$").replace("–", "--")
    if table.any_unaccounted:
        note += " " + latex_escape(UNACCOUNTED_NOTE).replace(DAGGER, _LATEX_DAGGER)
    if table.any_unverified:
        note += " " + latex_escape(UNVERIFIED_NOTE).replace(UNVERIFIED_MARK, _LATEX_MARKS[UNVERIFIED_MARK])
    for extra in table.guarantee_notes:
        extra = latex_unicode(latex_escape(extra.replace("`", "")))
        for mark, latex in _LATEX_MARKS.items():
            extra = extra.replace(mark, latex)
        note += " " + extra
    for extra in table.dataset_notes:
        note += " " + latex_escape(extra)
    lines += ["\\bottomrule", "\\end{tabular}", "\\par\\smallskip", f"{{\\footnotesize {note}\\par}}", ""]
    return "\n".join(lines)


def union_note(name: str, schools: Sequence[str], feature_columns: Sequence[str] | None = None) -> str:
    """What a table must say about a union of Facebook100 schools beyond its id: its schools and their count, so
    that a partial union is never read as ProGAP's FB-100."""
    from nodedp.data.catalog import FACEBOOK100_SCHOOLS

    count = len(schools)
    if set(schools) == set(FACEBOOK100_SCHOOLS):
        return f"{name}: all {count} Facebook100 schools (ProGAP's FB-100)."
    features = f"; features: {', '.join(feature_columns)} one-hot" if feature_columns else ""
    return (
        f"{name}: a union of {count} of the 100 Facebook100 schools, not ProGAP's FB-100{features}: "
        + ", ".join(schools)
        + "."
    )


def dataset_note(name: str, meta: Mapping[str, Any]) -> str | None:
    """``union_note`` from a graph's public ``meta.json`` (the schools it was built from: a `served` union's
    are known only there); ``None`` for a graph that is no Facebook100 union."""
    source = meta.get("source", {})
    schools = source.get("schools")
    return union_note(name, schools, source.get("feature_columns")) if schools else None


def write_tables(
    summary: pl.DataFrame,
    *,
    markdown_path: Path,
    latex_path: Path,
    metric: str = "test_accuracy",
    regenerate_command: str,
    dataset_notes: Sequence[str] = (),
) -> None:
    """Write the ``metric`` table as Markdown and as a booktabs LaTeX tabular, atomically.

    Cells read ``mean (low–high)`` in percent; the footer states seeds, confidence and
    resamples, and both files name the command that regenerates them. Where the
    summary has a ``fully_accounted`` column, cells whose runs read private data
    without charge carry a dagger, explained below the table; where it has a
    ``guarantee`` column, cells weaker than unconditional node-level DP carry
    ``GUARANTEE_MARKS``, explained the same way; where it has a ``replanned`` column, cells with a run whose plan
    was not re-derived from public inputs carry ``UNVERIFIED_MARK``. The LaTeX file
    is a tabular followed by its note paragraph, to ``\\input`` inside a table float. ``dataset_notes``
    (``dataset_note``) follow the table in both.
    """
    table = replace(_build(summary, metric=metric), dataset_notes=tuple(dataset_notes))
    for path, text in (
        (markdown_path, _markdown(table, regenerate_command=regenerate_command)),
        (latex_path, _latex(table, regenerate_command=regenerate_command)),
    ):
        write_text(path, text)
