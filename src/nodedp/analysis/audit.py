"""The audit report: per-seed audit JSONs (``python -m nodedp audit``) pooled into one lower bound per cell,
written as a table (Markdown and LaTeX); ``nodedp.analysis.audit_figure`` draws the bound against the claimed ε.

``summarize_audits`` pools a cell's seeds into one one-run audit (Steinke, Nasr & Jagielski 2023) and keeps the
best single-seed bound (Bonferroni) beside it. Why pooling is sound, when it is looser, and how to read the bound:
docs/design/analysis.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from nodedp.accounting.ledger import GUARANTEE_CLASSES
from nodedp.analysis.bootstrap import CELL_KEY
from nodedp.analysis.paper_tables import latex_ascii
from nodedp.analysis.tables import format_epsilon_value, single_value
from nodedp.audit.statistics import attack_auc, clopper_pearson_epsilon, epsilon_one_run, tpr_at_fpr
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.io import read_json, write_text

__all__ = [
    "AUDIT_SCHEMA",
    "LEGACY_RELEASES",
    "RELEASE_SEPARATOR",
    "VIOLATION_MARK",
    "read_audits",
    "require_audit_columns",
    "summarize_audits",
    "write_audit_tables",
]

# One row per audit file: the JSON's scalars, its canaries' scores and bits, and the TSTF attack where it ran.
AUDIT_SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String(),
    "dataset": pl.String(),
    "method": pl.String(),
    "base_method": pl.String(),
    "seed": pl.Int64(),
    "target_epsilon": pl.Float64(),
    "claimed_epsilon": pl.Float64(),
    "ledger_epsilon": pl.Float64(),
    "delta": pl.Float64(),
    "accounting": pl.String(),
    "guarantee": pl.String(),
    "canaries": pl.Int64(),
    "included": pl.Int64(),
    "canary_degree_bound": pl.Int64(),
    "epsilon_lower_one_run": pl.Float64(),
    "confidence": pl.Float64(),
    "one_run_guesses": pl.Int64(),
    "one_run_correct": pl.Int64(),
    "epsilon_lower_threshold": pl.Float64(),
    "auc": pl.Float64(),
    "tpr_at_1pct_fpr": pl.Float64(),
    "test_accuracy": pl.Float64(),
    "wall_seconds": pl.Float64(),
    "violated": pl.Boolean(),
    "scores": pl.List(pl.Float64()),
    "inclusion": pl.List(pl.Boolean()),
    "mia_accuracy": pl.Float64(),  # null: the audit ran without the attack
    "mia_auc": pl.Float64(),
    "total_seconds": pl.Float64(),  # timings.total_s (audit and attack); null where the file lacks it
    "git_commit": pl.String(),
    # "one-run" (canaries sharing one training run: the one-run bound) or "runs" (one canary in each of many
    # independent runs, a DP-SGD release: the Clopper–Pearson threshold bound is valid and is the bound)
    "bound": pl.String(),
}
_OPTIONAL = ("path", "mia_accuracy", "mia_auc", "total_seconds", "git_commit", "bound")
BOUNDS = ("one-run", "runs")
_REQUIRED = (*(k for k in AUDIT_SCHEMA if k not in _OPTIONAL), "mia")
ACCOUNTINGS = ("suite", "paper")

VIOLATION_MARK = "⚠ ε̂ > claimed"


# --- reading ----------------------------------------------------------------------------------------------


def _is_number(value: Any, integer: bool = False) -> bool:
    kinds = int if integer else int | float
    return isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value)


def _check_types(record: dict[str, Any], path: Path) -> None:
    bad = []
    for key in _REQUIRED:
        if key == "mia":
            continue
        dtype, value = AUDIT_SCHEMA[key], record[key]
        ok = {
            pl.Float64(): _is_number(value),
            pl.Int64(): _is_number(value, integer=True),
            pl.String(): isinstance(value, str),
            pl.Boolean(): isinstance(value, bool),
        }.get(dtype)
        if ok is None:  # the lists
            inner = bool if key == "inclusion" else (int, float)
            ok = isinstance(value, list) and all(
                isinstance(v, inner) and (key == "inclusion" or (not isinstance(v, bool) and math.isfinite(v)))
                for v in value
            )
        if not ok:
            bad.append(f"{key}={value!r}"[:80])
    if bad:
        raise ValueError(f"audit {path}: wrong types in {', '.join(bad)}")
    m = record["canaries"]
    if len(record["scores"]) != m or len(record["inclusion"]) != m:
        raise ValueError(
            f"audit {path}: {m} canaries but {len(record['scores'])} scores and "
            f"{len(record['inclusion'])} inclusion bits"
        )
    if sum(record["inclusion"]) != record["included"]:
        raise ValueError(f"audit {path}: included = {record['included']} but {sum(record['inclusion'])} bits are set")
    if record["accounting"] not in ACCOUNTINGS:
        raise ValueError(f"audit {path}: accounting {record['accounting']!r} is not one of {list(ACCOUNTINGS)}")
    if record["guarantee"] not in GUARANTEE_CLASSES:
        raise ValueError(f"audit {path}: guarantee {record['guarantee']!r} is not one of {list(GUARANTEE_CLASSES)}")


# The labels of the white-box release audits of audit files written before they were one table
# (``nodedp.audit.releases``; each release audit now carries its own ``label`` under "releases").
LEGACY_RELEASES = {"nap_release": "NAP release", "dpsgd_release": "DP-SGD release"}
# Between a run's method and a release's label in a release audit's method: "gap@paper · NAP release".
RELEASE_SEPARATOR = " · "
# What a NAP-release audit takes from the audit it belongs to (the rest is its own).
_CELL_FIELDS = ("dataset", "name", "base_method", "seed", "target_epsilon")


def _rows(path: Path) -> list[dict[str, Any]]:
    """The audit's row, and a row for each of its white-box release audits, "<method> · <label>"."""
    record = read_json(path)  # invalid JSON: a ValueError naming the file
    if not isinstance(record, dict):
        raise ValueError(f"audit {path}: expected a JSON object, got {type(record).__name__}")
    rows = [_row(path, record)]
    for key, release in _releases(record, path):
        if not isinstance(release, dict) or not isinstance(release.get("label"), str):
            raise ValueError(f"audit {path}: release {key} must be an audit object with a label")
        release = {
            **release,
            **{k: record[k] for k in _CELL_FIELDS if k in record},
            "mia": None,
            "method": f"{record.get('method')}{RELEASE_SEPARATOR}{release['label']}",
        }
        rows.append(_row(path, release))
    return rows


def _releases(record: dict[str, Any], path: Path) -> list[tuple[str, Any]]:
    """The audit's release audits, by name: its "releases" object, or an older file's ``LEGACY_RELEASES`` keys."""
    releases = record.get("releases")
    if releases is not None:
        if not isinstance(releases, dict):
            raise ValueError(f"audit {path}: releases must be an object of release audits by name")
        return list(releases.items())
    legacy = [(key, record.get(key)) for key in LEGACY_RELEASES if record.get(key) is not None]
    return [
        (key, {"label": LEGACY_RELEASES[key], **value} if isinstance(value, dict) else value) for key, value in legacy
    ]


def _row(path: Path, record: dict[str, Any]) -> dict[str, Any]:
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise ValueError(f"audit {path} lacks keys {missing} (written by an older `nodedp audit`? rerun it)")
    _check_types(record, path)
    mia = record["mia"]
    if mia is not None and not (isinstance(mia, dict) and all(_is_number(mia.get(k)) for k in ("accuracy", "auc"))):
        raise ValueError(f"audit {path}: mia must be null or hold numbers 'accuracy' and 'auc', got {mia!r}"[:300])
    timings, version = record.get("timings") or {}, record.get("version") or {}
    return {
        **{k: record[k] for k in _REQUIRED if k != "mia"},
        "path": str(path),
        "mia_accuracy": None if mia is None else float(mia["accuracy"]),
        "mia_auc": None if mia is None else float(mia["auc"]),
        "total_seconds": timings.get("total_s") if isinstance(timings, dict) else None,
        "git_commit": version.get("git_commit") if isinstance(version, dict) else None,
        "bound": _bound_kind(record, path),
    }


def _bound_kind(record: dict[str, Any], path: Path) -> str:
    bound = record.get("bound", "one-run")
    if bound not in BOUNDS:
        raise ValueError(f"audit {path}: bound must be one of {list(BOUNDS)}, got {bound!r}")
    return bound


def _check_unique(frame: pl.DataFrame) -> None:
    """Each (cell, seed) once: a run counted twice would pool its canaries twice, which the bound does not allow."""
    twice = frame.filter(pl.struct(*CELL_KEY, "seed").is_duplicated())
    if twice.height:
        first = twice.row(0, named=True)
        where = twice.filter(
            (pl.col("seed") == first["seed"]) & pl.all_horizontal(pl.col(k) == first[k] for k in CELL_KEY)
        )
        names = ": " + ", ".join(map(str, where["path"].to_list())) if "path" in where.columns else ""
        raise ValueError(
            f"{first['method']} on {first['dataset']} at ε = {first['target_epsilon']:g}, seed "
            f"{first['seed']}, is audited more than once{names}; keep one file per seed"
        )


def read_audits(paths: Sequence[str | Path]) -> pl.DataFrame:
    """One row per audit JSON (``AUDIT_SCHEMA``), in the order given, followed by the rows of its release audits
    where it has them (methods labelled "<method> · <release label>"). A file that is not valid JSON, lacks keys
    (named), has wrongly typed ones or inconsistent canaries raises ``ValueError`` naming it; so do two files of
    the same cell and seed."""
    if not paths:
        raise ValueError("no audit files given")
    frame = pl.DataFrame([row for p in paths for row in _rows(Path(p))], schema=AUDIT_SCHEMA)
    _check_unique(frame)
    return frame


def mia_summary(
    frame: pl.DataFrame, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> pl.DataFrame:
    """The membership-inference attack's accuracy and AUC per (dataset, method, target ε) in the training
    summary's format (``nodedp.analysis.bootstrap.summarize``: mean and percentile-bootstrap interval over the
    seeds, ``n_runs``), for the paper tables that report attack accuracy (NIP-GNN's Table 4). Only the model
    audits that ran the attack count (NAP-release rows have none); ``epsilon`` is each run's ledger ε."""
    from nodedp.analysis.bootstrap import summarize

    runs = frame.filter(pl.col("mia_accuracy").is_not_null())
    if runs.is_empty():
        raise ValueError("no audit ran the membership-inference attack (audit without --no-mia)")
    runs = runs.select(
        *CELL_KEY,
        "seed",
        "guarantee",
        "base_method",
        "mia_accuracy",
        "mia_auc",
        pl.col("ledger_epsilon").alias("epsilon"),
    )
    return summarize(
        runs, metrics=("mia_accuracy", "mia_auc"), n_resamples=n_resamples, confidence=confidence, seed=seed
    )


# --- pooling ----------------------------------------------------------------------------------------------


def summarize_audits(frame: pl.DataFrame, confidence: float = 0.95, seed: int | None = None) -> pl.DataFrame:
    """One row per (dataset, method, target ε), sorted by it: every seed's canaries pooled (module docstring).

    Columns: the key, ``base_method``, ``seeds``, ``canaries`` (total over seeds), ``canaries_per_seed`` (null
    where seeds differ), ``included``, ``claimed_epsilon``/``ledger_epsilon``/``delta`` (max over seeds: the
    pooled mechanism is as private as its worst run), ``accounting``, ``guarantee`` (the weakest), ``confidence``,
    ``epsilon_lower`` (the pooled one-run bound), ``one_run_guesses``/``one_run_correct`` (its grid point),
    ``epsilon_lower_threshold`` (Clopper–Pearson on the pooled scores; it assumes independent canaries, which
    canaries sharing a model are not, so it is descriptive), ``auc``, ``tpr_at_1pct_fpr`` (pooled), ``violated``
    (``epsilon_lower > claimed_epsilon``), ``epsilon_lower_best_seed`` (the largest one-seed bound, each at
    confidence 1 − (1 − ``confidence``)/seeds so that all hold together at ``confidence``; it equals the pooled one
    for one seed), ``seeds_violated`` (seeds whose corrected bound exceeds their own claim: more than 0 refutes a
    claim at ``confidence`` too, which ``violated`` does not include), ``mia_seeds``,
    ``mia_accuracy_mean``/``_min``/``_max``, ``mia_auc_mean`` (null where no seed ran the attack),
    ``test_accuracy_mean``, ``wall_seconds`` (total).

    ``seed`` breaks ties in the scores (``epsilon_one_run``'s ``seed``); None, the default, takes the cell's first
    (smallest) seed, which is what ``nodedp.audit.run`` passes for a single run (its own seed), so a one-seed cell
    reproduces that seed's stored bound exactly.
    """
    missing = [c for c in AUDIT_SCHEMA if c not in _OPTIONAL and c not in frame.columns]
    missing += [c for c in ("mia_accuracy", "mia_auc") if c not in frame.columns]
    if missing:
        raise ValueError(f"audit frame lacks columns {missing}; build it with read_audits")
    if frame.is_empty():
        raise ValueError("audit frame is empty: nothing to summarize")
    _check_unique(frame)
    rows = []
    for key, runs in frame.sort(*CELL_KEY, "seed").group_by(*CELL_KEY, maintain_order=True):
        rows.append(_pool(dict(zip(CELL_KEY, key)), runs, confidence=confidence, seed=seed))
    return pl.DataFrame(rows, schema=_SUMMARY_SCHEMA).sort(*CELL_KEY)


def _one(runs: pl.DataFrame, column: str, cell: dict[str, Any]) -> Any:
    values = runs[column].unique().to_list()
    if len(values) != 1:
        raise ValueError(
            f"{cell['method']} on {cell['dataset']} at ε = {cell['target_epsilon']:g}: its seeds "
            f"disagree on {column} ({values}); they are not one cell"
        )
    return values[0]


def _pool(cell: dict[str, Any], runs: pl.DataFrame, *, confidence: float, seed: int | None) -> dict[str, Any]:
    scores = np.concatenate([np.asarray(s, dtype=np.float64) for s in runs["scores"].to_list()])
    inclusion = np.concatenate([np.asarray(b, dtype=bool) for b in runs["inclusion"].to_list()])
    delta = float(runs["delta"].max())
    tie_break = int(runs["seed"].min()) if seed is None else seed
    one_run = epsilon_one_run(scores, inclusion, delta=delta, confidence=confidence, seed=tie_break)
    # Each seed alone, the confidence split over the seeds; each at its own δ and seed, as nodedp.audit.run bounds it.
    corrected = 1 - (1 - confidence) / runs.height
    alone = np.array(
        [
            epsilon_one_run(
                r["scores"],
                r["inclusion"],
                delta=r["delta"],
                confidence=corrected,
                seed=r["seed"] if seed is None else seed,
            ).epsilon
            for r in runs.iter_rows(named=True)
        ]
    )
    claimed = float(runs["claimed_epsilon"].max())
    threshold = clopper_pearson_epsilon(scores, inclusion, delta=delta, confidence=confidence).epsilon
    bound = _one(runs.with_columns(pl.col("bound").fill_null("one-run")), "bound", cell)
    # Independent runs (a DP-SGD release): the threshold bound is valid there, and far stronger at a large δ.
    lower = threshold if bound == "runs" else one_run.epsilon
    per_seed = runs["canaries"].unique()
    mia = runs["mia_accuracy"].drop_nulls()
    return {
        **cell,
        "base_method": _one(runs, "base_method", cell),
        "seeds": runs.height,
        "canaries": int(runs["canaries"].sum()),
        "canaries_per_seed": int(per_seed[0]) if per_seed.len() == 1 else None,
        "included": int(runs["included"].sum()),
        "claimed_epsilon": claimed,
        "ledger_epsilon": float(runs["ledger_epsilon"].max()),
        "delta": delta,
        "accounting": _one(runs, "accounting", cell),
        "guarantee": max(runs["guarantee"].to_list(), key=GUARANTEE_CLASSES.index),
        "confidence": confidence,
        "tie_break_seed": tie_break,
        "epsilon_lower": lower,
        "bound": bound,
        "one_run_guesses": one_run.guesses,
        "one_run_correct": one_run.correct,
        "epsilon_lower_threshold": threshold,
        "auc": attack_auc(scores, inclusion),
        "tpr_at_1pct_fpr": tpr_at_fpr(scores, inclusion, fpr=0.01),
        "violated": lower > claimed,
        "epsilon_lower_best_seed": float(alone.max()),
        "seeds_violated": int((alone > runs["claimed_epsilon"].to_numpy()).sum()),
        "mia_seeds": mia.len(),
        "mia_accuracy_mean": float(mia.mean()) if mia.len() else None,
        "mia_accuracy_min": float(mia.min()) if mia.len() else None,
        "mia_accuracy_max": float(mia.max()) if mia.len() else None,
        "mia_auc_mean": float(runs["mia_auc"].drop_nulls().mean()) if mia.len() else None,
        "test_accuracy_mean": float(runs["test_accuracy"].mean()),
        "wall_seconds": float(runs["wall_seconds"].sum()),
    }


_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(),
    "method": pl.String(),
    "target_epsilon": pl.Float64(),
    "base_method": pl.String(),
    "seeds": pl.Int64(),
    "canaries": pl.Int64(),
    "canaries_per_seed": pl.Int64(),
    "included": pl.Int64(),
    "claimed_epsilon": pl.Float64(),
    "ledger_epsilon": pl.Float64(),
    "delta": pl.Float64(),
    "accounting": pl.String(),
    "guarantee": pl.String(),
    "confidence": pl.Float64(),
    "tie_break_seed": pl.Int64(),
    "epsilon_lower": pl.Float64(),
    "bound": pl.String(),
    "one_run_guesses": pl.Int64(),
    "one_run_correct": pl.Int64(),
    "epsilon_lower_threshold": pl.Float64(),
    "auc": pl.Float64(),
    "tpr_at_1pct_fpr": pl.Float64(),
    "violated": pl.Boolean(),
    "epsilon_lower_best_seed": pl.Float64(),
    "seeds_violated": pl.Int64(),
    "mia_seeds": pl.Int64(),
    "mia_accuracy_mean": pl.Float64(),
    "mia_accuracy_min": pl.Float64(),
    "mia_accuracy_max": pl.Float64(),
    "mia_auc_mean": pl.Float64(),
    "test_accuracy_mean": pl.Float64(),
    "wall_seconds": pl.Float64(),
}


# --- tables -----------------------------------------------------------------------------------------------

_HEADER = (
    "Dataset",
    "Method",
    "ε claimed (δ)",
    "Accounting",
    "ε̂ lower bound",
    "Threshold bound",
    "AUC",
    "TPR@1%FPR",
    "MIA accuracy (%)",
    "Canaries × seeds",
    "Guarantee",
)
_ACCOUNTING_TEXT = {"suite": "suite (ledger)", "paper": "paper (its claim)"}
# Characters the LaTeX helpers of paper_tables do not know, as LaTeX that needs no package.
_LATEX_TOKENS = {"ε̂": r"$\hat{\varepsilon}$", "⚠": r"\textbf{!}"}
_LATEX_TOKEN_RE = re.compile("(" + "|".join(map(re.escape, _LATEX_TOKENS)) + ")")


def _latex_text(text: str) -> str:
    return "".join(_LATEX_TOKENS.get(part) or latex_ascii(part) for part in _LATEX_TOKEN_RE.split(text))


def require_audit_columns(summary: pl.DataFrame, columns: Sequence[str], purpose: str) -> None:
    """Refuse an empty audit summary, or one without ``columns``, naming them and ``purpose``."""
    if summary.is_empty():
        raise ValueError(f"audit summary is empty: nothing to {purpose}")
    missing = [c for c in columns if c not in summary.columns]
    if missing:
        raise ValueError(f"audit summary lacks columns {missing} needed to {purpose}; build it with summarize_audits")


def _cells(r: dict[str, Any]) -> list[str]:
    runs = ", independent runs" if r["bound"] == "runs" else ""
    bound = f"{format_epsilon_value(r['epsilon_lower'])} ({100 * r['confidence']:g}%{runs})"
    if r["violated"]:
        bound += f" {VIOLATION_MARK}"
    if r["mia_accuracy_mean"] is None:
        mia = "—"
    else:
        mia = f"{100 * r['mia_accuracy_mean']:.1f}"
        if r["mia_seeds"] > 1:
            mia += f" [{100 * r['mia_accuracy_min']:.1f}–{100 * r['mia_accuracy_max']:.1f}]"
    actual = f"; actual ε = {format_epsilon_value(r['ledger_epsilon'])}" if r["accounting"] == "paper" else ""
    per_seed = r["canaries_per_seed"]
    canaries = f"{per_seed} × {r['seeds']}" if per_seed is not None else f"{r['canaries']} in all × {r['seeds']}"
    return [
        r["dataset"],
        r["method"],
        f"{format_epsilon_value(r['claimed_epsilon'])} (δ = {r['delta']:g})",
        _ACCOUNTING_TEXT[r["accounting"]] + actual,
        bound,
        format_epsilon_value(r["epsilon_lower_threshold"]),
        f"{r['auc']:.3f}",
        f"{r['tpr_at_1pct_fpr']:.3f}",
        mia,
        canaries,
        r["guarantee"],
    ]


def _notes(summary: pl.DataFrame) -> tuple[str, list[str]]:
    confidence = single_value(summary, "confidence")
    caption = (
        f"Empirical privacy audit: ε̂ is the one-run lower bound on ε (Steinke, Nasr & Jagielski 2023) at "
        f"{100 * confidence:g}% confidence and each row's claimed δ, from the canaries of all its seeds pooled "
        "into one mechanism (each canary's inclusion touches one run), against the largest ε its runs claim."
    )
    notes = []
    if summary["violated"].any():
        notes.append(
            f"{VIOLATION_MARK}: the audit refutes the row's claimed ε at {100 * confidence:g}% confidence. "
            "On a suite row that is a bug in the method or its accounting; on a reference row "
            f"(`{REFERENCE_SUFFIX}`, the paper's accounting) it refutes the paper's claimed ε."
        )
    notes.append(
        "ε̂ is a lower bound, and one-run audits are loose: ε̂ below the claimed ε does not certify the "
        "claim, it only fails to refute it. Pooling adds canaries but also grows the bound's δ term "
        "(2·m·δ over all m canaries), so a pooled ε̂ can lie below a single seed's."
    )
    notes.append(
        "Threshold bound: the best score threshold with Clopper–Pearson intervals; it assumes independent "
        "canaries, which canaries sharing a trained model are not, so it is descriptive, except on "
        'rows marked "independent runs" (a release audit: one canary per simulated run or per synthetic '
        "canary sharing no noise), where it is "
        "valid and is ε̂. AUC and TPR@1%FPR: of the canary scores, pooled."
    )
    if summary["method"].str.contains(" · ").any():
        notes.append(
            "· <release>: white-box audits of each release the run's ledger records (nodedp.audit.releases), "
            "with canaries that reach the mechanism's sensitivity, NAP and DP-SGD drawn with the noise the run "
            "drew (its noise trace), the others with the ledger record's; the canaries column counts their "
            "canaries or runs."
        )
    if summary["mia_accuracy_mean"].is_not_null().any():
        notes.append(
            "MIA accuracy: the TSTF membership-inference attack's accuracy (%) on balanced members and "
            "non-members (50% is chance), mean [min–max] over seeds."
        )
    return caption, notes


def write_audit_tables(summary: pl.DataFrame, *, markdown: Path, latex: Path, regenerate_command: str) -> None:
    """Write the audit table (``summarize_audits``) as Markdown and as a booktabs LaTeX tabular with its note
    paragraph (to ``\\input`` inside a table float, like ``nodedp.analysis.tables``), both atomically. A violated
    row carries ``VIOLATION_MARK``, explained below the table."""
    require_audit_columns(summary, tuple(_SUMMARY_SCHEMA), "write the audit table")
    caption, notes = _notes(summary)
    rows = [_cells(r) for r in summary.iter_rows(named=True)]

    def esc(text: str) -> str:
        return text.replace("|", r"\|")

    md = [
        f"Table: {caption}",
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|" + "|".join([":---"] * 4 + ["---:"] * 6 + [":---"]) + "|",
    ]
    md += ["| " + " | ".join(map(esc, row)) + " |" for row in rows]
    md += [line for note in notes for line in ("", note)]
    md += ["", f"Regenerate with: `{regenerate_command}`", ""]

    tex = [
        "% Generated by nodedp.analysis.audit; do not edit by hand.",
        f"% Regenerate with: {regenerate_command}",
        "\\begingroup\\scriptsize",
        "\\begin{tabular}{llll" + "r" * 6 + "l}",
        "\\toprule",
        " & ".join(map(_latex_text, _HEADER)) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            tex.append("\\midrule")
        shown = _latex_text(row[0]) if row[0] != previous else ""
        tex.append(" & ".join([shown, *map(_latex_text, row[1:])]) + " \\\\")
        previous = row[0]
    note = " ".join(_latex_text(text) for text in [caption, *notes])
    tex += ["\\bottomrule", "\\end{tabular}", "\\par\\smallskip", f"{{\\footnotesize {note}\\par}}", "\\endgroup", ""]

    for path, text in ((markdown, "\n".join(md)), (latex, "\n".join(tex))):
        write_text(path, text)
