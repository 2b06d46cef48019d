"""HeterPoisson's per-step 1-hop subgraphs (Xiang, Wang, Wang, S&P 2024): the suite's sampler and the public code's.

``HeterPoissonSampler(mode="suite")`` lists each root's out-neighbours on edges whose in- and out-degrees from
training nodes were bounded to the public D first, keeps each with probability min(1, M/D), removes every
sampled root of the step from every subgraph but its own and gives an isolated root no neighbour: a node listed
by d ≤ D roots then appears as ``nodedp.accounting.heter_poisson.heter_poisson_mixture`` says (at D when d = D,
stochastically below it otherwise). ``mode="paper"`` reproduces the public code (keep probability M/d(u) on
private degrees, lists cut to their first 500 arcs, M random nodes for an isolated root, a root dropped only
from subgraphs earlier in the shuffled batch): that accountant does NOT cover it. Output: the padded dense format
of ``nodedp.structure.subgraphs`` (root in column 0, -1 padding, adj[i, 0, b] True for every kept neighbour b).
Design, pitfalls and sizes: docs/design/sampler-heterpoisson.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor

__all__ = ["MAX_DENSE_ENTRIES", "PAPER_MAX_NEIGHBOURS", "SAMPLER_MODES", "HeterPoissonSampler", "SamplerMode"]

SamplerMode = Literal["suite", "paper"]
SAMPLER_MODES: tuple[str, ...] = ("suite", "paper")
# The public code lists at most this many admissible out-neighbours per training node (the first, in edge order).
PAPER_MAX_NEIGHBOURS = 500
# The most adjacency entries B·S² one dense batch may hold (1 GiB as bool, 4 GiB once gathered as float32): the
# public code's largest batch, ~4,096 roots of width 1 + 500, just fits.
MAX_DENSE_ENTRIES = 1 << 30

BatchFn = Callable[[Tensor], tuple[tuple[Tensor, Tensor, Tensor], Tensor]]


def _check_int(value: object, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_ids(tensor: object, name: str, *, num_nodes: int, dim: int) -> Tensor:
    """``tensor`` as a CPU int64 tensor of ``dim`` dims with ids in [0, num_nodes)."""
    if not isinstance(tensor, Tensor) or tensor.dtype != torch.int64 or tensor.dim() != dim:
        shape = "[2, E]" if dim == 2 else "[B]"
        found = f"{tensor.dtype} {list(tensor.shape)}" if isinstance(tensor, Tensor) else type(tensor).__name__
        raise ValueError(f"{name} must be an int64 tensor {shape}, got {found}")
    if dim == 2 and tensor.size(0) != 2:
        raise ValueError(f"{name} must be an int64 tensor [2, E], got {list(tensor.shape)}")
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_nodes):
        raise ValueError(f"{name} has node ids outside [0, num_nodes={num_nodes})")
    return tensor.cpu()


def _uniform(shape: tuple[int, ...], generator: torch.Generator, dtype: torch.dtype) -> Tensor:
    """U[0, 1) draws from ``generator`` (on its device), returned on the CPU."""
    return torch.rand(shape, generator=generator, device=generator.device, dtype=dtype).cpu()


def _segments(lengths: Tensor) -> tuple[Tensor, Tensor]:
    """For segments of ``lengths`` [B] laid end to end: (segment of each element, its rank within the segment)."""
    row = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    first = torch.cumsum(lengths, 0) - lengths
    return row, torch.arange(row.numel()) - first[row]


class HeterPoissonSampler:
    """One step's 1-hop subgraphs of HeterPoisson, for roots that are training nodes (K = 1 round).

    ``edge_index`` [2, E] int64 (src -> dst: dst is listed by root src);
    ``train_nodes`` [T] the potential roots; ``neighbours`` M ≥ 1;
    ``degree_bound`` D ≥ 1, required in mode "suite" (the public bound: every
    training node lists ≤ D nodes and every node is listed by ≤ D training
    nodes, else ``ValueError``), unused in mode "paper". ``inductive``: only
    training nodes may be listed (and fill isolated roots, mode "paper").
    Mode "suite" drops self-loops and duplicate arcs; mode "paper" keeps them,
    as the public code does.
    """

    def __init__(
        self,
        edge_index: Tensor,
        *,
        num_nodes: int,
        train_nodes: Tensor,
        neighbours: int,
        degree_bound: int | None = None,
        mode: SamplerMode = "suite",
        inductive: bool = False,
        max_dense_entries: int = MAX_DENSE_ENTRIES,
    ) -> None:
        if mode not in SAMPLER_MODES:
            raise ValueError(f"unknown sampler mode {mode!r}; choose from {list(SAMPLER_MODES)}")
        self.num_nodes = _check_int(num_nodes, "num_nodes", minimum=1)
        self.neighbours = _check_int(neighbours, "neighbours (M)", minimum=1)
        if mode == "suite" and degree_bound is None:
            raise ValueError("mode 'suite' needs the public degree_bound D (its keep probability is min(1, M/D))")
        self.degree_bound = None if degree_bound is None else _check_int(degree_bound, "degree_bound (D)", minimum=1)
        self.mode, self.inductive = mode, bool(inductive)
        self.max_dense_entries = _check_int(max_dense_entries, "max_dense_entries", minimum=1)
        edges = _check_ids(edge_index, "edge_index", num_nodes=num_nodes, dim=2)
        train = _check_ids(train_nodes, "train_nodes", num_nodes=num_nodes, dim=1)
        self.train_nodes = train
        self.is_train = torch.zeros(num_nodes, dtype=torch.bool)
        self.is_train[train] = True
        if int(self.is_train.sum()) != train.numel():
            raise ValueError("train_nodes has repeated nodes")
        # Arcs a root can use: from a training node, to an admissible node (a training node when inductive).
        src, dst = edges
        usable = self.is_train[src] & self.is_train[dst] if self.inductive else self.is_train[src]
        if mode == "suite":
            self._build_suite(src[usable], dst[usable])
        else:
            self._build_paper(edges, src[usable], dst[usable])

    # --- construction ---------------------------------------------------------------------------------------

    def _build_suite(self, src: Tensor, dst: Tensor) -> None:
        """Mode "suite": the table [N, D] of each training node's listed nodes (ascending, -1 padded)."""
        assert self.degree_bound is not None
        bound, n = self.degree_bound, self.num_nodes
        keys = torch.unique(src[src != dst] * n + dst[src != dst])  # sorted: by source, then target
        src, dst = keys // n, keys % n
        out_degree, in_degree = torch.bincount(src, minlength=n), torch.bincount(dst, minlength=n)
        hint = (
            "bound the edges first, e.g. nodedp.data.bound_undirected_degree (symmetric graphs) or "
            "nodedp.data.bound_in_degree then bound_out_degree, at the public D"
        )
        if keys.numel() and int(out_degree.max()) > bound:
            raise ValueError(f"a training node lists {int(out_degree.max())} nodes > degree_bound D = {bound}: {hint}")
        if keys.numel() and int(in_degree.max()) > bound:
            raise ValueError(
                f"a node is listed by {int(in_degree.max())} training nodes > degree_bound D = {bound} "
                f"(the accountant's d ≤ D): {hint}"
            )
        _, rank = _segments(out_degree)
        self._table = torch.full((n, bound), -1, dtype=torch.int64)
        self._table[src, rank] = dst
        self._keep_probability = min(1.0, self.neighbours / bound)

    def _build_paper(self, edges: Tensor, src: Tensor, dst: Tensor) -> None:
        """Mode "paper": keep probabilities M·inv(u) from the FULL graph's in-degrees, and each training node's
        first ``PAPER_MAX_NEIGHBOURS`` usable arcs in edge order, stored CSR (``_ptr``, ``_length``, ``_flat``)."""
        n = self.num_nodes
        pairs = torch.unique(edges[0] * n + edges[1])  # d(u): distinct v with an arc v -> u (private)
        in_degree = torch.bincount(pairs % n, minlength=n)
        inverse = torch.zeros(n, dtype=torch.float32)
        has = in_degree > 0
        inverse[has] = (1.0 / in_degree[has].double()).float()  # the public code's float32 rounding
        self._keep_probability_of = inverse * self.neighbours  # float32, compared with float32 U[0, 1) by <=
        order = torch.argsort(src, stable=True)  # grouped by source, edge order within each group
        src, dst = src[order], dst[order]
        counts = torch.bincount(src, minlength=n)
        _, rank = _segments(counts)
        first = rank < PAPER_MAX_NEIGHBOURS
        self._flat = dst[first]
        self._length = counts.clamp(max=PAPER_MAX_NEIGHBOURS)
        self._ptr = torch.cumsum(self._length, 0) - self._length
        self._admissible = self.is_train.nonzero().squeeze(1) if self.inductive else torch.arange(n)

    # --- sampling ----------------------------------------------------------------------------------------------

    @property
    def max_width(self) -> int:
        """The widest subgraph a step can give: 1 + D ("suite"); 1 + max(longest list, M) ≤ 1 + max(500, M)."""
        if self.mode == "suite":
            assert self.degree_bound is not None
            return 1 + self.degree_bound
        longest = int(self._length.max()) if self._length.numel() else 0
        return 1 + max(longest, self.neighbours)

    def _check_roots(self, roots: object) -> Tensor:
        roots = _check_ids(roots, "roots", num_nodes=self.num_nodes, dim=1)
        if not bool(self.is_train[roots].all()):
            raise ValueError("roots must be training nodes (the potential roots listed in train_nodes)")
        ordered = roots.sort().values
        if bool((ordered[1:] == ordered[:-1]).any()):
            raise ValueError("roots has repeated nodes: each sampled root owns one subgraph")
        return roots

    def _check_size(self, batch: int, width: int) -> None:
        if batch * width * width > self.max_dense_entries:
            raise ValueError(
                f"a dense batch of {batch} subgraphs of width {width} holds {batch * width * width} adjacency "
                f"entries > max_dense_entries = {self.max_dense_entries}: use smaller batches or a smaller bound"
            )

    def sample(
        self, roots: Tensor, generator: torch.Generator, *, batch_order: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """The step's subgraphs of ``roots`` [B] (distinct training nodes; row i is roots[i]'s), on the CPU.

        Returns nodes [B, S] int64 (root in column 0, kept neighbours, -1
        padding) and adj [B, S, S] bool (adj[i, 0, b] True iff column b is a
        kept neighbour; no other entry). S = 1 + D in mode "suite", 1 + the
        most members after the collate rule (≥ 1) in mode "paper". Randomness
        comes from ``generator`` only. ``batch_order`` (mode "paper"): the
        permutation of range(B) the collate rule walks; default a random one,
        as the public loader shuffles each batch.
        """
        roots = self._check_roots(roots)
        if self.mode == "suite":
            if batch_order is not None:
                raise ValueError("batch_order applies to mode 'paper' only (mode 'suite' drops every root)")
            return self._sample_suite(roots, generator)
        return self._sample_paper(roots, generator, batch_order)

    def _sample_suite(self, roots: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        batch, width = roots.numel(), self.max_width
        self._check_size(batch, width)
        listed = self._table[roots]  # [B, D]
        draws = _uniform((batch, width - 1), generator, torch.float64)
        is_root = torch.zeros(self.num_nodes, dtype=torch.bool)
        is_root[roots] = True
        kept = (listed >= 0) & (draws < self._keep_probability) & ~is_root[listed.clamp(min=0)]
        # Kept members first (in list order), padding after.
        order = torch.argsort((~kept).to(torch.uint8), dim=1, stable=True)
        kept = kept.gather(1, order)
        nodes = torch.cat([roots[:, None], listed.gather(1, order).masked_fill(~kept, -1)], dim=1)
        adj = torch.zeros(batch, width, width, dtype=torch.bool)
        adj[:, 0, 1:] = kept
        return nodes, adj

    def _paper_members(self, roots: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """(row, member) of every kept neighbour and fill node, before the collate rule."""
        lengths = self._length[roots]
        row, rank = _segments(lengths)
        listed = self._flat[self._ptr[roots][row] + rank]
        kept = _uniform((listed.numel(),), generator, torch.float32) <= self._keep_probability_of[listed]
        isolated = (lengths == 0).nonzero().squeeze(1)
        picks = torch.randint(
            self._admissible.numel(), (isolated.numel(), self.neighbours), generator=generator, device=generator.device
        ).cpu()
        rows = torch.cat([row[kept], isolated.repeat_interleave(self.neighbours)])
        return rows, torch.cat([listed[kept], self._admissible[picks].reshape(-1)])

    def _sample_paper(
        self, roots: Tensor, generator: torch.Generator, batch_order: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        batch = roots.numel()
        rows, members = self._paper_members(roots, generator)
        if batch_order is None:
            batch_order = torch.randperm(batch, generator=generator, device=generator.device).cpu()
        elif not (
            isinstance(batch_order, Tensor)
            and batch_order.dtype == torch.int64
            and batch_order.dim() == 1
            and torch.equal(batch_order.cpu().sort().values, torch.arange(batch))
        ):
            raise ValueError(f"batch_order must be a permutation of range({batch}) as an int64 tensor")
        # COLLATE: drop a member that is a training node and the root of a subgraph EARLIER in the walk.
        position = torch.empty(batch, dtype=torch.int64)
        position[batch_order.cpu()] = torch.arange(batch)
        root_position = torch.full((self.num_nodes,), batch, dtype=torch.int64)
        root_position[roots] = position
        stays = ~(self.is_train[members] & (root_position[members] < position[rows]))
        rows, members = rows[stays], members[stays]
        order = torch.argsort(rows, stable=True)
        rows, members = rows[order], members[order]
        counts = torch.bincount(rows, minlength=batch)
        width = 1 + (int(counts.max()) if batch else 0)
        self._check_size(batch, width)
        _, column = _segments(counts)
        nodes = torch.full((batch, width), -1, dtype=torch.int64)
        nodes[:, 0] = roots
        nodes[rows, column + 1] = members
        adj = torch.zeros(batch, width, width, dtype=torch.bool)
        adj[rows, 0, column + 1] = True
        return nodes, adj

    # --- features ----------------------------------------------------------------------------------------------

    @staticmethod
    def gather(nodes: Tensor, adj: Tensor, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """As ``nodedp.structure.gather_features``, on ``x``'s device: x_local [B, S, F] (zeros at padding),
        adj [B, S, S] in x's dtype (adj[b, a, c] = 1 iff column a aggregates from column c), mask [B, S]."""
        nodes = nodes.to(x.device)
        mask = nodes >= 0
        x_local = x[nodes.clamp(min=0)].masked_fill(~mask[:, :, None], 0)
        return x_local, adj.to(device=x.device, dtype=x.dtype), mask

    def batch_fn(self, x: Tensor, y: Tensor, generator: torch.Generator) -> BatchFn:
        """``train_model``'s batch_fn: example indices [B] (positions in ``train_nodes``, as ``poisson_batches``
        draws them) -> ((x_local, adj, mask), y[roots]), one fresh sample per call from ``generator``."""

        def fn(indices: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
            roots = self.train_nodes[indices.cpu()]
            nodes, adj = self.sample(roots, generator)
            return self.gather(nodes, adj, x), y[roots.to(y.device)]

        return fn
