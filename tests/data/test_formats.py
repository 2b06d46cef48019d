from __future__ import annotations

import collections
import gzip
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
import torch
from torch_geometric.utils import is_undirected

from nodedp.data.constants import FACEBOOK100_CLASS_YEARS, DatasetFormatError
from nodedp.data.formats import (
    OGB_NODE_DATASETS,
    RawGraph,
    encode_facebook100,
    read_facebook100_mat,
    read_graphmining_npz,
    read_npz_graph,
    read_ogb_node,
    read_planetoid,
    read_reddit,
)

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets" / "github.com"
PLANETOID_DIR = SHARED / "kimiyoung/planetoid/raw/master/data"
CORA_ML = SHARED / "abojchevski/graph2gauss/raw/master/data/cora_ml.npz"
FACEBOOK100_DIR = SHARED / "sisaman/pyg-datasets/raw/main/datasets/facebook100"


def edges(raw: RawGraph) -> set[tuple[int, int]]:
    return set(map(tuple, raw.data.edge_index.T.tolist()))


def assert_sorted_edge_set(raw: RawGraph) -> None:
    """Every reader's edge contract: int64 [2, E], sorted by (source, target), no repeats."""
    edge_index = raw.data.edge_index
    assert edge_index.dtype == torch.int64 and edge_index.shape[0] == 2
    keys = edge_index[0] * raw.data.num_nodes + edge_index[1]
    assert bool((keys[1:] > keys[:-1]).all())


def split_lists(raw: RawGraph) -> dict[str, list[int]]:
    assert raw.official_split is not None
    return {part: ids.tolist() for part, ids in raw.official_split.items()}


def gzip_csv(path: Path, rows: np.ndarray | list, *, header: list[str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=header).to_csv(path, header=header is not None, index=False, compression="gzip")


# -- real files in ../shared/datasets ----------------------------------------------


def need_shared(path: Path) -> Path:
    if not path.exists():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    return path


@pytest.mark.shared
def test_real_cora_matches_the_paper_and_pyg():
    from torch_geometric.io import read_planetoid_data

    raw = read_planetoid(need_shared(PLANETOID_DIR), "cora")
    data = raw.data
    assert (data.num_nodes, data.x.shape[1], int(data.y.max()) + 1) == (2708, 1433, 7)
    assert data.edge_index.shape[1] == 10_556 and is_undirected(data.edge_index)
    assert {part: ids.numel() for part, ids in raw.official_split.items()} == {"train": 140, "val": 500, "test": 1000}
    pyg = read_planetoid_data(str(PLANETOID_DIR), "cora")
    assert torch.equal(data.x, pyg.x) and torch.equal(data.y, pyg.y)
    assert edges(raw) == set(map(tuple, pyg.edge_index.T.tolist()))
    assert raw.official_split["test"].tolist() == pyg.test_mask.nonzero().view(-1).tolist()


@pytest.mark.shared
def test_real_cora_ml_matches_the_paper_and_pyg():
    from torch_geometric.io import read_npz

    raw = read_npz_graph(need_shared(CORA_ML), binarize_features=True)  # as the registry reads it
    data = raw.data
    assert (data.num_nodes, data.x.shape[1], int(data.y.max()) + 1) == (2995, 2879, 7)
    assert data.edge_index.shape[1] == 8_416  # DPAR's edge count: the directed citations
    pyg = read_npz(str(CORA_ML), to_undirected=False)  # PyG drops self loops; Cora-ML has none
    assert torch.equal(data.x, pyg.x) and torch.equal(data.y, pyg.y)
    assert edges(raw) == set(map(tuple, pyg.edge_index.T.tolist()))


@pytest.mark.shared
@pytest.mark.parametrize(
    ("school", "num_nodes", "num_edges", "num_features", "num_unlabeled"),
    [
        ("Caltech36", 769, 33_312, 79, 143),
        ("Reed98", 962, 37_624, 117, 162),
        ("Haverford76", 1446, 119_178, 126, 150),
        ("Swarthmore42", 1659, 122_100, 120, 181),
    ],
)
def test_real_facebook100_schools(school, num_nodes, num_edges, num_features, num_unlabeled):
    raw = read_facebook100_mat(need_shared(FACEBOOK100_DIR / f"{school}.mat"))
    data = raw.data
    assert (data.num_nodes, data.edge_index.shape[1], data.x.shape[1]) == (num_nodes, num_edges, num_features)
    assert is_undirected(data.edge_index) and not bool((data.edge_index[0] == data.edge_index[1]).any())
    assert raw.extra["class_years"] == (2004, 2005, 2006, 2007, 2008, 2009)
    assert int((data.y == -1).sum()) == num_unlabeled and int(data.y.max()) == 5
    # Every node has at most one category per one-hot block (five blocks).
    assert int(data.x.sum(dim=1).max()) <= 5


@pytest.mark.shared
def test_real_facebook100_equals_gaps_encoding_where_every_column_has_a_missing_value():
    # Haverford76 has a 0 in each feature column, so GAP's pandas.get_dummies one-hot
    # encodes all five: the two encodings must agree bit for bit.
    path = need_shared(FACEBOOK100_DIR / "Haverford76.mat")
    info = scipy.io.loadmat(path)["local_info"]
    frame = pd.DataFrame(info[:, :5].astype(np.int64), columns=["status", "gender", "major", "minor", "housing"])
    gap_x = torch.tensor(pd.get_dummies(frame.replace({0: pd.NA})).to_numpy(dtype=np.float32))
    year = np.where((info[:, 5] >= 2004) & (info[:, 5] <= 2009), info[:, 5], 0)
    gap_y = np.searchsorted(np.unique(year), year) - 1  # GAP: LabelEncoder, then -1 when 0 is present
    raw = read_facebook100_mat(path)
    assert torch.equal(raw.data.x, gap_x)
    assert raw.data.y.tolist() == gap_y.tolist()


# -- Planetoid pickles ---------------------------------------------------------------

NUM_TRAIN, NUM_KNOWN = 3, 505  # the public split needs 500 validation nodes after the training ones


def write_planetoid(directory: Path, name: str = "tiny") -> dict:
    """A Planetoid-format graph with CiteSeer's quirk: a gap in the test ids."""
    rng = np.random.default_rng(0)
    num_features, num_classes = 6, 3
    test_index = np.array([NUM_KNOWN + 3, NUM_KNOWN, NUM_KNOWN + 1])  # file order; NUM_KNOWN + 2 is the gap
    allx = (rng.random((NUM_KNOWN, num_features)) < 0.4).astype(np.float32)
    tx = (rng.random((3, num_features)) < 0.4).astype(np.float32)
    known_labels = rng.integers(0, num_classes, NUM_KNOWN)
    known_labels_one_hot = np.eye(num_classes, dtype=np.int32)[known_labels]
    known_labels_one_hot[10] = 0  # a known node without a label
    test_labels = np.array([2, 0, 1])
    graph = collections.defaultdict(list)
    graph[0] = [1, 1, 0]  # a duplicate and a self loop
    graph[1] = [0, NUM_KNOWN + 3]
    graph[NUM_KNOWN + 3] = [1]
    graph[NUM_KNOWN] = []
    contents = {
        "x": sp.csr_matrix(allx[:NUM_TRAIN]),
        "y": known_labels_one_hot[:NUM_TRAIN],
        "allx": sp.csr_matrix(allx),
        "ally": known_labels_one_hot,
        "tx": sp.csr_matrix(tx),
        "ty": np.eye(num_classes, dtype=np.int32)[test_labels],
        "graph": graph,
    }
    for part, value in contents.items():
        with open(directory / f"ind.{name}.{part}", "wb") as stream:
            pickle.dump(value, stream, protocol=2)
    (directory / f"ind.{name}.test.index").write_text("\n".join(map(str, test_index)) + "\n")
    expected_x = np.zeros((NUM_KNOWN + 4, num_features), dtype=np.float32)
    expected_x[:NUM_KNOWN] = allx
    expected_x[test_index] = tx
    expected_y = np.full(NUM_KNOWN + 4, -1)
    expected_y[:NUM_KNOWN] = known_labels
    expected_y[10] = -1
    expected_y[test_index] = test_labels
    return {"x": expected_x, "y": expected_y, "test_index": sorted(test_index.tolist())}


def test_planetoid_reproduces_features_labels_edges_and_public_split(tmp_path):
    expected = write_planetoid(tmp_path)
    raw = read_planetoid(tmp_path, "TINY")  # names are case-insensitive, as in PyG
    assert_sorted_edge_set(raw)
    assert raw.data.x.dtype == torch.float32 and np.array_equal(raw.data.x.numpy(), expected["x"])
    assert raw.data.y.tolist() == expected["y"].tolist()
    # The gap node: zero features (as PyG) and no label (PyG says class 0).
    assert raw.data.y[NUM_KNOWN + 2] == -1 and not raw.data.x[NUM_KNOWN + 2].any()
    assert edges(raw) == {(0, 0), (0, 1), (1, 0), (1, NUM_KNOWN + 3), (NUM_KNOWN + 3, 1)}
    assert split_lists(raw) == {
        "train": list(range(NUM_TRAIN)),
        "val": list(range(NUM_TRAIN, NUM_TRAIN + 500)),
        "test": expected["test_index"],
    }


class _Payload:
    """Unpickling this would create a directory: a stand-in for arbitrary code."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (str(self.target),))


def test_planetoid_refuses_a_pickle_that_calls_code(tmp_path):
    write_planetoid(tmp_path)
    marker = tmp_path / "pwned"
    with open(tmp_path / "ind.tiny.graph", "wb") as stream:
        pickle.dump(_Payload(marker), stream, protocol=2)
    with pytest.raises(DatasetFormatError, match=r"ind\.tiny\.graph.*refusing global"):
        read_planetoid(tmp_path, "tiny")
    assert not marker.exists()


def test_planetoid_truncated_pickle_and_missing_file_name_the_file(tmp_path):
    write_planetoid(tmp_path)
    allx = tmp_path / "ind.tiny.allx"
    allx.write_bytes(allx.read_bytes()[:100])
    with pytest.raises(DatasetFormatError, match=r"ind\.tiny\.allx: cannot be decoded"):
        read_planetoid(tmp_path, "tiny")
    write_planetoid(tmp_path)
    (tmp_path / "ind.tiny.test.index").unlink()
    with pytest.raises(DatasetFormatError, match=r"ind\.tiny\.test\.index: missing file"):
        read_planetoid(tmp_path, "tiny")


# -- graph2gauss / gnn-benchmark npz ---------------------------------------------


def write_npz_graph(path: Path, *, dense_features: bool = False, sparse_labels: bool = False) -> None:
    # 0 -> 1 twice (a duplicate entry), 1 -> 2, 2 -> 2 (a self loop), 3 -> 0 stored as an explicit zero.
    adjacency = sp.csr_matrix(
        (np.array([1.0, 1.0, 1.0, 1.0, 0.0]), np.array([1, 1, 2, 2, 0]), np.array([0, 2, 3, 4, 5])), shape=(4, 4)
    )
    features = np.array([[0.5, 0, 0], [0, 0.25, 0], [0, 0, 0], [2.0, 0, 1.0]], dtype=np.float32)
    arrays = {
        "adj_data": adjacency.data,
        "adj_indices": adjacency.indices,
        "adj_indptr": adjacency.indptr,
        "adj_shape": np.array(adjacency.shape),
        "node_names": np.array([{"pickled": "object"}], dtype=object),  # never read
    }
    if dense_features:
        arrays["attr_matrix"] = features
    else:
        attr = sp.csr_matrix(features)
        arrays.update(attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr, attr_shape=attr.shape)
    if sparse_labels:
        one_hot = sp.csr_matrix(np.array([[0, 1], [1, 0], [0, 0], [0, 1]]))  # node 2 unlabeled
        arrays.update(
            labels_data=one_hot.data,
            labels_indices=one_hot.indices,
            labels_indptr=one_hot.indptr,
            labels_shape=one_hot.shape,
        )
    else:
        arrays["labels"] = np.array([1, 0, 1, 1])
    np.savez(path, **arrays)


def test_npz_graph_keeps_direction_self_loops_and_features_and_binarizes_like_pyg_on_request(tmp_path):
    path = tmp_path / "g.npz"
    write_npz_graph(path)
    raw = read_npz_graph(path)
    assert_sorted_edge_set(raw)
    assert edges(raw) == {(0, 1), (1, 2), (2, 2)}
    assert raw.data.x.tolist() == [[0.5, 0, 0], [0, 0.25, 0], [0, 0, 0], [2.0, 0, 1.0]]  # as stored
    assert raw.data.y.tolist() == [1, 0, 1, 1] and raw.official_split is None
    binarized = read_npz_graph(path, binarize_features=True)
    assert binarized.data.x.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]]


def test_npz_graph_reads_dense_features_and_one_hot_sparse_labels(tmp_path):
    path = tmp_path / "g.npz"
    write_npz_graph(path, dense_features=True, sparse_labels=True)
    raw = read_npz_graph(path, binarize_features=True)
    assert raw.data.x.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]]
    assert raw.data.y.tolist() == [1, 0, -1, 1]


def test_npz_graph_refuses_multi_label_rows(tmp_path):
    path = tmp_path / "g.npz"
    write_npz_graph(path)
    arrays = dict(np.load(path, allow_pickle=True))
    del arrays["labels"]
    one_hot = sp.csr_matrix(np.array([[1, 1], [1, 0], [0, 1], [0, 1]]))
    arrays.update(
        labels_data=one_hot.data,
        labels_indices=one_hot.indices,
        labels_indptr=one_hot.indptr,
        labels_shape=one_hot.shape,
    )
    np.savez(path, **arrays)
    with pytest.raises(DatasetFormatError, match="several labels"):
        read_npz_graph(path)


# -- graphmining npz -----------------------------------------------------------------


def test_graphmining_npz_reproduces_the_file(tmp_path):
    path = tmp_path / "facebook.npz"
    features = np.arange(12, dtype=np.float64).reshape(4, 3)
    np.savez(path, features=features, target=np.array([0, 3, 1, 3]), edges=np.array([[0, 1], [1, 0], [2, 3], [0, 1]]))
    raw = read_graphmining_npz(path)
    assert_sorted_edge_set(raw)
    assert raw.data.x.dtype == torch.float32 and np.array_equal(raw.data.x.numpy(), features)
    assert raw.data.y.tolist() == [0, 3, 1, 3]
    assert edges(raw) == {(0, 1), (1, 0), (2, 3)}


# -- Facebook100 .mat ------------------------------------------------------------------

# status, gender, major, minor, housing, year, high school (0 = missing)
LOCAL_INFO = np.array(
    [
        [1, 2, 200, 0, 50, 2008, 7],
        [2, 1, 210, 300, 0, 2005, 7],
        [1, 0, 200, 300, 51, 0, 9],  # year missing
        [1, 2, 0, 0, 51, 1999, 9],  # alumnus: outside the class years
        [2, 1, 205, 0, 50, 2008, 0],
    ],
    dtype=np.uint16,
)


def test_encode_facebook100_one_hot_blocks_and_class_years():
    x, y, extra = encode_facebook100(LOCAL_INFO)
    assert extra["feature_names"] == (
        "status=1", "status=2", "gender=1", "gender=2",
        "major=200", "major=205", "major=210", "minor=300", "housing=50", "housing=51",
    )  # fmt: skip
    assert x.tolist() == [
        [1, 0, 0, 1, 1, 0, 0, 0, 1, 0],
        [0, 1, 1, 0, 0, 0, 1, 1, 0, 0],
        [1, 0, 0, 0, 1, 0, 0, 1, 0, 1],
        [1, 0, 0, 1, 0, 0, 0, 0, 0, 1],
        [0, 1, 1, 0, 0, 1, 0, 0, 1, 0],
    ]
    assert FACEBOOK100_CLASS_YEARS == (2004, 2009)
    assert extra["class_years"] == (2005, 2008) and y.tolist() == [1, 0, -1, -1, 1]


def test_encode_facebook100_accepts_whole_doubles_and_refuses_other_codes():
    x, y, _ = encode_facebook100(LOCAL_INFO)
    x_double, y_double, _ = encode_facebook100(LOCAL_INFO.astype(np.float64))  # MATLAB's default type
    assert torch.equal(x, x_double) and torch.equal(y, y_double)
    fractional = LOCAL_INFO.astype(np.float64)
    fractional[0, 2] = 200.5
    with pytest.raises(DatasetFormatError, match="not all integers"):
        encode_facebook100(fractional)
    with pytest.raises(DatasetFormatError, match=r"must be \[N, 7\]"):
        encode_facebook100(LOCAL_INFO[:, :6])


def test_facebook100_mat_reproduces_the_file(tmp_path):
    path = tmp_path / "Tiny1.mat"
    adjacency = sp.csc_matrix(
        np.array([[0, 1, 0, 0, 1], [1, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0] * 5, [1, 0, 0, 0, 0]]), dtype=float
    )
    scipy.io.savemat(path, {"A": adjacency, "local_info": LOCAL_INFO})
    raw = read_facebook100_mat(path)
    assert_sorted_edge_set(raw)
    assert edges(raw) == {(0, 1), (1, 0), (0, 4), (4, 0), (1, 2), (2, 1)}
    x, y, extra = encode_facebook100(LOCAL_INFO)
    assert torch.equal(raw.data.x, x) and torch.equal(raw.data.y, y)
    assert raw.extra["class_years"] == extra["class_years"]
    assert raw.extra["local_info"].tolist() == LOCAL_INFO.astype(np.int64).tolist()


def test_facebook100_mat_without_local_info_is_a_clear_error(tmp_path):
    path = tmp_path / "Tiny1.mat"
    scipy.io.savemat(path, {"A": sp.csc_matrix((5, 5))})
    with pytest.raises(DatasetFormatError, match=r"Tiny1\.mat: missing variable\(s\) \['local_info'\]"):
        read_facebook100_mat(path)


# -- Reddit ------------------------------------------------------------------------------


def write_reddit(directory: Path) -> np.ndarray:
    features = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.savez(
        directory / "reddit_data.npz",
        feature=features,
        label=np.array([4, 0, 2, 2, 1]),
        node_types=np.array([1, 3, 1, 2, 3]),
    )
    # COO with a repeated edge, as scipy stores it.
    adjacency = sp.coo_matrix((np.ones(5), (np.array([0, 1, 1, 4, 0]), np.array([1, 0, 4, 1, 1]))), shape=(5, 5))
    sp.save_npz(directory / "reddit_graph.npz", adjacency)
    return features


def test_reddit_reproduces_graph_and_official_split(tmp_path):
    features = write_reddit(tmp_path)
    raw = read_reddit(tmp_path)
    assert_sorted_edge_set(raw)
    assert np.array_equal(raw.data.x.numpy(), features) and raw.data.y.tolist() == [4, 0, 2, 2, 1]
    assert edges(raw) == {(0, 1), (1, 0), (1, 4), (4, 1)}
    assert split_lists(raw) == {"train": [0, 2], "val": [3], "test": [1, 4]}


def test_reddit_adjacency_of_the_wrong_size_is_a_clear_error(tmp_path):
    write_reddit(tmp_path)
    sp.save_npz(tmp_path / "reddit_graph.npz", sp.coo_matrix((6, 6)))
    with pytest.raises(DatasetFormatError, match=r"reddit_graph\.npz: adjacency has shape \[6, 6\] for 5 nodes"):
        read_reddit(tmp_path)


# -- OGB folders -------------------------------------------------------------------------

OGB_FEATURES = np.array([[0.5, -1.25], [0.0, 2.0], [1.5, 0.25], [3.0, -0.5], [0.125, 1.0]], dtype=np.float32)
OGB_LABELS = [3, 0, 1, 3, 2]
OGB_EDGES = [[0, 1], [1, 2], [2, 0], [4, 3]]
OGB_SPLIT = {"train": [4, 0], "valid": [2], "test": [1, 3]}


def write_ogb_homogeneous(root: Path, split: str) -> None:
    gzip_csv(root / "raw" / "num-node-list.csv.gz", [[5]])
    gzip_csv(root / "raw" / "num-edge-list.csv.gz", [[len(OGB_EDGES)]])
    gzip_csv(root / "raw" / "node-feat.csv.gz", OGB_FEATURES)
    gzip_csv(root / "raw" / "node-label.csv.gz", [[label] for label in OGB_LABELS])
    gzip_csv(root / "raw" / "edge.csv.gz", OGB_EDGES)
    for part, ids in OGB_SPLIT.items():
        gzip_csv(root / "split" / split / f"{part}.csv.gz", [[i] for i in ids])


def write_ogb_mag(root: Path) -> None:
    """Papers (5) plus decoys: authors and an author->paper relation that must be ignored."""
    gzip_csv(
        root / "raw" / "num-node-dict.csv.gz",
        [[7, 2, 1, 5]],
        header=["author", "field_of_study", "institution", "paper"],
    )
    gzip_csv(root / "raw" / "relations" / "paper___cites___paper" / "edge.csv.gz", OGB_EDGES)
    gzip_csv(root / "raw" / "relations" / "author___writes___paper" / "edge.csv.gz", [[6, 4], [5, 0]])
    gzip_csv(root / "raw" / "node-feat" / "paper" / "node-feat.csv.gz", OGB_FEATURES)
    gzip_csv(root / "raw" / "node-label" / "paper" / "node-label.csv.gz", [[label] for label in OGB_LABELS])
    for part, ids in OGB_SPLIT.items():
        gzip_csv(root / "split" / "time" / "paper" / f"{part}.csv.gz", [[i] for i in ids])


def assert_ogb_nodes(raw: RawGraph) -> None:
    assert_sorted_edge_set(raw)
    assert np.array_equal(raw.data.x.numpy(), OGB_FEATURES) and raw.data.y.tolist() == OGB_LABELS
    assert split_lists(raw) == {"train": [0, 4], "val": [2], "test": [1, 3]}


def test_ogb_arxiv_layout_keeps_directed_edges(tmp_path):
    write_ogb_homogeneous(tmp_path, "time")
    raw = read_ogb_node(tmp_path, "ogbn-arxiv")
    assert_ogb_nodes(raw)
    assert edges(raw) == set(map(tuple, OGB_EDGES))


def test_ogb_products_layout_adds_inverse_edges_as_ogb_does(tmp_path):
    write_ogb_homogeneous(tmp_path, "sales_ranking")
    raw = read_ogb_node(tmp_path, "ogbn-products")
    assert_ogb_nodes(raw)
    assert edges(raw) == set(map(tuple, OGB_EDGES)) | {(t, s) for s, t in OGB_EDGES}


def test_ogb_mag_layout_reads_papers_and_citations_only(tmp_path):
    write_ogb_mag(tmp_path)
    raw = read_ogb_node(tmp_path, "ogbn-mag")
    assert_ogb_nodes(raw)
    assert edges(raw) == set(map(tuple, OGB_EDGES))


def test_ogb_unknown_name_lists_the_choices(tmp_path):
    with pytest.raises(ValueError, match=r"'ogbn-papers100M'.*ogbn-arxiv.*ogbn-mag.*ogbn-products"):
        read_ogb_node(tmp_path, "ogbn-papers100M")
    assert sorted(OGB_NODE_DATASETS) == ["ogbn-arxiv", "ogbn-mag", "ogbn-products"]


def test_ogb_truncated_edge_file_names_the_file(tmp_path):
    write_ogb_homogeneous(tmp_path, "time")
    edge_file = tmp_path / "raw" / "edge.csv.gz"
    # Many rows, then cut the gzip stream mid-way.
    with gzip.open(edge_file, "wt") as stream:
        stream.write("".join(f"{i % 5},{(i + 1) % 5}\n" for i in range(20_000)))
    edge_file.write_bytes(edge_file.read_bytes()[:-40])
    with pytest.raises(DatasetFormatError, match=r"edge\.csv\.gz: cannot be decoded"):
        read_ogb_node(tmp_path, "ogbn-arxiv")


def test_ogb_missing_split_file_names_it(tmp_path):
    write_ogb_homogeneous(tmp_path, "time")
    (tmp_path / "split" / "time" / "valid.csv.gz").unlink()
    with pytest.raises(DatasetFormatError, match=r"split/time/valid\.csv\.gz: missing file"):
        read_ogb_node(tmp_path, "ogbn-arxiv")


@pytest.mark.parametrize(
    ("relative", "rows", "problem"),
    [
        ("raw/node-label.csv.gz", [[1]] * 4, "expected one label column for 5 nodes"),
        ("raw/node-label.csv.gz", [[1]] * 4 + [["x"]], "cannot be decoded"),  # not an integer
        ("raw/edge.csv.gz", [[0, 5]], "edge endpoint 5 out of range for 5 nodes"),
        ("split/time/test.csv.gz", [[0]], "overlap"),  # node 0 is also in train
    ],
)
def test_ogb_inconsistent_files_are_clear_errors(tmp_path, relative, rows, problem):
    write_ogb_homogeneous(tmp_path, "time")
    gzip_csv(tmp_path / relative, rows)
    with pytest.raises(DatasetFormatError, match=problem):
        read_ogb_node(tmp_path, "ogbn-arxiv")


# -- bad npz and .mat files ---------------------------------------------------------------


def test_truncated_npz_names_the_file(tmp_path):
    path = tmp_path / "g.npz"
    write_npz_graph(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DatasetFormatError, match=r"g\.npz: cannot be decoded"):
        read_npz_graph(path)


def test_npz_missing_key_names_the_key_and_the_file(tmp_path):
    path = tmp_path / "g.npz"
    write_npz_graph(path)
    arrays = dict(np.load(path, allow_pickle=True))
    del arrays["adj_indptr"]
    np.savez(path, **arrays)
    with pytest.raises(DatasetFormatError, match=r"g\.npz: missing key\(s\) \['adj_indptr'\]"):
        read_npz_graph(path)


@pytest.mark.parametrize(
    ("arrays", "problem"),
    [
        ({"target": np.zeros(3, dtype=int), "edges": np.zeros((0, 2), dtype=int)}, r"missing key\(s\) \['features'\]"),
        ({"features": np.zeros((3, 2)), "target": np.zeros(3), "edges": np.array([[0, 3]])}, "out of range"),
        (
            {"features": np.zeros((3, 2)), "target": np.array([0, 1.5, 2]), "edges": np.zeros((0, 2))},
            "not all integers",
        ),
        (
            {"features": np.zeros((3, 2)), "target": np.zeros(2, dtype=int), "edges": np.zeros((0, 2))},
            "3 feature rows but 2",
        ),
        (
            {"features": np.zeros((3, 2)), "target": np.zeros(3, dtype=int), "edges": np.zeros((2, 3))},
            r"must be \[E, 2\]",
        ),
    ],
)
def test_graphmining_npz_bad_contents_are_clear_errors(tmp_path, arrays, problem):
    path = tmp_path / "lastfm_asia.npz"
    np.savez(path, **arrays)
    with pytest.raises(DatasetFormatError, match=rf"lastfm_asia\.npz: .*{problem}"):
        read_graphmining_npz(path)


def test_corrupt_mat_names_the_file(tmp_path):
    path = tmp_path / "Broken9.mat"
    path.write_bytes(b"MATLAB 5.0 MAT-file" + bytes(range(256)) * 4)
    with pytest.raises(DatasetFormatError, match=r"Broken9\.mat: cannot be decoded"):
        read_facebook100_mat(path)


def test_format_errors_are_value_errors():
    assert issubclass(DatasetFormatError, ValueError)
