"""Data names that planning reads (the preprocessing protocols, the dataset registry, declared datasets),
torch-free.

Re-exported by the modules that use them (``splits``, ``formats``), so that importing the protocols and the
registry does not import torch.
"""

from __future__ import annotations

__all__ = [
    "FACEBOOK100_CLASS_YEARS",
    "FACEBOOK100_COLUMNS",
    "FACEBOOK100_FEATURE_COLUMNS",
    "FACEBOOK100_LABELS",
    "FB100_FEATURE_COLUMNS",
    "SETTINGS",
    "DatasetFormatError",
]

# How methods see a split graph (``nodedp.data.splits.Split``): the whole graph, or each part's own edges.
SETTINGS = ("transductive", "inductive")


class DatasetFormatError(ValueError):
    """A dataset file is missing, corrupt, or not in the format its reader expects."""


# Facebook100's local_info columns and how GAP's and ProGAP's loaders read them (nodedp.data.formats).
FACEBOOK100_COLUMNS = ("status", "gender", "major", "minor", "housing", "year", "high_school")
FACEBOOK100_FEATURE_COLUMNS = ("status", "gender", "major", "minor", "housing")
# ProGAP's FB-100 loader (its FB100 dataset) one-hot encodes only these three: it drops minor and housing.
FB100_FEATURE_COLUMNS = ("status", "gender", "major")
# GAP's Facebook100 loader (sisaman/pyg-datasets) treats class years outside
# 2004-2009 (a handful of alumni and faculty per school) as missing.
FACEBOOK100_CLASS_YEARS = (2004, 2009)
FACEBOOK100_LABELS = ("years", "progap")
