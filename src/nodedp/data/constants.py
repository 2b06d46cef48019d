"""Data names that planning reads (the preprocessing protocols, hence the dataset registry), torch-free.

Re-exported by the module that uses them (``splits``), so that importing the protocols and the
registry does not import torch.
"""

from __future__ import annotations

__all__ = ["SETTINGS"]

# How methods see a split graph (``nodedp.data.splits.Split``): the whole graph, or each part's own edges.
SETTINGS = ("transductive", "inductive")
