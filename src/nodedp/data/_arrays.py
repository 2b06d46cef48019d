"""The checks a dataset file's arrays share, whichever reader (the catalogue's formats, a user's files) reads them.

numpy is imported where it is used: the user-dataset module stays light to import (config checks read it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from nodedp.data.constants import DatasetFormatError

if TYPE_CHECKING:
    import numpy as np


def fail(where: Path | str, problem: str) -> NoReturn:
    """A ``DatasetFormatError`` naming the file (or the file and its part) ``where``."""
    raise DatasetFormatError(f"{where}: {problem}")


def as_int64(values: np.ndarray, where: Path | str, what: str, *, kinds: str = "iu") -> np.ndarray:
    """``values`` as int64; floats must be whole numbers (MATLAB and CSV files store doubles), other dtypes one of
    ``kinds`` (numpy's dtype kinds: "iu" integers, "iub" booleans too)."""
    import numpy as np

    values = np.asarray(values)
    if values.dtype.kind == "f":
        if not (np.isfinite(values).all() and (values == np.round(values)).all()):
            fail(where, f"{what} are not all integers")
    elif values.dtype.kind not in kinds:
        fail(where, f"{what} must be integers, got dtype {values.dtype}")
    return values.astype(np.int64)
