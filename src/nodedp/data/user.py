"""Datasets a user declares in config.yaml (``datasets:``): their graph files checked and registered, no code.

``declare_datasets`` checks each declaration and its file(s) (numpy only, no torch) and registers it as a
``DatasetInfo`` of kind ``"file"`` with its own protocol (``file:<name>``); the jobs the workflow starts find the
declarations in the environment (``NODEDP_DATASETS``), a command run by hand in the workspace in the built
graph's ``meta.json``. ``read_user_graph`` decodes the files for the graph stage. A declaration with the key
``facebook100`` is a union of Facebook100 schools instead (``Facebook100Union``): a downloaded dataset. Formats,
keys and checks: docs/datasets.md; design: docs/design/data.md.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodedp.data._arrays import as_int64, fail
from nodedp.data.constants import SETTINGS, DatasetFormatError
from nodedp.data.preprocess import Protocol, SplitProtocol, add_protocol_resolver, register_protocol
from nodedp.data.registry import DATASETS, DatasetInfo, GraphSize, add_dataset_resolver, register_dataset

if TYPE_CHECKING:
    import numpy as np

    from nodedp.data.formats import RawGraph

__all__ = [
    "ENV",
    "FORMATS",
    "DeclarationError",
    "Facebook100Union",
    "UserArrays",
    "UserDataset",
    "declare_datasets",
    "declared_files",
    "declared_graph_params",
    "parse_declaration",
    "read_user_arrays",
    "read_user_graph",
    "union_schools",
]

NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")  # as the config schema's dataset names
ENV = "NODEDP_DATASETS"  # the declarations (JSON), for the jobs the workflow starts
GRAPHS_DIR = Path("resources/graphs")  # where the workflow builds graphs, relative to its workspace
FORMATS = ("npz", "csv")
KEYS = ("path", "format", "directed", "split", "in_degree_bound", "out_degree_bound", "description")
REQUIRED = ("path", "format", "in_degree_bound", "out_degree_bound")
SPLIT_KEYS = ("kind", "train", "val", "test", "setting")
SPLIT_KINDS = ("random", "file")
PARTS = ("train", "val", "test")
# `split: random`: the suite's default protocol (planetoid): random 75/10/15, transductive.
DEFAULT_FRACTIONS = {"train": 0.75, "val": 0.10, "test": 0.15}
NPZ_KEYS = ("edge_index", "x", "y")
NPZ_MASKS = tuple(f"{part}_mask" for part in PARTS)
CSR_KEYS = (
    *(f"{prefix}_{part}" for prefix in ("adj", "attr", "labels") for part in ("data", "indices", "indptr", "shape")),
    "attr_matrix",
    "labels",
)
CSV_EDGES = "edges.csv"
CSV_FEATURES = ("features.npy", "features.csv")
CSV_LABELS = ("labels.npy", "labels.csv")
CSV_SPLIT = ("split.npy", "split.csv")
UNION_KEYS = ("facebook100", "features", "labels", "in_degree_bound", "out_degree_bound", "description")
UNION_FEATURES = ("progap", "all")  # progap: status, gender, major (ProGAP's FB100); all: also minor and housing
# progap: ProGAP's FB100 year labels and the six classes its count rule keeps on all 100 schools; years: the
# class years 2004-2009 (GAP's Facebook loader), year unknown unlabeled
UNION_LABELS = ("progap", "years")
SERVED = "served"


class DeclarationError(ValueError):
    """A ``datasets:`` entry of the config that cannot be used; the message starts with its field."""


@dataclass(frozen=True)
class UserDataset:
    """One checked declaration. ``path`` is as declared, ``location`` the file or folder it names (absolute);
    ``split`` is ``{"kind": "random" | "file", "setting", and for random "train", "val", "test"}``; ``size`` is
    the file's public shape (rows of its arrays), filled in when the file has been read."""

    name: str
    path: str
    location: str
    format: str
    directed: bool
    split: Mapping[str, Any]
    in_degree_bound: int
    out_degree_bound: int
    description: str = ""
    size: GraphSize | None = None

    @property
    def protocol(self) -> str:
        return f"file:{self.name}"

    def graph_params(self) -> dict[str, Any]:
        """The declaration as the graph's ``meta.json`` records it (its public metadata, degree bounds included),
        and what the graph is rebuilt on."""
        return {
            "path": self.path,
            "format": self.format,
            "directed": self.directed,
            "split": dict(self.split),
            "in_degree_bound": self.in_degree_bound,
            "out_degree_bound": self.out_degree_bound,
        }

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["split"] = dict(self.split)
        return data


@dataclass(frozen=True)
class Facebook100Union:
    """A declared union of Facebook100 schools: ``schools`` as the upstream repository names their files, or
    ``"served"`` (every school the download source serves, found when downloading). Downloaded and read like the
    registered ``fb-100``, with ProGAP's preprocessing (``gap-fb100`` on all 100 schools named, with ProGAP's
    labels; ``gap-fb100-partial`` otherwise); ``features`` picks the one-hot columns, ``labels`` the classes."""

    name: str
    schools: tuple[str, ...] | str
    features: str = "progap"
    labels: str = "progap"
    in_degree_bound: int = 10
    out_degree_bound: int = 100
    description: str = ""

    @property
    def protocol(self) -> str:
        return "gap-fb100" if self.is_full and self.labels == "progap" else "gap-fb100-partial"

    @property
    def feature_columns(self) -> tuple[str, ...]:
        from nodedp.data.constants import FACEBOOK100_FEATURE_COLUMNS, FB100_FEATURE_COLUMNS

        return FB100_FEATURE_COLUMNS if self.features == "progap" else FACEBOOK100_FEATURE_COLUMNS

    @property
    def is_full(self) -> bool:
        from nodedp.data.catalog import FACEBOOK100_SCHOOLS

        return not isinstance(self.schools, str) and set(self.schools) == set(FACEBOOK100_SCHOOLS)

    def graph_params(self) -> dict[str, Any]:
        """The declaration as the graph's ``meta.json`` records it, and what the download and graph rerun on."""
        schools = self.schools if isinstance(self.schools, str) else list(self.schools)
        return {
            "facebook100": schools,
            "features": self.features,
            "labels": self.labels,
            "in_degree_bound": self.in_degree_bound,
            "out_degree_bound": self.out_degree_bound,
        }

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **self.graph_params(), "description": self.description}


Declaration = UserDataset | Facebook100Union


def parse_union(name: str, entry: Mapping[str, Any]) -> Facebook100Union:
    """A ``facebook100:`` declaration checked; raises ``DeclarationError`` naming the field and the valid
    choices (the schools the catalog knows)."""
    from nodedp.data.catalog import FACEBOOK100_SCHOOLS

    unknown = sorted(set(entry) - set(UNION_KEYS))
    if unknown:
        raise DeclarationError(
            f"datasets.{name}: unknown key(s) {unknown} for a Facebook100 union; valid: {list(UNION_KEYS)}"
        )
    schools = entry["facebook100"]
    field = f"datasets.{name}.facebook100"
    if isinstance(schools, str):
        if schools != SERVED:
            raise DeclarationError(f"{field}: {SERVED!r} or a list of schools, got {schools!r}")
    elif isinstance(schools, (list, tuple)) and schools:
        bad = [school for school in schools if school not in FACEBOOK100_SCHOOLS]
        if bad:
            raise DeclarationError(
                f"{field}: unknown school(s) {bad}; valid choices (as the upstream repository names its files): "
                f"{list(FACEBOOK100_SCHOOLS)}"
            )
        repeated = sorted(school for school, n in collections.Counter(schools).items() if n > 1)
        if repeated:
            raise DeclarationError(f"{field}: school(s) listed twice: {repeated}")
        order = {school: i for i, school in enumerate(FACEBOOK100_SCHOOLS)}
        schools = tuple(sorted(schools, key=order.__getitem__))  # catalog order: the same union, the same graph
    else:
        raise DeclarationError(f"{field}: {SERVED!r} or a non-empty list of schools, got {schools!r}")
    features = entry.get("features", "progap")
    if features not in UNION_FEATURES:
        raise DeclarationError(
            f"datasets.{name}.features: unknown features {features!r}; valid choices: {list(UNION_FEATURES)}"
        )
    labels = entry.get("labels", "progap")
    if labels not in UNION_LABELS:
        raise DeclarationError(
            f"datasets.{name}.labels: unknown labels {labels!r}; valid choices: {list(UNION_LABELS)}"
        )
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise DeclarationError(f"datasets.{name}.description: a string, got {description!r}")
    return Facebook100Union(
        name=name,
        schools=schools,
        features=features,
        labels=labels,
        in_degree_bound=_bound(name, "in_degree_bound", entry.get("in_degree_bound", 10)),
        out_degree_bound=_bound(name, "out_degree_bound", entry.get("out_degree_bound", 100)),
        description=description,
    )


def _union_info(union: Facebook100Union) -> DatasetInfo:
    from nodedp.data.catalog import (
        FACEBOOK100_SCHOOLS,
        FB100_KEPT_YEARS,
        facebook100_url,
        read_facebook100_union,
        remote,
        served_schools,
    )

    columns = union.feature_columns
    labels, keep = "years", None  # labels: years keeps 2004-2009 by itself
    if union.labels == "progap":
        labels, keep = "progap", (None if union.is_full else FB100_KEPT_YEARS)  # all 100: the count rule keeps
    if union.schools == SERVED:
        files = tuple(replace(remote(facebook100_url(s)), optional=True) for s in FACEBOOK100_SCHOOLS)
        what = "every Facebook100 school the download source serves"
    else:
        files = tuple(remote(facebook100_url(s)) for s in union.schools)
        count = len(union.schools)
        what = f"{count} Facebook100 school{'s' if count != 1 else ''}"

    def reader(raw: Path) -> RawGraph:
        schools = served_schools(raw) if union.schools == SERVED else union.schools
        return read_facebook100_union(
            [raw / f"{s}.mat" for s in schools], feature_columns=columns, labels=labels, keep_years=keep
        )

    return DatasetInfo(
        name=union.name,
        kind="download",
        description=union.description
        or f"union of {what} as one graph, predict class year (ProGAP's FB-100 preprocessing)",
        build=None,
        out_degree_bound=union.out_degree_bound,
        in_degree_bound=union.in_degree_bound,
        citation="Traud, Mucha, Porter (2012), Social structure of Facebook networks",
        source={"declared": True, **union.graph_params()},
        files=files,
        reader=reader,
        protocol=union.protocol,
    )


def _bound(name: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(
            f"datasets.{name}.{key}: must be an integer >= 1 (a public degree bound, chosen without looking at the "
            f"graph), got {value!r}"
        )
    return value


def _split(name: str, value: Any) -> dict[str, Any]:
    field = f"datasets.{name}.split"
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, Mapping):
        raise DeclarationError(f"{field}: 'random', 'file' or a mapping with keys {list(SPLIT_KEYS)}, got {value!r}")
    unknown = sorted(set(value) - set(SPLIT_KEYS))
    if unknown:
        raise DeclarationError(f"{field}: unknown key(s) {unknown}; valid: {list(SPLIT_KEYS)}")
    kind = value.get("kind", "random")
    if kind not in SPLIT_KINDS:
        raise DeclarationError(f"{field}.kind: unknown split {kind!r}; valid choices: {list(SPLIT_KINDS)}")
    setting = value.get("setting", "transductive")
    if setting not in SETTINGS:
        raise DeclarationError(f"{field}.setting: unknown setting {setting!r}; valid choices: {list(SETTINGS)}")
    if kind == "file":
        given = [part for part in PARTS if part in value]
        if given:
            raise DeclarationError(f"{field}: the file's own split takes no fractions, got {given}")
        return {"kind": "file", "setting": setting}
    fractions = {
        part: value.get(part, DEFAULT_FRACTIONS[part] if not set(PARTS) & set(value) else None) for part in PARTS
    }
    for part, fraction in fractions.items():
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise DeclarationError(f"{field}.{part}: a fraction in [0, 1] (give train, val and test), got {fraction!r}")
    if not math.isclose(sum(fractions.values()), 1.0, abs_tol=1e-9):
        raise DeclarationError(f"{field}: train + val + test must be 1, got {sum(fractions.values())!r}")
    if fractions["train"] == 0 or fractions["test"] == 0:
        raise DeclarationError(f"{field}: train and test need a positive fraction")
    return {"kind": "random", "setting": setting, **{part: float(fractions[part]) for part in PARTS}}


def parse_declaration(name: str, entry: Any, *, base: str | Path | None = None) -> Declaration:
    """A declaration's keys checked (not yet its file); ``path`` resolved against ``base`` (the working
    directory by default). An entry with ``facebook100`` gives a ``Facebook100Union`` (``parse_union``).
    Raises ``DeclarationError`` naming the field."""
    if not NAME.fullmatch(name):
        raise DeclarationError(
            f"datasets.{name}: a dataset name is lowercase letters, digits, '-' and '_' (it names paths and "
            "Snakemake wildcards)"
        )
    if not isinstance(entry, Mapping):
        raise DeclarationError(f"datasets.{name}: a mapping with keys {list(KEYS)}, got {type(entry).__name__}")
    if "facebook100" in entry:
        return parse_union(name, entry)
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise DeclarationError(f"datasets.{name}: unknown key(s) {unknown}; valid: {list(KEYS)}")
    missing = [key for key in REQUIRED if key not in entry]
    if missing:
        raise DeclarationError(f"datasets.{name}: missing key(s) {missing} (required: {list(REQUIRED)})")
    path = entry["path"]
    if not isinstance(path, str) or not path:
        raise DeclarationError(f"datasets.{name}.path: a file or folder path, got {path!r}")
    fmt = entry["format"]
    if fmt not in FORMATS:
        raise DeclarationError(f"datasets.{name}.format: unknown format {fmt!r}; valid choices: {list(FORMATS)}")
    directed = entry.get("directed", False)
    if not isinstance(directed, bool):
        raise DeclarationError(f"datasets.{name}.directed: true or false, got {directed!r}")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise DeclarationError(f"datasets.{name}.description: a string, got {description!r}")
    location = Path(path).expanduser()
    if not location.is_absolute():
        location = Path(base if base is not None else os.getcwd()) / location
    return UserDataset(
        name=name,
        path=path,
        location=str(location),
        format=fmt,
        directed=directed,
        split=_split(name, entry.get("split", "random")),
        in_degree_bound=_bound(name, "in_degree_bound", entry["in_degree_bound"]),
        out_degree_bound=_bound(name, "out_degree_bound", entry["out_degree_bound"]),
        description=description,
    )


# --- reading and checking the files (numpy only) ------------------------------------------------


@dataclass(frozen=True)
class UserArrays:
    """A user graph as read and checked: ``x`` float32 [N, F], ``y`` int64 [N] in [0, C), ``edges`` int64
    [2, E] within [0, N), ``masks`` bool [N] per part (the file's split; ``None`` where not read)."""

    x: np.ndarray
    y: np.ndarray
    edges: np.ndarray
    masks: Mapping[str, np.ndarray] | None
    files: tuple[Path, ...]


def _has_header(path: Path) -> bool:
    """Whether the CSV's first line is a header (a field that is not a number)."""
    with path.open(encoding="utf-8", errors="replace") as stream:
        first = stream.readline()
    for field in first.strip().split(","):
        try:
            float(field)
        except ValueError:
            return True
    return False


def _read_csv(path: Path, *, dtype: Any, what: str) -> np.ndarray:
    """A comma-separated table, parsed by pandas' C reader (an edge list may hold 100M rows: no copy of its text)."""
    import numpy as np
    import pandas as pd

    if not path.is_file():
        fail(path, "missing file")
    try:
        table = pd.read_csv(path, header=0 if _has_header(path) else None, dtype=dtype).to_numpy()
    except pd.errors.EmptyDataError:
        return np.empty((0, 0), dtype=dtype)
    except (OSError, UnicodeDecodeError) as error:
        fail(path, f"cannot be read ({type(error).__name__}: {error})")
    except ValueError as error:
        kind = "integers" if np.dtype(dtype).kind == "i" else "numbers"
        fail(path, f"{what} must be comma-separated {kind} ({error})")
    return table if table.size else np.empty((0, 0), dtype=dtype)


def _read_npy(path: Path) -> np.ndarray:
    import numpy as np

    if not path.is_file():
        fail(path, "missing file")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        fail(path, f"cannot be decoded as a .npy array ({type(error).__name__}: {error})")


def _one_of(folder: Path, names: tuple[str, ...], *, required: bool) -> Path | None:
    present = [folder / name for name in names if (folder / name).is_file()]
    if len(present) > 1:
        fail(folder, f"holds both {names[0]} and {names[1]}; keep one")
    if not present and required:
        fail(folder, f"missing file: {' or '.join(names)}")
    return present[0] if present else None


def _labels(values: np.ndarray, where: Path | str) -> np.ndarray:
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        fail(where, f"labels must be a vector (one per node), got shape {list(values.shape)}")
    if values.size == 0:
        fail(where, "no labels: the graph has no nodes")
    labels = as_int64(values, where, "labels", kinds="iub")
    if int(labels.min()) < 0:
        fail(where, f"labels must be class ids >= 0, got {int(labels.min())}")
    return labels


def _features(values: np.ndarray, where: Path | str, num_nodes: int) -> np.ndarray:
    import numpy as np

    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        fail(where, f"features must be a matrix [nodes, features], got shape {list(values.shape)}")
    if values.dtype.kind not in "fiub":
        fail(where, f"features must be numeric, got dtype {values.dtype}")
    if values.shape[0] != num_nodes:
        fail(where, f"{values.shape[0]} feature rows but {num_nodes} nodes (labels)")
    if values.shape[1] == 0:
        fail(where, "features have no columns")
    features = np.ascontiguousarray(values, dtype=np.float32)
    if not np.isfinite(features).all():
        fail(where, f"features contain NaN or inf ({int((~np.isfinite(features)).sum())} entries)")
    return features


def _edges(values: np.ndarray, where: Path | str, num_nodes: int, *, rows: bool) -> np.ndarray:
    """int64 [2, E] from ``values`` ([E, 2] when ``rows``, else [2, E]), every id in [0, num_nodes)."""
    import numpy as np

    if values.size == 0:
        return np.empty((2, 0), dtype=np.int64)
    expected = "[edges, 2] (source, target)" if rows else "[2, edges]"
    if values.ndim != 2 or values.shape[1 if rows else 0] != 2:
        fail(where, f"edges must be {expected}, got shape {list(values.shape)}")
    edges = as_int64(values.T if rows else values, where, "edge endpoints", kinds="iub")
    low, high = int(edges.min()), int(edges.max())
    if low < 0 or high >= num_nodes:
        fail(where, f"edge endpoint {low if low < 0 else high} out of range for {num_nodes} nodes (ids 0..N-1)")
    return np.ascontiguousarray(edges)


def _masks(parts: Mapping[str, np.ndarray], where: Path | str, num_nodes: int) -> dict[str, np.ndarray]:
    import numpy as np

    masks = {}
    for part in PARTS:
        mask = np.asarray(parts[part]).ravel()
        if mask.shape != (num_nodes,):
            fail(where, f"the {part} mask has {mask.size} entries for {num_nodes} nodes")
        if mask.dtype != np.bool_:
            if mask.dtype.kind not in "iuf" or not np.isin(mask, (0, 1)).all():
                fail(where, f"the {part} mask must be boolean (or 0/1), got dtype {mask.dtype}")
            mask = mask.astype(bool)
        masks[part] = mask
    overlap = [f"{a}/{b}" for i, a in enumerate(PARTS) for b in PARTS[i + 1 :] if bool((masks[a] & masks[b]).any())]
    if overlap:
        fail(where, f"the split masks overlap ({', '.join(overlap)}): a node belongs to one part at most")
    for part in ("train", "test"):
        if not masks[part].any():
            fail(where, f"the {part} mask selects no node")
    return masks


def _read_npz(path: Path, *, read_split: bool) -> UserArrays:
    import zipfile

    import numpy as np

    if not path.is_file():
        fail(path, "missing file" if not path.is_dir() else "a folder, but format npz reads one .npz file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            present = sorted(archive.files)
            if "adj_indptr" in present:  # graph2gauss / gnn-benchmark: read only its arrays (others may be pickles)
                arrays = {key: archive[key] for key in present if key in (*CSR_KEYS, *NPZ_MASKS)}
            else:
                unknown = sorted(set(present) - {*NPZ_KEYS, *NPZ_MASKS})
                missing = [key for key in NPZ_KEYS if key not in present]
                if missing or unknown:
                    fail(
                        path,
                        f"wrong keys: missing {missing}, unexpected {unknown}; a graph .npz holds edge_index [2, E], "
                        f"x [N, F], y [N] and optionally train_mask, val_mask, test_mask [N], or the graph2gauss "
                        f"arrays adj_*, attr_* or attr_matrix, labels (keys present: {present})",
                    )
                arrays = {key: archive[key] for key in present}
    except DatasetFormatError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        fail(path, f"cannot be decoded as .npz ({type(error).__name__}: {error})")
    if "adj_indptr" in arrays:
        x, y, edges = _graph2gauss(arrays, path, present)
        num_nodes = y.size
    else:
        y = _labels(arrays["y"], f"{path} (y)")
        num_nodes = y.size
        x = _features(arrays["x"], f"{path} (x)", num_nodes)
        edges = _edges(arrays["edge_index"], f"{path} (edge_index)", num_nodes, rows=False)
    masks = None
    if read_split:
        absent = [key for key in NPZ_MASKS if key not in arrays]
        if absent:
            fail(path, f"split: file needs the masks {list(NPZ_MASKS)}; missing {absent}")
        masks = _masks({part: arrays[f"{part}_mask"] for part in PARTS}, path, num_nodes)
    return UserArrays(x=x, y=y, edges=edges, masks=masks, files=(path,))


def _csr_parts(
    arrays: Mapping[str, np.ndarray], path: Path, present: list[str], prefix: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """(row, column, value) of every stored entry of the CSR matrix ``{prefix}_data/_indices/_indptr/_shape``,
    and its shape; checked as scipy's full check would, without scipy."""
    import numpy as np

    keys = [f"{prefix}_{part}" for part in ("data", "indices", "indptr", "shape")]
    missing = [key for key in keys if key not in arrays]
    if missing:
        fail(path, f"missing key(s) {missing} of the CSR matrix {prefix!r}; keys present: {present}")
    data, indices, indptr, shape = (np.asarray(arrays[key]) for key in keys)
    if shape.shape != (2,):
        fail(path, f"{prefix}_shape must hold two numbers, got {shape.tolist()}")
    rows, cols = (int(v) for v in as_int64(shape, path, f"{prefix}_shape", kinds="iub"))
    indptr = as_int64(indptr.ravel(), path, f"{prefix}_indptr", kinds="iub")
    indices = as_int64(indices.ravel(), path, f"{prefix}_indices", kinds="iub")
    if indptr.size != rows + 1 or indptr[0] != 0 or bool((np.diff(indptr) < 0).any()):
        fail(path, f"{prefix}_indptr is not a CSR row pointer for {rows} rows")
    if int(indptr[-1]) != indices.size or data.size != indices.size:
        fail(path, f"{prefix}: {indices.size} indices and {data.size} values for {int(indptr[-1])} entries")
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= cols):
        fail(path, f"{prefix}_indices out of range for {cols} columns")
    return np.repeat(np.arange(rows), np.diff(indptr)), indices, data.ravel(), (rows, cols)


def _graph2gauss(
    arrays: Mapping[str, np.ndarray], path: Path, present: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and edges of a graph2gauss / gnn-benchmark npz (as ``formats.read_npz_graph`` reads it,
    features kept as stored): the adjacency's nonzeros are the edges, direction kept."""
    import numpy as np

    row, col, value, (num_nodes, width) = _csr_parts(arrays, path, present, "adj")
    if num_nodes != width:
        fail(path, f"adjacency must be square, got shape {[num_nodes, width]}")
    edges = np.stack([row[value != 0], col[value != 0]])
    if "attr_indptr" in arrays:
        r, c, v, shape = _csr_parts(arrays, path, present, "attr")
        features = np.zeros(shape, dtype=np.float64)
        np.add.at(features, (r, c), v)
    elif "attr_matrix" in arrays:
        features = np.asarray(arrays["attr_matrix"])
    else:
        fail(path, f"missing features: attr_data/attr_indices/attr_indptr/attr_shape or attr_matrix; keys {present}")
    if "labels" in arrays and np.asarray(arrays["labels"]).ndim == 1:
        labels = np.asarray(arrays["labels"])
    elif "labels" in arrays or "labels_indptr" in arrays:
        if "labels" in arrays:
            one_hot = np.asarray(arrays["labels"])
        else:
            r, c, v, shape = _csr_parts(arrays, path, present, "labels")
            one_hot = np.zeros(shape)
            one_hot[r[v != 0], c[v != 0]] = 1
        if one_hot.ndim != 2 or bool(((one_hot != 0).sum(axis=1) != 1).any()):
            fail(path, "one-hot labels must have exactly one class per node (unlabeled or multi-label rows found)")
        labels = np.argmax(one_hot != 0, axis=1)
    else:
        fail(path, f"missing labels: 'labels' or labels_data/labels_indices/labels_indptr/labels_shape; keys {present}")
    y = _labels(labels, f"{path} (labels)")
    if y.size != num_nodes:
        fail(path, f"the adjacency has {num_nodes} nodes but there are {y.size} labels")
    return _features(features, f"{path} (features)", num_nodes), y, _edges(edges, path, num_nodes, rows=False)


def _read_folder(folder: Path, *, read_split: bool) -> UserArrays:
    import numpy as np

    if not folder.is_dir():
        fail(folder, "missing folder" if not folder.exists() else "not a folder (format csv reads a folder of files)")
    labels_path = _one_of(folder, CSV_LABELS, required=True)
    features_path = _one_of(folder, CSV_FEATURES, required=True)
    split_path = _one_of(folder, CSV_SPLIT, required=False)
    assert labels_path is not None and features_path is not None
    edges_path = folder / CSV_EDGES
    raw = (
        _read_npy(labels_path)
        if labels_path.suffix == ".npy"
        else _read_csv(labels_path, dtype=np.int64, what="labels")
    )
    y = _labels(raw, labels_path)
    num_nodes = y.size
    raw = (
        _read_npy(features_path)
        if features_path.suffix == ".npy"
        else _read_csv(features_path, dtype=np.float64, what="features")
    )
    x = _features(raw, features_path, num_nodes)
    edges = _edges(_read_csv(edges_path, dtype=np.int64, what="edges"), edges_path, num_nodes, rows=True)
    files = [edges_path, features_path, labels_path]
    masks = None
    if read_split:
        if split_path is None:
            fail(folder, f"split: file needs {' or '.join(CSV_SPLIT)} (columns train, val, test; one row per node)")
        assert split_path is not None
        table = (
            _read_npy(split_path)
            if split_path.suffix == ".npy"
            else _read_csv(split_path, dtype=np.float64, what="split masks")
        )
        if table.ndim != 2 or table.shape[1] != 3:
            fail(split_path, f"the split must be [nodes, 3] (columns train, val, test), got shape {list(table.shape)}")
        masks = _masks({part: table[:, i] for i, part in enumerate(PARTS)}, split_path, num_nodes)
        files.append(split_path)
    return UserArrays(x=x, y=y, edges=edges, masks=masks, files=tuple(files))


def read_user_arrays(dataset: UserDataset) -> UserArrays:
    """The declared file(s) read and checked; a problem raises ``DatasetFormatError`` naming the file."""
    read_split = dataset.split["kind"] == "file"
    location = Path(dataset.location)
    if dataset.format == "npz":
        return _read_npz(location, read_split=read_split)
    return _read_folder(location, read_split=read_split)


def public_shape(arrays: UserArrays) -> GraphSize:
    """The file's shape: nodes (labels), edges (rows of the edge list), feature columns, classes (max label + 1).
    Sizing only (cluster jobs, δ's default, the batch checks): never a private statistic of the graph."""
    return GraphSize(
        nodes=int(arrays.y.size),
        edges=int(arrays.edges.shape[1]),
        features=int(arrays.x.shape[1]),
        classes=int(arrays.y.max()) + 1,
    )


def read_user_graph(dataset: UserDataset) -> RawGraph:
    """The declared graph as a ``RawGraph``: features as given (float32, never binarized), labels, the edge set
    (an edge listed twice kept once; direction kept: the protocol symmetrises an undirected graph), and the
    file's split as the official one where ``split: file``."""
    import torch
    from torch_geometric.data import Data

    from nodedp.data.formats import RawGraph, _edge_set

    arrays = read_user_arrays(dataset)
    num_nodes = int(arrays.y.size)
    edge_index = _edge_set(arrays.edges[0], arrays.edges[1], num_nodes=num_nodes, where=dataset.location)
    data = Data(x=torch.from_numpy(arrays.x), y=torch.from_numpy(arrays.y), edge_index=edge_index)
    split = None
    if arrays.masks is not None:
        split = {part: torch.from_numpy(mask.nonzero()[0].astype("int64")) for part, mask in arrays.masks.items()}
    # (as declared, where it is read): meta.json records the first with its SHA-256
    files = tuple((_declared_path(dataset, path), str(path)) for path in arrays.files)
    return RawGraph(data=data, official_split=split, extra={"files": files})


def _declared_path(dataset: UserDataset, path: Path) -> str:
    return dataset.path if dataset.format == "npz" else os.path.join(dataset.path, path.name)


# --- registration -----------------------------------------------------------------------------------


def _protocol(dataset: UserDataset) -> Protocol:
    split = dataset.split
    steps: tuple[tuple[str, Mapping[str, int]], ...] = (("remove_self_loops", {}),)
    if not dataset.directed:
        steps = (*steps, ("to_undirected", {}))
    if split["kind"] == "file":
        split_protocol = SplitProtocol(kind="official", setting=split["setting"])
        how = "the file's own train/val/test masks"
    else:
        split_protocol = SplitProtocol(
            kind="random", setting=split["setting"], train=split["train"], val=split["val"], test=split["test"]
        )
        how = f"random {split['train']:g}/{split['val']:g}/{split['test']:g}"
    return Protocol(
        name=dataset.protocol,
        description=(
            f"declared dataset {dataset.name} ({dataset.format}, {dataset.path}): self-loops removed"
            + ("" if dataset.directed else ", undirected")
            + f"; {how}, {split['setting']}"
        ),
        steps=steps,
        split=split_protocol,
    )


def _info(dataset: UserDataset) -> DatasetInfo:
    return DatasetInfo(
        name=dataset.name,
        kind="file",
        description=dataset.description or f"declared in the config: {dataset.path} ({dataset.format})",
        build=None,
        out_degree_bound=dataset.out_degree_bound,
        in_degree_bound=dataset.in_degree_bound,
        source=dataset.graph_params(),
        reader=lambda _location: read_user_graph(dataset),
        protocol=dataset.protocol,
        size=dataset.size,
        path=Path(dataset.location),
    )


def _is_declared(info: DatasetInfo) -> bool:
    return info.kind == "file" or bool(info.source.get("declared"))


def _register(dataset: Declaration) -> None:
    existing = DATASETS.get(dataset.name)
    if existing is not None and not _is_declared(existing):
        raise DeclarationError(
            f"datasets.{dataset.name}: {dataset.name!r} is a registered {existing.kind} dataset; "
            "give your graph another name"
        )
    if isinstance(dataset, Facebook100Union):
        register_dataset(_union_info(dataset), force=True)  # its protocol is registered (nodedp.data.preprocess)
        return
    register_protocol(_protocol(dataset), replace=True)
    register_dataset(_info(dataset), force=True)


_CHECKED: dict[tuple[Any, ...], GraphSize] = {}


def _checked_size(dataset: UserDataset) -> GraphSize:
    """Read and check the file(s) once per process and version of the file (size, modification time)."""
    location = Path(dataset.location)
    stamp: tuple[Any, ...] = (dataset.format, dataset.location, dataset.split["kind"])
    if location.is_file():
        stat = location.stat()
        stamp += (stat.st_size, stat.st_mtime_ns)
    elif location.is_dir():
        stamp += tuple(
            (child.name, child.stat().st_size, child.stat().st_mtime_ns) for child in sorted(location.iterdir())
        )
    if stamp not in _CHECKED:
        _CHECKED[stamp] = public_shape(read_user_arrays(dataset))
    return _CHECKED[stamp]


def declare_datasets(entries: Mapping[str, Any] | None, *, base: str | Path | None = None) -> list[Declaration]:
    """Check every declaration and its file(s), register them (replacing earlier declarations, which a config
    without them withdraws) and export them in ``$NODEDP_DATASETS`` for the jobs this process starts. Raises
    ``DeclarationError`` (the field) or ``DatasetFormatError`` (the file and the problem) before registering any."""
    entries = entries or {}
    if not isinstance(entries, Mapping):
        raise DeclarationError(f"datasets: a mapping of name -> declaration, got {type(entries).__name__}")
    declared: list[Declaration] = []
    for name, entry in entries.items():
        dataset = parse_declaration(str(name), entry, base=base)
        existing = DATASETS.get(dataset.name)
        if existing is not None and not _is_declared(existing):
            raise DeclarationError(
                f"datasets.{name}: {name!r} is a registered {existing.kind} dataset; give your graph another name"
            )
        if isinstance(dataset, Facebook100Union):  # downloaded by the workflow: nothing to read yet
            declared.append(dataset)
            continue
        try:
            size = _checked_size(dataset)
        except DatasetFormatError as error:
            raise DatasetFormatError(f"datasets.{name}: {error}") from None
        declared.append(replace(dataset, size=size))
    _withdraw(keep={d.name for d in declared})
    for each in declared:
        _register(each)
    if declared:
        os.environ[ENV] = json.dumps({d.name: d.to_json() for d in declared}, sort_keys=True)
    else:
        os.environ.pop(ENV, None)
    return declared


def _withdraw(*, keep: set[str]) -> None:
    from nodedp.data.preprocess import unregister_protocol
    from nodedp.data.registry import unregister_dataset

    for name, info in list(DATASETS.items()):
        if _is_declared(info) and name not in keep:
            unregister_dataset(name)
            if info.protocol.startswith("file:"):  # a union's protocol is the suite's, shared
                unregister_protocol(info.protocol)


def _from_json(data: Mapping[str, Any]) -> Declaration:
    if "facebook100" in data:
        return parse_union(str(data["name"]), {k: v for k, v in data.items() if k != "name"})
    size = data.get("size")
    return UserDataset(**{**data, "size": GraphSize(**size) if size else None})


def _declared_in_environment() -> dict[str, Declaration]:
    text = os.environ.get(ENV)
    if not text:
        return {}
    try:
        return {name: _from_json(entry) for name, entry in json.loads(text).items()}
    except (ValueError, TypeError) as error:
        raise DeclarationError(f"${ENV}: not the declarations nodedp exports ({error})") from None


def _declared_in_workspace(name: str) -> Declaration | None:
    """A declared dataset's graph built in this workspace (the working directory): its ``meta.json`` records the
    declaration, for a command run by hand (``python -m nodedp verify``) without the config's environment."""
    from nodedp.io import read_json

    meta_path = GRAPHS_DIR / name / "meta.json"
    if not NAME.fullmatch(name) or not meta_path.is_file():
        return None
    try:
        source = read_json(meta_path)["source"]
        if source.get("declared") and "facebook100" in source:
            return parse_union(name, {k: source[k] for k in UNION_KEYS if k in source})
        if source.get("kind") != "file":
            return None
        dataset = parse_declaration(name, {k: source[k] for k in KEYS if k in source})
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DeclarationError(f"{meta_path}: not a declared dataset's meta.json ({error})") from None
    return dataset


def _resolve_dataset(name: str) -> bool:
    """The registry's fallback for an unknown id: a declaration exported by the process that read the config, else
    one recorded by the graph built in this workspace."""
    dataset = _declared_in_environment().get(name) or _declared_in_workspace(name)
    if dataset is None:
        return False
    _register(dataset)
    return True


def _resolve_protocol(name: str) -> bool:
    return name.startswith("file:") and _resolve_dataset(name.removeprefix("file:"))


add_dataset_resolver(_resolve_dataset)
add_protocol_resolver(_resolve_protocol)


def _declared(name: str) -> Declaration | None:
    info = DATASETS.get(name)
    if info is None:
        return _declared_in_environment().get(name)
    return _dataset_of(info) if _is_declared(info) else None


def _dataset_of(info: DatasetInfo) -> Declaration:
    source = info.source
    if "facebook100" in source:
        return parse_union(
            info.name, {**{k: source[k] for k in UNION_KEYS if k in source}, "description": info.description}
        )
    return UserDataset(
        name=info.name,
        path=str(source["path"]),
        location=str(info.path),
        format=str(source["format"]),
        directed=bool(source["directed"]),
        split=dict(source["split"]),
        in_degree_bound=info.in_degree_bound,
        out_degree_bound=info.out_degree_bound,
        description=info.description,
        size=info.size,
    )


def union_schools(name: str) -> tuple[tuple[str, ...] | str, tuple[str, ...]] | None:
    """A Facebook100 union's schools (``"served"``: known once downloaded, from its graph's meta.json) and its
    feature columns: a declared union's, or the registered ``fb-100``'s; ``None`` for any other dataset."""
    from nodedp.data.catalog import FACEBOOK100_SCHOOLS
    from nodedp.data.constants import FB100_FEATURE_COLUMNS

    if name == "fb-100":
        return FACEBOOK100_SCHOOLS, FB100_FEATURE_COLUMNS
    dataset = _declared(name)
    if not isinstance(dataset, Facebook100Union):
        return None
    return dataset.schools, dataset.feature_columns


def declared_files(name: str) -> list[str]:
    """The file(s) the graph of a declared dataset is built from, as declared (relative paths stay relative):
    the workflow's input of its graph job, so editing them rebuilds it. Empty for any other dataset."""
    dataset = _declared(name)
    if dataset is None or isinstance(dataset, Facebook100Union):  # a union's files are downloaded
        return []
    if dataset.format == "npz":
        return [dataset.path]
    folder = Path(dataset.location)
    names = [CSV_EDGES, *CSV_FEATURES, *CSV_LABELS, *(CSV_SPLIT if dataset.split["kind"] == "file" else ())]
    return [os.path.join(dataset.path, n) for n in names if (folder / n).is_file()]


class _Unrecorded:
    """A workflow param Snakemake does not record (not a string, number or container): no rerun trigger."""

    def __str__(self) -> str:
        return ""


NOT_DECLARED = _Unrecorded()


def declared_graph_params(name: str) -> str | _Unrecorded:
    """What a declared dataset's graph depends on besides its files (format, direction, split), as JSON: a
    workflow param, so a changed declaration rebuilds the graph. ``NOT_DECLARED`` for any other dataset, which
    Snakemake does not record, so the graphs of registered datasets keep their recorded params."""
    dataset = _declared(name)
    return NOT_DECLARED if dataset is None else json.dumps(dataset.graph_params(), sort_keys=True)
