"""Reproduction and claimed-vs-actual ε tables, from a study's summary alone.

*Reproduction*: each published cell the study ran beside the suite's reference-mode and suite-accounted runs,
with a within/miss verdict. *Claimed vs actual*: each reference cell's claimed ε against the ε its noise spends.
*Crossover*: the smallest ε at which each private method beats DP-MLP. Definitions: docs/design/analysis.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from nodedp.analysis.published import PAPERS, STAND_INS, published_for, stands_in_for
from nodedp.analysis.tables import DAGGER, format_epsilon_value, latex_escape, latex_unicode
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.io import write_text

if TYPE_CHECKING:  # imported where rows are built: planning reads this module's marks without polars
    import polars as pl

__all__ = [
    "CROSSOVER_BASELINE",
    "REPRODUCTION_TOLERANCE",
    "claims_rows",
    "crossover_rows",
    "reproduction_rows",
    "write_reproduction_tables",
]

CROSSOVER_BASELINE = "dp-mlp"

REPRODUCTION_TOLERANCE = 3.0  # points: within max(this, the paper's ±) counts as reproduced
STAND_IN_MARK = "≈"
UNACCOUNTED_NOTE = (
    f"{DAGGER} the paper's rule read private data without charge (see the ledger's uncharged reads): "
    "the actual ε does not cover those reads."
)


def _cell_text(row: dict | None) -> str:
    if row is None:
        return "—"
    m, lo, hi = (100 * row[f"test_accuracy_{k}"] for k in ("mean", "ci_low", "ci_high"))
    return f"{m:.1f}" if row.get("n_runs") == 1 else f"{m:.1f} ({lo:.1f}–{hi:.1f})"  # one seed: no interval


def _index(summary: pl.DataFrame) -> dict[tuple[str, str, float], dict]:
    return {(r["dataset"], r["method"], r["target_epsilon"]): r for r in summary.iter_rows(named=True)}


def _eps_text(epsilon: float) -> str:
    return "∞" if math.isinf(epsilon) else f"{epsilon:g}"


def reproduction_rows(summary: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the reproduction table (module docstring)."""
    cells = _index(summary)
    header = [
        "Paper",
        "Dataset",
        "Method",
        "ε",
        "Paper",
        "Reference mode [actual ε]",
        "Suite accounting",
        "Δ (ref − paper)",
        "Verdict",
    ]
    rows = []
    keys = sorted({(d, m.removesuffix(REFERENCE_SUFFIX), e) for d, m, e in cells})
    for dataset, method, eps in keys:
        suite = cells.get((dataset, method, eps))
        ref = cells.get((dataset, method + REFERENCE_SUFFIX, eps))
        for pub, stand_in in published_for(dataset, method, eps):
            compared = ref if ref is not None else suite
            if compared is None:
                continue
            paper = f"{pub.accuracy:.1f}" + ("" if pub.ci is None else f" ± {pub.ci:.1f}")
            ref_text = _cell_text(ref)
            if ref is not None:
                ref_text += f" [ε = {format_epsilon_value(ref['epsilon_max'])}]"
                ref_text += "" if ref["fully_accounted"] else DAGGER
            diff = 100 * compared["test_accuracy_mean"] - pub.accuracy
            tolerance = max(REPRODUCTION_TOLERANCE, pub.ci or 0.0)
            verdict = "within" if abs(diff) <= tolerance else "miss"
            if ref is None:
                verdict += " (suite run)" if math.isfinite(eps) else ""
            rows.append(
                [
                    pub.paper,
                    dataset + (STAND_IN_MARK if stand_in else ""),
                    method,
                    _eps_text(eps),
                    paper,
                    ref_text,
                    _cell_text(suite),
                    f"{diff:+.1f}",
                    verdict,
                ]
            )
    rows.sort(key=lambda r: (r[0], r[1], r[3], r[2]))
    return header, rows


def _delta_text(delta: float | None) -> str:
    return f"{delta:.0e}" if delta else "0 (pure ε)"


def claims_rows(summary: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the claimed-vs-actual ε table (module docstring)."""
    import polars as pl

    header = [
        "Dataset",
        "Method",
        "Claimed ε",
        "Paper δ",
        "Actual ε at paper δ",
        "Suite δ",
        "Actual ε at suite δ",
        "Actual / claimed",
    ]
    rows = []
    ref = summary.filter(pl.col("reference")) if "reference" in summary.columns else summary.clear()
    for r in ref.sort("dataset", "method", "target_epsilon").iter_rows(named=True):
        claimed, actual = r["target_epsilon"], r["claim_actual_epsilon_max"]
        mark = "" if r["fully_accounted"] else DAGGER
        rows.append(
            [
                r["dataset"],
                r["method"],
                f"{claimed:g}",
                _delta_text(r["claimed_delta"]),
                format_epsilon_value(actual) + mark,
                _delta_text(r["delta"]),
                format_epsilon_value(r["epsilon_max"]) + mark,
                "∞" if math.isinf(actual) else f"{format_epsilon_value(actual / claimed)}×",
            ]
        )
    return header, rows


def crossover_rows(summary: pl.DataFrame, *, baseline: str = CROSSOVER_BASELINE) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the crossover table (module docstring); empty where the study lacks the baseline."""
    import polars as pl

    header = ["Dataset", "Method", "ε grid", "First ε: mean above " + baseline, "First ε: interval above " + baseline]
    cells = _index(summary)
    rows = []
    private = summary.filter(pl.col("target_epsilon").is_finite())
    if "reference" in private.columns:
        private = private.filter(~pl.col("reference"))
    for dataset, method in sorted(set(zip(private["dataset"], private["method"], strict=True))):
        if method == baseline:
            continue
        grid = sorted(e for d, m, e in cells if d == dataset and m == method and (d, baseline, e) in cells)
        if not grid:
            continue
        first_mean = first_ci = None
        for eps in grid:
            mine, base = cells[(dataset, method, eps)], cells[(dataset, baseline, eps)]
            if first_mean is None and mine["test_accuracy_mean"] > base["test_accuracy_mean"]:
                first_mean = eps
            if first_ci is None and mine["test_accuracy_ci_low"] > base["test_accuracy_ci_high"]:
                first_ci = eps
        never = f"none ≤ {grid[-1]:g}"
        rows.append(
            [
                dataset,
                method,
                ", ".join(f"{e:g}" for e in grid),
                never if first_mean is None else f"{first_mean:g}",
                never if first_ci is None else f"{first_ci:g}",
            ]
        )
    return header, rows


def _markdown(title: str, header: list[str], rows: list[list[str]], notes: list[str], command: str) -> str:
    lines = [f"Table: {title}", ""]
    if not rows:
        lines += ["(no cell of this study belongs in this table)", ""]
    else:
        lines += ["| " + " | ".join(header) + " |", "|" + "|".join([":---"] * 3 + ["---:"] * (len(header) - 3)) + "|"]
        lines += ["| " + " | ".join(c.replace("|", r"\|") for c in row) + " |" for row in rows]
        lines.append("")
    lines += [line for note in notes for line in (note, "")]
    lines += [f"Regenerate with: `{command}`", ""]
    return "\n".join(lines)


def _latex(title: str, header: list[str], rows: list[list[str]], notes: list[str], command: str) -> str:
    def tex(text: str) -> str:
        return latex_unicode(latex_escape(text)).replace(DAGGER, r"\textsuperscript{\dag}").replace("×", r"$\times$")

    lines = [
        "% Generated by nodedp.analysis.reproduction; do not edit by hand.",
        f"% Regenerate with: {command}",
        f"% {title}",
        "\\begin{tabular}{lll" + "r" * (len(header) - 3) + "}",
        "\\toprule",
        " & ".join(tex(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(tex(c) for c in row) + " \\\\" for row in rows]
    note = " ".join(tex(n.replace("`", "")) for n in [title, *notes])
    lines += ["\\bottomrule", "\\end{tabular}", "\\par\\smallskip", f"{{\\footnotesize {note}\\par}}", ""]
    return "\n".join(lines)


def write_reproduction_tables(
    summary: pl.DataFrame,
    *,
    reproduction_md: Path,
    reproduction_tex: Path,
    claims_md: Path,
    claims_tex: Path,
    crossover_md: Path,
    crossover_tex: Path,
    regenerate_command: str,
) -> tuple[int, int, int]:
    """Write the three tables as Markdown and LaTeX, atomically; returns their row counts."""
    header, rows = reproduction_rows(summary)
    n_runs = summary["n_runs"]
    seeds = (
        f"{n_runs.max()}"
        if summary.height and n_runs.min() == n_runs.max()
        else (f"{n_runs.min()}–{n_runs.max()}" if summary.height else "0")
    )
    title = (
        f"Published test accuracy (%) beside the suite's runs: reference mode (@paper, the paper's accounting) "
        f"and suite accounting, mean over {seeds} seeds with bootstrap interval. Within: |Δ| ≤ max("
        f"{REPRODUCTION_TOLERANCE:g}, the paper's ±) points."
    )
    notes = [f"{key}: {text}" for key, text in PAPERS.items() if any(r[0] == key for r in rows)]
    stood_in = {stands_in_for(r[1].removesuffix(STAND_IN_MARK)) for r in rows if r[1].endswith(STAND_IN_MARK)}
    notes += [f"{STAND_IN_MARK} {s.note}" for key, s in STAND_INS.items() if key in stood_in]
    if any(DAGGER in r[5] for r in rows):
        notes.append(UNACCOUNTED_NOTE)
    c_header, c_rows = claims_rows(summary)
    c_title = (
        "ε claimed by each paper's accounting for the noise of its reference runs (@paper), and the ε that "
        "noise actually spends under the suite's accountant (largest over seeds), at the paper's δ and at "
        "the suite's δ (the ε the suite would have to state)."
    )
    c_notes = [UNACCOUNTED_NOTE] if any(DAGGER in r[4] for r in c_rows) else []
    x_header, x_rows = crossover_rows(summary)
    x_title = (
        f"Crossover under the suite's accounting: the smallest ε of the grid at which each private method's "
        f"mean test accuracy exceeds {CROSSOVER_BASELINE}'s, and at which its {seeds}-seed bootstrap "
        f"interval lies wholly above {CROSSOVER_BASELINE}'s."
    )
    for md, tex, args in (
        (reproduction_md, reproduction_tex, (title, header, rows, notes)),
        (claims_md, claims_tex, (c_title, c_header, c_rows, c_notes)),
        (crossover_md, crossover_tex, (x_title, x_header, x_rows, [])),
    ):
        for path, text in ((md, _markdown(*args, regenerate_command)), (tex, _latex(*args, regenerate_command))):
            write_text(path, text)
    return len(rows), len(c_rows), len(x_rows)
