"""Facebook100 unions: the catalog's upstream naming, ProGAP's FB-100 labels, declared unions (named schools or
every school a mirror serves) and the schools a table names."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from nodedp.data import get_dataset
from nodedp.data.catalog import (
    FACEBOOK100_NOT_SERVED,
    FACEBOOK100_SCHOOLS,
    FB100_KEPT_YEARS,
    facebook100_url,
    read_facebook100_union,
)
from nodedp.data.constants import FB100_FEATURE_COLUMNS
from nodedp.data.download import DownloadError, RemoteFile, fetch_files
from nodedp.data.formats import encode_facebook100, fb100_year_labels
from nodedp.data.registry import DATASETS, build_dataset
from nodedp.data.user import (
    ENV,
    DeclarationError,
    Facebook100Union,
    declare_datasets,
    declared_files,
    declared_graph_params,
)
from tests.data.conftest import SHARED_DATASETS, serve_directory

FB_PATH = "github.com/sisaman/pyg-datasets/raw/main/datasets/facebook100"


@pytest.fixture(autouse=True)
def _no_declarations(monkeypatch):
    """Each test declares its own datasets; none leaks into the next."""
    monkeypatch.delenv(ENV, raising=False)
    yield
    declare_datasets({})


# --- the catalog's upstream naming ---------------------------------------------------------------


def _facebook100_urls() -> list[str]:
    return sorted({f.url for info in DATASETS.values() for f in info.files if "/facebook100/" in f.url})


def test_every_catalog_url_names_a_file_as_upstream_names_it():
    urls = _facebook100_urls()
    assert len(urls) == len(FACEBOOK100_SCHOOLS) == 100
    for url in urls:
        name = urlsplit(url).path.rsplit("/", 1)[-1]
        # the URL's last component is the upstream file name itself: no escape (a space would be %20), no space
        assert "%" not in url and " " not in url, url
        assert name.endswith(".mat") and name.removesuffix(".mat") in FACEBOOK100_SCHOOLS, url
    assert facebook100_url("JohnsHopkins55").endswith("/facebook100/JohnsHopkins55.mat")
    assert set(FACEBOOK100_NOT_SERVED) < set(FACEBOOK100_SCHOOLS) and len(FACEBOOK100_NOT_SERVED) == 11
    with pytest.raises(ValueError, match="unknown Facebook100 school 'Johns Hopkins55'; valid choices"):
        facebook100_url("Johns Hopkins55")


def test_the_mirror_lays_out_every_school_it_holds_under_a_catalog_url():
    folder = SHARED_DATASETS / FB_PATH
    if not folder.is_dir():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    held = sorted(path.name for path in folder.glob("*.mat"))
    assert len(held) >= 45
    catalog = {urlsplit(url).path.rsplit("/", 1)[-1] for url in _facebook100_urls()}
    assert set(held) <= catalog, sorted(set(held) - catalog)
    assert not set(held) & {f"{school}.mat" for school in FACEBOOK100_NOT_SERVED}


# --- ProGAP's FB-100 labels ------------------------------------------------------------------------


def _label_encoder_then_shift(year: np.ndarray) -> np.ndarray:
    """ProGAP's loader, restated: LabelEncoder (codes of the sorted distinct values), minus 1 where 0 occurs."""
    values, codes = np.unique(year, return_inverse=True)
    return codes - (1 if 0 in values else 0)


@pytest.mark.parametrize("seed", range(5))
def test_year_labels_are_progap_loader_codes(seed):
    rng = np.random.default_rng(seed)
    year = rng.choice([0, 1998, 2004, 2005, 2006, 2007, 2008, 2009, 2010], size=300)
    if seed % 2:
        year[rng.integers(300)] = -80085  # UChicago30's stray year
    y, class_years = fb100_year_labels(year)
    assert np.array_equal(y, _label_encoder_then_shift(year))
    labeled = y >= 0
    assert np.array_equal(np.asarray(class_years)[y[labeled]], year[labeled])
    # with a negative year, 0 (unknown) is a class and the negative one is unlabeled; without, 0 is unlabeled
    assert (0 in class_years) == bool(seed % 2)
    assert np.all(y[year < 0] == -1)


def test_year_labels_keep_the_full_unions_classes_on_a_partial_one():
    year = np.array([0, 2004, 2005, 2009, 2010, 0, 2007])  # no negative year: ProGAP's loader drops 0 here
    y, class_years = fb100_year_labels(year, keep_years=FB100_KEPT_YEARS)
    assert class_years == (0, 2005, 2007, 2009)
    assert y.tolist() == [0, -1, 1, 3, -1, 0, 2]


def test_encode_refuses_unknown_feature_columns_and_labels():
    info = np.ones((4, 7), dtype=np.int64)
    with pytest.raises(ValueError, match=r"choose one or more of \['status', 'gender', 'major', 'minor', 'housing'\]"):
        encode_facebook100(info, feature_columns=("status", "dorm"))
    with pytest.raises(ValueError, match=r"valid choices \['years', 'progap'\]"):
        encode_facebook100(info, labels="class")
    x, _, extra = encode_facebook100(info, feature_columns=FB100_FEATURE_COLUMNS)
    assert x.shape == (4, 3) and extra["feature_names"] == ("status=1", "gender=1", "major=1")


# --- declared unions ---------------------------------------------------------------------------------


def test_a_union_declaration_is_checked_and_names_the_valid_choices():
    cases = {
        "unknown school": ({"facebook100": ["Caltech36", "Hogwarts1"]}, r"unknown school\(s\) \['Hogwarts1'\]"),
        "the loader's spelling": ({"facebook100": ["Johns Hopkins55"]}, "valid choices .*'JohnsHopkins55'"),
        "listed twice": ({"facebook100": ["Reed98", "Reed98"]}, r"listed twice: \['Reed98'\]"),
        "empty": ({"facebook100": []}, "'served' or a non-empty list"),
        "other word": ({"facebook100": "all"}, "'served' or a list of schools, got 'all'"),
        "features": ({"facebook100": "served", "features": "some"}, r"valid choices: \['progap', 'all'\]"),
        "labels": ({"facebook100": "served", "labels": "grade"}, r"valid choices: \['progap', 'years'\]"),
        "file key": ({"facebook100": "served", "path": "x.npz"}, r"unknown key\(s\) \['path'\]"),
        "bound": ({"facebook100": "served", "out_degree_bound": 0}, "out_degree_bound: must be an integer >= 1"),
    }
    for what, (entry, message) in cases.items():
        with pytest.raises(DeclarationError, match=message):
            declare_datasets({"u": entry})
        assert "u" not in DATASETS, what


def test_a_named_union_is_a_download_in_catalog_order_with_progaps_defaults():
    (union,) = declare_datasets({"fb-two": {"facebook100": ["Reed98", "Caltech36"]}})
    assert isinstance(union, Facebook100Union) and union.schools == ("Caltech36", "Reed98")
    info = get_dataset("fb-two")
    assert info.kind == "download" and info.protocol == "gap-fb100-partial"
    assert [f.url for f in info.files] == [facebook100_url("Caltech36"), facebook100_url("Reed98")]
    assert (info.out_degree_bound, info.in_degree_bound) == (100, 10)
    assert declared_files("fb-two") == []  # downloaded, not read from the user's files
    params = json.loads(str(declared_graph_params("fb-two")))
    assert params["facebook100"] == ["Caltech36", "Reed98"] and params["labels"] == "progap"
    # the jobs find it in the environment; a config without it withdraws it
    exported = json.loads(os.environ[ENV])
    assert exported["fb-two"]["facebook100"] == ["Caltech36", "Reed98"]
    declare_datasets({})
    assert "fb-two" not in DATASETS
    # all 100 schools with ProGAP's labels: the paper's count rule
    (full,) = declare_datasets({"fb-all": {"facebook100": list(FACEBOOK100_SCHOOLS)}})
    assert full.protocol == "gap-fb100" and get_dataset("fb-all").protocol == "gap-fb100"


def test_a_union_cannot_take_a_registered_id():
    with pytest.raises(DeclarationError, match="'fb-100' is a registered download dataset"):
        declare_datasets({"fb-100": {"facebook100": "served"}})


def _write_school(path: Path, *, years: list[int], seed: int) -> None:
    """A small school file in the upstream layout: symmetric ``A`` and ``local_info`` [N, 7]."""
    rng = np.random.default_rng(seed)
    n = len(years)
    upper = sp.triu(sp.random(n, n, density=0.3, random_state=seed, data_rvs=lambda k: np.ones(k)), k=1)
    adjacency = (upper + upper.T).tocsc()
    info = np.zeros((n, 7), dtype=np.int32)
    info[:, 0] = rng.integers(1, 3, n)
    info[:, 1] = rng.integers(0, 3, n)
    info[:, 2] = rng.integers(1, 6, n)
    info[:, 3] = rng.integers(0, 4, n)
    info[:, 4] = rng.integers(0, 4, n)
    info[:, 5] = years
    scipy.io.savemat(path, {"A": adjacency, "local_info": info})


def test_served_union_takes_the_schools_the_mirror_serves_and_meta_names_them(tmp_path):
    root = tmp_path / "mirror"
    folder = root / FB_PATH
    folder.mkdir(parents=True)
    years = [0, 2005, 2006, 2007, 2008, 2009, 2004, 2010] * 5
    _write_school(folder / "Yale4.mat", years=years, seed=1)  # a school whose checksum is not pinned
    _write_school(folder / "UChicago30.mat", years=[-80085, *years[1:]], seed=2)
    declare_datasets({"fb-served": {"facebook100": "served"}})
    info = get_dataset("fb-served")
    assert len(info.files) == 100 and all(f.optional for f in info.files)
    with serve_directory(root) as mirror:
        paths = fetch_files(
            info.files, tmp_path / "raw", mirror=mirror, lock_path=tmp_path / "lock.json", progress=False
        )
    assert [p.name for p in paths] == ["UChicago30.mat", "Yale4.mat"]  # catalog order, the other 98 left out
    meta = build_dataset("fb-served", tmp_path / "graph", raw_dir=tmp_path / "raw")
    source = meta["source"]
    assert source["schools"] == ["UChicago30", "Yale4"] and source["num_schools"] == 2
    assert source["feature_columns"] == list(FB100_FEATURE_COLUMNS)
    assert [f["url"] for f in source["files"]] == [facebook100_url("UChicago30"), facebook100_url("Yale4")]
    assert source["facebook100"] == "served" and source["declared"] is True
    # the six classes of the full union, year unknown among them; 2004 and 2010 dropped
    assert meta["num_classes"] == len(FB100_KEPT_YEARS)
    kept = sum(1 for y in years + years[1:] + [0] if y in FB100_KEPT_YEARS)  # both schools, UChicago30's -80085 out
    assert meta["num_nodes"] <= kept


def test_optional_files_left_out_only_when_not_served(tmp_path, mirror_root, mirror_server):
    (mirror_root / "example.org").mkdir()
    (mirror_root / "example.org" / "a.bin").write_bytes(b"a")
    present = RemoteFile(url="https://example.org/a.bin", optional=True)
    absent = RemoteFile(url="https://example.org/b.bin", optional=True)
    required = RemoteFile(url="https://example.org/c.bin")
    lock = tmp_path / "lock.json"
    paths = fetch_files([absent, present], tmp_path / "one", mirror=mirror_server, lock_path=lock, progress=False)
    assert [p.name for p in paths] == ["a.bin"] and not (tmp_path / "one" / "b.bin").exists()
    with pytest.raises(DownloadError, match="HTTP 404"):  # a required file is never left out
        fetch_files([present, required], tmp_path / "two", mirror=mirror_server, lock_path=lock, progress=False)
    with pytest.raises(DownloadError, match="none of the 1 optional files is served"):
        fetch_files([absent], tmp_path / "three", mirror=mirror_server, lock_path=lock, progress=False)
    assert not (tmp_path / "two").exists() and not (tmp_path / "three").exists()


@pytest.mark.shared
def test_a_real_union_keeps_progaps_six_classes(shared_mirror, tmp_path):
    """Caltech36 (no stray year) with UChicago30 (one year of -80085): ProGAP's loader makes "year unknown" a
    class; the partial union keeps the six classes of the full one."""
    schools = ["Caltech36", "UChicago30"]
    files = [RemoteFile(url=facebook100_url(s)) for s in schools]
    fetch_files(files, tmp_path, mirror=shared_mirror, lock_path=tmp_path / "lock.json", progress=False)
    paths = [tmp_path / f"{s}.mat" for s in schools]
    raw = read_facebook100_union(paths)  # every class, as the full union's count rule sees them
    year = np.concatenate([scipy.io.loadmat(p, variable_names=["local_info"])["local_info"][:, 5] for p in paths])
    assert np.array_equal(raw.data.y.numpy(), _label_encoder_then_shift(year))
    assert raw.extra["class_years"][0] == 0 and int((year < 0).sum()) == 1
    kept = read_facebook100_union(paths, keep_years=FB100_KEPT_YEARS)
    assert kept.extra["class_years"] == FB100_KEPT_YEARS
    assert int((kept.data.y >= 0).sum()) == int(np.isin(year, FB100_KEPT_YEARS).sum())
    assert kept.data.x.size(1) == len(kept.extra["feature_names"])
    assert {name.split("=")[0] for name in kept.extra["feature_names"]} == set(FB100_FEATURE_COLUMNS)
