"""Data names that planning reads (the preprocessing protocols, the dataset registry, declared datasets),
torch-free.

Re-exported by the modules that use them (``splits``, ``formats``), so that importing the protocols and the
registry does not import torch.
"""

from __future__ import annotations

__all__ = ["SETTINGS", "DatasetFormatError"]

# How methods see a split graph (``nodedp.data.splits.Split``): the whole graph, or each part's own edges.
SETTINGS = ("transductive", "inductive")


class DatasetFormatError(ValueError):
    """A dataset file is missing, corrupt, or not in the format its reader expects."""
