"""Published accuracies of the papers the suite reimplements, as printed in their tables.

Each entry is one printed cell (paper table, dataset, method, ε, value, its ±, where it sits in the
paper's layout, and the line of the paper's text that prints it), read from the table ``published.csv``. ``PUBLISHED`` holds cells on registered datasets, ``PUBLISHED_UNREGISTERED`` the others;
``STAND_INS`` names suite datasets that stand in for a paper's. What each field means, the stand-ins and the
printed tables' oddities: docs/design/analysis.md.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = [
    "PAPERS",
    "PUBLISHED",
    "PUBLISHED_CSV",
    "PUBLISHED_UNREGISTERED",
    "SPREADS",
    "STAND_INS",
    "UNREGISTERED_DATASETS",
    "Published",
    "StandIn",
    "published_for",
    "read_published",
    "stands_in_for",
]

INF = math.inf

# Paper table key -> how tables cite it.
PAPERS: dict[str, str] = {
    "dpar-t1": "DPAR (Zhang et al.) Table 1 (δ as printed: 2e-3 on Cora-ML, 8e-4 on MS Academic and CS, "
    "1e-4 on Reddit and Physics)",
    "dp-gnn-t1": "DP-GNN (Daigavane et al.) Table 1: DP-GCN, transductive, 1 layer, ε ≤ 10",
    "dp-gnn-t2": "DP-GNN (Daigavane et al.) Table 2: DP-GCN, inductive, 1 and 2 layers, ε ≤ 12",
    "dp-gnn-t3": "DP-GNN (Daigavane et al.) Table 3: DP-GIN and DP-GAT on transductive ogbn-arxiv, ε ≤ 10",
    "dp-gnn-t4": "DP-GNN (Daigavane et al.) Table 4: DP-GIN, inductive, 1 and 2 layers, ε ≤ 12",
    "nip-gnn-t1": "NIP-GNN Table 1 (ε = 4)",
    "nip-gnn-t2": "NIP-GNN Table 2 (ablations, ε = 7)",
    "nip-gnn-t3": "NIP-GNN Table 3 (ablations, ε = 12)",
    "nip-gnn-t4": "NIP-GNN Table 4 (membership-inference attack accuracy, ε = 4)",
    "progap-t2": "ProGAP Table 2 (non-private, edge level ε = 1, node level ε = 8)",
}

# What the ± printed beside a value is.
SPREADS: dict[str, str] = {"ci95": "95% CI half-width", "sd": "standard deviation", "none": "nothing printed"}

# Graphs papers report on that the suite's dataset registry does not build.
UNREGISTERED_DATASETS: dict[str, str] = {
    "ogbn-arxiv-clustered": "DP-GNN's agglomerative clustering of ogbn-arxiv into disjoint parts",
    "reddit-disjoint": "DP-GNN's reddit with every inter-split edge removed",
    "wenet": "ProGAP's WeNet (a private mobile-sensing dataset)",
}


@dataclass(frozen=True)
class StandIn:
    pattern: str  # suite dataset ids that stand in (fnmatch, case-sensitive: "fb100-*", or one exact id)
    note: str  # how they differ from the paper's dataset, for the tables' notes


# Published dataset -> the suite datasets that stand in for it (a different graph or setting).
STAND_INS: dict[str, StandIn] = {
    "fb-100": StandIn(
        "fb100-*",
        "a single school, or a union of fewer schools (named below the table where it is one), stands in for "
        "the paper's FB-100 (the union of all 100 schools): a different graph, shown for orientation only.",
    ),
    "cora-ml": StandIn(
        "cora-ml-transductive",
        "cora-ml-transductive stands in for the paper's Cora-ML: the same "
        "graph and 80/20 split, but transductive (GAP's setting; DPAR's is "
        "inductive), an ablation.",
    ),
}


@dataclass(frozen=True)
class Published:
    paper: str  # a key of PAPERS
    dataset: str  # suite dataset id (stood in for by the STAND_INS entry of that id, if any)
    method: str  # registered suite method id reimplementing the paper's row or column
    epsilon: float  # INF: non-private
    accuracy: float  # percent
    ci: float | None = None  # the ± printed beside it, percent (what it is: spread)
    run: str | None = None  # the variant of `method` (tuned.yaml) whose runs reproduce the cell, if not method
    row: tuple[str, ...] = ()  # the cell's row labels in the paper's table, as printed
    column: str = ""  # its column label as printed; "": a second suite reading of a cell placed elsewhere
    spread: str = "ci95"  # a key of SPREADS
    at_most: bool = False  # the paper states ε ≤ epsilon (DP-GNN), not ε = epsilon
    metric: str = "test_accuracy"  # the summary metric it compares with
    printed: str = ""  # the value as printed, where it is printed in percent ("74.0 ± 0.80")
    source: str = ""  # where the paper prints it: its text in ../shared/papers and the line ("progap.txt:256")

    @property
    def suite_method(self) -> str:
        """The suite run id (method or variant) whose runs reproduce this cell."""
        return self.run or self.method


# The cells, one line each (docs/design/analysis.md): ``paper`` a key of PAPERS; ``epsilon`` "inf" when
# non-private; ``value`` and ``pm`` as printed (``unit`` "fraction": DPAR prints 0.5733 for 57.33%, with no ±);
# ``at_most`` "yes" where the paper states ε ≤ epsilon; ``row`` the row labels joined by " | "; ``column`` ""
# for a second suite reading of a cell placed elsewhere; ``source`` the paper's text and line in ../shared/papers.
PUBLISHED_CSV = Path(__file__).with_name("published.csv")
COLUMNS = (
    "paper",
    "dataset",
    "method",
    "run",
    "epsilon",
    "value",
    "pm",
    "unit",
    "spread",
    "at_most",
    "metric",
    "row",
    "column",
    "source",
)
UNITS = ("percent", "fraction")
METRICS = ("test_accuracy", "mia_accuracy")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def _choice(where: str, field: str, value: str, valid: tuple[str, ...] | dict[str, str]) -> str:
    if value not in valid:
        raise ValueError(f"{where}: {field} {value!r} is not one of {', '.join(valid)}")
    return value


def _number(where: str, field: str, text: str) -> float:
    if not _NUMBER.match(text):
        raise ValueError(f"{where}: {field} {text!r} is not a number as a paper prints one (digits, one '.')")
    return float(text)


def _cell(record: dict[str, str], where: str) -> Published:
    """One line of the table as a Published cell; ``where`` (file:line) names it in any error."""
    paper = _choice(where, "paper", record["paper"], PAPERS)
    unit = _choice(where, "unit", record["unit"], UNITS)
    value, pm = _number(where, "value", record["value"]), record["pm"]
    ci = _number(where, "pm", pm) if pm else None
    if unit == "fraction" and ci is not None:
        raise ValueError(f"{where}: a value printed as a fraction has no ± in these papers, got pm {pm!r}")
    epsilon = INF if record["epsilon"] == "inf" else _number(where, "epsilon", record["epsilon"])
    return Published(
        paper,
        record["dataset"],
        record["method"],
        int(epsilon) if math.isfinite(epsilon) and epsilon.is_integer() else epsilon,
        round(100 * value, 6) if unit == "fraction" else value,
        ci,
        run=record["run"] or None,
        row=tuple(record["row"].split(" | ")) if record["row"] else (),
        column=record["column"],
        spread=_choice(where, "spread", record["spread"], SPREADS),
        at_most=_choice(where, "at_most", record["at_most"], ("yes", "")) == "yes",
        metric=_choice(where, "metric", record["metric"], METRICS),
        printed="" if unit == "fraction" else record["value"] + (f" ± {pm}" if pm else ""),
        source=record["source"],
    )


def read_published(path: Path = PUBLISHED_CSV) -> tuple[Published, ...]:
    """The published cells in ``path`` (a CSV with the header COLUMNS), in file order."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(COLUMNS)}, got {','.join(reader.fieldnames or ())}")
        cells = []
        for record in reader:
            where = f"{path.name}:{reader.line_num}"
            if None in record or None in record.values():
                raise ValueError(f"{where}: expected {len(COLUMNS)} fields ({','.join(COLUMNS)})")
            cells.append(_cell(record, where))
    return tuple(cells)


_ALL: tuple[Published, ...] = read_published()
PUBLISHED: tuple[Published, ...] = tuple(p for p in _ALL if p.dataset not in UNREGISTERED_DATASETS)
PUBLISHED_UNREGISTERED: tuple[Published, ...] = tuple(p for p in _ALL if p.dataset in UNREGISTERED_DATASETS)


def stands_in_for(dataset: str) -> str | None:
    """The published dataset that suite ``dataset`` stands in for (``STAND_INS``), None if none."""
    for published, stand_in in STAND_INS.items():
        if dataset != published and fnmatchcase(dataset, stand_in.pattern):
            return published
    return None


def published_for(
    dataset: str, method: str, epsilon: float, *, metric: str = "test_accuracy"
) -> list[tuple[Published, bool]]:
    """Published ``metric`` cells for a suite (dataset, run id, ε), each with whether the dataset only stands
    in for the paper's (a different graph or setting, ``STAND_INS``). ``method`` is the suite run id (a method
    or a config variant, ``Published.suite_method``) without ``@paper``. Cells the paper states only as
    ε ≤ x (DP-GNN) match ε = x exactly."""
    target = stands_in_for(dataset)
    out = []
    for p in PUBLISHED:
        if p.suite_method != method or p.epsilon != epsilon or p.metric != metric:
            continue
        if p.dataset == dataset:
            out.append((p, False))
        elif p.dataset == target:
            out.append((p, True))
    return out
