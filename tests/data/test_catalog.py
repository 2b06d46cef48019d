"""The real datasets: catalog entries, downloads through the loopback mirror, papers' statistics."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

from nodedp.data import OFFICIAL_SPLIT_FILE, build_dataset, get_dataset, load_graph, make_split
from nodedp.data.catalog import FACEBOOK100_SCHOOLS, PINNED_SHA256, read_facebook100_union, school_id
from nodedp.data.constants import FACEBOOK100_FEATURE_COLUMNS
from nodedp.data.download import fetch_files
from nodedp.data.preprocess import get_protocol
from nodedp.data.registry import DATASETS
from tests.data.test_formats import OGB_SPLIT, write_ogb_homogeneous, write_reddit

DOWNLOADED = sorted(name for name, info in DATASETS.items() if info.kind == "download")


def test_every_paper_dataset_is_registered():
    wanted = {
        "cora",
        "citeseer",
        "pubmed",
        "cora-ml",
        "ms-academic",
        "coauthor-cs",
        "coauthor-physics",
        "amazon-computers",
        "amazon-photo",
        "facebook",
        "fb-100",
        "facebook-pagepage",
        "lastfm-asia",
        "reddit",
        "ogbn-arxiv",
        "ogbn-products",
        "ogbn-mag",
    }
    assert wanted <= set(DOWNLOADED)
    assert {school_id(s) for s in FACEBOOK100_SCHOOLS} <= set(DOWNLOADED)
    assert school_id("JohnsHopkins55") == "fb100-johnshopkins55"


@pytest.mark.parametrize("name", DOWNLOADED)
def test_catalog_entries_name_real_upstream_files(name):
    info = get_dataset(name)
    get_protocol(info.protocol)
    names = [f.filename for f in info.files]
    assert len(set(names)) == len(names)
    for remote in info.files:
        assert remote.url.startswith(("https://", "http://")) and " " not in remote.url
        assert remote.sha256 == PINNED_SHA256.get(remote.url)  # pinned only where vouched for


def test_cora_ml_transductive_is_cora_ml_under_the_transductive_ablation(tmp_path):
    from tests.data.test_formats import write_npz_graph

    real, ablation = get_dataset("cora-ml"), get_dataset("cora-ml-transductive")
    assert ablation.files == real.files  # the same upstream file: the mirror serves it, the lock entry is shared
    assert (ablation.protocol, real.protocol) == ("dpar-transductive", "dpar")
    assert (ablation.out_degree_bound, ablation.in_degree_bound, ablation.citation) == (
        real.out_degree_bound,
        real.in_degree_bound,
        real.citation,
    )
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    write_npz_graph(raw_dir / real.files[0].filename)
    splits = {}
    for name in ("cora-ml", "cora-ml-transductive"):
        build_dataset(name, tmp_path / name, raw_dir=raw_dir)
        splits[name] = make_split(tmp_path / name, seed=0)
    graphs = {name: load_graph(tmp_path / name) for name in splits}
    assert torch.equal(graphs["cora-ml"].edge_index, graphs["cora-ml-transductive"].edge_index)
    assert torch.equal(graphs["cora-ml"].x, graphs["cora-ml-transductive"].x)
    assert splits["cora-ml"].setting == "inductive" and splits["cora-ml-transductive"].setting == "transductive"
    for part in ("train", "val", "test"):
        assert torch.equal(getattr(splits["cora-ml"], part), getattr(splits["cora-ml-transductive"], part))


def test_fb100_downloads_all_hundred_schools():
    files = get_dataset("fb-100").files
    assert len(files) == 100 and len({f.url for f in files}) == 100


# Node / feature / class counts and (undirected) edges as the papers print them:
# Cora (NIP-GNN Table 5), Cora-ML (DPAR Table 4: 8,416 directed citations; also its transductive ablation);
# Facebook100 schools: Traud, Mucha, Porter (2012).
PAPERS = {
    "cora": {"nodes": 2708, "features": 1433, "classes": 7, "undirected_edges": 5278},
    "cora-ml": {"nodes": 2995, "features": 2879, "classes": 7, "raw_edges": 8416},
    "cora-ml-transductive": {"nodes": 2995, "features": 2879, "classes": 7, "raw_edges": 8416},  # the same file
    "fb100-caltech36": {"raw_nodes": 769, "raw_undirected_edges": 16656},
    "fb100-reed98": {"raw_nodes": 962, "raw_undirected_edges": 18812},
    "fb100-haverford76": {"raw_nodes": 1446, "raw_undirected_edges": 59589},
    "fb100-swarthmore42": {"raw_nodes": 1659, "raw_undirected_edges": 61050},
}


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(PAPERS))
def test_real_dataset_through_the_mirror_matches_the_paper(name, shared_mirror, tmp_path):
    info = get_dataset(name)
    raw_dir = tmp_path / "raw" / name
    fetch_files(info.files, raw_dir, mirror=shared_mirror, progress=False)
    raw = info.reader(raw_dir).data
    meta = build_dataset(name, tmp_path / "graph", raw_dir=raw_dir)
    graph = load_graph(tmp_path / "graph")
    paper = PAPERS[name]
    if "nodes" in paper:
        assert (meta["num_nodes"], meta["num_features"], meta["num_classes"]) == (
            paper["nodes"],
            paper["features"],
            paper["classes"],
        )
    if "undirected_edges" in paper:
        assert meta["num_edges"] == 2 * paper["undirected_edges"]
    if "raw_edges" in paper:
        assert raw.edge_index.size(1) == paper["raw_edges"]
    if "raw_nodes" in paper:
        assert raw.num_nodes == paper["raw_nodes"]
        assert raw.edge_index.size(1) == 2 * paper["raw_undirected_edges"]
    # The protocol's record and the preprocessed graph agree.
    assert meta["source"]["protocol"] == info.protocol and meta["is_undirected"]
    assert meta["source"]["preprocessing"]["output"]["num_nodes"] == graph.num_nodes
    assert [f["url"] for f in meta["source"]["files"]] == [f.url for f in info.files]
    split = make_split(tmp_path / "graph", seed=0)
    assert split.setting == get_protocol(info.protocol).split.setting
    assert split.train.numel() + split.val.numel() + split.test.numel() == graph.num_nodes


@pytest.mark.shared
def test_fb100_union_stacks_schools_with_one_vocabulary(shared_mirror, tmp_path):
    schools = ["Caltech36", "Reed98"]
    files = [f for s in schools for f in get_dataset(school_id(s)).files]
    fetch_files(files, tmp_path, mirror=shared_mirror, progress=False)
    # The single schools' five feature columns (GAP's Facebook), for a like-for-like comparison.
    union = read_facebook100_union(
        [tmp_path / f"{s}.mat" for s in schools], feature_columns=FACEBOOK100_FEATURE_COLUMNS
    )
    single = [get_dataset(school_id(s)).reader(tmp_path) for s in schools]
    assert union.data.num_nodes == sum(r.data.num_nodes for r in single)
    assert union.data.edge_index.size(1) == sum(r.data.edge_index.size(1) for r in single)
    # No edge crosses schools: block-diagonal adjacency.
    cut = single[0].data.num_nodes
    src, dst = union.data.edge_index
    assert torch.equal(src < cut, dst < cut)
    assert union.data.x.size(1) >= max(r.data.x.size(1) for r in single)


def zip_folder(folder: Path, archive: Path) -> None:
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder))


def test_reddit_zip_through_the_catalog_keeps_the_official_split(tmp_path):
    content = tmp_path / "content"
    content.mkdir()
    write_reddit(content)
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    zip_folder(content, raw_dir / "reddit.zip")
    meta = build_dataset("reddit-official", tmp_path / "graph", raw_dir=raw_dir)
    assert meta["num_nodes"] == 5 and meta["source"]["protocol"] == "dp-gnn"
    split = make_split(tmp_path / "graph", seed=3)
    assert (split.train.tolist(), split.val.tolist(), split.test.tolist()) == ([0, 2], [3], [1, 4])
    assert not any(p.name.startswith(".raw.unzip") for p in tmp_path.iterdir())  # temp folder cleaned


def test_ogb_zip_through_the_catalog_stores_the_official_split(tmp_path):
    content = tmp_path / "content"
    write_ogb_homogeneous(content / "arxiv", "time")
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    zip_folder(content, raw_dir / "arxiv.zip")
    meta = build_dataset("ogbn-arxiv-disjoint", tmp_path / "graph", raw_dir=raw_dir)
    assert meta["num_nodes"] == 5 and meta["is_undirected"]
    official = torch.load(tmp_path / "graph" / OFFICIAL_SPLIT_FILE, weights_only=True)
    assert sorted(official["train"].tolist()) == sorted(OGB_SPLIT["train"])
    split = make_split(tmp_path / "graph", seed=0)
    assert split.setting == "inductive" and split.test.tolist() == sorted(OGB_SPLIT["test"])
