from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest

from nodedp.analysis.collect import RUNS_SCHEMA
from nodedp.analysis.report import (
    LEDGER_COLUMNS,
    about_html,
    about_page_digest,
    config_digest,
    ledger_summary,
    markdown_table_html,
    study_index,
    table_html,
)

# --- Markdown tables as HTML ------------------------------------------------------------------------------------


def rows_of(page: str, tag: str) -> list[list[str]]:
    """The cells of every <tr> in ``page`` that holds ``tag`` cells (th or td), as written (escaped)."""
    return [re.findall(rf"<{tag}>(.*?)</{tag}>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", page) if f"<{tag}>" in tr]


MARKDOWN = """\
# Accuracy on csbm <tiny> & friends

| method | ε = 1 |
|:---|---:|
| dp-mlp | 51.0 ± 1.2 |
| gap<br> & co | 55.5 |

Note: † means a read without charge; a < b & c.
"""


def test_a_markdown_table_becomes_an_html_table_and_the_other_lines_paragraphs() -> None:
    page = markdown_table_html(MARKDOWN, title="acc <1>")
    assert page.startswith("<!DOCTYPE html>") and "<title>acc &lt;1&gt;</title>" in page
    assert page.count("<table>") == 1 and page.count("</table>") == 1
    assert rows_of(page, "th") == [["method", "ε = 1"]]
    assert rows_of(page, "td") == [["dp-mlp", "51.0 ± 1.2"], ["gap&lt;br&gt; &amp; co", "55.5"]]
    assert ":---" not in page and "---:" not in page  # the separator line is dropped
    paragraphs = re.findall(r"<p>(.*?)</p>", page)
    assert paragraphs == [
        "Accuracy on csbm &lt;tiny&gt; &amp; friends",  # the heading's '#' dropped
        "Note: † means a read without charge; a &lt; b &amp; c.",
    ]
    # In document order: caption, table, note.
    assert page.index("Accuracy on csbm") < page.index("<table>") < page.index("Note: †")
    assert "<tiny>" not in page and "<br>" not in page


def test_two_tables_separated_by_a_line_stay_two_tables() -> None:
    md = "| a |\n|---|\n| 1 |\nbetween\n| b |\n|---|\n| 2 |\n"
    page = markdown_table_html(md, title="t")
    assert page.count("<table>") == 2
    assert rows_of(page, "th") == [["a"], ["b"]] and rows_of(page, "td") == [["1"], ["2"]]
    assert page.index("<th>a</th>") < page.index("<p>between</p>") < page.index("<th>b</th>")


def test_a_document_without_a_table_is_a_page_of_paragraphs() -> None:
    page = markdown_table_html("No cell of this study feeds the table.\n\nRegenerate: `make x`\n", title="t")
    assert "<table>" not in page
    assert re.findall(r"<p>(.*?)</p>", page) == ["No cell of this study feeds the table.", "Regenerate: `make x`"]


@pytest.mark.parametrize("text", ["", "\n  \n\n"])
def test_an_empty_markdown_document_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="t.md: the Markdown file is empty"):
        markdown_table_html(text, title="t.md")


# --- ledger summaries -------------------------------------------------------------------------------------------


def run(method: str, eps: float, seed: int, spent: float, **extra) -> dict:
    private = math.isfinite(eps)
    row = {name: None for name in RUNS_SCHEMA}
    row.update(
        {
            "dataset": "csbm",
            "method": method,
            "base_method": method.removesuffix("@paper"),
            "seed": seed,
            "private": private,
            "target_epsilon": eps,
            "epsilon": spent,
            "delta": 1e-4 if private else 0.0,
            "level": "node" if private else "none",
            "fully_accounted": True,
            "guarantee": "unconditional" if private else "none",
            "reference": False,
            "test_accuracy": 0.5,
            "git_commit": "abc",
        }
    )
    row.update(extra)
    return row


def ledger_runs() -> pl.DataFrame:
    return pl.DataFrame(
        [
            run("dp-mlp", 1.0, 1, 0.95, fully_accounted=False, git_commit="def"),
            run("dp-mlp", 1.0, 0, 0.9),
            run(
                "dp-mlp@paper",
                1.0,
                0,
                0.99,
                reference=True,
                claimed_delta=2e-3,
                claim_actual_epsilon=30.0,
                git_commit=None,
            ),
            run(
                "dp-mlp@paper",
                1.0,
                1,
                0.98,
                reference=True,
                claimed_delta=2e-3,
                claim_actual_epsilon=41.0,
                git_commit=None,
            ),
            run("mlp", math.inf, 0, 0.0),
            run("mlp", math.inf, 1, 0.0),
        ],
        schema=RUNS_SCHEMA,
    )


def test_ledger_summary_is_one_row_per_cell_over_its_seeds() -> None:
    summary = ledger_summary(ledger_runs())
    assert summary.columns == list(LEDGER_COLUMNS)
    assert summary.height == 3
    rows = {r["method"]: r for r in summary.iter_rows(named=True)}
    assert list(rows) == ["dp-mlp", "dp-mlp@paper", "mlp"]  # sorted by method (one dataset)
    dp = rows["dp-mlp"]
    assert dp["seeds"] == "0, 1" and dp["target_epsilon"] == 1.0
    assert dp["epsilon_max"] == 0.95 and dp["delta_max"] == 1e-4
    assert dp["fully_accounted"] is False  # one seed read without charge: the cell is not fully accounted
    assert dp["reference"] is False and dp["claimed_delta"] is None and dp["claim_actual_epsilon_max"] is None
    assert dp["level"] == "node" and dp["guarantee"] == "unconditional" and dp["git_commits"] == "abc, def"
    ref = rows["dp-mlp@paper"]
    assert ref["reference"] is True and ref["fully_accounted"] is True
    assert ref["claimed_delta"] == 2e-3 and ref["claim_actual_epsilon_max"] == 41.0 and ref["epsilon_max"] == 0.99
    assert ref["git_commits"] == "unknown"  # outside a git checkout
    mlp = rows["mlp"]
    assert math.isinf(mlp["target_epsilon"]) and mlp["epsilon_max"] == 0.0 and mlp["level"] == "none"
    assert mlp["seeds"] == "0, 1" and mlp["fully_accounted"] is True


def test_ledger_summary_orders_seeds_as_numbers_and_cells_by_dataset_then_epsilon() -> None:
    frame = pl.DataFrame(
        [
            run("dp-mlp", 8.0, 10, 7.9),
            run("dp-mlp", 8.0, 2, 7.8),
            run("dp-mlp", 1.0, 3, 0.9),
            {**run("dp-mlp", 1.0, 0, 0.9), "dataset": "cora"},
        ],
        schema=RUNS_SCHEMA,
    )
    summary = ledger_summary(frame)
    assert summary.select("dataset", "target_epsilon", "seeds").rows() == [
        ("cora", 1.0, "0"),
        ("csbm", 1.0, "3"),
        ("csbm", 8.0, "2, 10"),
    ]


@pytest.mark.parametrize("column", ["claim_actual_epsilon", "fully_accounted", "git_commit"])
def test_ledger_summary_names_a_missing_column(column: str) -> None:
    with pytest.raises(ValueError, match=rf"runs table lacks columns \['{column}'\]"):
        ledger_summary(ledger_runs().drop(column))


def test_ledger_summary_refuses_an_empty_runs_table() -> None:
    with pytest.raises(ValueError, match="runs table is empty"):
        ledger_summary(ledger_runs().clear())


# --- frames as HTML ---------------------------------------------------------------------------------------------


def test_table_html_rounds_floats_leaves_nulls_empty_and_escapes() -> None:
    frame = pl.DataFrame(
        {"name <a>": ["x & y", None, "z"], "value": [0.123456, None, 12345.678], "count": [3, 4, None]}
    )
    page = table_html(frame, title="ledgers", notes="one row <per> cell")
    assert rows_of(page, "th") == [["name &lt;a&gt;", "value", "count"]]
    assert rows_of(page, "td") == [["x &amp; y", "0.1235", "3"], ["", "", "4"], ["z", "1.235e+04", ""]]
    assert "<p>one row &lt;per&gt; cell</p>" in page and "<h1>ledgers</h1>" in page
    assert "<p>" not in table_html(frame, title="no notes")


# --- the configuration page -------------------------------------------------------------------------------------

CONFIG = {
    "studies": {
        "demo": {
            "datasets": ["csbm-tiny", "cora"],
            "methods": ["mlp", "dp-mlp"],
            "epsilons": [1, 8],
            "seeds": [0, 1, 2],
        },
        "sweep<x>": {"datasets": ["cora"], "methods": ["gap"], "epsilons": [4], "seeds": [0]},
    },
    "methods": {"dp-mlp": {"batch_size": 16}},
    "privacy": {"delta": "auto"},
}


def about_rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", page))


def test_about_states_version_commit_config_and_studies() -> None:
    page = about_html(
        CONFIG, {"nodedp": "9.8.7", "git_commit": "0123abc", "git_dirty": True}, config_name="my-grid.yaml"
    )
    facts = about_rows(page)
    assert facts["nodedp version"] == "9.8.7" and facts["configuration"] == "my-grid.yaml"
    assert facts["git commit"].startswith("0123abc (dirty")
    studies = rows_of(page, "td")
    assert ["demo", "csbm-tiny, cora", "mlp, dp-mlp", "1, 8", "0, 1, 2"] in studies
    assert ["sweep&lt;x&gt;", "cora", "gap", "4", "0"] in studies
    (pre,) = re.findall(r"<pre>(.*?)</pre>", page, flags=re.DOTALL)
    assert json.loads(html.unescape(pre)) == CONFIG  # the whole configuration, escaped
    assert "sweep<x>" not in page


def test_about_says_unknown_outside_git_and_clean_without_dirty() -> None:
    page = about_html(CONFIG, {"nodedp": "1.0", "git_commit": None, "git_dirty": None}, config_name="c.yaml")
    assert about_rows(page)["git commit"] == "unknown" and "dirty" not in page
    clean = about_html(CONFIG, {"nodedp": "1.0", "git_commit": "fff", "git_dirty": False}, config_name="c.yaml")
    assert about_rows(clean)["git commit"] == "fff"
    assert about_rows(about_html({}, {}, config_name="c"))["nodedp version"] == "unknown"


def test_the_about_page_carries_its_configurations_digest() -> None:
    page = about_html(CONFIG, {"nodedp": "1.0"}, config_name="config.yaml")
    assert about_page_digest(page) == config_digest(CONFIG) == about_rows(page)["configuration digest"]
    # The `about` rule passes the configuration as JSON: read back, it is the same grid.
    assert config_digest(json.loads(json.dumps(CONFIG, sort_keys=True, default=str))) == config_digest(CONFIG)
    # Another grid (one more seed) is another digest, whatever the file is called.
    grown = json.loads(json.dumps(CONFIG))
    grown["studies"]["demo"]["seeds"].append(3)
    other = about_html(grown, {"nodedp": "1.0"}, config_name="config.yaml")
    assert about_page_digest(other) == config_digest(grown) != config_digest(CONFIG)
    assert about_page_digest("<html><head></head></html>") is None  # a page drawn before digests


# --- a study's index --------------------------------------------------------------------------------------------


def drawn(root: Path, *names: str, caption: str = "Accuracy against ε; mean over 3 seeds.") -> list[Path]:
    paths = []
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x89PNG" if name.endswith(".png") else b"x")
        paths.append(path)
        if name.endswith(".png"):
            path.with_suffix(".caption.txt").write_text(caption + "\n", encoding="utf-8")
    return paths


def test_study_index_links_tables_and_shows_each_figure_with_its_caption(tmp_path: Path) -> None:
    files = drawn(tmp_path, "tables/accuracy.md", "tables/accuracy.tex", "figures/a.png")
    files.append(tmp_path / "figures" / "a.caption.txt")  # the workflow passes captions too
    text = study_index("demo", files, root=tmp_path)
    assert text.startswith("# Study demo")
    assert (
        "* [tables/accuracy.md](tables/accuracy.md)" in text and "* [tables/accuracy.tex](tables/accuracy.tex)" in text
    )
    figure = text.index("![a](figures/a.png)")
    assert figure < text.index("Accuracy against ε; mean over 3 seeds.")
    assert "caption.txt" not in text  # shown under its figure, never listed
    assert text.index("## Tables") < text.index("tables/accuracy.md") < text.index("## Figures") < figure


def test_study_index_shows_the_audits_table_and_figure_in_a_section_of_their_own(tmp_path: Path) -> None:
    files = drawn(tmp_path, "tables/accuracy.md", "figures/frontier.png")
    files += drawn(
        tmp_path,
        "tables/audit.md",
        "tables/audit.tex",
        "report/audit.html",
        "figures/audit.png",
        caption="Empirical privacy audit: 0 of 12 cells refute their claim.",
    )
    text = study_index("demo", files, root=tmp_path)
    audit = text.index("## Empirical privacy audit")
    assert text.index("![frontier](figures/frontier.png)") < audit  # the study's own figures first
    for line in (
        "* [tables/audit.md](tables/audit.md)",
        "* [tables/audit.tex](tables/audit.tex)",
        "* [report/audit.html](report/audit.html)",
        "![audit](figures/audit.png)",
        "0 of 12 cells refute their claim.",
    ):
        assert text.index(line) > audit, line
    assert text.count("![audit]") == 1 and "make audit STUDY=demo" in text
    # Without an audit, no such section.
    assert "audit" not in study_index("demo", files[:2], root=tmp_path).lower()


def test_study_index_needs_each_figures_caption(tmp_path: Path) -> None:
    png = tmp_path / "figures" / "b.png"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG")
    with pytest.raises(FileNotFoundError, match=r"b\.png has no caption .*b\.caption\.txt"):
        study_index("demo", [png], root=tmp_path)


def test_study_index_refuses_unknown_files_and_an_empty_study(tmp_path: Path) -> None:
    (csv,) = drawn(tmp_path, "tables/data.csv")
    with pytest.raises(ValueError, match=r"data\.csv: not a table .* of study demo"):
        study_index("demo", [csv], root=tmp_path)
    with pytest.raises(ValueError, match="study demo: nothing to index"):
        study_index("demo", [tmp_path / "figures" / "a.caption.txt"], root=tmp_path)


def test_a_studys_note_comes_first_and_the_demo_says_why_three_methods_sit_at_chance(tmp_path: Path) -> None:
    import yaml

    files = drawn(tmp_path, "tables/accuracy.md")
    config = yaml.safe_load((Path(__file__).resolve().parents[2] / "config.yaml").read_text())
    demo = config["studies"]["demo"]
    text = study_index("demo", files, root=tmp_path, note=demo["note"])
    # The note counts the demo's private methods: it goes stale when one joins.
    from nodedp.config.variants import resolve_method
    from nodedp.contract.registry import get_method

    private = sum(get_method(resolve_method(config, m)[0]).private for m in demo["methods"])
    count = {6: "six", 7: "seven", 8: "eight", 9: "nine"}[private]
    assert text.index("# Study demo") < text.index(f"Three of the {count} private methods") < text.index("## Tables")
    assert "majority-class line" in text and "docs/reproduction.md" in text
    assert "Three of" not in study_index("demo", files, root=tmp_path)
