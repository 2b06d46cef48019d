"""No output a cluster shares holds a count of the private graph: after a tiny run of every structure artifact's
method (degree bounding in, out and undirected; DP-APPR), the runs' metrics and ledgers, the structure ledgers and
every log are searched for the counts only the private graph gives (edges a bounding keeps, DP-APPR's sources and
sample, degrees and how many nodes exceed a bound)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from tests.workflow._snakemake import snakemake, write_config

GRID = {
    "studies": {
        "leak": {
            "datasets": ["csbm-tiny"],
            "methods": ["mlp", "dp-gcn", "gap", "dpar-em0", "nip-gnn"],
            "epsilons": [8],
            "seeds": [0],
        }
    },
    "methods": {
        "mlp": {"epochs": 1},
        "dp-gcn": {"epochs": 1, "batch_size": 32},
        "gap": {"epochs": 1, "encoder_epochs": 1, "batch_size": 32},
        "dpar-em0": {"epochs": 1, "batch_size": 32},
        "nip-gnn": {"epochs": 1},
    },
}


def private_counts(workdir: Path) -> set[int]:
    """Counts of the private graph: each structure artifact's kept edges, DP-APPR's sources and sample, the
    graph's largest in- and out-degree and how many nodes exceed each artifact's bound."""
    graph = torch.load(workdir / "resources/graphs/csbm-tiny/graph.pt", weights_only=False)
    edges = graph["edge_index"] if isinstance(graph, dict) else graph.edge_index
    n = int(edges.max()) + 1
    in_degree, out_degree = torch.bincount(edges[1], minlength=n), torch.bincount(edges[0], minlength=n)
    counts = {int(in_degree.max()), int(out_degree.max())}
    artifacts = sorted((workdir / "results/structure").rglob("*.pt"))
    assert {p.name.split("~")[0] for p in artifacts} >= {"in-degree", "out-degree", "degree", "eps"}, artifacts
    for path in artifacts:
        artifact = torch.load(path, weights_only=False)
        if "edge_index" in artifact:
            counts.add(int(artifact["edge_index"].size(1)))
            bound = int(artifact["bound"])
            counts |= {int((in_degree > bound).sum()), int((out_degree > bound).sum())}
        for key in ("sources", "sample"):
            if key in artifact:
                counts.add(int(artifact[key].numel()))
    return counts


def public_numbers(workdir: Path) -> set[int]:
    """What the plan treats as public (meta.json's sizes, the split's sizes) and the grid's own numbers."""
    meta = json.loads((workdir / "resources/graphs/csbm-tiny/meta.json").read_text())
    numbers = {int(v) for v in meta.values() if isinstance(v, int) and not isinstance(v, bool)}
    split = torch.load(next((workdir / "results/splits").rglob("seed~0.pt")), weights_only=False)
    numbers |= {int(getattr(split, part).numel()) if hasattr(split, part) else 0 for part in ("train", "val", "test")}
    if isinstance(split, dict):
        numbers |= {int(v.numel()) for v in split.values() if isinstance(v, torch.Tensor)}
    return numbers


# A commit hash (the version every output stamps) holds digit runs by chance: "…a53f…" is no count.
_GIT_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def test_no_metrics_ledger_structure_json_or_log_holds_a_count_of_the_private_graph(tmp_path):
    config = write_config(tmp_path, GRID)
    result = snakemake(tmp_path, "data", "runs", config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    # only counts that cannot be a public number or a setting by coincidence
    counts = {c for c in private_counts(tmp_path) - public_numbers(tmp_path) if c >= 20}
    assert counts, "no private count to look for"
    outputs = [
        *(tmp_path / "results/runs").rglob("metrics.json"),
        *(tmp_path / "results/runs").rglob("ledger.json"),
        *(tmp_path / "results/structure").rglob("*.json"),
        *(p for p in (tmp_path / "logs").rglob("*") if p.is_file()),
    ]
    assert any(p.suffix == ".log" and "bound_degree" not in str(p) for p in outputs)
    found = {
        str(p.relative_to(tmp_path)): sorted(c for c in counts if re.search(rf"(?<![\d.]){c}(?![\d.])", text))
        for p in outputs
        if (text := _GIT_HASH.sub("", p.read_text(errors="replace")))
    }
    assert not {path: hits for path, hits in found.items() if hits}, f"private counts {sorted(counts)} found"
