from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from nodedp.data.splits import (
    Split,
    SplitValidationError,
    load_split,
    random_split,
    remove_cross_split_edges,
    save_split,
    split_masks,
)


def test_random_split_is_a_sorted_partition_of_all_nodes() -> None:
    split = random_split(1000, seed=3)
    assert (split.train.numel(), split.val.numel(), split.test.numel()) == (750, 100, 150)
    everything = torch.cat([split.train, split.val, split.test])
    assert torch.equal(everything.sort().values, torch.arange(1000))
    for part in (split.train, split.val, split.test):
        assert part.dtype == torch.int64 and bool((part[1:] > part[:-1]).all())
    assert split.setting == "transductive" and split.seed == 3


def test_random_split_is_deterministic_per_seed() -> None:
    assert torch.equal(random_split(500, seed=1).test, random_split(500, seed=1).test)
    assert not torch.equal(random_split(500, seed=1).test, random_split(500, seed=2).test)


def test_random_split_custom_fractions_and_setting() -> None:
    split = random_split(11, seed=0, train=0.5, val=0.0, test=0.5, setting="inductive")
    assert split.val.numel() == 0 and split.train.numel() + split.test.numel() == 11
    assert split.setting == "inductive"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train": 0.7}, "must sum to 1"),
        ({"train": 0.9, "val": -0.05, "test": 0.15}, "val=-0.05 must lie in \\[0, 1\\]"),
        ({"setting": "semi"}, "unknown split setting 'semi'; valid choices: \\['transductive', 'inductive'\\]"),
    ],
)
def test_random_split_refuses_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        random_split(100, seed=0, **kwargs)


def test_save_load_round_trip(tmp_path: Path) -> None:
    split = random_split(200, seed=5, setting="inductive")
    save_split(split, tmp_path / "s" / "seed~5.pt")
    loaded = load_split(tmp_path / "s" / "seed~5.pt", num_nodes=200)
    for part in ("train", "val", "test"):
        assert torch.equal(getattr(loaded, part), getattr(split, part))
    assert (loaded.setting, loaded.seed) == ("inductive", 5)


def raw_split(tmp_path: Path, **overrides: object) -> Path:
    payload = {
        "train": torch.tensor([0, 1, 2]),
        "val": torch.tensor([3]),
        "test": torch.tensor([4, 5]),
        "setting": "transductive",
        "seed": 0,
        **overrides,
    }
    path = tmp_path / "split.pt"
    torch.save(payload, path)
    return path


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"val": torch.tensor([2])}, "overlap"),
        ({"train": torch.tensor([2, 1, 0])}, "train node ids must be sorted"),
        ({"test": torch.tensor([4, 4])}, "test node ids must be sorted and unique"),
        ({"val": torch.tensor([-3])}, "negative node id"),
        ({"train": torch.tensor([0.0, 1.0])}, "train must be an int64 vector"),
        ({"setting": "semi"}, "unknown setting 'semi'"),
        ({"extra": 1}, "expected a dict with keys"),
    ],
)
def test_load_split_names_file_and_problem(tmp_path: Path, overrides: dict, message: str) -> None:
    path = raw_split(tmp_path, **overrides)
    with pytest.raises(SplitValidationError, match=f"^{path}: .*{message}"):
        load_split(path)


def test_load_split_checks_node_range_and_missing_file(tmp_path: Path) -> None:
    path = raw_split(tmp_path)
    assert load_split(path, num_nodes=6).test.tolist() == [4, 5]
    with pytest.raises(SplitValidationError, match="test node id 5 out of range for num_nodes 5"):
        load_split(path, num_nodes=5)
    with pytest.raises(SplitValidationError, match="nope.pt: missing file"):
        load_split(tmp_path / "nope.pt")


def test_save_split_refuses_overlap(tmp_path: Path) -> None:
    bad = Split(torch.tensor([0, 1]), torch.tensor([1]), torch.tensor([2]), setting="transductive", seed=0)
    with pytest.raises(SplitValidationError, match="overlap"):
        save_split(bad, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()


def test_split_masks_match_parts() -> None:
    split = random_split(50, seed=0)
    train, val, test = split_masks(split, 50)
    assert torch.equal(train.nonzero().view(-1), split.train)
    assert torch.equal(val.nonzero().view(-1), split.val)
    assert torch.equal(test.nonzero().view(-1), split.test)
    assert bool((train.int() + val.int() + test.int() == 1).all())
    with pytest.raises(SplitValidationError, match="out of range"):
        split_masks(split, 40)


def test_remove_cross_split_edges_by_hand() -> None:
    split = Split(torch.tensor([0, 1]), torch.tensor([2]), torch.tensor([3, 4]), setting="inductive", seed=0)
    # node 5 is in no part
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 2, 5, 5, 2], [1, 0, 2, 2, 4, 3, 3, 5, 0, 1]])
    kept = remove_cross_split_edges(edge_index, split)
    assert kept.tolist() == [[0, 1, 2, 3, 4], [1, 0, 2, 4, 3]]


def test_remove_cross_split_edges_keeps_exactly_within_part_edges() -> None:
    generator = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, 300, (2, 3000), generator=generator)
    split = random_split(300, seed=1, setting="inductive")
    part_of = torch.empty(300, dtype=torch.long)
    for index, part in enumerate((split.train, split.val, split.test)):
        part_of[part] = index
    kept = remove_cross_split_edges(edge_index, split)
    same = part_of[edge_index[0]] == part_of[edge_index[1]]
    assert torch.equal(kept, edge_index[:, same])
    assert 0 < kept.size(1) < edge_index.size(1)


@pytest.mark.parametrize("keep", [0, 64, 0.5])
def test_a_truncated_split_file_is_one_line_naming_it(tmp_path: Path, keep) -> None:
    path = raw_split(tmp_path)
    payload = path.read_bytes()
    path.write_bytes(payload[: int(keep * len(payload)) if isinstance(keep, float) else keep])
    with pytest.raises(SplitValidationError, match=f"^{re.escape(str(path))}: not a readable split file") as err:
        load_split(path)
    assert "\n" not in str(err.value) and "nodedp split" in str(err.value)
