"""Declared datasets (config.yaml ``datasets:``): built from the user's files, refused with the file named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from nodedp.config.check import check_config
from nodedp.config.limits import public_size
from nodedp.config.read import ConfigError
from nodedp.data import build_dataset, get_dataset, load_graph, make_split
from nodedp.data.user import ENV, declare_datasets, declared_files, declared_graph_params

NUM_NODES = 40


@pytest.fixture(autouse=True)
def _no_declarations(monkeypatch):
    """Each test starts and ends with no declared dataset and no exported declarations."""
    monkeypatch.delenv(ENV, raising=False)
    declare_datasets({})
    yield
    declare_datasets({})


def graph_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "edge_index": rng.integers(0, NUM_NODES, (2, 120)),
        "x": rng.normal(size=(NUM_NODES, 6)).astype(np.float32),  # Gaussian: binarizing would show
        "y": rng.integers(0, 3, NUM_NODES),
    }


def masks(train: int = 20, val: int = 8) -> dict[str, np.ndarray]:
    parts = np.zeros((3, NUM_NODES), dtype=bool)
    parts[0, :train], parts[1, train : train + val], parts[2, train + val :] = True, True, True
    return {"train_mask": parts[0], "val_mask": parts[1], "test_mask": parts[2]}


def write_npz(path: Path, **changes) -> Path:
    arrays = {**graph_arrays(), **changes}
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


def write_folder(folder: Path, *, split: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    arrays = graph_arrays(1)
    np.savetxt(
        folder / "edges.csv", arrays["edge_index"].T, fmt="%d", delimiter=",", header="source,target", comments=""
    )
    np.save(folder / "features.npy", arrays["x"])
    np.savetxt(folder / "labels.csv", arrays["y"], fmt="%d", header="label", comments="")
    if split:
        table = np.stack([masks()[f"{part}_mask"] for part in ("train", "val", "test")], axis=1).astype(int)
        np.savetxt(folder / "split.csv", table, fmt="%d", delimiter=",", header="train,val,test", comments="")
    return folder


def declaration(path: Path, **keys) -> dict:
    return {"path": str(path), "format": "npz", "in_degree_bound": 5, "out_degree_bound": 8, **keys}


def grid(datasets: dict, names: list[str]) -> dict:
    return {
        "datasets": datasets,
        "methods": {"dp-mlp": {"batch_size": 8}, "gap": {"batch_size": 8}},
        "studies": {"s": {"datasets": names, "methods": ["dp-mlp", "gap"], "epsilons": [1.0], "seeds": [0]}},
    }


def test_an_npz_declaration_builds_the_graph_with_its_float_features(tmp_path):
    path = write_npz(tmp_path / "mine.npz")
    check_config(grid({"mine": declaration(path)}, ["mine"]))
    info = get_dataset("mine")
    assert info.kind == "file" and (info.in_degree_bound, info.out_degree_bound) == (5, 8)
    assert public_size("mine").num_nodes == NUM_NODES and public_size("mine").num_train == 30  # 75% of the shape

    meta = build_dataset("mine", tmp_path / "graphs/mine")
    graph = load_graph(tmp_path / "graphs/mine")
    assert torch.equal(graph.x, torch.from_numpy(graph_arrays()["x"]))  # kept as stored, never binarized
    assert torch.equal(graph.y, torch.from_numpy(graph_arrays()["y"]))
    src, dst = graph.edge_index
    assert bool((src != dst).all())  # self-loops removed; undirected (the default): both directions stored
    assert {(int(a), int(b)) for a, b in zip(src, dst)} == {(int(b), int(a)) for a, b in zip(src, dst)}
    assert meta["source"]["kind"] == "file" and meta["source"]["format"] == "npz"
    assert meta["source"]["files"][0]["path"] == str(path) and len(meta["source"]["files"][0]["sha256"]) == 64
    split = make_split(tmp_path / "graphs/mine", seed=0)
    assert (split.setting, split.train.numel(), split.val.numel(), split.test.numel()) == ("transductive", 30, 4, 6)


def test_a_csv_folder_with_its_own_split_builds_directed_as_declared(tmp_path):
    folder = write_folder(tmp_path / "folder")
    entry = {**declaration(folder, format="csv"), "directed": True, "split": {"kind": "file", "setting": "inductive"}}
    check_config(grid({"folder-graph": entry}, ["folder-graph"]))
    assert declared_files("folder-graph") == [
        str(folder / name) for name in ("edges.csv", "features.npy", "labels.csv", "split.csv")
    ]
    assert json.loads(declared_graph_params("folder-graph"))["directed"] is True

    build_dataset("folder-graph", tmp_path / "graphs/g")
    graph = load_graph(tmp_path / "graphs/g")
    arrays = graph_arrays(1)
    assert torch.allclose(graph.x, torch.from_numpy(arrays["x"]))
    expected = {(int(a), int(b)) for a, b in arrays["edge_index"].T if a != b}
    assert {tuple(map(int, e)) for e in graph.edge_index.T} == expected  # directed: as listed, no reverse added
    split = make_split(tmp_path / "graphs/g", seed=3)
    assert split.setting == "inductive" and split.train.tolist() == list(range(20))
    assert split.val.tolist() == list(range(20, 28)) and split.test.tolist() == list(range(28, NUM_NODES))


def test_registered_datasets_keep_their_params_and_only_declared_ones_have_files():
    assert declared_files("csbm-tiny") == [] and not isinstance(declared_graph_params("csbm-tiny"), str)


def _bad_npz(tmp_path: Path, kind: str) -> tuple[dict, str]:
    """A declaration whose file has one problem, and the message naming it."""
    path = tmp_path / "bad.npz"
    arrays = graph_arrays()
    cases = {
        "missing file": ({}, "missing file"),
        "wrong keys": ({"labels": arrays["y"], "y": None}, "wrong keys: missing ['y'], unexpected ['labels']"),
        "labels length": ({"y": arrays["y"][:-1]}, f"{NUM_NODES} feature rows but {NUM_NODES - 1} nodes"),
        "edges out of range": ({"edge_index": np.array([[0, NUM_NODES], [1, 2]])}, "out of range for 40 nodes"),
        "NaN features": ({"x": np.where(np.eye(NUM_NODES, 6, dtype=bool), np.nan, 1.0)}, "NaN or inf"),
        "negative labels": ({"y": np.r_[-1, arrays["y"][1:]]}, "labels must be class ids >= 0, got -1"),
        "non-integer labels": ({"y": arrays["y"] + 0.5}, "labels are not all integers"),
        "overlapping masks": ({**masks(), "val_mask": masks()["train_mask"]}, "split masks overlap (train/val)"),
        "short masks": ({**masks(), "test_mask": masks()["test_mask"][:-3]}, "test mask has 37 entries for 40"),
        "no masks": ({}, "split: file needs the masks"),
    }
    changes, message = cases[kind]
    if kind != "missing file":
        write_npz(path, **changes)
    split = "file" if "masks" in kind else "random"
    return declaration(path, split=split), message


@pytest.mark.parametrize(
    "kind",
    [
        "missing file",
        "wrong keys",
        "labels length",
        "edges out of range",
        "NaN features",
        "negative labels",
        "non-integer labels",
        "overlapping masks",
        "short masks",
        "no masks",
    ],
)
def test_a_bad_file_is_refused_at_config_check_naming_the_file(tmp_path, kind):
    entry, message = _bad_npz(tmp_path, kind)
    with pytest.raises(ConfigError) as caught:
        check_config(grid({"bad": entry}, ["bad"]))
    assert str(caught.value).startswith(f"datasets.bad: {tmp_path / 'bad.npz'}")
    assert message in str(caught.value)
    assert "bad" not in os.environ.get(ENV, "")  # nothing registered or exported


@pytest.mark.parametrize(
    ("remove", "write", "message"),
    [
        ("labels.csv", None, "missing file: labels.npy or labels.csv"),
        ("edges.csv", None, "edges.csv: missing file"),
        (None, ("edges.csv", "source,target\n0,1\n2,x\n"), "edges must be comma-separated integers"),
        (
            None,
            ("labels.csv", "label\n" + "1\n" * (NUM_NODES - 1) + "1.5\n"),
            "labels must be comma-separated integers",
        ),
        (None, ("features.csv", "a,b\n1,2\n"), "holds both features.npy and features.csv"),
        ("split.csv", None, "split: file needs split.npy or split.csv"),
    ],
)
def test_a_bad_csv_folder_is_refused_naming_the_file(tmp_path, remove, write, message):
    folder = write_folder(tmp_path / "folder")
    if remove:
        (folder / remove).unlink()
    if write:
        (folder / write[0]).write_text(write[1])
    with pytest.raises(ConfigError, match="^datasets.g: " + str(folder)) as caught:
        check_config(grid({"g": {**declaration(folder, format="csv"), "split": "file"}}, ["g"]))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"format": "graphml"}, "datasets.g.format: unknown format 'graphml'; valid choices: ['npz', 'csv']"),
        ({"in_degree_bound": 0}, "datasets.g.in_degree_bound: must be an integer >= 1"),
        ({"split": {"kind": "random", "train": 0.5, "val": 0.1}}, "datasets.g.split.test: a fraction in [0, 1]"),
        (
            {"split": {"kind": "random", "train": 0.5, "val": 0.1, "test": 0.1}},
            "datasets.g.split: train + val + test must be 1",
        ),
        ({"directed": "yes"}, "datasets.g.directed: true or false"),
        ({"colour": 1}, "datasets.g: unknown key(s) ['colour']"),
    ],
)
def test_a_bad_declaration_names_its_field(tmp_path, change, field):
    path = write_npz(tmp_path / "g.npz")
    with pytest.raises(ConfigError) as caught:
        check_config(grid({"g": {**declaration(path), **change}}, ["g"]))
    assert str(caught.value).startswith(field)


def test_check_config_accepts_a_declared_name_and_an_unknown_one_lists_the_valid_choices(tmp_path):
    path = write_npz(tmp_path / "mine.npz")
    check_config(grid({"mine": declaration(path)}, ["mine", "csbm-tiny"]))
    with pytest.raises(ConfigError) as caught:
        check_config(grid({"mine": declaration(path)}, ["mien"]))
    message = str(caught.value)
    assert message.startswith("studies.s.datasets: unknown dataset 'mien'; valid: registered [")
    assert "'csbm-tiny'" in message and "declared under `datasets:` ['mine']" in message
    with pytest.raises(ConfigError, match="'cora' is a registered download dataset"):
        check_config(grid({"cora": declaration(path)}, ["cora"]))


def test_a_config_without_the_declaration_withdraws_it(tmp_path):
    path = write_npz(tmp_path / "mine.npz")
    check_config(grid({"mine": declaration(path)}, ["mine"]))
    assert "mine" in json.loads(os.environ[ENV])
    check_config(grid({}, ["csbm-tiny"]))
    assert ENV not in os.environ
    with pytest.raises(KeyError, match="unknown dataset 'mine'"):
        get_dataset("mine")


def test_a_job_finds_the_declaration_in_its_environment_and_a_command_by_hand_in_the_built_graph(tmp_path):
    """What a workflow job does: a fresh process with the exported declarations, no config, reads the dataset's
    bounds and protocol and builds its graph; then a command run by hand in the workspace, without them, finds the
    declaration its graph's meta.json records."""
    path = write_npz(tmp_path / "mine.npz")
    split = {"kind": "random", "train": 0.5, "val": 0.25, "test": 0.25}
    check_config(grid({"mine": declaration(path, split=split)}, ["mine"]))
    script = (
        "import sys; from nodedp.data import build_dataset, get_dataset, make_split\n"
        "info = get_dataset('mine'); print(info.kind, info.in_degree_bound, info.out_degree_bound)\n"
        "if sys.argv[1] == 'build': build_dataset('mine', 'resources/graphs/mine')\n"
        "s = make_split('resources/graphs/mine', seed=0); print(s.train.numel(), s.val.numel(), s.test.numel())\n"
    )

    def run(*args: str, env: dict) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", script, *args], cwd=tmp_path, capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert run("build", env=dict(os.environ)) == ["file", "5", "8", "20", "10", "10"]
    by_hand = {k: v for k, v in os.environ.items() if k != ENV}
    assert run("read", env=by_hand) == ["file", "5", "8", "20", "10", "10"]


def test_a_file_broken_after_the_check_leaves_no_graph(tmp_path):
    path = write_npz(tmp_path / "mine.npz")
    check_config(grid({"mine": declaration(path)}, ["mine"]))
    write_npz(path, y=None)
    with pytest.raises(ValueError, match="wrong keys"):
        build_dataset("mine", tmp_path / "graphs/mine")
    assert not (tmp_path / "graphs/mine/meta.json").exists() and not (tmp_path / "graphs/mine/graph.pt").exists()


def test_the_registrys_npz_datasets_still_binarize_their_features(tmp_path):
    """Only the registry's own npz datasets ask read_npz_graph to binarize (their graphs are unchanged)."""
    import scipy.sparse as sp

    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    np.savez(
        tmp_path / "cora_ml.npz",
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=adjacency.shape,
        attr_matrix=np.array([[0.5, 0.0], [0.0, 2.0], [0.25, 0.0]]),
        labels=np.array([0, 1, 0]),
    )
    raw = get_dataset("cora-ml").reader(tmp_path)
    assert raw.data.x.tolist() == [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]


def write_graph2gauss(path: Path, *, labels: np.ndarray | None = None) -> None:
    """The graph2gauss / gnn-benchmark layout: CSR adjacency and features, Gaussian feature values."""
    import scipy.sparse as sp

    arrays = graph_arrays(2)
    adjacency = sp.csr_matrix((np.ones(120), tuple(arrays["edge_index"])), shape=(NUM_NODES, NUM_NODES))
    features = sp.csr_matrix(np.where(np.abs(arrays["x"]) > 1, arrays["x"], 0))
    np.savez(
        path,
        **{f"adj_{k}": getattr(adjacency, k) for k in ("data", "indices", "indptr", "shape")},
        **{f"attr_{k}": getattr(features, k) for k in ("data", "indices", "indptr", "shape")},
        labels=arrays["y"] if labels is None else labels,
        class_names=np.array(["a", "b", "c"]),  # metadata the layout carries: not read
    )


def test_a_graph2gauss_npz_is_read_as_read_npz_graph_reads_it_without_binarizing(tmp_path):
    from nodedp.data.formats import read_npz_graph

    path = tmp_path / "g2g.npz"
    write_graph2gauss(path)
    check_config(grid({"g2g": declaration(path, directed=True)}, ["g2g"]))
    build_dataset("g2g", tmp_path / "graphs/g2g")
    graph, raw = load_graph(tmp_path / "graphs/g2g"), read_npz_graph(path).data
    assert torch.equal(graph.x, raw.x) and not set(graph.x.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(graph.y, raw.y)
    loops = raw.edge_index[0] == raw.edge_index[1]
    assert torch.equal(graph.edge_index, raw.edge_index[:, ~loops])  # directed: as read, self-loops removed


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"adj_indptr": np.arange(NUM_NODES)}, "adj_indptr is not a CSR row pointer for 40 rows"),
        ({"labels": np.eye(NUM_NODES, 3)}, "one-hot labels must have exactly one class per node"),
        ({"adj_shape": np.array([NUM_NODES, NUM_NODES + 1])}, "adjacency must be square"),
    ],
)
def test_a_bad_graph2gauss_npz_is_refused_naming_the_file(tmp_path, edit, message):
    path = tmp_path / "g2g.npz"
    write_graph2gauss(path)
    arrays = {**dict(np.load(path)), **edit}
    np.savez(path, **arrays)
    with pytest.raises(ConfigError, match=f"^datasets.g2g: {path}") as caught:
        check_config(grid({"g2g": declaration(path)}, ["g2g"]))
    assert message in str(caught.value)
