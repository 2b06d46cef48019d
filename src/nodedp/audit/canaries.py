"""Canary nodes for an empirical node-level privacy audit (one training run, Steinke, Nasr & Jagielski 2023).

``plant_canaries`` appends m mislabelled synthetic nodes, each wired to training nodes within a public degree bound
(so degree bounding keeps their edges) and included with probability 1/2; ``CanaryPlan`` gives the private graph,
a canary's neighbour and the graph to score on. How features, labels, edges and degrees are chosen:
docs/design/audit-internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.data import Data

from nodedp.data.graph import validate_graph
from nodedp.data.splits import Split, validate_split

__all__ = ["DIRECTIONS", "CanaryPlan", "default_canary_count", "plant_canaries"]

# How a canary's edges are stored on a directed graph: "out" canary -> node, "in" node -> canary, "both".
DIRECTIONS = ("out", "in", "both")
# Graphs with at least this many nodes get _MAX_CANARIES canaries; smaller ones a quarter of their nodes.
_LARGE_GRAPH = 4000
_MAX_CANARIES = 1000
_MIN_CANARIES = 20
# A canary draws its endpoints by rejection while the nodes with capacity outnumber its edges by this factor.
_REJECTION_FACTOR = 4


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def default_canary_count(num_nodes: int, delta: float | None = None) -> int:
    """The default number m of canaries for a graph of ``num_nodes`` nodes, audited at ``delta``.

    What the graph holds: 1000 where it has at least 4000 nodes, else ``num_nodes // 4`` but at least 20.
    Canaries should not dominate the graph: they are mislabelled copies wired into the training nodes, so too
    many of them would change what the model learns and the degrees the bounding sees, and the audit would
    measure a different model than the benchmark trains; a quarter of the nodes (about an eighth included)
    keeps them a minority. Below 20 the one-run bound is essentially 0 at any useful confidence.

    With ``delta`` (the run's δ, public before the audit), no more than ``best_canary_count(delta)``: the one-run
    bound's 2·m·δ term makes more canaries weaker at the suites' δ (a perfect attack's ceiling at δ = 1e-4 is
    1.85 with 100 canaries and 0.98 with 1000; measured on DP-SGD with its noise divided by 10, 1.69 against
    0.66, ``benchmarks/audit_dp_mlp.py``). δ = 0 (pure ε) costs nothing per canary: the graph's count.
    """
    from nodedp.audit.statistics import best_canary_count

    held = _graph_canary_count(num_nodes)
    if delta is None or delta == 0:
        return held
    return max(_MIN_CANARIES, min(held, best_canary_count(delta)))


def _graph_canary_count(num_nodes: int) -> int:
    num_nodes = _check_int(num_nodes, "num_nodes", 1)
    if num_nodes >= _LARGE_GRAPH:
        return _MAX_CANARIES
    return max(_MIN_CANARIES, num_nodes // 4)


@dataclass(frozen=True, eq=False)
class CanaryPlan:
    """Canaries planted in a graph, with their inclusion bits.

    ``graph`` is the original graph (nodes 0..n-1, edges first, in their order)
    with all m canaries appended as nodes n..n+m-1 and their edges after the
    original ones: the graph to score every canary on at inference. ``split`` is
    a split of ``graph``: the original training nodes plus the included
    canaries in ``train``, ``val`` and ``test`` unchanged, excluded canaries in
    no part. ``canaries`` are the canaries' node ids (int64, n..n+m-1),
    ``included`` their inclusion bits (bool [m]), ``labels`` their labels
    (int64 [m]), ``sources`` the original training node each copies its
    features from, ``canary_degrees`` how many endpoints each got, and
    ``canary_edges`` the [2, K] pairs (canary id, endpoint id), one per
    endpoint whatever the representation. ``directed`` says how the edges are
    stored: None on a symmetric graph (both directions), else one of
    :data:`DIRECTIONS`.

    Training runs on :meth:`private_graph`; :meth:`neighbour` gives the graph
    that differs from it in one canary (one node and all its edges).
    """

    graph: Data
    split: Split
    canaries: Tensor
    included: Tensor
    labels: Tensor
    sources: Tensor
    canary_degrees: Tensor
    canary_edges: Tensor
    degree_bound: int
    directed: str | None
    own_column: float = 0.0  # > 0: each canary has a feature column of its own holding this value (plant_canaries)

    @property
    def num_original_nodes(self) -> int:
        return self.graph.num_nodes - self.canaries.numel()

    def private_graph(self) -> tuple[Data, Split, Tensor]:
        """The training input: ``graph`` without the excluded canaries and their edges.

        Returns (graph, split, id_map): node ids re-indexed contiguously in their
        old order (the original nodes keep their ids, the included canaries
        follow), and ``id_map`` [n + m] int64 the new id of every node of
        ``graph``, -1 for a removed one.
        """
        return self._subgraph(self.included)

    def baseline_graph(self) -> Data:
        """``graph`` with the canaries' own columns zeroed: every canary becomes the zero vector, so a score
        taken against it removes the model's prediction for an input it never saw (only with ``own_column``)."""
        if self.own_column <= 0:
            raise ValueError("baseline_graph needs canaries planted with own_column > 0")
        m = self.canaries.numel()
        x = self.graph.x.clone()
        x[:, -m:] = 0
        return Data(x=x, y=self.graph.y, edge_index=self.graph.edge_index)

    def scoring_graph(self, *, baseline: bool = False) -> tuple[Data, Split, Tensor]:
        """The graph to score every canary on, as an extension of :meth:`private_graph` node for node.

        Returns (graph, split, ids): ``graph`` (or :meth:`baseline_graph` with ``baseline``) with its nodes
        reordered so the original nodes keep their ids, the included canaries follow in the private graph's
        order (so a method's per-node state lines up with its training input) and the excluded ones come last;
        ``split`` puts every canary, in or out, in ``train`` with the original training nodes (``val``, ``test``
        unchanged), so a method whose inference reads the parts (an inductive split drops cross-part edges)
        reads every canary's edges alike, whatever its bit; ``ids`` [m] are the canaries' ids in that graph.
        """
        n, m = self.num_original_nodes, self.canaries.numel()
        source = self.baseline_graph() if baseline else self.graph
        order = torch.cat([torch.arange(n), self.canaries[self.included], self.canaries[~self.included]])
        new_id = torch.empty(n + m, dtype=torch.int64)
        new_id[order] = torch.arange(n + m)
        graph = Data(x=source.x[order], y=source.y[order], edge_index=new_id[source.edge_index])
        ids = new_id[self.canaries]
        train = torch.cat([self.split.train[self.split.train < n], ids.sort().values])
        split = Split(
            train=train, val=self.split.val, test=self.split.test, setting=self.split.setting, seed=self.split.seed
        )
        return graph, split, ids

    def neighbour(self, i: int) -> tuple[Data, Split, Tensor]:
        """:meth:`private_graph` with canary ``i``'s inclusion flipped (``i`` indexes the m canaries).

        It differs from the private graph by exactly one node, the canary
        ``canaries[i]``, and exactly that node's edges: the accountants'
        neighbouring relation.
        """
        m = self.canaries.numel()
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < m:
            raise ValueError(f"canary index must be an integer in [0, {m}), got {i!r}")
        flipped = self.included.clone()
        flipped[i] = ~flipped[i]
        return self._subgraph(flipped)

    def _subgraph(self, included: Tensor) -> tuple[Data, Split, Tensor]:
        n, total = self.num_original_nodes, self.graph.num_nodes
        keep = torch.ones(total, dtype=torch.bool)
        keep[n:] = included
        id_map = torch.full((total,), -1, dtype=torch.int64)
        id_map[keep] = torch.arange(int(keep.sum()), dtype=torch.int64)
        edge_index = self.graph.edge_index
        kept_edges = edge_index[:, keep[edge_index[0]] & keep[edge_index[1]]]
        graph = Data(x=self.graph.x[keep], y=self.graph.y[keep], edge_index=id_map[kept_edges])
        # Train: the original training nodes and the canaries included here (``included`` may differ from the
        # plan's own bits). The map is increasing and canaries follow the original nodes: parts stay sorted.
        train = self.split.train[self.split.train < n]
        parts = {
            part: id_map[ids]
            for part, ids in (
                ("train", torch.cat([train, self.canaries[included]])),
                ("val", self.split.val),
                ("test", self.split.test),
            )
        }
        split = Split(**parts, setting=self.split.setting, seed=self.split.seed)
        return graph, split, id_map


def _draw_endpoints(available: list[int], count: int, generator: torch.Generator) -> list[int]:
    """``count`` distinct positions in ``available``, uniformly (a uniform ``count``-subset, in random order)."""
    size = len(available)
    if size <= _REJECTION_FACTOR * count:
        return torch.randperm(size, generator=generator)[:count].tolist()
    chosen: list[int] = []
    seen: set[int] = set()
    while len(chosen) < count:
        position = int(torch.randint(size, (1,), generator=generator))
        if position not in seen:
            seen.add(position)
            chosen.append(position)
    return chosen


def plant_canaries(
    graph: Data,
    split: Split,
    *,
    m: int,
    degree_bound: int,
    num_classes: int,
    seed: int,
    canary_degree: int | None = None,
    direction: str | None = None,
    own_column: float = 0.0,
) -> CanaryPlan:
    """Append m canary nodes to ``graph`` (docs/design/audit-internals.md) and draw their inclusion.

    ``degree_bound`` is the public degree within which the methods' bounding
    keeps every edge (``nodedp.data.identity_bound(kind, bound)``); after
    planting, every canary and every canary endpoint has degree ≤
    ``degree_bound`` as docs/design/audit-internals.md counts it. ``canary_degree`` (default
    ``max(1, degree_bound // 2)``, at most ``degree_bound``) is the number of
    edges a canary asks for; it gets fewer once the training nodes run out of
    capacity. ``num_classes`` is the public label range (meta.json).

    ``direction`` matters on a directed graph only: "out" (the default) stores a
    canary's edges as canary -> node (a new node pointing at existing ones, as a
    new paper cites old ones), "in" as node -> canary, "both" as both. On a
    symmetric graph both directions are always stored, and ``direction`` must be
    None or "both".

    ``own_column`` > 0: m feature columns are appended, canary j holding ``own_column`` in column j and zero
    elsewhere (docs/design/audit-internals.md, "Canaries in columns of their own").

    Deterministic for a ``seed``: from one generator seeded with ``seed``, the inclusion bits first, then the
    sources, the labels, the endpoints and the feature shuffles, so nothing about the canaries depends on the
    inclusion bits.
    """
    m, degree_bound, num_classes, canary_degree = _checked_counts(
        m, degree_bound, num_classes, seed, canary_degree, own_column
    )
    validate_graph(graph, where="plant_canaries: graph", num_classes=num_classes)
    n = graph.x.size(0)
    validate_split(split, where="plant_canaries: split", num_nodes=n)
    if split.train.numel() == 0:
        raise ValueError("plant_canaries: the split has no training node (canaries copy and attach to training nodes)")
    edge_index = graph.edge_index.cpu()
    directed = _storage(edge_index, n, direction)

    # Choosing: every draw from one generator, in this order (the inclusion bits first).
    generator = torch.Generator().manual_seed(seed)
    train = split.train.cpu()
    included, sources, labels = _choose(graph.y.cpu(), train, m, num_classes, generator)
    canary_edges, canary_degrees = _draw_edges(
        edge_index, train, n, m, degree_bound=degree_bound, canary_degree=canary_degree, generator=generator
    )
    canary_x = _shuffled_rows(graph.x.cpu()[sources], generator)

    # Planting and recording: the graph with every canary, and the split of the private graph.
    planted = Data(
        x=_features(graph.x.cpu(), canary_x, own_column),
        y=torch.cat([graph.y.cpu(), labels]),
        edge_index=torch.cat([edge_index, _stored(canary_edges, directed)], dim=1),
    )
    canaries = torch.arange(n, n + m, dtype=torch.int64)
    planted_split = Split(
        train=torch.cat([train, canaries[included]]),  # canary ids exceed every original id: still sorted
        val=split.val.cpu(),
        test=split.test.cpu(),
        setting=split.setting,
        seed=split.seed,
    )
    return CanaryPlan(
        graph=planted,
        split=planted_split,
        canaries=canaries,
        included=included,
        labels=labels,
        sources=sources,
        canary_degrees=canary_degrees,
        canary_edges=canary_edges,
        degree_bound=degree_bound,
        directed=directed,
        own_column=float(own_column),
    )


def _checked_counts(
    m: int, degree_bound: int, num_classes: int, seed: int, canary_degree: int | None, own_column: float
) -> tuple[int, int, int, int]:
    """plant_canaries' numbers checked, with the default canary degree ``max(1, degree_bound // 2)``."""
    m = _check_int(m, "m", 1)
    degree_bound = _check_int(degree_bound, "degree_bound", 1)
    num_classes = _check_int(num_classes, "num_classes", 2)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(own_column, bool) or not isinstance(own_column, int | float) or not 0 <= own_column < math.inf:
        raise ValueError(f"own_column must be a finite number >= 0, got {own_column!r}")
    if canary_degree is None:
        canary_degree = max(1, degree_bound // 2)
    canary_degree = _check_int(canary_degree, "canary_degree", 0)
    if canary_degree > degree_bound:
        raise ValueError(f"canary_degree ({canary_degree}) must not exceed degree_bound ({degree_bound})")
    return m, degree_bound, num_classes, canary_degree


def _storage(edge_index: Tensor, n: int, direction: str | None) -> str | None:
    """How canary edges are stored: None on a symmetric graph (both directions), else one of DIRECTIONS."""
    symmetric = bool(Data(edge_index=edge_index, num_nodes=n).is_undirected())  # as the methods decide it
    if symmetric:
        if direction not in (None, "both"):
            raise ValueError(
                f"direction {direction!r} does not apply to a symmetric graph (both directions are "
                "stored); pass None or 'both'"
            )
        return None
    if direction is None:
        direction = "out"
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; valid choices: {list(DIRECTIONS)}")
    return direction


def _choose(
    y: Tensor, train: Tensor, m: int, num_classes: int, generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    """The canaries' inclusion bits (Bernoulli(1/2)), source training nodes and labels (another class than the
    source's), drawn in that order."""
    included = torch.rand(m, generator=generator) < 0.5
    sources = train[torch.randint(train.numel(), (m,), generator=generator)]
    source_labels = y[sources]
    # Uniform over the other num_classes - 1 classes: shift the source label by 1..C-1.
    labels = (source_labels + 1 + torch.randint(num_classes - 1, (m,), generator=generator)) % num_classes
    return included, sources, labels


def _draw_edges(
    edge_index: Tensor,
    train: Tensor,
    n: int,
    m: int,
    *,
    degree_bound: int,
    canary_degree: int,
    generator: torch.Generator,
) -> tuple[Tensor, Tensor]:
    """Each canary's endpoints among the training nodes with capacity left, canary after canary.

    Returns the [2, K] pairs (canary id, endpoint id) and how many endpoints each canary got (int64 [m])."""
    src, dst = edge_index
    degree = torch.maximum(torch.bincount(src, minlength=n), torch.bincount(dst, minlength=n))
    capacity = (degree_bound - degree[train]).clamp(min=0).tolist()
    # Training nodes with capacity left (their ids and capacities); a full one is swapped out in O(1).
    available = [int(v) for v, c in zip(train.tolist(), capacity, strict=True) if c > 0]
    remaining = [c for c in capacity if c > 0]
    canary_degrees = torch.zeros(m, dtype=torch.int64)
    pairs: list[tuple[int, int]] = []
    for i in range(m):
        count = min(canary_degree, len(available))
        positions = _draw_endpoints(available, count, generator)
        endpoints = [available[p] for p in positions]
        for p in positions:
            remaining[p] -= 1
        for p in sorted((p for p in positions if remaining[p] == 0), reverse=True):
            available[p], remaining[p] = available[-1], remaining[-1]
            available.pop()
            remaining.pop()
        canary_degrees[i] = count
        pairs.extend((n + i, v) for v in endpoints)
    canary_edges = torch.tensor(pairs, dtype=torch.int64).reshape(-1, 2).T.contiguous()
    return canary_edges, canary_degrees


def _stored(canary_edges: Tensor, directed: str | None) -> Tensor:
    """The canary edges as the graph stores them: canary -> node ("out"), node -> canary ("in") or both, each
    pair's two columns side by side."""
    forward, backward = canary_edges, canary_edges.flip(0)
    if directed == "out":
        return forward
    if directed == "in":
        return backward
    return torch.stack([forward, backward], dim=2).reshape(2, -1)


def _shuffled_rows(source_x: Tensor, generator: torch.Generator) -> Tensor:
    """Each canary's features: its source's feature vector with the entries shuffled (drawn last, so the choices
    before do not depend on the feature dimension)."""
    if not source_x.size(0):
        return source_x
    return torch.stack([row[torch.randperm(row.numel(), generator=generator)] for row in source_x])


def _features(x: Tensor, canary_x: Tensor, own_column: float) -> Tensor:
    """The planted graph's features: the original rows, then the canaries'; with ``own_column`` > 0 the canaries'
    rows are zero and m columns follow, canary j holding ``own_column`` in column j."""
    if own_column <= 0:
        return torch.cat([x, canary_x])
    n, m = x.size(0), canary_x.size(0)
    own = torch.zeros(n + m, m, dtype=x.dtype)
    own[torch.arange(n, n + m), torch.arange(m)] = own_column
    return torch.cat([torch.cat([x, torch.zeros_like(canary_x)]), own], dim=1)
