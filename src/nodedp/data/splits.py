"""Stored node splits: one evaluation contract for every method.

A split is a value (sorted int64 node ids per part, the setting, the seed),
saved once per (dataset, setting, seed) and loaded by every run, so all
methods are scored on the same nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import torch
from torch import Tensor

from nodedp.data.constants import SETTINGS
from nodedp.io import torch_save_atomic

_PARTS = ("train", "val", "test")


class SplitValidationError(ValueError):
    """A split (in memory or on disk) is malformed."""


@dataclass(frozen=True)
class Split:
    """Disjoint sorted int64 node ids per part.

    ``setting`` says how methods see the graph: "transductive" trains on the
    whole graph (labels of train nodes only); "inductive" trains on the graph
    with every cross-part edge removed (``remove_cross_split_edges``).
    """

    train: Tensor
    val: Tensor
    test: Tensor
    setting: str
    seed: int


def _check_setting(setting: str) -> None:
    if setting not in SETTINGS:
        raise ValueError(f"unknown split setting {setting!r}; valid choices: {list(SETTINGS)}")


def random_split(
    num_nodes: int,
    *,
    seed: int,
    train: float = 0.75,
    val: float = 0.10,
    test: float = 0.15,
    setting: str = "transductive",
) -> Split:
    """Uniformly random partition of all nodes (the GAP/ProGAP 75/10/15 protocol).

    Part sizes are ``round(train * N)``, ``round(val * N)`` and the rest.
    """
    _check_setting(setting)
    fractions = {"train": train, "val": val, "test": test}
    for part, fraction in fractions.items():
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"split fraction {part}={fraction} must lie in [0, 1]")
    if not math.isclose(train + val + test, 1.0, abs_tol=1e-9):
        raise ValueError(f"split fractions must sum to 1, got {train} + {val} + {test} = {train + val + test}")
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    perm = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))
    num_train = round(train * num_nodes)
    num_val = min(round(val * num_nodes), num_nodes - num_train)
    parts = torch.split(perm, [num_train, num_val, num_nodes - num_train - num_val])
    train_nodes, val_nodes, test_nodes = (part.sort().values for part in parts)
    return Split(train_nodes, val_nodes, test_nodes, setting=setting, seed=seed)


def validate_split(split: Split, *, where: str, num_nodes: int | None = None) -> None:
    """Raise ``SplitValidationError`` naming ``where`` unless the parts are sorted,
    unique, disjoint int64 vectors (within ``[0, num_nodes)`` when given)."""

    def fail(problem: str) -> NoReturn:
        raise SplitValidationError(f"{where}: {problem}")

    if split.setting not in SETTINGS:
        fail(f"unknown setting {split.setting!r}; valid choices: {list(SETTINGS)}")
    for part in _PARTS:
        ids = getattr(split, part)
        if not isinstance(ids, Tensor) or ids.dtype != torch.int64 or ids.dim() != 1:
            found = f"{ids.dtype} {list(ids.shape)}" if isinstance(ids, Tensor) else type(ids).__name__
            fail(f"{part} must be an int64 vector, got {found}")
        if ids.numel() and not bool((ids[1:] > ids[:-1]).all()):
            fail(f"{part} node ids must be sorted and unique")
        if ids.numel() and int(ids[0]) < 0:
            fail(f"{part} has a negative node id {int(ids[0])}")
        if ids.numel() and num_nodes is not None and int(ids[-1]) >= num_nodes:
            fail(f"{part} node id {int(ids[-1])} out of range for num_nodes {num_nodes}")
    everything = torch.cat([split.train, split.val, split.test])
    if torch.unique(everything).numel() != everything.numel():
        fail("train, val and test overlap")


def save_split(split: Split, path: str | Path) -> Path:
    validate_split(split, where=f"split for {path}")
    payload = {part: getattr(split, part) for part in _PARTS}
    return torch_save_atomic({**payload, "setting": split.setting, "seed": split.seed}, path)


def load_split(path: str | Path, *, num_nodes: int | None = None) -> Split:
    """Load and validate a split saved by ``save_split``."""
    path = Path(path)
    if not path.is_file():
        raise SplitValidationError(f"{path}: missing file")
    try:
        payload = torch.load(path, weights_only=True)
    except Exception as err:  # a truncated or foreign file: torch raises many types, with long messages
        lines = str(err).strip().splitlines()
        problem = f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
        raise SplitValidationError(
            f"{path}: not a readable split file ({problem}); rebuild it with `python -m "
            "nodedp split` (the workflow's split rule)"
        ) from err
    expected = {*_PARTS, "setting", "seed"}
    if not isinstance(payload, dict) or set(payload) != expected:
        found = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        raise SplitValidationError(f"{path}: expected a dict with keys {sorted(expected)}, got {found}")
    split = Split(**payload)
    validate_split(split, where=str(path), num_nodes=num_nodes)
    return split


def split_masks(split: Split, num_nodes: int) -> tuple[Tensor, Tensor, Tensor]:
    """Boolean (train, val, test) masks of length ``num_nodes``."""
    validate_split(split, where="split_masks", num_nodes=num_nodes)
    masks = []
    for part in _PARTS:
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[getattr(split, part)] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]


def remove_cross_split_edges(edge_index: Tensor, split: Split) -> Tensor:
    """The inductive view: keep only edges whose endpoints lie in the same part.

    Edges touching a node in no part are dropped too: such a node belongs to
    none of the three graphs.
    """
    ids = [edge_index.reshape(-1), split.train, split.val, split.test]
    size = max((int(t.max()) + 1 for t in ids if t.numel()), default=0)
    part_of = torch.full((size,), -1, dtype=torch.int64)
    for index, part in enumerate(_PARTS):
        part_of[getattr(split, part)] = index
    src_part, dst_part = part_of[edge_index[0]], part_of[edge_index[1]]
    return edge_index[:, (src_part == dst_part) & (src_part >= 0)]
