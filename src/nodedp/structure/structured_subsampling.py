"""SparseGNN's per-step structured subsampler: rooted subgraphs grown along incoming arcs, with edge thinning.

``prepare_structured_graph`` is the spec's PREPROCESS (drop self-loops, symmetrise, optional in-degree cap, then a
uniformly random <= K_out subset of every node's out-arcs). ``StructuredSampler.expand`` is SPARSE_EXPAND for a
batch of roots at once: at hop h every frontier node u keeps a uniform min(Binomial(|inN(u)|, p2), caps[h-1])-subset
of its in-neighbours; a new one joins the next frontier, and every kept arc is recorded. The roots themselves are
the step's Poisson sample (``nodedp.train.sampling.poisson_batches`` over the training nodes). The output is
DP-GNN's padded dense format (``nodedp.structure.subgraphs``), so ``gather_structured`` feeds ``SubgraphGNN`` as
is. Semantics, vectorisation and sizes: docs/design/sampler-sparsegnn.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nodedp.data.degree import bound_out_degree

__all__ = [
    "DEFAULT_CAPS",
    "MAX_RADIUS",
    "StructuredSampler",
    "gather_structured",
    "prepare_structured_graph",
]

# The spec's incoming per-hop fan-out caps CAP[1], CAP[2] (hop 3 would add 5).
DEFAULT_CAPS: tuple[int, ...] = (20, 10)
# Dense [B, S, S] batches: r = 3 pads every subgraph to 1 + 20 + 200 + 1000 = 1,221 columns at the spec's caps.
MAX_RADIUS = 2
# XOR-ed into the seed of the in-degree cap, so that it and the out-degree cap draw unrelated per-arc hashes
# (both use bound_out_degree, the in-cap on reversed arcs: arc w -> u would otherwise share u -> w's hash).
_IN_CAP_SALT = 0x5BD1E9955BD1E995


def _check_int(value: object, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_arcs(arcs: object, name: str, *, num_nodes: int) -> Tensor:
    if not isinstance(arcs, Tensor) or arcs.dtype != torch.int64 or arcs.dim() != 2 or arcs.size(0) != 2:
        shape = list(arcs.shape) if isinstance(arcs, Tensor) else type(arcs).__name__
        raise ValueError(f"{name} must be an int64 tensor [2, E], got {getattr(arcs, 'dtype', '')} {shape}")
    if arcs.numel() and (int(arcs.min()) < 0 or int(arcs.max()) >= num_nodes):
        raise ValueError(f"{name} has node ids outside [0, num_nodes={num_nodes})")
    return arcs.cpu()


def prepare_structured_graph(
    edge_index: Tensor, *, num_nodes: int, out_degree_bound: int, seed: int, in_degree_cap: int | None = None
) -> Tensor:
    """The spec's PREPROCESS of ``edge_index`` [2, E] (source, target): the kept arcs [2, E'], sorted.

    Drops self-loops, adds the reverse of every arc and deduplicates; with ``in_degree_cap`` (the public code's
    reference mode uses 10) keeps a uniformly random <= cap subset of every node's incoming arcs; then keeps a
    uniformly random <= ``out_degree_bound`` (K_out) subset of every node's outgoing arcs. Both caps are the
    suite's ``bound_out_degree`` (per-arc hashes of ``seed``: deterministic, independent of arc order), the
    in-degree cap on reversed arcs under a salted seed. Every out-degree of the result is <= K_out, which is what
    the accountant (``structured_count_law``) needs; the graph is symmetric only if no cap binds.
    """
    num_nodes = _check_int(num_nodes, "num_nodes", minimum=1)
    edge_index = _check_arcs(edge_index, "edge_index", num_nodes=num_nodes)
    out_degree_bound = _check_int(out_degree_bound, "out_degree_bound", minimum=1)
    if in_degree_cap is not None:
        in_degree_cap = _check_int(in_degree_cap, "in_degree_cap", minimum=1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    src, dst = edge_index[:, edge_index[0] != edge_index[1]]
    keys = torch.unique(torch.cat([src * num_nodes + dst, dst * num_nodes + src]))
    arcs = torch.stack([keys // num_nodes, keys % num_nodes])
    if in_degree_cap is not None:
        reversed_arcs = bound_out_degree(
            arcs.flip(0), num_nodes=num_nodes, max_degree=in_degree_cap, seed=seed ^ _IN_CAP_SALT
        )
        arcs = reversed_arcs.flip(0).contiguous()
    return bound_out_degree(arcs, num_nodes=num_nodes, max_degree=out_degree_bound, seed=seed)


class StructuredSampler:
    """SPARSE_EXPAND (spec §1.3) over prepared arcs, vectorised across roots.

    ``arcs`` [2, E] (source, target; ``prepare_structured_graph``'s output: no self-loops, no duplicates) are
    stored as a CSR keyed by target, inN(u) = the sources w of arcs w -> u. ``radius`` r in {1, 2}, ``edge_keep``
    p2 in (0, 1], ``caps`` the incoming fan-out caps of hops 1..r (entries past r are ignored). Every subgraph is
    padded to ``width`` S = 1 + caps[0] (+ caps[0]·caps[1] at r = 2) columns.
    """

    def __init__(
        self,
        arcs: Tensor,
        *,
        num_nodes: int,
        radius: int = 1,
        edge_keep: float = 1.0,
        caps: Sequence[int] = DEFAULT_CAPS,
    ) -> None:
        self.num_nodes = _check_int(num_nodes, "num_nodes", minimum=1)
        self.radius = _check_radius(radius)
        self.edge_keep = _check_keep(edge_keep)
        self.caps = _check_caps(caps, self.radius)
        arcs = _check_arcs(arcs, "arcs", num_nodes=self.num_nodes)
        src, dst = arcs
        if bool((src == dst).any()):
            raise ValueError("arcs hold self-loops: prepare them with prepare_structured_graph")
        keys = torch.unique(dst * self.num_nodes + src)  # sorted by target, then source
        if keys.numel() != src.numel():
            raise ValueError("arcs hold duplicates: prepare them with prepare_structured_graph")
        self.sources = keys % self.num_nodes
        self.in_degree = torch.bincount(keys // self.num_nodes, minlength=self.num_nodes)
        self.indptr = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(self.in_degree, 0)])
        self.width = 1
        fan = 1
        for cap in self.caps:
            fan *= cap
            self.width += fan

    def expand(self, roots: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """The rooted subgraphs of ``roots`` [B] (int64, repeats allowed: each row is drawn independently).

        Returns nodes [B, S] int64 (root in column 0, then the nodes of hop 1, then of hop 2, each hop by id;
        -1 padding last) and adj [B, S, S] bool, adj[i, a, b] True iff the arc nodes[i, b] -> nodes[i, a] was
        kept (column a aggregates from column b; every arc points toward the root). All randomness comes from
        ``generator`` (a CPU generator); the result is on the CPU.
        """
        roots = self._check_roots(roots)
        if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
            raise ValueError(f"generator must be a CPU torch.Generator, got {generator!r}")
        size = roots.numel()
        nodes = torch.full((size, self.width), -1, dtype=torch.int64)
        nodes[:, 0] = roots
        adj = torch.zeros(size, self.width, self.width, dtype=torch.bool)
        filled = torch.ones(size, dtype=torch.int64)
        rows, columns, frontier = torch.arange(size), torch.zeros(size, dtype=torch.int64), roots
        for cap in self.caps:
            if frontier.numel() == 0:
                break
            segment, sources = self._kept_in_arcs(frontier, cap, generator)
            arc_rows, targets = rows[segment], columns[segment]
            source_columns, (rows, columns, frontier) = _place(nodes, filled, arc_rows, sources, self.num_nodes)
            adj[arc_rows, targets, source_columns] = True
        return nodes, adj

    def _check_roots(self, roots: object) -> Tensor:
        if not isinstance(roots, Tensor) or roots.dtype != torch.int64 or roots.dim() != 1:
            shape = list(roots.shape) if isinstance(roots, Tensor) else type(roots).__name__
            raise ValueError(f"roots must be an int64 tensor [B], got {getattr(roots, 'dtype', '')} {shape}")
        if roots.numel() and (int(roots.min()) < 0 or int(roots.max()) >= self.num_nodes):
            raise ValueError(f"roots has node ids outside [0, num_nodes={self.num_nodes})")
        return roots.cpu()

    def _kept_in_arcs(self, frontier: Tensor, cap: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """The kept arcs w -> u of one hop: (segment [A], w [A]), u = ``frontier[segment]``.

        Each u keeps k = min(Binomial(|inN(u)|, p2), cap) of its in-arcs, a uniform k-subset: its arcs are put in
        a uniformly random order (one ``randperm`` over all arcs, stably regrouped by u) and the first k kept.
        """
        degree = self.in_degree[frontier]
        if self.edge_keep == 1.0:
            keep_count = degree.clamp(max=cap)
        else:
            chance = torch.full(degree.shape, self.edge_keep, dtype=torch.float64)
            keep_count = torch.binomial(degree.to(torch.float64), chance, generator=generator).to(torch.int64)
            keep_count = keep_count.clamp(max=cap)
        active = torch.nonzero(keep_count > 0).flatten()
        degree, keep_count = degree[active], keep_count[active]
        total = int(degree.sum())
        local = torch.repeat_interleave(torch.arange(active.numel()), degree)
        start = torch.cumsum(degree, 0) - degree
        offset = torch.arange(total) - start[local]
        sources = self.sources[self.indptr[frontier[active]][local] + offset]
        if bool((keep_count < degree).any()):
            shuffled = torch.randperm(total, generator=generator)
            order = shuffled[torch.argsort(local[shuffled], stable=True)]
            rank = torch.empty(total, dtype=torch.int64)
            rank[order] = offset  # position i of ``order`` lies in segment local[i] (same group sizes): rank offset[i]
            kept = rank < keep_count[local]
            local, sources = local[kept], sources[kept]
        return active[local], sources


def _place(
    nodes: Tensor, filled: Tensor, rows: Tensor, sources: Tensor, num_nodes: int
) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
    """Append the kept sources that are not yet in their row, in place; returns every source's column and the
    new nodes as (rows, columns, ids), the next frontier.

    ``nodes`` [B, S] with ``filled`` [B] columns in use; ``rows`` [A], ``sources`` [A] the kept arcs' rows and
    source ids. A source kept by two frontier nodes of a row is appended once (by id within the hop).
    """
    width = nodes.size(1)
    present = nodes >= 0
    present_keys = (torch.arange(nodes.size(0))[:, None] * num_nodes + nodes)[present]
    present_columns = torch.arange(width).expand_as(nodes)[present]
    present_keys, order = torch.sort(present_keys)
    present_columns = present_columns[order]
    keys = rows * num_nodes + sources
    slot = torch.searchsorted(present_keys, keys).clamp(max=present_keys.numel() - 1)  # every root is present
    found = present_keys[slot] == keys
    columns = torch.where(found, present_columns[slot], 0)

    new_keys, inverse = torch.unique(keys[~found], return_inverse=True)  # sorted: by row, then id
    new_rows, new_ids = new_keys // num_nodes, new_keys % num_nodes
    rank = torch.arange(new_keys.numel()) - torch.searchsorted(new_rows, new_rows)
    new_columns = filled[new_rows] + rank
    if new_columns.numel() and int(new_columns.max()) >= width:  # the caps bound it; a broken invariant otherwise
        raise RuntimeError("a subgraph outgrew its padded width")
    nodes[new_rows, new_columns] = new_ids
    filled += torch.bincount(new_rows, minlength=nodes.size(0))
    columns[~found] = new_columns[inverse]
    return columns, (new_rows, new_columns, new_ids)


def _check_radius(radius: object) -> int:
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 1:
        raise ValueError(f"radius must be an integer in {{1, {MAX_RADIUS}}}, got {radius!r}")
    if radius > MAX_RADIUS:
        raise ValueError(
            f"radius {radius} exceeds the limit of {MAX_RADIUS} hops: dense padded subgraphs would need "
            "1 + 20 + 200 + 1000 = 1,221 columns at r = 3 with the spec's caps (20, 10, 5)"
        )
    return radius


def _check_keep(edge_keep: object) -> float:
    if isinstance(edge_keep, bool) or not isinstance(edge_keep, int | float) or not 0 < edge_keep <= 1:
        raise ValueError(f"edge_keep (p2) must be a number in (0, 1], got {edge_keep!r}")
    return float(edge_keep)


def _check_caps(caps: object, radius: int) -> tuple[int, ...]:
    if not isinstance(caps, Sequence) or len(caps) < radius:
        raise ValueError(f"caps must give a fan-out cap for each of the {radius} hops, got {caps!r}")
    return tuple(_check_int(cap, f"caps[{hop}]", minimum=1) for hop, cap in enumerate(caps[:radius]))


def gather_structured(nodes: Tensor, adj: Tensor, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """A batch of ``expand``'s subgraphs on ``x``'s device, as ``gather_features`` returns DP-GNN's.

    ``nodes`` [B, S] int64 (-1 padding), ``adj`` [B, S, S] bool, ``x`` [N, F]. Returns x_local [B, S, F] (zeros
    at padding), adj [B, S, S] in x's dtype (adj[b, a, c] = 1 iff column a aggregates from column c) and
    mask [B, S] (True at real nodes; column 0 is the root).
    """
    if nodes.dim() != 2 or adj.shape != (*nodes.shape, nodes.size(1)) or x.dim() != 2:
        raise ValueError(
            f"need nodes [B, S], adj [B, S, S], x [N, F]; got {list(nodes.shape)}, {list(adj.shape)}, {list(x.shape)}"
        )
    nodes = nodes.to(x.device)
    mask = nodes >= 0
    x_local = x[nodes.clamp(min=0)].masked_fill(~mask[:, :, None], 0)
    return x_local, adj.to(device=x.device, dtype=x.dtype), mask
