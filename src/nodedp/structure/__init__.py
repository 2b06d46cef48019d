"""Structure stage: the graph-derived artifacts that methods train on."""

from __future__ import annotations

from nodedp.structure.appr import appr_ista_reference, exact_ppr
from nodedp.structure.appr_push import appr_push
from nodedp.structure.heter_poisson_sampling import HeterPoissonSampler
from nodedp.structure.structured_subsampling import StructuredSampler, gather_structured, prepare_structured_graph
from nodedp.structure.subgraphs import (
    Subgraphs,
    gather_features,
    load_subgraphs,
    occurrence_counts,
    sample_subgraphs,
    save_subgraphs,
    trim_padding,
)

__all__ = [
    "HeterPoissonSampler",
    "StructuredSampler",
    "Subgraphs",
    "appr_ista_reference",
    "appr_push",
    "exact_ppr",
    "gather_features",
    "gather_structured",
    "load_subgraphs",
    "occurrence_counts",
    "prepare_structured_graph",
    "sample_subgraphs",
    "save_subgraphs",
    "trim_padding",
]
