"""Readers of the upstream dataset formats: downloaded files in, a ``RawGraph`` out.

A reader decodes; it does not preprocess (``preprocess`` applies each paper's protocol). It returns ``x``
float32 [N, F], ``y`` int64 [N] (``-1``: no label), the sorted edge set the file states and the source's own
split, if any; each reader's docstring says where it differs from PyG's or OGB's loader. Every problem with a
file raises ``DatasetFormatError`` naming it. No network, no ``ogb`` package. Conventions: docs/design/data.md.
"""

from __future__ import annotations

import codecs
import collections
import copyreg
import pickle
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.data import Data

from nodedp.data._arrays import as_int64, fail
from nodedp.data.constants import (
    FACEBOOK100_CLASS_YEARS,
    FACEBOOK100_COLUMNS,
    FACEBOOK100_FEATURE_COLUMNS,
    FACEBOOK100_LABELS,
    DatasetFormatError,
)

__all__ = [
    "OGB_NODE_DATASETS",
    "SPLIT_PARTS",
    "OgbNodeLayout",
    "RawGraph",
    "encode_facebook100",
    "fb100_year_labels",
    "read_facebook100_mat",
    "read_graphmining_npz",
    "read_npz_graph",
    "read_ogb_node",
    "read_planetoid",
    "read_reddit",
]

SPLIT_PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class RawGraph:
    """A decoded upstream graph (see the module docstring for the conventions)."""

    data: Data
    official_split: Mapping[str, Tensor] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


# -- shared decoding helpers ---------------------------------------------------

# What a broken file makes numpy, scipy, pandas, gzip, zipfile or pickle raise.
_DECODE_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    NotImplementedError,
    zlib.error,
    zipfile.BadZipFile,
    pickle.UnpicklingError,
    scipy.io.matlab.MatReadError,
)


@contextmanager
def _decoding(path: Path) -> Iterator[None]:
    """Turn a library's failure to decode ``path`` into a ``DatasetFormatError`` naming it."""
    try:
        yield
    except DatasetFormatError:
        raise
    except _DECODE_ERRORS as error:
        raise DatasetFormatError(f"{path}: cannot be decoded ({type(error).__name__}: {error})") from error


def _require_file(path: Path) -> Path:
    if not path.is_file():
        fail(path, "missing file")
    return path


def _read_npz(path: Path, keys: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays among ``keys`` that ``path`` holds, and every key it holds.

    Only the asked keys are read: other keys may hold pickled objects, which
    are never unpickled (``allow_pickle=False``).
    """
    _require_file(path)
    with _decoding(path), np.load(path, allow_pickle=False) as archive:
        present = sorted(archive.files)
        return {key: archive[key] for key in keys if key in present}, present


def _need(arrays: Mapping[str, np.ndarray], present: list[str], path: Path, *keys: str) -> list[np.ndarray]:
    missing = [key for key in keys if key not in arrays]
    if missing:
        fail(path, f"missing key(s) {missing}; keys present: {present}")
    return [arrays[key] for key in keys]


def _csr(arrays: Mapping[str, np.ndarray], present: list[str], path: Path, prefix: str) -> sp.csr_matrix:
    """The CSR matrix stored as ``{prefix}_data/_indices/_indptr/_shape``."""
    data, indices, indptr, shape = _need(
        arrays, present, path, f"{prefix}_data", f"{prefix}_indices", f"{prefix}_indptr", f"{prefix}_shape"
    )
    with _decoding(path):
        matrix = sp.csr_matrix((data, indices, indptr), shape=tuple(int(s) for s in shape))
        # The constructor checks lengths only; out-of-range column ids would corrupt toarray().
        matrix.check_format(full_check=True)
    return matrix


def _read_csv_gz(path: Path, *, dtype: type, header: bool = False) -> pd.DataFrame:
    """A gzipped CSV (OGB's storage), parsed by pandas' C reader straight into ``dtype``."""
    _require_file(path)
    with _decoding(path):
        return pd.read_csv(path, header=0 if header else None, dtype=dtype, compression="gzip")


def _edge_set(
    row: np.ndarray, col: np.ndarray, *, num_nodes: int, where: Path | str, both_directions: bool = False
) -> Tensor:
    """Sorted unique (row, col) pairs as int64 [2, E] (plus (col, row) if ``both_directions``).

    Works on one int64 key per edge (``row * N + col``) sorted in place, so a
    60M-edge list costs a few copies of one int64 array, never Python objects.
    """
    row = np.asarray(row, dtype=np.int64).ravel()
    col = np.asarray(col, dtype=np.int64).ravel()
    if row.size != col.size:
        fail(where, f"edge list has {row.size} sources but {col.size} targets")
    if row.size:
        low, high = min(int(row.min()), int(col.min())), max(int(row.max()), int(col.max()))
        if low < 0 or high >= num_nodes:
            fail(where, f"edge endpoint {low if low < 0 else high} out of range for {num_nodes} nodes")
    keys = np.empty(row.size * (2 if both_directions else 1), dtype=np.int64)
    forward = keys[: row.size]
    np.multiply(row, num_nodes, out=forward)
    forward += col
    if both_directions:
        backward = keys[row.size :]
        np.multiply(col, num_nodes, out=backward)
        backward += row
    keys.sort()
    if keys.size:
        distinct = np.empty(keys.size, dtype=bool)
        distinct[0] = True
        np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
        keys = keys[distinct]
    edge_index = np.empty((2, keys.size), dtype=np.int64)
    np.floor_divide(keys, num_nodes, out=edge_index[0])
    np.remainder(keys, num_nodes, out=edge_index[1])
    return torch.from_numpy(edge_index)


def _labels_from_one_hot(matrix: sp.spmatrix | np.ndarray, where: Path | str) -> np.ndarray:
    """Column of each row's single nonzero; ``-1`` for a row without one (unlabeled)."""
    indicator = sp.csr_matrix(matrix) != 0
    per_row = np.diff(indicator.indptr)
    if per_row.size and int(per_row.max()) > 1:
        fail(where, f"{int((per_row > 1).sum())} nodes have several labels (multi-label is not supported)")
    labels = np.full(indicator.shape[0], -1, dtype=np.int64)
    labels[per_row == 1] = indicator.indices[indicator.indptr[:-1][per_row == 1]]
    return labels


def _integer_labels(values: np.ndarray, where: Path | str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        fail(where, f"labels must be a vector, got shape {list(values.shape)}")
    return as_int64(values, where, "labels")


def _graph(x: np.ndarray, y: np.ndarray, edge_index: Tensor, *, where: Path | str) -> Data:
    """Checked ``Data``: x float32 [N, F], y int64 [N] in {-1, 0, 1, ...}."""
    x = np.asarray(x)
    if x.ndim != 2:
        fail(where, f"features must be a matrix, got shape {list(x.shape)}")
    if x.dtype.kind not in "fiub":
        fail(where, f"features must be numeric, got dtype {x.dtype}")
    num_nodes = x.shape[0]
    if y.shape != (num_nodes,):
        fail(where, f"{num_nodes} feature rows but {y.shape[0]} labels")
    if y.size and int(y.min()) < -1:
        fail(where, f"negative label {int(y.min())}")
    features = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    if not bool(torch.isfinite(features).all()):
        fail(where, "features contain NaN or inf")
    return Data(x=features, y=torch.from_numpy(y.astype(np.int64, copy=False)), edge_index=edge_index)


def _split(parts: Mapping[str, np.ndarray], *, num_nodes: int, where: Path | str) -> dict[str, Tensor]:
    """Sorted node ids per part; parts must be disjoint and within [0, num_nodes)."""
    split = {}
    for part in SPLIT_PARTS:
        ids = np.sort(np.asarray(parts[part], dtype=np.int64).ravel())
        if ids.size and (int(ids[0]) < 0 or int(ids[-1]) >= num_nodes):
            fail(where, f"{part} node id out of range for {num_nodes} nodes")
        split[part] = torch.from_numpy(ids)
    everything = np.concatenate([split[part].numpy() for part in SPLIT_PARTS])
    if np.unique(everything).size != everything.size:
        fail(where, "the official train/val/test parts overlap or repeat nodes")
    return split


# -- Planetoid (Cora, CiteSeer, PubMed) ----------------------------------------

_PLANETOID_FILES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
_PLANETOID_NUM_VAL = 500  # the public split: 500 validation nodes right after the training ones
_NDARRAY_RECONSTRUCT = np.ndarray.__reduce__(np.empty(0))[0]
_NUMPY_SCALAR = np.float64(0).__reduce__()[0]
# Everything the Planetoid pickles (written by Python 2 numpy/scipy) may name.
# Any other global (e.g. os.system in a tampered file) is refused, not called.
_PLANETOID_GLOBALS: Mapping[tuple[str, str], Any] = MappingProxyType(
    {
        **{
            (module, "_reconstruct"): _NDARRAY_RECONSTRUCT
            for module in ("numpy.core.multiarray", "numpy._core.multiarray")
        },
        **{(module, "scalar"): _NUMPY_SCALAR for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        **{
            (module, "csr_matrix"): sp.csr_matrix
            for module in ("scipy.sparse.csr", "scipy.sparse._csr", "scipy.sparse")
        },
        ("collections", "defaultdict"): collections.defaultdict,
        **{(module, "list"): list for module in ("__builtin__", "builtins")},
        **{(module, "object"): object for module in ("__builtin__", "builtins")},
        **{
            (module, "_reconstructor"): copyreg._reconstructor  # type: ignore[attr-defined]
            for module in ("copy_reg", "copyreg")
        },
        ("_codecs", "encode"): codecs.encode,  # how Python 3 writes bytes at protocol 2
    }
)


class _PlanetoidUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _PLANETOID_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing global {module}.{name}: Planetoid files hold only numpy arrays, CSR matrices and lists"
            ) from None


def _unpickle_planetoid(path: Path) -> Any:
    _require_file(path)
    with _decoding(path), path.open("rb") as stream:
        # latin1: the files were pickled by Python 2.
        return _PlanetoidUnpickler(stream, encoding="latin1").load()


def _planetoid_matrix(path: Path) -> np.ndarray:
    value = _unpickle_planetoid(path)
    if sp.issparse(value):
        value = value.toarray()
    if not isinstance(value, np.ndarray) or value.ndim != 2:
        fail(path, f"expected a 2-D matrix, got {type(value).__name__}")
    return value


def read_planetoid(raw_dir: Path, name: str) -> RawGraph:
    """Planetoid files ``ind.{name}.{x,y,tx,ty,allx,ally,graph,test.index}`` in ``raw_dir``.

    Node order, features, labels and the public split (the ``y`` nodes train,
    the next 500 validate, ``test.index`` tests) are PyG's ``Planetoid``. Test
    ids may leave gaps (CiteSeer's isolated nodes): like PyG those nodes get
    zero features, but they get label ``-1`` where PyG gives class 0. Unlike
    PyG, self loops stay (PyG drops them); duplicate adjacency entries collapse
    in both. Pickles are loaded with an allow-list of the classes they need.
    """
    raw_dir = Path(raw_dir)
    paths = {part: raw_dir / f"ind.{name.lower()}.{part}" for part in _PLANETOID_FILES}
    x, tx, allx = (_planetoid_matrix(paths[part]) for part in ("x", "tx", "allx"))
    y, ty, ally = (_planetoid_matrix(paths[part]) for part in ("y", "ty", "ally"))
    _require_file(paths["test.index"])
    with _decoding(paths["test.index"]):
        test_index = np.loadtxt(paths["test.index"], dtype=np.int64, ndmin=1)
    adjacency = _unpickle_planetoid(paths["graph"])
    if not isinstance(adjacency, dict):
        fail(paths["graph"], f"expected a dict of adjacency lists, got {type(adjacency).__name__}")

    if not (x.shape[1] == tx.shape[1] == allx.shape[1]):
        fail(raw_dir, f"feature widths differ: x {x.shape[1]}, tx {tx.shape[1]}, allx {allx.shape[1]}")
    if not (y.shape[1] == ty.shape[1] == ally.shape[1]):
        fail(raw_dir, f"label widths differ: y {y.shape[1]}, ty {ty.shape[1]}, ally {ally.shape[1]}")
    if x.shape[0] != y.shape[0] or allx.shape[0] != ally.shape[0] or tx.shape[0] != ty.shape[0]:
        fail(raw_dir, "a feature file and its label file (x/y, allx/ally, tx/ty) have different row counts")
    if ty.shape[0] != test_index.size or test_index.size == 0:
        fail(paths["test.index"], f"{test_index.size} test ids for {ty.shape[0]} rows of ty")
    num_known = allx.shape[0]
    if int(test_index.min()) < num_known or np.unique(test_index).size != test_index.size:
        fail(paths["test.index"], f"test ids must be distinct and follow the {num_known} allx nodes")
    if x.shape[0] + _PLANETOID_NUM_VAL > num_known:
        fail(raw_dir, f"{x.shape[0]} training + {_PLANETOID_NUM_VAL} validation nodes exceed allx ({num_known})")
    num_nodes = int(test_index.max()) + 1

    features = np.zeros((num_nodes, allx.shape[1]), dtype=np.float32)
    features[:num_known] = allx
    features[test_index] = tx
    labels = np.full(num_nodes, -1, dtype=np.int64)
    labels[:num_known] = _labels_from_one_hot(ally, paths["ally"])
    labels[test_index] = _labels_from_one_hot(ty, paths["ty"])

    with _decoding(paths["graph"]):
        sources = np.fromiter(adjacency.keys(), dtype=np.int64, count=len(adjacency))
        targets = [np.asarray(neighbours, dtype=np.int64).ravel() for neighbours in adjacency.values()]
    row = np.repeat(sources, [t.size for t in targets])
    col = np.concatenate(targets) if targets else np.empty(0, dtype=np.int64)
    edge_index = _edge_set(row, col, num_nodes=num_nodes, where=paths["graph"])

    split = _split(
        {
            "train": np.arange(x.shape[0]),
            "val": np.arange(x.shape[0], x.shape[0] + _PLANETOID_NUM_VAL),
            "test": test_index,
        },
        num_nodes=num_nodes,
        where=raw_dir,
    )
    return RawGraph(data=_graph(features, labels, edge_index, where=raw_dir), official_split=split)


# -- graph2gauss / gnn-benchmark / ppnp npz -----------------------------------

_ADJ_KEYS = ("adj_data", "adj_indices", "adj_indptr", "adj_shape")
_ATTR_KEYS = ("attr_data", "attr_indices", "attr_indptr", "attr_shape")
_LABEL_KEYS = ("labels_data", "labels_indices", "labels_indptr", "labels_shape")


def read_npz_graph(path: Path, *, binarize_features: bool = False) -> RawGraph:
    """A graph2gauss / gnn-benchmark / ppnp ``.npz`` (Cora-ML, CiteSeer, PubMed, DBLP,
    Coauthor CS/Physics, Amazon Computers/Photo, MS Academic).

    Keys: the CSR adjacency ``adj_data/adj_indices/adj_indptr/adj_shape``;
    features as CSR ``attr_*`` or dense ``attr_matrix``; labels as a vector
    ``labels`` or a one-hot CSR ``labels_*`` (rows without a label get ``-1``).
    The adjacency's nonzeros are the edges, direction kept (Cora-ML's citation
    graph is directed: 8,416 edges, DPAR's count). PyG's ``read_npz``
    (``CitationFull``, ``Coauthor``, ``Amazon``) instead drops self loops and
    symmetrises, which preprocessing does where a paper asks for it.
    Features are kept as stored unless ``binarize_features``, which sets positive
    values to 1 as PyG does: the registry asks for it for its own npz datasets
    (the Cora-ML copy in the mirror stores TF-IDF weights where upstream's
    graph2gauss file may store ones; binarised, both give the same features).
    """
    path = Path(path)
    arrays, present = _read_npz(path, (*_ADJ_KEYS, *_ATTR_KEYS, "attr_matrix", "labels", *_LABEL_KEYS))
    adjacency = _csr(arrays, present, path, "adj")
    if adjacency.shape[0] != adjacency.shape[1]:
        fail(path, f"adjacency must be square, got shape {list(adjacency.shape)}")
    if "attr_data" in arrays:
        features = _csr(arrays, present, path, "attr").toarray()
    elif "attr_matrix" in arrays:
        features = np.asarray(arrays["attr_matrix"])
    else:
        fail(path, f"missing features: need {list(_ATTR_KEYS)} or 'attr_matrix'; keys present: {present}")
    if "labels" in arrays:
        labels = arrays["labels"]
        labels = _labels_from_one_hot(labels, path) if labels.ndim == 2 else _integer_labels(labels, path)
    elif "labels_data" in arrays:
        labels = _labels_from_one_hot(_csr(arrays, present, path, "labels"), path)
    else:
        fail(path, f"missing labels: need 'labels' or {list(_LABEL_KEYS)}; keys present: {present}")
    num_nodes = adjacency.shape[0]
    if features.ndim != 2 or features.shape[0] != num_nodes:
        fail(path, f"adjacency has {num_nodes} nodes but features have shape {list(features.shape)}")
    if binarize_features:
        features = np.where(features > 0, 1, features)
    coo = adjacency.tocoo()
    nonzero = coo.data != 0  # an explicitly stored zero is not an edge
    edge_index = _edge_set(coo.row[nonzero], coo.col[nonzero], num_nodes=num_nodes, where=path)
    return RawGraph(data=_graph(features, labels, edge_index, where=path))


# -- graphmining npz (FacebookPagePage, LastFMAsia) ----------------------------


def read_graphmining_npz(path: Path) -> RawGraph:
    """``facebook.npz`` / ``lastfm_asia.npz`` of PyG's ``FacebookPagePage`` / ``LastFMAsia``:
    dense ``features`` [N, F], ``target`` [N], ``edges`` [E, 2] (both directions
    listed). Same graph as PyG's, up to edge order and duplicate rows.
    """
    path = Path(path)
    arrays, present = _read_npz(path, ("features", "target", "edges"))
    features, target, edges = _need(arrays, present, path, "features", "target", "edges")
    if edges.ndim != 2 or edges.shape[1] != 2:
        fail(path, f"'edges' must be [E, 2], got shape {list(edges.shape)}")
    if features.ndim != 2:
        fail(path, f"'features' must be [N, F], got shape {list(features.shape)}")
    edge_index = _edge_set(edges[:, 0], edges[:, 1], num_nodes=features.shape[0], where=path)
    return RawGraph(data=_graph(features, _integer_labels(target, path), edge_index, where=path))


# -- Facebook100 (.mat) ---------------------------------------------------------


def encode_facebook100(
    local_info: np.ndarray,
    *,
    where: Path | str = "local_info",
    feature_columns: Sequence[str] = FACEBOOK100_FEATURE_COLUMNS,
    labels: str = "years",
    keep_years: Sequence[int] | None = None,
) -> tuple[Tensor, Tensor, dict[str, Any]]:
    """GAP/ProGAP's Facebook100 features and labels from ``local_info`` [N, 7].

    Features: one-hot of ``feature_columns`` (default status, gender, major, minor
    and housing; ProGAP's FB-100: ``FB100_FEATURE_COLUMNS``), one block per
    column in that order, categories sorted; 0 (missing) is the all-zero row of
    its block. Label: class year, ``-1`` where it is 0 or outside
    ``FACEBOOK100_CLASS_YEARS``, the remaining years numbered 0..C-1 in order.
    Returns ``(x, y, extra)``; ``extra`` holds ``feature_names`` ("major=201")
    and ``class_years`` (label k is ``class_years[k]``).

    ``labels="progap"`` encodes the year as ProGAP's FB-100 loader does instead
    (``fb100_year_labels``): every distinct value is a class, and year 0 (missing)
    is one where a negative value is present; ``keep_years`` then keeps the classes
    of those year values only (renumbered in order), the others unlabeled.

    GAP's code calls ``pandas.get_dummies``, which passes a column without any
    0 through as raw integer codes instead of one-hot (e.g. Caltech36's status:
    76 features there, 79 here); this follows the paper's "one-hot".
    A pure function of ``local_info``, so schools can be stacked first (FB-100).
    """
    info = np.asarray(local_info)
    if info.ndim != 2 or info.shape[1] != len(FACEBOOK100_COLUMNS):
        fail(where, f"local_info must be [N, {len(FACEBOOK100_COLUMNS)}], got shape {list(info.shape)}")
    info = as_int64(info, where, "local_info codes")
    # Category codes must be non-negative; a year may not be (UChicago30 holds one of -80085: the labels say how
    # it is read).
    codes = np.delete(info, FACEBOOK100_COLUMNS.index("year"), axis=1)
    if codes.size and int(codes.min()) < 0:
        fail(where, f"local_info codes must be non-negative, got {int(codes.min())}")
    unknown = [column for column in feature_columns if column not in FACEBOOK100_FEATURE_COLUMNS]
    if unknown or not feature_columns:
        raise ValueError(
            f"feature_columns {list(feature_columns)}: choose one or more of {list(FACEBOOK100_FEATURE_COLUMNS)}"
        )
    num_nodes = info.shape[0]
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for column in feature_columns:
        values = info[:, FACEBOOK100_COLUMNS.index(column)]
        categories = np.unique(values[values > 0])
        block = np.zeros((num_nodes, categories.size), dtype=np.float32)
        known = np.flatnonzero(values > 0)
        block[known, np.searchsorted(categories, values[known])] = 1.0
        blocks.append(block)
        names.extend(f"{column}={value}" for value in categories.tolist())
    year = info[:, FACEBOOK100_COLUMNS.index("year")]
    if labels not in FACEBOOK100_LABELS:
        raise ValueError(f"labels {labels!r}: valid choices {list(FACEBOOK100_LABELS)}")
    if labels == "progap":
        y, class_years = fb100_year_labels(year, keep_years=keep_years)
    else:
        first, last = FACEBOOK100_CLASS_YEARS
        labeled = (year >= first) & (year <= last)
        class_years = tuple(np.unique(year[labeled]).tolist())
        y = np.full(num_nodes, -1, dtype=np.int64)
        y[labeled] = np.searchsorted(class_years, year[labeled])
    extra = {"feature_names": tuple(names), "class_years": tuple(class_years)}
    return torch.from_numpy(np.concatenate(blocks, axis=1)), torch.from_numpy(y), extra


def fb100_year_labels(
    year: np.ndarray, *, keep_years: Sequence[int] | None = None
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Class-year labels as ProGAP's FB-100 loader makes them, and the year value of each class.

    The loader label-encodes the raw year column (sklearn's ``LabelEncoder``: the
    sorted distinct values numbered 0..), then subtracts 1 from every code where
    year 0 (missing) occurs, so that its code becomes -1 (unlabeled). That holds
    only while 0 is the smallest value: one school's file (UChicago30) holds a
    year of -80085, which takes code -1 instead, and year 0 becomes class 0, a
    class of "year unknown". ``keep_years``: keep the classes of these year values
    (0 included, as a value), renumbered in order; every other node -1.
    """
    year = np.asarray(year, dtype=np.int64)
    values = np.unique(year)
    codes = np.searchsorted(values, year).astype(np.int64)
    shift = 1 if (values == 0).any() else 0
    codes -= shift
    class_years = values[shift:]  # class k is year class_years[k]
    if keep_years is None:
        return codes, tuple(int(v) for v in class_years.tolist())
    # a partial union keeps the full union's classes: year 0 among them where asked, whatever its code here
    kept = np.array(sorted(set(int(v) for v in keep_years) & set(values.tolist())), dtype=np.int64)
    y = np.full(year.shape[0], -1, dtype=np.int64)
    mask = np.isin(year, kept)
    y[mask] = np.searchsorted(kept, year[mask])
    return y, tuple(int(v) for v in kept.tolist())


def read_facebook100_mat(path: Path) -> RawGraph:
    """One Facebook100 school's ``.mat``: sparse adjacency ``A`` and ``local_info``.

    Features and labels as ``encode_facebook100`` (GAP/ProGAP: predict class
    year). Edges are ``A``'s nonzeros (symmetric in the published files), as
    GAP's ``from_scipy_sparse_matrix``. ``extra`` adds ``local_info`` (int64
    [N, 7], columns ``FACEBOOK100_COLUMNS``) so FB-100 can re-encode stacked schools.
    """
    path = Path(path)
    _require_file(path)
    with _decoding(path):
        contents = scipy.io.loadmat(path, variable_names=["A", "local_info"])
    missing = [key for key in ("A", "local_info") if key not in contents]
    if missing:
        fail(path, f"missing variable(s) {missing}")
    adjacency, local_info = contents["A"], contents["local_info"]
    with _decoding(path):
        adjacency = sp.coo_matrix(adjacency)
    num_nodes = local_info.shape[0] if local_info.ndim == 2 else -1
    if adjacency.shape != (num_nodes, num_nodes):
        fail(path, f"A has shape {list(adjacency.shape)} but local_info has shape {list(local_info.shape)}")
    x, y, extra = encode_facebook100(local_info, where=path)
    nonzero = adjacency.data != 0
    edge_index = _edge_set(adjacency.row[nonzero], adjacency.col[nonzero], num_nodes=num_nodes, where=path)
    data = _graph(x.numpy(), y.numpy(), edge_index, where=path)
    extra["local_info"] = torch.from_numpy(local_info.astype(np.int64))
    return RawGraph(data=data, extra=extra)


# -- Reddit (PyG's files) ------------------------------------------------------


def read_reddit(raw_dir: Path) -> RawGraph:
    """PyG ``Reddit``'s ``reddit_data.npz`` (``feature``, ``label``, ``node_types``)
    and ``reddit_graph.npz`` (a scipy sparse matrix). ``node_types`` 1/2/3 give
    the official train/val/test split. Same graph as PyG (which coalesces too).
    """
    raw_dir = Path(raw_dir)
    data_path, graph_path = raw_dir / "reddit_data.npz", raw_dir / "reddit_graph.npz"
    arrays, present = _read_npz(data_path, ("feature", "label", "node_types"))
    features, labels, node_types = _need(arrays, present, data_path, "feature", "label", "node_types")
    _require_file(graph_path)
    with _decoding(graph_path):
        adjacency = sp.load_npz(graph_path).tocoo()
    num_nodes = features.shape[0] if features.ndim == 2 else -1
    if adjacency.shape != (num_nodes, num_nodes):
        fail(graph_path, f"adjacency has shape {list(adjacency.shape)} for {num_nodes} nodes")
    if node_types.shape != (num_nodes,):
        fail(data_path, f"'node_types' has shape {list(node_types.shape)} for {num_nodes} nodes")
    edge_index = _edge_set(adjacency.row, adjacency.col, num_nodes=num_nodes, where=graph_path)
    split = _split(
        {part: np.flatnonzero(node_types == code) for code, part in enumerate(SPLIT_PARTS, start=1)},
        num_nodes=num_nodes,
        where=data_path,
    )
    data = _graph(features, _integer_labels(labels, data_path), edge_index, where=data_path)
    return RawGraph(data=data, official_split=split)


# -- OGB node property prediction (no ogb package) -----------------------------


@dataclass(frozen=True)
class OgbNodeLayout:
    """Where one OGB node dataset keeps its files inside the unzipped folder.

    ``node_type`` is set for heterogeneous graphs (ogbn-mag), of which only that
    type's nodes and its ``relation`` edges are read; ``add_inverse_edge`` is
    OGB's own ``master.csv`` flag (the edge file lists each undirected edge once).
    """

    split: str
    add_inverse_edge: bool
    node_type: str | None = None
    relation: str | None = None

    def edge_file(self) -> Path:
        return Path("raw", "relations", self.relation, "edge.csv.gz") if self.relation else Path("raw", "edge.csv.gz")

    def node_file(self, stem: str) -> Path:
        return Path("raw", stem, self.node_type, f"{stem}.csv.gz") if self.node_type else Path("raw", f"{stem}.csv.gz")

    def split_file(self, part: str) -> Path:
        parts = ("split", self.split, *((self.node_type,) if self.node_type else ()))
        return Path(*parts, f"{part}.csv.gz")


# Layouts from ogb's nodeproppred/master.csv and io/read_graph_raw.py.
OGB_NODE_DATASETS: Mapping[str, OgbNodeLayout] = MappingProxyType(
    {
        "ogbn-arxiv": OgbNodeLayout(split="time", add_inverse_edge=False),
        "ogbn-products": OgbNodeLayout(split="sales_ranking", add_inverse_edge=True),
        "ogbn-mag": OgbNodeLayout(
            split="time", add_inverse_edge=False, node_type="paper", relation="paper___cites___paper"
        ),
    }
)
_OGB_SPLIT_FILES = {"train": "train", "val": "valid", "test": "test"}


def read_ogb_node(root: Path, name: str) -> RawGraph:
    """An OGB node dataset from its unzipped download folder (``raw/`` and ``split/``).

    ogbn-arxiv: directed citation edges, as OGB gives them. ogbn-products:
    each listed edge in both directions, as OGB's loader does. ogbn-mag: the
    paper nodes, their cites edges (directed) and the paper split only, as
    DP-GNN uses it. The official split becomes ``official_split``
    (OGB's ``valid`` is ``val``). Reads with pandas' C parser into int64/float32
    arrays (ogbn-products' 62M edges: a few GB, no Python loop over rows).
    """
    if name not in OGB_NODE_DATASETS:
        raise ValueError(f"unknown OGB node dataset {name!r}; valid choices: {sorted(OGB_NODE_DATASETS)}")
    layout = OGB_NODE_DATASETS[name]
    root = Path(root)

    if layout.node_type is None:
        count_path = root / "raw" / "num-node-list.csv.gz"
        counts = _read_csv_gz(count_path, dtype=np.int64).to_numpy().ravel()
        if counts.size != 1:
            fail(count_path, f"expected one graph's node count, got {counts.size} values")
    else:
        count_path = root / "raw" / "num-node-dict.csv.gz"
        table = _read_csv_gz(count_path, dtype=np.int64, header=True)
        if layout.node_type not in table.columns or len(table) != 1:
            fail(count_path, f"expected one row with a {layout.node_type!r} column, got columns {list(table.columns)}")
        counts = table[layout.node_type].to_numpy()
    num_nodes = int(counts[0])

    feature_path = root / layout.node_file("node-feat")
    features = _read_csv_gz(feature_path, dtype=np.float32).to_numpy()
    if features.shape[0] != num_nodes:
        fail(feature_path, f"{features.shape[0]} feature rows for {num_nodes} nodes ({count_path.name})")
    label_path = root / layout.node_file("node-label")
    labels = _read_csv_gz(label_path, dtype=np.int64).to_numpy()
    if labels.shape != (num_nodes, 1):
        fail(label_path, f"expected one label column for {num_nodes} nodes, got shape {list(labels.shape)}")

    edge_path = root / layout.edge_file()
    edges = _read_csv_gz(edge_path, dtype=np.int64).to_numpy()
    if edges.ndim != 2 or edges.shape[1] != 2:
        fail(edge_path, f"expected two columns (source, target), got shape {list(edges.shape)}")
    edge_index = _edge_set(
        edges[:, 0], edges[:, 1], num_nodes=num_nodes, where=edge_path, both_directions=layout.add_inverse_edge
    )
    del edges

    parts = {
        part: _read_csv_gz(root / layout.split_file(stem), dtype=np.int64).to_numpy()
        for part, stem in _OGB_SPLIT_FILES.items()
    }
    split = _split(parts, num_nodes=num_nodes, where=root / layout.split_file("train").parent)
    data = _graph(features, _integer_labels(labels, label_path), edge_index, where=feature_path)
    return RawGraph(data=data, official_split=split)
