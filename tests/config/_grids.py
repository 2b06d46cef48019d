"""Grids the config tests share."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tiny_grid(**methods) -> dict:
    return {
        "studies": {"s": {"datasets": ["csbm-tiny"], "methods": ["mlp", *methods], "epsilons": [1], "seeds": [0]}},
        "methods": {name: block for name, block in methods.items() if block is not None},
    }


def tiny_train_nodes() -> int:
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol

    info = get_dataset("csbm-tiny")
    return round(get_protocol(info.protocol).split.train * info.source["params"]["num_nodes"])
