"""The public degree bounds a method's structure artifacts use: the dataset registry's, unless the method's
hyperparameters set their own. Planning (``PublicInputs.degree_bounds``), the workflow's structure targets and
the config checks read them here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEGREE_BOUND_KEYS", "structure_bounds"]

# Hyperparameters that override a dataset's public degree bounds for a method's structure artifacts.
DEGREE_BOUND_KEYS = {"in-degree": "in_degree_bound", "out-degree": "out_degree_bound", "degree": "max_degree"}


def structure_bounds(dataset: Any, hparams: Mapping[str, Any]) -> dict[str, int]:
    """The public degree bound of each degree-bounded structure kind for a method on a dataset: the dataset's
    (``in_degree_bound`` K for in-degree, ``out_degree_bound`` D for out-degree and, NIP-GNN's undirected
    bounding, degree) unless the method's hyperparameters set their own (``DEGREE_BOUND_KEYS``, 0: unset)."""
    bounds = {
        "in-degree": dataset.in_degree_bound,
        "out-degree": dataset.out_degree_bound,
        "degree": dataset.out_degree_bound,
    }
    for kind, key in DEGREE_BOUND_KEYS.items():
        if hparams.get(key):  # 0 or unset: the dataset's (the methods' own convention)
            bounds[kind] = hparams[key]
    return bounds
