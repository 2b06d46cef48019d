"""How far a graph is from its public degree bounds, and how unstable the bounding is there.

``bounding_instability`` removes each node of a seeded sample, re-runs the bounding with the same seed and
counts the released units that changed (rows of A·X for out-degree, r-hop training subgraphs for in-degree,
undirected pairs for degree) next to the count the accountant assumes. The counts are measurements on a
sample, not bounds; what each unit is and why: docs/design/data.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor

from nodedp.accounting import max_occurrences
from nodedp.data.degree import BOUND_KINDS, bound_degree, bound_out_degree, capped_degrees

__all__ = ["KINDS", "bounding_instability", "bounding_report", "degree_excess"]

KINDS = BOUND_KINDS


def _keys(edge_index: Tensor, num_nodes: int) -> np.ndarray:
    src, dst = edge_index.cpu().numpy()
    return np.unique(src * np.int64(num_nodes) + dst)


def _sample_nodes(num_nodes: int, *, sample: int | None, sample_seed: int) -> np.ndarray:
    if sample is None or sample >= num_nodes:
        return np.arange(num_nodes)
    if sample < 1:
        raise ValueError(f"sample must be >= 1 or None (all nodes), got {sample}")
    return np.sort(np.random.default_rng(sample_seed).choice(num_nodes, size=sample, replace=False))


def degree_excess(
    edge_index: Tensor, *, num_nodes: int, kind: str, bound: int, train_nodes: Tensor | None = None
) -> dict[str, float]:
    """Fraction of nodes whose degree exceeds the public bound (where the bounding is not the identity).

    ``out-degree``: out-degree > D. ``degree``: undirected degree > D.
    ``in-degree``: in-degree from training nodes (|RE_v| of Algorithm 1) > K, and
    also > K/2, the point above which Algorithm 1 starts dropping edges
    (keep probability K / (2|RE_v|) < 1), plus out-degree > K (the method's
    second bounding).
    """
    _check_kind(kind)
    degrees = capped_degrees(edge_index, kind=kind, num_nodes=num_nodes, train_nodes=train_nodes).numpy()
    excess = {"frac_over_bound": float(np.mean(degrees > bound))}
    if kind == "in-degree":
        src = edge_index[0].cpu().numpy()
        from_train = _train_mask(train_nodes, num_nodes)[src]
        excess["frac_sampled"] = float(np.mean(2 * degrees > bound))
        excess["frac_out_over_bound"] = float(np.mean(np.bincount(src[from_train], minlength=num_nodes) > bound))
    return excess


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"Could not resolve kind {kind!r} among choices {list(KINDS)}")


def _train_mask(train_nodes: Tensor | None, num_nodes: int) -> np.ndarray:
    if train_nodes is None:
        raise ValueError("kind 'in-degree' needs train_nodes (Algorithm 1 keeps edges from training nodes only)")
    mask = np.zeros(num_nodes, dtype=bool)
    mask[train_nodes.cpu().numpy()] = True
    return mask


def _dp_gnn_edges(edge_index: Tensor, *, num_nodes: int, train_nodes: Tensor | None, bound: int, seed: int) -> Tensor:
    """The edges DP-GNN builds its subgraphs from: Algorithm 1, then out-degrees bounded to K (dp_gnn.py)."""
    kept = bound_degree(
        edge_index, kind="in-degree", num_nodes=num_nodes, train_nodes=train_nodes, max_degree=bound, seed=seed
    )
    return bound_out_degree(kept, num_nodes=num_nodes, max_degree=bound, seed=seed)


def _bounded_keys(
    edge_index: Tensor, *, num_nodes: int, kind: str, bound: int, seed: int, train_nodes: Tensor | None
) -> np.ndarray:
    if kind == "in-degree":
        kept = _dp_gnn_edges(edge_index, num_nodes=num_nodes, train_nodes=train_nodes, bound=bound, seed=seed)
    else:
        kept = bound_degree(edge_index, kind=kind, num_nodes=num_nodes, max_degree=bound, seed=seed)
    return _keys(kept, num_nodes)


def _changed_subgraphs(
    diff_src: np.ndarray,
    kept_src: np.ndarray,
    kept_dst: np.ndarray,
    *,
    num_nodes: int,
    num_layers: int,
    is_train: np.ndarray,
    removed: int,
) -> int:
    """Training roots whose r-hop subgraph changed.

    S_v is fixed by the kept out-edges of the nodes fewer than r hops from v
    (docs/design/models.md, ``nodedp.structure.subgraphs``), so it changes iff a
    node whose kept out-edges differ lies within r − 1 kept hops of v (the
    first such node on a BFS is reached identically in both graphs). The
    removed node's own subgraph (its example) always counts when it is a root.
    """
    near = np.zeros(num_nodes, dtype=bool)
    near[diff_src] = True
    for _ in range(num_layers - 1):
        near[kept_src[near[kept_dst]]] = True  # v reaches a dirty node in one more hop
    near[removed] = True
    return int(np.count_nonzero(near & is_train))


def bounding_instability(
    edge_index: Tensor,
    *,
    num_nodes: int,
    kind: str,
    bound: int,
    seed: int,
    sample: int | None = 200,
    sample_seed: int = 0,
    hubs: int = 0,
    nodes: Tensor | None = None,
    train_nodes: Tensor | None = None,
    num_layers: tuple[int, ...] = (1, 2),
    row_clip: float | None = None,
) -> dict[str, Any]:
    """Remove each sampled node, re-run the bounding with the same seed, count the changed released units.

    ``kind``: ``out-degree`` (bound D), ``in-degree`` (bound K; needs
    ``train_nodes``; one entry per r in ``num_layers``) or ``degree`` (bound D;
    ``edge_index`` undirected, both directions stored). ``sample`` nodes are
    drawn uniformly with ``sample_seed`` (None or >= num_nodes: every node);
    the ``hubs`` nodes of highest degree (in + out) are removed as well, since
    the worst cases sit there: ``max`` is over both, ``mean`` over the uniform
    sample only. ``nodes`` (ids) replaces the uniform sample. ``row_clip``:
    NAP's R (default √D, the methods' default).

    Returns a JSON-ready dict: the fraction of nodes over the bound
    (``degree_excess``), the accountant's count, and per measured unit the
    largest and mean count over the sample, their ratio to the accountant's
    count, and the node that attains the largest.
    """
    _check_kind(kind)
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
        raise ValueError(f"bound must be an integer >= 1, got {bound!r}")
    is_train = _train_mask(train_nodes, num_nodes) if kind == "in-degree" else None
    uniform, removed = _removed_nodes(
        edge_index, num_nodes=num_nodes, nodes=nodes, sample=sample, sample_seed=sample_seed, hubs=hubs
    )
    args: dict[str, Any] = {
        "num_nodes": num_nodes,
        "kind": kind,
        "bound": bound,
        "seed": seed,
        "train_nodes": train_nodes,
    }
    full = _bounded_keys(edge_index, **args)
    radius = row_clip if row_clip is not None else math.sqrt(bound)
    counts = _removal_counts(edge_index, full, removed, args, radius=radius, is_train=is_train, num_layers=num_layers)
    src, dst = edge_index.cpu().numpy()
    report: dict[str, Any] = {
        "kind": kind,
        "bound": bound,
        "seed": seed,
        "num_nodes": num_nodes,
        "sample": int(uniform.size),
        "sample_seed": sample_seed,
        "hubs": int(removed.size - uniform.size),
        **degree_excess(edge_index, num_nodes=num_nodes, kind=kind, bound=bound, train_nodes=train_nodes),
        "kept_edge_fraction": float(full.size / max(np.unique(src * np.int64(num_nodes) + dst).size, 1)),
    }
    if kind == "out-degree":
        report["row_clip"] = radius
    accountant = _accountant_counts(kind, bound=bound, radius=radius, num_layers=num_layers)
    for unit, values in counts.items():
        report[unit] = _unit_report(values, accountant[unit], removed=removed, n_uniform=uniform.size)
    return report


def _removed_nodes(
    edge_index: Tensor, *, num_nodes: int, nodes: Tensor | None, sample: int | None, sample_seed: int, hubs: int
) -> tuple[np.ndarray, np.ndarray]:
    """(the uniform sample, every node to remove): ``nodes`` or a seeded sample, then the ``hubs`` nodes of highest
    degree (in + out) not in it."""
    if nodes is not None:
        uniform = np.unique(nodes.cpu().numpy())
        if uniform.size == 0 or uniform[0] < 0 or uniform[-1] >= num_nodes:
            raise ValueError(f"nodes must be a non-empty set of ids in [0, num_nodes={num_nodes})")
    else:
        uniform = _sample_nodes(num_nodes, sample=sample, sample_seed=sample_seed)
    src, dst = edge_index.cpu().numpy()
    degree = np.bincount(src, minlength=num_nodes) + np.bincount(dst, minlength=num_nodes)
    top = np.argsort(-degree, kind="stable")[:hubs]
    return uniform, np.concatenate([uniform, np.setdiff1d(top, uniform)])


def _removal_counts(
    edge_index: Tensor,
    full: np.ndarray,
    removed: np.ndarray,
    args: dict[str, Any],
    *,
    radius: float,
    is_train: np.ndarray | None,
    num_layers: tuple[int, ...],
) -> dict[str, list[float]]:
    """Per measured unit, its count of changed units for each removed node: the bounding (``args``) re-run on the
    graph without it, compared with ``full`` (the bounded graph's edge keys)."""
    num_nodes, kind = args["num_nodes"], args["kind"]
    src, dst = edge_index.cpu().numpy()
    full_src, full_dst = full // num_nodes, full % num_nodes
    counts: dict[str, list[float]] = {}
    for u in removed.tolist():
        keep = (src != u) & (dst != u)
        reduced = _bounded_keys(edge_index[:, torch.from_numpy(keep)], **args)
        diff = np.setxor1d(full, reduced, assume_unique=True)
        diff_src, diff_dst = diff // num_nodes, diff % num_nodes
        if kind == "out-degree":
            per_row = np.bincount(diff_dst[diff_dst != u], minlength=num_nodes)
            moved = np.minimum(per_row[per_row > 0], 2 * radius)
            counts.setdefault("rows", []).append(1 + moved.size)
            counts.setdefault("l2", []).append(math.sqrt(radius**2 + float(np.sum(moved**2))))
        elif kind == "degree":
            pairs = int(np.count_nonzero(diff_src < diff_dst))
            counts.setdefault("pairs", []).append(pairs)
            counts.setdefault("l1", []).append(2 * pairs)
        else:
            assert is_train is not None  # kind in-degree
            for r in num_layers:
                changed = _changed_subgraphs(
                    diff_src, full_src, full_dst, num_nodes=num_nodes, num_layers=r, is_train=is_train, removed=u
                )
                counts.setdefault(f"subgraphs_r{r}", []).append(changed)
    return counts


def _accountant_counts(kind: str, *, bound: int, radius: float, num_layers: tuple[int, ...]) -> dict[str, float]:
    """Per measured unit, the count the accountant assumes one node removal changes."""
    if kind == "out-degree":
        return {"rows": bound + 1, "l2": math.sqrt(bound + radius**2)}
    if kind == "degree":
        return {"pairs": bound, "l1": 2 * bound}
    return {f"subgraphs_r{r}": max_occurrences(max_degree=bound, num_layers=r) for r in num_layers}


def _unit_report(values: list[float], accountant: float, *, removed: np.ndarray, n_uniform: int) -> dict[str, Any]:
    """One unit's counts against the accountant's: the largest (over the sample and the hubs, and the node attaining
    it), the mean and the share above it (over the uniform sample, the first ``n_uniform``)."""
    array = np.asarray(values, dtype=np.float64)
    worst = int(np.argmax(array))
    return {
        "accountant": accountant,
        "max": float(array[worst]),
        "mean": float(array[:n_uniform].mean()),
        "max_ratio": float(array[worst] / accountant),
        "frac_over_accountant": float(np.mean(array[:n_uniform] > accountant + 1e-9)),
        "argmax_node": int(removed[worst]),
    }


def bounding_report(
    edge_index: Tensor,
    *,
    num_nodes: int,
    train_nodes: Tensor,
    bounds: Mapping[str, int],
    seed: int = 0,
    sample: int | None = 200,
    sample_seed: int = 0,
    hubs: int = 20,
    num_layers: tuple[int, ...] = (1, 2),
) -> dict[str, Any]:
    """``bounding_instability`` for every kind at a dataset's public ``bounds``, {kind: bound}: {kind: report}.

    ``bounds`` names the in-degree bound K and the out-degree bound D; the undirected kind's (NIP-GNN's D_max)
    defaults to D, as the workflow's ``bound_degree`` targets do, and is left out on a directed graph. The
    JSON-ready result is meant for the graph's statistics (e.g. a ``stability`` block beside meta.json).
    """
    missing, unknown = {"in-degree", "out-degree"} - set(bounds), set(bounds) - set(KINDS)
    if missing or unknown:
        raise ValueError(
            f"bounds must name the in-degree and out-degree bounds (and may name the degree bound): missing "
            f"{sorted(missing)}, unknown {sorted(unknown)}; valid kinds: {list(KINDS)}"
        )
    out_degree_bound = bounds["out-degree"]
    common: dict[str, Any] = {
        "num_nodes": num_nodes,
        "seed": seed,
        "sample": sample,
        "sample_seed": sample_seed,
        "hubs": hubs,
    }
    report = {
        "out-degree": bounding_instability(edge_index, kind="out-degree", bound=out_degree_bound, **common),
        "in-degree": bounding_instability(
            edge_index,
            kind="in-degree",
            bound=bounds["in-degree"],
            train_nodes=train_nodes,
            num_layers=num_layers,
            **common,
        ),
    }
    if _is_undirected(edge_index, num_nodes):
        report["degree"] = bounding_instability(
            edge_index, kind="degree", bound=bounds.get("degree", out_degree_bound), **common
        )
    return report


def _is_undirected(edge_index: Tensor, num_nodes: int) -> bool:
    src, dst = edge_index.cpu().numpy()
    proper = src != dst
    forward = np.unique(src[proper] * np.int64(num_nodes) + dst[proper])
    backward = np.unique(dst[proper] * np.int64(num_nodes) + src[proper])
    return bool(np.array_equal(forward, backward))
