"""Data stage: canonical graphs, the dataset registry, synthetic graphs, splits, degree bounding.

The registry (``DATASETS``, ``get_dataset``, the catalog of real datasets) is loaded with the package and is
torch-free, so that planning looks datasets and their protocols up without torch; every other name loads
its module (torch, torch_geometric) on first access (PEP 562) and imports as before.
"""

from __future__ import annotations

from nodedp._lazy import lazy_exports
from nodedp.data import catalog, standins, user  # noqa: F401  (register the real datasets, stand-ins, declared ones)

# submodule -> the public names it provides here, loaded on first access (the registry already is)
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "registry": (
        "DATASETS",
        "OFFICIAL_SPLIT_FILE",
        "DatasetInfo",
        "GraphSize",
        "UnknownDatasetError",
        "build_dataset",
        "csbm_dataset",
        "dataset_names",
        "get_dataset",
        "make_split",
        "register_dataset",
    ),
    "degree": (
        "BOUND_KINDS",
        "bound_degree",
        "bound_in_degree",
        "bound_out_degree",
        "bound_undirected_degree",
        "capped_degrees",
        "degree_artifact",
        "identity_bound",
    ),
    "graph": (
        "FORMAT_VERSION",
        "GraphValidationError",
        "graph_stats",
        "load_graph",
        "load_graph_meta",
        "load_graph_tensors",
        "save_graph",
        "validate_graph",
    ),
    "splits": (
        "Split",
        "SplitValidationError",
        "load_split",
        "random_split",
        "remove_cross_split_edges",
        "save_split",
        "split_masks",
        "validate_split",
    ),
    "synthetic": ("CSBMSpec", "generate_csbm"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _SUBMODULES, globals())
