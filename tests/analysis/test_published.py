from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from nodedp.analysis.published import (
    COLUMNS,
    PAPERS,
    PUBLISHED,
    PUBLISHED_CSV,
    PUBLISHED_UNREGISTERED,
    SPREADS,
    UNREGISTERED_DATASETS,
    published_for,
    read_published,
)
from nodedp.config.variants import method_variants

ROOT = Path(__file__).resolve().parents[2]
PAPERS_DIR = ROOT.parent / "shared" / "papers"  # the papers' texts, beside the checkout (DESIGN.md)
TEXTS = {
    "dpar-t1": "dpar-tables.txt",
    "dp-gnn": "dp-gnn-node-level.txt",
    "nip-gnn": "nip-gnn.txt",
    "progap-t2": "progap.txt",
}
ALL = PUBLISHED + PUBLISHED_UNREGISTERED


def _config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _text(paper: str) -> str:
    name = next(v for k, v in TEXTS.items() if paper.startswith(k))
    path = PAPERS_DIR / name
    if not path.exists():
        pytest.skip(f"the paper's text {name} is not beside this checkout")
    return path.read_text(encoding="utf-8")


def _number(x: float) -> str:
    """A regex for ``x`` as a paper may print it: trailing zeros optional ("0.8" matches "0.80")."""
    text = f"{x:g}"
    body = re.escape(text) + ("0*" if "." in text else r"(?:\.0*)?")
    return rf"(?<![\d.]){body}(?![\d])"


_PM = r"\s*(?:±|\$\\pm\$|<math>\\pm</math>)\s*"


def test_every_cell_names_a_known_paper_dataset_method_and_variant() -> None:
    from nodedp.analysis.paper_tables import NOT_CONFIGURED
    from nodedp.contract.registry import method_names
    from nodedp.data import dataset_names

    variants = method_variants(_config())
    for p in ALL:
        assert p.paper in PAPERS and p.spread in SPREADS, p
        assert p.method in method_names() or variants.get(p.method) in method_names(), p
        if p.run is not None:  # a config variant of the cell's method (or one config.yaml still lacks)
            assert variants.get(p.run) == p.method or p.run in NOT_CONFIGURED, p
        assert (p.ci is None) == (p.spread == "none"), p
        assert 0 < p.accuracy < 100 and (p.ci is None or 0 <= p.ci < 10), p
        assert p.at_most == (p.paper.startswith("dp-gnn") and math.isfinite(p.epsilon)), p
    assert all(p.dataset in dataset_names() for p in PUBLISHED)
    assert {p.dataset for p in PUBLISHED_UNREGISTERED} == set(UNREGISTERED_DATASETS)
    assert not set(UNREGISTERED_DATASETS) & set(dataset_names())
    assert {p.paper for p in ALL} == set(PAPERS)


def test_every_printed_cell_has_one_place_in_its_table() -> None:
    seen: dict[tuple, object] = {}
    for p in ALL:
        if not p.column:
            continue
        key = (p.paper, p.row, p.column)
        assert key not in seen, (p, seen.get(key))
        seen[key] = p
    shape = defaultdict(set)
    for paper, row, column in seen:
        shape[paper].add((row, column))
    sizes = {paper: len(cells) for paper, cells in shape.items()}
    # DPAR: 5 datasets x (2 eps x 6 private + 3 non-private); DP-GNN 5x4, 6x3, 4x2, 6x3; NIP 4x5, 4x4, 4x4, 4x6;
    # ProGAP 11 methods x 5 datasets: as printed.
    assert sizes == {
        "dpar-t1": 75,
        "dp-gnn-t1": 20,
        "dp-gnn-t2": 18,
        "dp-gnn-t3": 8,
        "dp-gnn-t4": 18,
        "nip-gnn-t1": 20,
        "nip-gnn-t2": 16,
        "nip-gnn-t3": 16,
        "nip-gnn-t4": 24,
        "progap-t2": 55,
    }


def test_cells_printed_twice_in_a_paper_agree() -> None:
    # DP-GNN prints the ogbn-arxiv cells of Table 1 again in Table 3, and Table 2's MLP rows in Table 4.
    by = defaultdict(set)
    for p in ALL:
        if p.paper.startswith("dp-gnn") and p.row[0] in ("MLP", "DP-MLP", "GCN (1-layer)", "DP-GCN (Adam)", "GCN"):
            by[(p.dataset, p.suite_method, p.epsilon)].add((p.accuracy, p.ci))
    assert by[("ogbn-arxiv", "gcn", math.inf)] == {(67.759, 0.394)}
    assert by[("ogbn-arxiv", "dp-gcn-arxiv", 10)] == {(61.133, 0.288)}
    assert by[("ogbn-arxiv-disjoint", "mlp", math.inf)] == {(55.349, 0.239)}
    assert all(len(v) == 1 for v in by.values()), by
    # DPAR's "Features": DP-MLP in the layout, and dpar-features (its §4 reading) for reproduction tables.
    features = {(p.dataset, p.epsilon): p.accuracy for p in PUBLISHED if p.method == "dp-mlp" and p.paper == "dpar-t1"}
    for p in PUBLISHED:
        if p.method == "dpar-features":
            assert not p.column and features[(p.dataset, p.epsilon)] == p.accuracy


@pytest.mark.parametrize("paper", sorted(k for k in PAPERS if k != "dpar-t1"))
def test_each_printed_row_appears_in_order_on_one_line_of_the_paper(paper: str) -> None:
    text = _text(paper)
    rows = defaultdict(list)
    for p in ALL:
        if p.paper == paper and p.column:
            rows[p.row].append(p)
    for row, cells in rows.items():
        pattern = ".*?".join(_number(p.accuracy) + _PM + _number(p.ci) for p in cells)
        assert any(re.search(pattern, line) for line in text.splitlines()), (paper, row, pattern)


def test_dpar_cells_follow_the_papers_column_by_column_listing() -> None:
    text = _text("dpar-t1")
    table = text[text.index("Dataset Privacy (ϵ, δ)") :]
    numbers = [float(x) for x in re.findall(r"(?<![\d.])0\.\d+", table)]
    by_dataset = defaultdict(dict)
    for p in PUBLISHED:
        if p.paper == "dpar-t1" and p.column:
            by_dataset[p.dataset][(p.column, p.epsilon)] = p.accuracy
    private = ["GAP", "SAGE", "Features", "DPAR-EM0", "DPAR-EM1", "DPAR-GM"]
    nodp = ["DPARNoDP", "GAPNoDP", "FeaturesNoDP"]
    for dataset, cells in by_dataset.items():
        # The paper lists each column's ε = 1 and ε = 8 values, then the three non-private ones.
        expected = [cells[(c, e)] for c in private for e in (1, 8)] + [cells[(c, math.inf)] for c in nodp]
        printed = [round(x / 100, 6) for x in expected]
        assert any(numbers[i : i + len(printed)] == printed for i in range(len(numbers))), (dataset, printed)


def test_published_for_matches_the_suite_run_and_metric() -> None:
    (one,) = published_for("ogbn-arxiv-disjoint", "gcn", math.inf)
    (two,) = published_for("ogbn-arxiv-disjoint", "gcn-2hop", math.inf)
    assert one[0].row == ("GCN (1-layer)",) and two[0].row == ("GCN (2-layer)",)
    # Membership-inference cells (NIP-GNN Table 4) never match a test-accuracy lookup.
    assert [p.paper for p, _ in published_for("cora", "nip-gnn", 4)] == ["nip-gnn-t1"]
    (mia,) = published_for("cora", "nip-gnn", 4, metric="mia_accuracy")
    assert mia[0].paper == "nip-gnn-t4" and mia[0].accuracy == 49.95
    assert published_for("fb100-haverford76", "gap-edge", 1)[0] == (
        next(p for p in PUBLISHED if p.dataset == "fb-100" and p.method == "gap-edge"),
        True,
    )
    assert published_for("ogbn-arxiv-clustered", "gcn", math.inf) == []  # unregistered: never a suite run


def _plain(line: str) -> str:
    """A line of a paper's text without its markup and spaces: "<b>48.5 <math>\\pm</math> 0.36</b>" -> "48.5±0.36"."""
    for markup, plain in (
        ("$", ""),
        ("\\pm", "±"),
        ("<math>", ""),
        ("</math>", ""),
        ("<b>", ""),
        ("</b>", ""),
        ("**", ""),
    ):
        line = line.replace(markup, plain)
    return re.sub(r"\s+", "", line)


def test_every_cell_s_source_line_prints_its_value() -> None:
    # The source names the line of the paper's text that prints the cell; a cell moved to another row or
    # table, or a typo in its value or ±, puts a number there that the line does not print.
    for p in ALL:
        name, line = p.source.rsplit(":", 1)
        assert name in TEXTS.values(), p
        text = _text(p.paper).splitlines()[int(line) - 1]
        if p.printed:  # printed in percent, with its ± where there is one
            assert p.printed.replace(" ", "") in _plain(text), (p, text)
        else:  # DPAR prints fractions, one or three to a line
            assert f"{p.accuracy / 100:.6g}" in [f"{float(x):.6g}" for x in text.split()], (p, text)


def test_the_table_ships_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert PUBLISHED_CSV.relative_to(ROOT / "src" / "nodedp").as_posix() in package_data["package-data"]["nodedp"]
    cells = read_published(PUBLISHED_CSV)
    assert len(cells) == len(ALL) and set(cells) == set(ALL)  # every cell on the table is one the suite reads


_GOOD = "progap-t2,fb-100,progap,,8,48.5,0.36,percent,ci95,,test_accuracy,Node-level private | ProGAP | 8.0,FB-100,progap.txt:256"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_GOOD.replace("progap-t2,", "progap-t9,", 1), "published.csv:2: paper 'progap-t9' is not one of dpar-t1, "),
        (_GOOD.replace(",percent,", ",percents,"), "published.csv:2: unit 'percents' is not one of percent, fraction"),
        (_GOOD.replace(",48.5,", ",48,5,"), "published.csv:2: expected 14 fields"),
        (_GOOD.replace(",48.5,", ",48.5%,"), "published.csv:2: value '48.5%' is not a number"),
        (_GOOD.replace(",ci95,", ",sem,"), "published.csv:2: spread 'sem' is not one of ci95, sd, none"),
        (_GOOD.replace(",0.36,percent,", ",0.36,fraction,"), "published.csv:2: a value printed as a fraction has no ±"),
    ],
)
def test_a_malformed_line_is_refused_naming_its_line_and_the_valid_choices(tmp_path, line, message) -> None:
    path = tmp_path / "published.csv"
    path.write_text(",".join(COLUMNS) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_published(path)
    assert str(err.value).startswith(message), err.value
    path.write_text(",".join(COLUMNS) + "\n" + _GOOD + "\n", encoding="utf-8")
    (cell,) = read_published(path)
    assert (cell.accuracy, cell.ci, cell.printed, cell.row) == (
        48.5,
        0.36,
        "48.5 ± 0.36",
        ("Node-level private", "ProGAP", "8.0"),
    )


def test_a_table_with_another_header_is_refused(tmp_path) -> None:
    path = tmp_path / "published.csv"
    path.write_text("paper,dataset,method,epsilon,value\n", encoding="utf-8")
    with pytest.raises(ValueError, match="the header must be paper,dataset,method,run,epsilon,value,pm,"):
        read_published(path)
