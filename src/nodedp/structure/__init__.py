"""Structure stage: the graph-derived artifacts that methods train on."""

from __future__ import annotations

from nodedp.structure.subgraphs import (
    Subgraphs,
    gather_features,
    load_subgraphs,
    occurrence_counts,
    sample_subgraphs,
    save_subgraphs,
)

__all__ = [
    "Subgraphs",
    "gather_features",
    "load_subgraphs",
    "occurrence_counts",
    "sample_subgraphs",
    "save_subgraphs",
]
