"""Data stage: canonical graphs, the dataset registry, synthetic graphs, splits, degree bounding.

The registry (``DATASETS``, ``get_dataset``, the catalog of real datasets) is loaded with the package and is
torch-free, so that planning looks datasets and their protocols up without torch; every other name loads
its module (torch, torch_geometric) on first access (PEP 562) and imports as before.
"""

from __future__ import annotations

import importlib
from typing import Any

from nodedp.data import catalog  # noqa: F401  (registers the real datasets)

# submodule -> the public names it provides here, loaded on first access (the registry already is)
_LAZY: dict[str, tuple[str, ...]] = {
    "registry": ("DATASETS", "OFFICIAL_SPLIT_FILE", "DatasetInfo", "UnknownDatasetError", "build_dataset",
                 "csbm_dataset", "dataset_names", "get_dataset", "make_split", "register_dataset"),
    "degree": ("BOUND_KINDS", "bound_degree", "bound_in_degree", "bound_out_degree", "bound_undirected_degree",
               "capped_degrees", "degree_artifact", "identity_bound"),
    "graph": ("FORMAT_VERSION", "GraphValidationError", "graph_stats", "load_graph", "load_graph_meta", "save_graph",
              "validate_graph"),
    "splits": ("SETTINGS", "Split", "SplitValidationError", "load_split", "random_split", "remove_cross_split_edges",
               "save_split", "split_masks", "validate_split"),
    "synthetic": ("CSBMSpec", "generate_csbm"),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
