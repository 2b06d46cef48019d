from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml

from nodedp.analysis.bootstrap import summarize
from nodedp.analysis.collect import RUNS_SCHEMA
from nodedp.analysis.paper_tables import (
    NOT_CONFIGURED,
    PAPER_TABLES,
    render_paper_table,
    write_main_tex,
    write_paper_tables,
)

ROOT = Path(__file__).resolve().parents[2]
INF = math.inf


def runs(
    cells: dict[tuple[str, str, float], list[float]], *, actual: dict | None = None, unaccounted: tuple[str, ...] = ()
) -> pl.DataFrame:
    """A runs frame: (dataset, method, ε) -> test accuracies of seeds 0.. ; ``actual``: reference cells' actual ε;
    methods in ``unaccounted`` read private data without charge."""
    rows = []
    for (dataset, method, eps), accs in cells.items():
        ref = method.endswith("@paper")
        spent = (actual or {}).get((dataset, method, eps), eps)
        for seed, acc in enumerate(accs):
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "seed": seed,
                    "private": math.isfinite(eps),
                    "target_epsilon": eps,
                    "epsilon": spent,
                    "delta": 1e-4,
                    "level": "node" if math.isfinite(eps) else "none",
                    "fully_accounted": method not in unaccounted,
                    "guarantee": "unconditional" if math.isfinite(eps) else "none",
                    "reference": ref,
                    "claimed_delta": 2e-3 if ref else None,
                    "claim_actual_epsilon": spent if ref else None,
                    "test_accuracy": acc,
                    "test_macro_f1": acc,
                    "val_accuracy": acc,
                    "val_macro_f1": acc,
                    "train_s": 1.0,
                    "total_s": 2.0,
                    "git_commit": "abc",
                }
            )
    return pl.DataFrame(rows, schema=RUNS_SCHEMA)


def summary_of(cells: dict, **kwargs) -> pl.DataFrame:
    return summarize(runs(cells, **kwargs), n_resamples=1000)


def parse_markdown(md: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the Markdown table in ``md``, cells split on unescaped pipes."""
    lines = [line for line in md.splitlines() if line.startswith("|")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    return split[0], split[2:]


def shown(summary: pl.DataFrame, dataset: str, method: str, epsilon: float) -> str:
    """How a cell shows a summary row: mean ± half the interval's width, in percent."""
    row = summary.filter(
        (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("target_epsilon") == epsilon)
    ).row(0, named=True)
    half = 100 * (row["test_accuracy_ci_high"] - row["test_accuracy_ci_low"]) / 2
    return f"{100 * row['test_accuracy_mean']:.1f} ± {half:.1f}"


@pytest.fixture
def dpar() -> pl.DataFrame:
    return summary_of(
        {
            ("cora-ml", "gap", 8): [0.50, 0.51, 0.52],
            ("cora-ml", "dp-mlp", 8): [0.60, 0.61, 0.62],
            ("cora-ml", "dpar-em1", 8): [0.20, 0.21, 0.22],
            ("cora-ml", "dpar-em1@paper", 8): [0.70, 0.71, 0.72],  # highest of its row, but reference: never bold
            ("cora-ml", "mlp", INF): [0.77, 0.78, 0.79],
            ("cora-ml-transductive", "gap-nodp", INF): [0.87, 0.88, 0.89],
        },
        actual={("cora-ml", "dpar-em1@paper", 8): 82.0},
    )


def test_layouts_have_the_papers_rows_and_columns() -> None:
    t = PAPER_TABLES["dpar-t1"]
    assert t.columns == (
        "GAP",
        "SAGE",
        "Features",
        "DPAR-EM0",
        "DPAR-EM1",
        "DPAR-GM",
        "DPARNoDP",
        "GAPNoDP",
        "FeaturesNoDP",
    )
    assert [labels for labels, _ in t.rows][:3] == [
        ("Cora-ML", "(1, 2e-3)"),
        ("Cora-ML", "(8, 2e-3)"),
        ("MS Academic", "(1, 8e-4)"),
    ]
    assert len(t.rows) == 10 and all(f is None for f in t.rows[1][1][6:])  # NoDP printed once per dataset
    g = PAPER_TABLES["progap-t2"]
    assert g.columns == ("Facebook", "Reddit", "Amazon", "FB-100", "WeNet")
    assert [labels[0] for labels, _ in g.rows] == ["Non-private"] * 3 + ["Edge-level private"] * 4 + [
        "Node-level private"
    ] * 4
    feeds = {labels[1:]: fs for labels, fs in g.rows}
    assert feeds[("DP-GNN", "8.0")][0].run == "dp-sage" and feeds[("MLP", "0.0")][0].epsilon == INF
    assert [labels for labels, _ in PAPER_TABLES["dp-gnn-t2"].rows] == [
        ("GCN (2-layer)",),
        ("GCN (1-layer)",),
        ("DP-GCN (2-layer)",),
        ("DP-GCN (1-layer)",),
        ("MLP",),
        ("DP-MLP",),
    ]
    two_layer = PAPER_TABLES["dp-gnn-t2"].rows[2][1][0]
    assert (two_layer.run, two_layer.epsilon, two_layer.at_most) == ("dp-gcn-2hop-arxiv", 12, True)
    assert PAPER_TABLES["dp-gnn-t3"].columns == ("Non-private GNN", "DP-GNN")
    assert PAPER_TABLES["nip-gnn-t2"].columns == ("Cora", "Citeseer", "Lastfm", "Facebook")
    assert PAPER_TABLES["nip-gnn-t4"].columns == ("DP-MLP", "DP-SAGE", "DPDGC", "GAP", "Ours w/o A-a", "Ours")


def test_every_feed_names_a_study_that_runs_it() -> None:
    studies = yaml.safe_load((ROOT / "config.yaml").read_text())["studies"]
    for key, table in PAPER_TABLES.items():
        assert set(table.studies) <= set(studies), key
        for f in table.feeds:
            if f.study is None:
                assert table.needs, (key, f)  # only cells that need something beyond training
                continue
            assert f.study in table.studies, (key, f)
            study = studies[f.study]
            if f.dataset not in study["datasets"] or f.run in NOT_CONFIGURED:
                continue  # the cell says it needs the dataset (or the variant)
            assert f.run in study["methods"], (key, f)
            assert math.isinf(f.epsilon) or any(
                e <= f.epsilon if f.at_most else e == f.epsilon for e in study["epsilons"]
            ), (key, f)


def test_markdown_keeps_the_layout_and_puts_the_paper_and_delta_beside(dpar: pl.DataFrame) -> None:
    md, _ = render_paper_table("dpar-t1", dpar, regenerate_command="snakemake x")
    header, rows = parse_markdown(md)
    assert header == ["Dataset", "(ε, δ)", *PAPER_TABLES["dpar-t1"].columns]
    assert all(len(r) == len(header) for r in rows)
    assert [r[:2] for r in rows[:2]] == [["Cora-ML", "(1, 2e-3)"], ["", "(8, 2e-3)"]]
    gap8 = rows[1][header.index("GAP")].split("<br>")
    assert gap8 == [shown(dpar, "cora-ml", "gap", 8), "paper 57.33", "Δ -6.3"]  # 51.0 - 57.33
    assert gap8[0].startswith("51.0 ± ")
    mlp = rows[0][header.index("FeaturesNoDP")].split("<br>")
    assert mlp == [shown(dpar, "cora-ml", "mlp", INF), "paper 77.33", "Δ +0.7"]
    row = dpar.filter(pl.col("method") == "gap").row(0, named=True)
    # The range form shows the interval itself.
    md_range, _ = render_paper_table("dpar-t1", dpar, regenerate_command="x", interval="range")
    lo, hi = 100 * row["test_accuracy_ci_low"], 100 * row["test_accuracy_ci_high"]
    assert f"51.0 ({lo:.1f}–{hi:.1f})<br>paper 57.33" in md_range
    assert "mean over 3 seeds ± half the width of its 95% percentile-bootstrap interval (1000 resamples)" in md
    assert "Regenerate with: `snakemake x`" in md and "dpar-reproduction, dpar-gap-setting" in md


def test_missing_cells_say_what_would_produce_them(dpar: pl.DataFrame) -> None:
    md, _ = render_paper_table("dpar-t1", dpar, regenerate_command="x")
    header, rows = parse_markdown(md)
    first = rows[0]
    assert first[header.index("SAGE")] == "needs dp-sage at ε = 1<br>(study dpar-reproduction)<br>paper 15.2"
    assert first[header.index("GAPNoDP")] == "needs gap-nodp at ε = ∞<br>(study dpar-reproduction)<br>paper 88.83"
    ms = next(r for r in rows if r[0] == "MS Academic")
    assert all(c.startswith("needs ms-academic<br>paper ") for c in ms[2:])
    md2, _ = render_paper_table(
        "dp-gnn-t2", summary_of({("ogbn-arxiv-disjoint", "gcn", INF): [0.6, 0.61]}), regenerate_command="x"
    )
    header, rows = parse_markdown(md2)
    assert rows[0][header.index("ogbn-arxiv-clustered")].startswith(
        "needs ogbn-arxiv-clustered<br>(not in the suite's registry)<br>paper 56.932 ± 0.814 s.d."
    )
    assert rows[2][1].startswith("needs dp-gcn-2hop-arxiv at ε ≤ 12<br>(study dp-gnn-ogb)<br>")
    assert "ogbn-arxiv-clustered: DP-GNN's agglomerative clustering of ogbn-arxiv" in md2


def test_at_most_cells_read_the_largest_epsilon_within_the_bound() -> None:
    summary = summary_of(
        {
            ("ogbn-arxiv", "dp-gcn-arxiv", 4): [0.50, 0.50],
            ("ogbn-arxiv", "dp-gcn-arxiv", 8): [0.55, 0.55],
            ("ogbn-arxiv", "dp-gcn-arxiv", 12): [0.60, 0.60],
            ("ogbn-arxiv", "dp-mlp-arxiv", 8): [0.45, 0.45],
            ("ogbn-arxiv", "gcn", INF): [0.68, 0.68],
        }
    )
    md, _ = render_paper_table("dp-gnn-t1", summary, regenerate_command="x")
    header, rows = parse_markdown(md)
    adam = rows[1][header.index("ogbn-arxiv")].split("<br>")
    # ε ≤ 10: the ε = 8 run, not 12, bold against DP-MLP at the same ε.
    assert adam == ["**55.0 ± 0.0 [ε = 8]**", "paper 61.133 ± 0.288 s.d.", "Δ -6.1"]
    assert rows[2][header.index("ogbn-arxiv")].startswith("needs dp-gcn-sgd-arxiv at ε ≤ 10<br>(study dp-gnn-ogb)<br>")
    assert rows[4][header.index("ogbn-arxiv")].startswith("45.0 ± 0.0 [ε = 8]<br>")
    assert rows[0][header.index("ogbn-products")].startswith("needs ogbn-products<br>")
    md4, _ = render_paper_table("dp-gnn-t3", summary, regenerate_command="x")
    _, rows3 = parse_markdown(md4)
    assert rows3[0][2].startswith("**55.0 ± 0.0 [ε = 8]**")  # Table 3's GCN row, DP-GNN column


def test_reference_cells_are_marked_with_their_actual_epsilon_and_never_bold(dpar: pl.DataFrame) -> None:
    md, tex = render_paper_table("dpar-t1", dpar, regenerate_command="x")
    header, rows = parse_markdown(md)
    em1 = rows[1][header.index("DPAR-EM1")].split("<br>")
    ref = "¶ " + shown(dpar, "cora-ml", "dpar-em1@paper", 8) + " [ε = 82]"
    assert em1 == [shown(dpar, "cora-ml", "dpar-em1", 8), ref, "paper 61.99", "Δ -41.0 · ¶ +9.0"]
    assert ref.startswith("¶ 71.0 ± ")
    # Bold goes to the best suite-accounted cell (Features, 61.0), not to the reference run (71.0).
    assert rows[1][header.index("Features")].startswith("**61.0 ± ")
    assert "**¶" not in md and "**71.0" not in md
    assert "¶ reference mode" in md and "\\P{}" in tex


def test_unaccounted_cells_carry_a_dagger_and_lose_bold() -> None:
    summary = summary_of(
        {("cora", "nip-gnn", 4): [0.80, 0.81], ("cora", "gap", 4): [0.30, 0.31], ("cora", "dp-mlp", 4): [0.40, 0.41]},
        unaccounted=("nip-gnn",),
    )
    md, _ = render_paper_table("nip-gnn-t1", summary, regenerate_command="x")
    header, rows = parse_markdown(md)
    cora = rows[0]
    assert cora[header.index("NIP-GNN")].startswith("80.5 ± 0.5†<br>paper 53.21 ± 1.16<br>Δ +27.3")
    assert cora[header.index("DP-MLP")].startswith("**40.5 ± ")  # the best cell whose ε covers every read
    assert not cora[header.index("GAP")].startswith("**")
    assert "† thresholds or other parameters read from private data" in md
    assert rows[1][1].startswith("needs citeseer<br>paper 21.41 ± 1.52")


def test_constant_predictors_are_marked_and_few_seeds_called_not_informative() -> None:
    frame = runs(
        {("cora", "nip-gnn", 4): [0.30, 0.30], ("cora", "gap", 4): [0.30, 0.35], ("cora", "dp-mlp", 4): [0.40, 0.41]}
    )
    classes = (
        pl.when(pl.col("method") == "nip-gnn")
        .then(1)
        .when(pl.col("method") == "gap")
        .then(pl.when(pl.col("seed") == 0).then(1).otherwise(7))
        .otherwise(7)
    )
    summary = summarize(frame.with_columns(classes.alias("test_predicted_classes")), n_resamples=1000)
    md, tex = render_paper_table("nip-gnn-t1", summary, regenerate_command="x")
    header, rows = parse_markdown(md)
    assert rows[0][header.index("NIP-GNN")].startswith("30.0 ± 0.0◇<br>paper ")
    assert rows[0][header.index("GAP")].startswith("32.5 ± 2.5◇1/2<br>paper ")
    assert "◇" not in rows[0][header.index("DP-MLP")]
    assert "◇ a constant predictor" in md and "$\\diamond$" in tex and "◇" not in tex
    assert "With 2 seeds (fewer than 5) the interval is not informative" in md


def test_stand_ins_get_their_own_marked_row_or_column() -> None:
    summary = summary_of(
        {
            ("fb100-reed98", "progap", 8): [0.40, 0.41],
            ("fb100-caltech36", "progap", 8): [0.30],
            ("facebook", "progap", 8): [0.60, 0.61],
        }
    )
    md, tex = render_paper_table("progap-t2", summary, regenerate_command="x")
    header, rows = parse_markdown(md)
    assert header[3:] == ["Facebook", "Reddit", "Amazon", "FB-100", "fb100-caltech36≈", "fb100-reed98≈", "WeNet"]
    progap = rows[-1]
    assert progap[header.index("fb100-reed98≈")].startswith("40.5 ± 0.5<br>paper 48.5 ± 0.36<br>Δ -8.0")
    assert "[n=1]" in progap[header.index("fb100-caltech36≈")]  # fewer runs than the rest
    assert progap[header.index("FB-100")].startswith("needs fb-100<br>")
    assert rows[0][header.index("fb100-reed98≈")] == "—<br>paper 74.0 ± 0.80"  # a stand-in never "needs"
    assert (
        "≈ a single school, or a union of fewer schools" in md
        and "stands in for the paper's FB-100" in md
        and "$\\approx$" in tex
    )
    md_dpar, _ = render_paper_table(
        "dpar-t1", summary_of({("cora-ml-transductive", "gap-nodp", INF): [0.88]}), regenerate_command="x"
    )
    _, dpar_rows = parse_markdown(md_dpar)
    labels = [r[:2] for r in dpar_rows]
    assert labels[:4] == [
        ["Cora-ML", "(1, 2e-3)"],
        ["", "(8, 2e-3)"],
        ["cora-ml-transductive≈", "(1, 2e-3)"],
        ["", "(8, 2e-3)"],
    ]
    assert "88.0<br>paper 88.83<br>Δ -0.8" in dpar_rows[2]
    plain, _ = render_paper_table("progap-t2", summary_of({("facebook", "gap", 8): [0.5]}), regenerate_command="x")
    assert "≈" not in plain


def test_cells_shared_by_concatenated_summaries_are_read_once() -> None:
    few = summary_of({("cora", "gap", 4): [0.10, 0.10]})
    more = summary_of({("cora", "gap", 4): [0.30, 0.31, 0.32], ("cora", "dp-mlp", 4): [0.2, 0.2, 0.2]})
    md, _ = render_paper_table("nip-gnn-t1", pl.concat([few, more]), regenerate_command="x")
    header, rows = parse_markdown(md)
    assert rows[0][header.index("GAP")].startswith("**31.0 ± ")


def test_the_audit_table_needs_the_audit_until_the_summary_has_it() -> None:
    cells = {("cora", "nip-gnn", 4): [0.5, 0.5], ("cora", "gap", 4): [0.4, 0.4]}
    md, _ = render_paper_table("nip-gnn-t4", summary_of(cells), regenerate_command="x")
    _, rows = parse_markdown(md)
    assert all(
        c.startswith("needs the membership-inference audit (`make audit STUDY=nip-gnn-mia`)<br>paper ")
        for r in rows
        for c in r[1:]
    )
    frame = runs(cells).with_columns(mia_accuracy=pl.lit(0.52))
    audited = summarize(frame, metrics=("test_accuracy", "mia_accuracy"), n_resamples=1000)
    md, _ = render_paper_table("nip-gnn-t4", audited, regenerate_command="x")
    header, rows = parse_markdown(md)
    assert rows[0][header.index("GAP")] == "52.0 ± 0.0<br>paper 50.12 ± 2.17<br>Δ +1.9"
    assert "**" not in md and "membership-inference attack accuracy (%), mean over 2 seeds" in md


def test_bad_arguments_name_the_valid_choices(dpar: pl.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown paper table 'dpar-t9'.*dp-gnn-t1"):
        render_paper_table("dpar-t9", dpar, regenerate_command="x")
    with pytest.raises(ValueError, match="unknown interval 'sd'.*half-width"):
        render_paper_table("dpar-t1", dpar, regenerate_command="x", interval="sd")
    with pytest.raises(ValueError, match=r"summary lacks columns \['n_runs'\]"):
        render_paper_table("dpar-t1", dpar.drop("n_runs"), regenerate_command="x")
    with pytest.raises(ValueError, match="unknown paper table"):
        write_paper_tables(dpar, tmp_path, ["dpar-t1", "nope"], regenerate_command="x")
    assert not list(tmp_path.iterdir())  # nothing written before the check


def test_write_paper_tables_writes_every_table_atomically(dpar: pl.DataFrame, tmp_path: Path) -> None:
    paths = write_paper_tables(dpar, tmp_path / "tables", regenerate_command="snakemake paper/{key}.md")
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(
        f"{k}.{e}" for k in PAPER_TABLES for e in ("md", "tex")
    )
    assert len(paths) == 2 * len(PAPER_TABLES)
    assert "Regenerate with: `snakemake paper/progap-t2.md`" in (tmp_path / "tables" / "progap-t2.md").read_text()


# --- LaTeX -------------------------------------------------------------------------------------------------------

SPECIALS = "#%&_~^$\\{}"


def strip_groups(line: str) -> str:
    """``line`` without its brace groups (escaped braces kept out of the count)."""
    out, depth = [], 0
    text = line.replace(r"\{", "").replace(r"\}", "")
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            assert depth >= 0, f"unbalanced '}}' in {line!r}"
        elif depth == 0:
            out.append(ch)
    assert depth == 0, f"unbalanced '{{' in {line!r}"
    return "".join(out)


def check_latex(tex: str, n_columns: int) -> None:
    """Balanced braces and environments, every tabular row with ``n_columns`` cells, ASCII and escaped specials."""
    body = [line for line in tex.splitlines() if not line.startswith("%")]
    assert all(line.isascii() for line in body), [line for line in body if not line.isascii()]
    strip_groups("\n".join(body).replace("\n", " "))
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{(\w+)\}", "\n".join(body)):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack.pop() == env, env
    assert not stack, stack
    inside = body[body.index("\\toprule") + 1 : body.index("\\bottomrule")]
    rows = [line for line in inside if line not in ("\\midrule",)]
    assert rows, "no rows"
    for line in rows:
        assert line.endswith(" \\\\"), line
        top = strip_groups(line)
        assert top.count("&") == n_columns - 1, (top.count("&") + 1, n_columns, line)
        # Outside commands and math, no LaTeX special is left unescaped.
        plain = re.sub(r"\\[A-Za-z]+|\\[#%&_~^${}\\]|\$[^$]*\$", "", line)
        assert not set(plain) & set("#%_~^"), line
    spec = re.search(r"\\begin\{tabular\}\{([lrc]+)\}", tex)
    assert spec and len(spec[1]) == n_columns


def rich_summary() -> pl.DataFrame:
    return summary_of(
        {
            ("cora-ml", "gap", 8): [0.50, 0.51],
            ("cora-ml", "dp-mlp", 8): [0.60, 0.62],
            ("cora-ml", "dpar-em0@paper", 8): [0.7, 0.7],
            ("cora-ml-transductive", "gap-nodp", INF): [0.88, 0.88],
            ("ogbn-arxiv", "dp-gcn-arxiv", 8): [0.55, 0.56],
            ("ogbn-arxiv-disjoint", "gcn-2hop", INF): [0.6, 0.6],
            ("cora", "nip-gnn", 4): [0.5, 0.51],
            ("cora", "nip-gnn@paper", 7): [0.6, 0.6],
            ("fb100-reed98", "progap", 8): [0.4, 0.41],
            ("facebook", "gap-edge", 1): [0.6, 0.6],
        },
        actual={("cora-ml", "dpar-em0@paper", 8): 82.0, ("cora", "nip-gnn@paper", 7): 31.0},
        unaccounted=("nip-gnn",),
    )


@pytest.mark.parametrize("key", sorted(PAPER_TABLES))
def test_latex_is_well_formed(key: str) -> None:
    command = "snakemake paper/{key}.tex --config a_b=1 # 100% & $HOME ~ ^"
    md, tex = render_paper_table(key, rich_summary(), regenerate_command=command)
    header, _ = parse_markdown(md)
    check_latex(tex, len(header))
    assert r"100\% \& \$HOME \textasciitilde{} \textasciicircum{}" in tex and r"a\_b=1" in tex


def test_main_tex_inputs_every_table(tmp_path: Path) -> None:
    paths = write_paper_tables(rich_summary(), tmp_path / "tables", regenerate_command="x")
    main = write_main_tex(tmp_path / "main.tex", [p for p in paths if p.suffix == ".tex"])
    text = main.read_text()
    assert text.count("\\input{tables/") == len(PAPER_TABLES) and "\\usepackage{booktabs}" in text
    assert text.index("\\begin{document}") < text.index("\\input{tables/dpar-t1.tex}") < text.index("\\end{document}")
    with pytest.raises(ValueError, match="characters LaTeX"):
        write_main_tex(tmp_path / "main.tex", [tmp_path / "my tables" / "a.tex"])
    with pytest.raises(ValueError, match="not a .tex file"):
        write_main_tex(tmp_path / "main.tex", [tmp_path / "a.md"])
    with pytest.raises(ValueError, match="empty"):
        write_main_tex(tmp_path / "main.tex", [])


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (a TeX distribution)")
def test_main_tex_builds_with_pdflatex(tmp_path: Path) -> None:
    paths = write_paper_tables(rich_summary(), tmp_path / "tables", regenerate_command="snakemake a_b # 5% ~x")
    write_main_tex(tmp_path / "main.tex", [p for p in paths if p.suffix == ".tex"])
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (tmp_path / "main.log").read_text(errors="replace")
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "main.pdf").stat().st_size > 0
    assert "Undefined control sequence" not in log and "Missing character" not in log
