"""Data stage: canonical graphs, the dataset registry, synthetic graphs, splits, degree bounding."""

from __future__ import annotations

from nodedp.data import catalog  # noqa: F401  (registers the real datasets)
from nodedp.data.degree import (
    BOUND_KINDS,
    bound_degree,
    bound_in_degree,
    bound_out_degree,
    bound_undirected_degree,
    capped_degrees,
    degree_artifact,
    identity_bound,
)
from nodedp.data.graph import (
    FORMAT_VERSION,
    GraphValidationError,
    graph_stats,
    load_graph,
    load_graph_meta,
    save_graph,
    validate_graph,
)
from nodedp.data.registry import (
    DATASETS,
    OFFICIAL_SPLIT_FILE,
    DatasetInfo,
    UnknownDatasetError,
    build_dataset,
    csbm_dataset,
    dataset_names,
    get_dataset,
    make_split,
    register_dataset,
)
from nodedp.data.splits import (
    SETTINGS,
    Split,
    SplitValidationError,
    load_split,
    random_split,
    remove_cross_split_edges,
    save_split,
    split_masks,
    validate_split,
)
from nodedp.data.synthetic import CSBMSpec, generate_csbm

__all__ = [
    "DATASETS",
    "FORMAT_VERSION",
    "SETTINGS",
    "CSBMSpec",
    "DatasetInfo",
    "GraphValidationError",
    "Split",
    "SplitValidationError",
    "UnknownDatasetError",
    "BOUND_KINDS",
    "bound_degree",
    "bound_in_degree",
    "bound_out_degree",
    "bound_undirected_degree",
    "capped_degrees",
    "degree_artifact",
    "identity_bound",
    "build_dataset",
    "csbm_dataset",
    "dataset_names",
    "generate_csbm",
    "get_dataset",
    "make_split",
    "OFFICIAL_SPLIT_FILE",
    "graph_stats",
    "load_graph",
    "load_graph_meta",
    "load_split",
    "random_split",
    "register_dataset",
    "remove_cross_split_edges",
    "save_graph",
    "save_split",
    "split_masks",
    "validate_graph",
    "validate_split",
]
