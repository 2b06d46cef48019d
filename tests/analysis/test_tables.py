from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from nodedp.analysis.tables import (
    GUARANTEE_MARKS,
    GUARANTEE_NOTES,
    MAJORITY_LABEL,
    ONE_CLASS_NOTE,
    UNACCOUNTED_NOTE,
    latex_escape,
    write_tables,
)

COMMAND = "snakemake --cores 2 paper/tables/accuracy.md"


def cell(dataset: str, method: str, eps: float, mean: float, *, n_runs: int = 5) -> dict:
    return {
        "dataset": dataset,
        "method": method,
        "target_epsilon": eps,
        "n_runs": n_runs,
        "epsilon_mean": eps,
        "test_accuracy_mean": mean,
        "test_accuracy_ci_low": mean - 0.013,
        "test_accuracy_ci_high": mean + 0.013,
        "confidence": 0.95,
        "n_resamples": 1000,
    }


def fake_summary(**overrides: int) -> pl.DataFrame:
    return pl.DataFrame(
        [
            cell("cora", "dp_mlp", 8.0, 0.65),
            cell("cora", "dp_mlp", 0.5, 0.40),
            cell("cora", "gap", 0.5, 0.45),
            cell("cora", "gap", 8.0, 0.712, **overrides),
            cell("cora", "gcn", math.inf, 0.80),
            cell("amazon", "gap", 1.0, 0.55),
        ]
    )


def write(tmp_path: Path, summary: pl.DataFrame) -> tuple[str, str]:
    md, tex = tmp_path / "t" / "acc.md", tmp_path / "t" / "acc.tex"
    write_tables(summary, markdown_path=md, latex_path=tex, regenerate_command=COMMAND)
    return md.read_text(encoding="utf-8"), tex.read_text(encoding="utf-8")


def table_lines(markdown: str) -> list[list[str]]:
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in rows]


def test_markdown_layout_epsilon_columns_sorted_non_private_last(tmp_path: Path) -> None:
    markdown, _ = write(tmp_path, fake_summary())
    header, _, *rows = table_lines(markdown)
    assert header == ["Dataset", "Method", "ε = 0.5", "ε = 1", "ε = 8", "non-private"]
    # Datasets sorted; private methods before the non-private reference.
    assert [r[:2] for r in rows] == [["amazon", "gap"], ["cora", "dp_mlp"], ["cora", "gap"], ["cora", "gcn"]]
    assert rows[2][4] == "**71.2 (69.9–72.5)**"
    assert rows[1][4] == "65.0 (63.7–66.3)"
    assert rows[3][5] == "80.0 (78.7–81.3)"
    assert rows[3][2] == "—" and rows[1][5] == "—"


def test_bold_only_the_best_private_method_where_several_compete(tmp_path: Path) -> None:
    markdown, _ = write(tmp_path, fake_summary())
    rows = table_lines(markdown)[2:]
    bold = {(r[0], r[1], i) for r in rows for i, c in enumerate(r) if c.startswith("**")}
    # amazon has one private method per ε (nothing to win); gcn is non-private.
    assert bold == {("cora", "gap", 2), ("cora", "gap", 4)}


def test_footer_states_seeds_confidence_resamples_and_command(tmp_path: Path) -> None:
    markdown, latex = write(tmp_path, fake_summary())
    for text in (markdown, latex):
        assert "mean over 5 seeds" in text
        assert "95% percentile-bootstrap" in text or r"95\% percentile-bootstrap" in text
        assert "1000 resamples" in text
        assert COMMAND in text
    assert "[n=" not in markdown


def test_cells_with_fewer_runs_are_flagged(tmp_path: Path) -> None:
    markdown, _ = write(tmp_path, fake_summary(n_runs=3))
    assert "mean over 3–5 seeds" in markdown
    assert "**71.2 (69.9–72.5) [n=3]**" in markdown
    assert markdown.count("[n=") == 2  # the cell and the caption's explanation


def test_latex_is_a_booktabs_tabular_with_escaped_names(tmp_path: Path) -> None:
    _, latex = write(tmp_path, fake_summary())
    lines = latex.splitlines()
    assert "\\begin{tabular}{llrrrr}" in lines
    assert lines.index("\\toprule") < lines.index("\\bottomrule")
    eps = " & ".join(f"$\\varepsilon = {e}$" for e in ("0.5", "1", "8"))
    assert f"Dataset & Method & {eps} & non-private \\\\" in lines
    assert "cora & dp\\_mlp & 40.0 (38.7--41.3) & -- & 65.0 (63.7--66.3) & -- \\\\" in lines
    assert " & gap & \\textbf{45.0 (43.7--46.3)} & -- & \\textbf{71.2 (69.9--72.5)} & -- \\\\" in lines
    # A rule separates datasets; no unescaped underscore or per-cent sign outside comments.
    assert lines.count("\\midrule") == 2
    body = [line for line in lines if not line.startswith("%")]
    assert all("_" not in line.replace("\\_", "") for line in body)
    assert all("%" not in line.replace("\\%", "") for line in body)


def test_latex_escape() -> None:
    assert latex_escape("a_b & 50% #1 {x} $y ~ ^ \\") == (
        r"a\_b \& 50\% \#1 \{x\} \$y \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )


def test_other_metric_and_clear_error_for_a_missing_one(tmp_path: Path) -> None:
    summary = fake_summary()
    match = r"lacks columns .*test_macro_f1_mean.*metrics available: \['test_accuracy'\]"
    with pytest.raises(ValueError, match=match):
        write_tables(
            summary,
            markdown_path=tmp_path / "a.md",
            latex_path=tmp_path / "a.tex",
            metric="test_macro_f1",
            regenerate_command=COMMAND,
        )
    renamed = summary.rename({c: c.replace("test_accuracy", "val_accuracy") for c in summary.columns})
    write_tables(
        renamed,
        markdown_path=tmp_path / "v.md",
        latex_path=tmp_path / "v.tex",
        metric="val_accuracy",
        regenerate_command=COMMAND,
    )
    assert (tmp_path / "v.md").read_text(encoding="utf-8").startswith("Table: Validation accuracy (%)")


def test_refuses_an_empty_summary_and_mixed_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="summary is empty"):
        write(tmp_path, fake_summary().clear())
    mixed = fake_summary().with_columns(
        pl.when(pl.col("method") == "gcn").then(2000).otherwise(1000).alias("n_resamples")
    )
    with pytest.raises(ValueError, match="mixes several n_resamples"):
        write(tmp_path, mixed)
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


def test_cells_with_runs_not_fully_accounted_get_a_dagger_and_a_note(tmp_path: Path) -> None:
    accounted = pl.col("method") != "gap"
    summary = fake_summary().with_columns(accounted.alias("fully_accounted"))
    markdown, latex = write(tmp_path, summary)
    rows = table_lines(markdown)[2:]
    marked = {(r[0], r[1], i) for r in rows for i, c in enumerate(r) if c.endswith("†")}
    assert marked == {("amazon", "gap", 3), ("cora", "gap", 2), ("cora", "gap", 4)}
    # a † cell's ε does not cover it: it never competes for bold (dp_mlp is then alone: nothing to win)
    assert rows[2][4] == "71.2 (69.9–72.5)†"
    assert not any(c.startswith("**") for r in rows for c in r)
    assert UNACCOUNTED_NOTE in markdown.splitlines()
    assert " & gap & 45.0 (43.7--46.3)\\textsuperscript{\\dag} & -- &" in latex
    assert "\\textsuperscript{\\dag} thresholds or other parameters read from private data" in latex
    assert "†" not in latex  # LaTeX gets the \dag command, not the unicode character


def test_the_best_fully_accounted_method_gets_bold_over_a_better_dagger_cell(tmp_path: Path) -> None:
    summary = pl.concat([fake_summary(), pl.DataFrame([cell("cora", "probe", 8.0, 0.90)])])
    summary = summary.with_columns((pl.col("method") != "probe").alias("fully_accounted"))
    rows = table_lines(write(tmp_path, summary)[0])[2:]
    by_method = {r[1]: r for r in rows if r[0] == "cora"}
    assert by_method["probe"][4] == "90.0 (88.7–91.3)†"
    assert by_method["gap"][4] == "**71.2 (69.9–72.5)**"


@pytest.mark.parametrize("column", [None, True], ids=["absent", "all-accounted"])
def test_no_dagger_and_no_note_when_every_run_is_accounted(tmp_path: Path, column: bool | None) -> None:
    summary = fake_summary()
    if column is not None:
        summary = summary.with_columns(pl.lit(column).alias("fully_accounted"))
    markdown, latex = write(tmp_path, summary)
    assert "†" not in markdown and "\\dag" not in latex


def test_cells_weaker_than_unconditional_carry_their_guarantee_mark_and_note(tmp_path: Path) -> None:
    guarantee = (
        pl.when(pl.col("method") == "gap")
        .then(pl.lit("conditional"))
        .when(pl.col("method") == "gcn")
        .then(pl.lit("none"))
        .otherwise(pl.lit("unconditional"))
    )
    summary = fake_summary().with_columns(guarantee.alias("guarantee"))
    markdown, latex = write(tmp_path, summary)
    rows = table_lines(markdown)[2:]
    conditional = {(r[0], r[1], i) for r in rows for i, c in enumerate(r) if c.endswith("‡")}
    assert conditional == {("amazon", "gap", 3), ("cora", "gap", 2), ("cora", "gap", 4)}
    assert not any(c.endswith(("‡", "§")) for r in rows if r[1] in ("dp_mlp", "gcn") for c in r)
    assert GUARANTEE_NOTES["conditional"] in markdown.splitlines()
    assert (
        "every degree-bounded method carries this mark" in GUARANTEE_NOTES["conditional"]
    )  # the plan's, not the graph's
    assert "‡" not in latex and "\\textsuperscript{\\ddag}" in latex and "same sampled edge list" in latex
    assert set(GUARANTEE_MARKS) == {"conditional"}  # no class depends on a count of the graph


def test_fewer_than_five_seeds_are_called_not_informative(tmp_path: Path) -> None:
    markdown, latex = write(tmp_path, fake_summary())
    assert "not informative" not in markdown  # 5 seeds everywhere
    markdown, latex = write(tmp_path, fake_summary().with_columns(pl.lit(3).alias("n_runs")))
    caption = markdown.splitlines()[0]
    assert "mean over 3 seeds with 95% percentile-bootstrap interval" in caption
    assert "With 3 seeds (fewer than 5) the interval is not informative" in caption and "min–max" in caption
    assert "the interval is not informative" in latex and "min--max" in latex
    markdown, _ = write(tmp_path, fake_summary(n_runs=2))  # one cell short: the caption names those cells
    assert "mean over 2–5 seeds" in markdown and "In cells with 2 seeds (fewer than 5)" in markdown


def with_extras(summary: pl.DataFrame) -> pl.DataFrame:
    """cora's majority class is 30.2%, amazon's 41.0%; cora's gap at ε = 0.5 predicts one class in all 5
    seeds, dp_mlp at ε = 8 in 2 of 5."""
    one_class = (
        pl.when((pl.col("method") == "gap") & (pl.col("target_epsilon") == 0.5))
        .then(5)
        .when((pl.col("method") == "dp_mlp") & (pl.col("target_epsilon") == 8.0))
        .then(2)
        .otherwise(0)
    )
    majority = pl.when(pl.col("dataset") == "cora").then(0.302).otherwise(0.41)
    return summary.with_columns(one_class.alias("n_one_class_runs"), majority.alias("test_majority_accuracy"))


def test_each_dataset_gets_a_majority_class_row_in_the_columns_it_fills(tmp_path: Path) -> None:
    markdown, latex = write(tmp_path, with_extras(fake_summary()))
    rows = table_lines(markdown)[2:]
    label = f"*{MAJORITY_LABEL}*"
    assert [r[:2] for r in rows] == [
        ["amazon", "gap"],
        ["amazon", label],
        ["cora", "dp_mlp"],
        ["cora", "gap"],
        ["cora", "gcn"],
        ["cora", label],
    ]
    assert rows[1][2:] == ["—", "41.0", "—", "—"]  # amazon ran at ε = 1 only
    assert rows[5][2:] == ["30.2", "—", "30.2", "30.2"]  # cora has no cell at ε = 1
    assert "non-private reference line" in markdown.splitlines()[0]
    lines = latex.splitlines()
    assert f" & \\textit{{{MAJORITY_LABEL}}} & 30.2 & -- & 30.2 & 30.2 \\\\" in lines
    amazon = lines.index(f" & \\textit{{{MAJORITY_LABEL}}} & -- & 41.0 & -- & -- \\\\")
    assert lines[amazon - 1].startswith("amazon & gap & ") and lines[amazon + 1] == "\\midrule"  # closes its dataset
    # bold and the other rows are as without it
    assert rows[3][4] == "**71.2 (69.9–72.5)**"


def test_a_majority_row_only_where_known_and_only_in_the_accuracy_table(tmp_path: Path) -> None:
    summary = with_extras(fake_summary()).with_columns(
        pl.when(pl.col("dataset") == "amazon")
        .then(None)
        .otherwise(pl.col("test_majority_accuracy"))
        .alias("test_majority_accuracy")
    )
    rows = table_lines(write(tmp_path, summary)[0])[2:]
    assert [r[0] for r in rows if r[1] == f"*{MAJORITY_LABEL}*"] == ["cora"]
    assert MAJORITY_LABEL not in write(tmp_path, fake_summary())[0]  # a summary without the column
    f1 = with_extras(fake_summary()).rename(
        {c: c.replace("test_accuracy", "test_macro_f1") for c in fake_summary().columns}
    )
    write_tables(
        f1,
        markdown_path=tmp_path / "f1.md",
        latex_path=tmp_path / "f1.tex",
        metric="test_macro_f1",
        regenerate_command=COMMAND,
    )
    assert MAJORITY_LABEL not in (tmp_path / "f1.md").read_text(encoding="utf-8")


def test_constant_predictors_are_marked_with_their_count(tmp_path: Path) -> None:
    markdown, latex = write(tmp_path, with_extras(fake_summary()))
    rows = {(r[0], r[1]): r for r in table_lines(markdown)[2:]}
    assert rows[("cora", "gap")][2] == "**45.0 (43.7–46.3)**◇"  # every seed
    assert rows[("cora", "dp_mlp")][4] == "65.0 (63.7–66.3)◇2/5"  # 2 of 5 seeds
    assert sum(c.count("◇") for r in rows.values() for c in r) == 2  # no other cell
    assert ONE_CLASS_NOTE in markdown.splitlines()
    assert "\\textbf{45.0 (43.7--46.3)}\\textsuperscript{$\\diamond$}" in latex
    assert "65.0 (63.7--66.3)\\textsuperscript{$\\diamond$2/5}" in latex
    assert "◇" not in latex and "a constant predictor" in latex
    unmarked, _ = write(tmp_path, fake_summary().with_columns(pl.lit(0).alias("n_one_class_runs")))
    assert "◇" not in unmarked


def test_a_one_seed_cell_shows_no_interval(tmp_path: Path) -> None:
    one = pl.DataFrame(
        [{**cell("cora", "gap", 8.0, 0.6, n_runs=1), "test_accuracy_ci_low": 0.6, "test_accuracy_ci_high": 0.6}]
    )
    markdown, latex = write(tmp_path, one)
    assert "| cora | gap | 60.0 |" in markdown and "60.0 (" not in markdown and "60.0 (" not in latex
    assert "A cell with one seed has no interval." in markdown
