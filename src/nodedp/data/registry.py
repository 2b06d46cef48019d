"""The dataset registry: every dataset id the workflow accepts, with its public bounds.

The degree bounds are public parameters of a dataset (chosen without looking
at the private graph beyond what is published about it): ``out_degree_bound``
is GAP/ProGAP's D, ``in_degree_bound`` is DP-GNN's K. Datasets are made from
code (``synthetic``), downloaded (``download``) or declared in a config
(``file``, ``nodedp.data.user``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nodedp.data.download import RemoteFile
from nodedp.data.preprocess import SplitProtocol, UnknownProtocolError, get_protocol
from nodedp.data.synthetic import CSBMSpec, generate_csbm
from nodedp.io import read_json, sha256_file, torch_save_atomic

if TYPE_CHECKING:  # building a graph or a split imports these; the registry itself is read torch-free
    from torch_geometric.data import Data

    from nodedp.data.formats import RawGraph
    from nodedp.data.splits import Split

KINDS = ("synthetic", "download", "file")


class UnknownDatasetError(KeyError, ValueError):
    """A dataset id that is not registered."""

    def __str__(self) -> str:
        # KeyError would repr() the message, quoting it twice.
        return str(self.args[0])


@dataclass(frozen=True)
class GraphSize:
    """A graph's published size: what a paper prints about it, public by definition.

    ``edges`` counts undirected edges (each pair once). Planning reads it to size
    cluster jobs (``nodedp.resources``); nothing private is derived from it.
    """

    nodes: int
    edges: int
    features: int
    classes: int

    def __post_init__(self) -> None:
        for name in ("nodes", "edges", "features", "classes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "edges" else 1):
                raise ValueError(f"GraphSize.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset. Synthetic ones have ``build`` (the graph from code);
    downloaded ones have ``files`` (fetched by the download stage) and ``reader``
    (the download directory -> ``RawGraph``), declared ones ``path`` (the user's
    file or folder) and ``reader`` (``path`` -> ``RawGraph``); both then go through
    their ``protocol``'s preprocessing. The protocol also says how the split stage
    splits. ``source`` is recorded in ``meta.json``. ``size`` is the graph's
    published size (a declared file's shape), where known (it sizes cluster jobs;
    ``None``: the configured defaults)."""

    name: str
    kind: str
    description: str
    build: Callable[[], Data] | None
    out_degree_bound: int
    in_degree_bound: int
    citation: str = ""
    source: Mapping[str, Any] = field(default_factory=dict)
    files: tuple[RemoteFile, ...] = ()
    reader: Callable[[Path], RawGraph] | None = None
    protocol: str = "planetoid"
    size: GraphSize | None = None
    path: Path | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"dataset {self.name!r}: unknown kind {self.kind!r}; valid choices: {list(KINDS)}")
        if self.kind == "synthetic" and self.build is None:
            raise ValueError(f"dataset {self.name!r}: a synthetic dataset needs build")
        if self.kind == "download" and not (self.files and self.reader is not None):
            raise ValueError(f"dataset {self.name!r}: a downloaded dataset needs files and a reader")
        if self.kind == "file" and not (self.path is not None and self.reader is not None):
            raise ValueError(f"dataset {self.name!r}: a declared dataset needs a path and a reader")
        get_protocol(self.protocol)  # names the valid protocols
        for bound in ("out_degree_bound", "in_degree_bound"):
            value = getattr(self, bound)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"dataset {self.name!r}: {bound} must be an integer >= 1, got {value!r}")


_REGISTRY: dict[str, DatasetInfo] = {}
DATASETS: Mapping[str, DatasetInfo] = MappingProxyType(_REGISTRY)
# Called with an unknown id before get_dataset gives up; True: it registered the id (nodedp.data.user's, which
# finds a dataset a config declared in the environment its jobs inherit, or in the meta.json of its built graph).
_RESOLVERS: list[Callable[[str], bool]] = []


def add_dataset_resolver(resolver: Callable[[str], bool]) -> None:
    _RESOLVERS.append(resolver)


def register_dataset(info: DatasetInfo, *, force: bool = False) -> DatasetInfo:
    """Add ``info`` to ``DATASETS``; an existing id is an error unless ``force``."""
    if info.name in _REGISTRY and not force:
        raise ValueError(f"dataset {info.name!r} is already registered (pass force=True to replace it)")
    _REGISTRY[info.name] = info
    return info


def unregister_dataset(name: str) -> None:
    """Remove a declared dataset (a config that no longer declares it); registered code stays."""
    info = _REGISTRY.get(name)
    if info is not None and info.kind != "file" and not info.source.get("declared"):
        raise ValueError(f"dataset {name!r} is {info.kind}, not declared: it cannot be unregistered")
    _REGISTRY.pop(name, None)


def dataset_names() -> list[str]:
    return sorted(_REGISTRY)


def get_dataset(name: str) -> DatasetInfo:
    if name not in _REGISTRY and not any(resolve(name) for resolve in _RESOLVERS):
        declared = sorted(n for n, info in _REGISTRY.items() if info.kind == "file")
        raise UnknownDatasetError(
            f"unknown dataset {name!r}; valid choices: {dataset_names()}"
            + (f" (declared under datasets: {declared})" if declared else "")
        )
    return _REGISTRY[name]


OFFICIAL_SPLIT_FILE = "official_split.pt"


def build_dataset(name: str, directory: str | Path, *, raw_dir: str | Path | None = None) -> dict[str, Any]:
    """Build dataset ``name`` in canonical form under ``directory`` and return its meta.

    Synthetic datasets are generated; downloaded ones are read from ``raw_dir``
    (what the download stage fetched), declared ones from their ``path``, and
    both preprocessed by their protocol, whose report goes into ``meta.json``.
    An official split (OGB, Reddit, a declared file's masks) is stored beside
    the graph as ``official_split.pt``, in the preprocessed node ids.
    """
    import torch

    from nodedp.data.graph import save_graph
    from nodedp.data.preprocess import apply_protocol

    info = get_dataset(name)
    source: dict[str, Any] = {"kind": info.kind, "protocol": info.protocol, **info.source}
    if info.kind == "synthetic":
        assert info.build is not None  # DatasetInfo checks it
        return save_graph(info.build(), directory, name=name, source=source)
    assert info.reader is not None  # DatasetInfo checks it
    if info.kind == "file":
        assert info.path is not None
        if raw_dir is not None:
            raise ValueError(f"dataset {name!r} is declared: it is read from {info.path}, not from a raw_dir")
        raw = info.reader(info.path)
    elif raw_dir is None:
        raise ValueError(f"dataset {name!r} is downloaded: pass the download directory (raw_dir)")
    else:
        raw = info.reader(Path(raw_dir))
    data = raw.data
    if raw.official_split is not None:  # masks travel through node-removing steps
        for part, nodes in raw.official_split.items():
            mask = torch.zeros(data.num_nodes, dtype=torch.bool)
            mask[nodes] = True
            data[f"{part}_mask"] = mask
    data, report = apply_protocol(data, info.protocol)
    directory = Path(directory)
    if raw.official_split is not None:
        official = {part: data[f"{part}_mask"].nonzero().view(-1) for part in raw.official_split}
        for part in raw.official_split:
            del data[f"{part}_mask"]
        torch_save_atomic(official, directory / OFFICIAL_SPLIT_FILE)
    if info.kind == "file":
        source["files"] = [{"path": path, "sha256": sha256_file(where)} for path, where in raw.extra["files"]]
    else:
        # an optional file counts where it was served (read): a union of the Facebook100 schools a source serves
        read = {f"{school}.mat" for school in raw.extra.get("schools", ())}
        source["files"] = [
            {"url": f.url, "sha256": f.sha256} for f in info.files if not f.optional or f.filename in read
        ]
    if "schools" in raw.extra:  # a Facebook100 union: which schools it is, so no table passes it off as another
        source["schools"] = list(raw.extra["schools"])
        source["num_schools"] = len(raw.extra["schools"])
        source["feature_columns"] = list(raw.extra["feature_columns"])
    source["preprocessing"] = report
    return save_graph(data, directory, name=name, source=source)


def csbm_dataset(
    name: str,
    spec: CSBMSpec,
    *,
    description: str,
    out_degree_bound: int,
    in_degree_bound: int,
    protocol: str = "planetoid",
) -> DatasetInfo:
    """A synthetic dataset made by ``generate_csbm(spec)``, its spec recorded as the source; its size is the
    spec's (edges: the expected number, N·d/2)."""
    return DatasetInfo(
        name=name,
        kind="synthetic",
        description=description,
        build=lambda: generate_csbm(spec),
        out_degree_bound=out_degree_bound,
        in_degree_bound=in_degree_bound,
        source={"generator": "csbm", "params": asdict(spec)},
        protocol=protocol,
        size=GraphSize(
            nodes=spec.num_nodes,
            edges=round(spec.num_nodes * spec.avg_degree / 2),
            features=spec.num_features,
            classes=spec.num_classes,
        ),
    )


# feature_signal 2.0 was calibrated on the 3000-node presets (3 seeds, 75/15
# train/test): an MLP on features alone reaches ~59%; at homophily 0.85 a
# 2-layer GCN reached ~99%, so the homophilous preset uses 0.75 to leave room
# between the GCN ceiling and private graph methods; on the heterophilous one
# the GCN (~45%) is worse than the MLP. The presets use different seeds so
# their features differ too. K = 10 follows DP-GNN's advice ("around 10"); D = 20 keeps
# most edges at mean degree 12 while capping the heavy tail.
_PRESET: dict[str, Any] = dict(
    num_nodes=3000,
    num_classes=5,
    avg_degree=12.0,
    num_features=32,
    feature_signal=2.0,
    degree_exponent=2.5,
    class_weights=None,
)

register_dataset(
    csbm_dataset(
        "csbm-homophilous",
        CSBMSpec(homophily=0.75, seed=0, **_PRESET),
        description="CSBM, 3000 nodes, 5 classes, edge homophily 0.75, power-law degrees (exponent 2.5)",
        out_degree_bound=20,
        in_degree_bound=10,
    )
)
register_dataset(
    csbm_dataset(
        "csbm-heterophilous",
        CSBMSpec(homophily=0.2, seed=1, **_PRESET),
        description="CSBM, 3000 nodes, 5 classes, edge homophily 0.2, power-law degrees (exponent 2.5)",
        out_degree_bound=20,
        in_degree_bound=10,
    )
)
register_dataset(
    csbm_dataset(
        "csbm-tiny",
        CSBMSpec(
            num_nodes=300,
            num_classes=3,
            avg_degree=8.0,
            homophily=0.8,
            num_features=8,
            feature_signal=2.0,
            degree_exponent=2.5,
            class_weights=None,
            seed=0,
        ),
        description="CSBM, 300 nodes, 3 classes, for tests",
        out_degree_bound=10,
        in_degree_bound=5,
    )
)


def make_split(
    graph_dir: str | Path, *, seed: int, setting: str | None = None, fractions: tuple[float, float, float] | None = None
) -> Split:
    """The split the graph's protocol prescribes (recorded in its meta.json).

    Random protocols draw ``random_split`` with their fractions and ``seed``;
    official ones load the stored official split (every seed shares it).
    ``setting`` and ``fractions`` override the protocol, e.g. by hand.
    """
    import torch

    from nodedp.data.splits import Split, random_split, validate_split

    graph_dir = Path(graph_dir)
    meta = read_json(graph_dir / "meta.json")
    source = meta["source"]
    try:
        protocol = get_protocol(source.get("protocol", "planetoid")).split
    except UnknownProtocolError:
        if source.get("kind") != "file":
            raise
        # A declared dataset's protocol lives in the config that declared it; its split is also in the report.
        protocol = SplitProtocol(**source["preprocessing"]["split"])
    setting = setting or protocol.setting
    if protocol.kind == "official" and fractions is None:
        parts = torch.load(graph_dir / OFFICIAL_SPLIT_FILE, weights_only=True)
        split = Split(parts["train"], parts["val"], parts["test"], setting=setting, seed=seed)
        validate_split(split, where=str(graph_dir / OFFICIAL_SPLIT_FILE), num_nodes=meta["num_nodes"])
        return split
    if fractions is None:
        if protocol.kind == "official":
            raise ValueError(f"{graph_dir}: protocol has an official split; pass fractions to draw a random one")
        assert protocol.train is not None and protocol.val is not None and protocol.test is not None
        fractions = (protocol.train, protocol.val, protocol.test)
    train, val, test = fractions
    return random_split(meta["num_nodes"], seed=seed, train=train, val=val, test=test, setting=setting)
