"""White-box audits of Laplace releases: NIP-GNN's aggregation and DPAR em1's values, at the noise a ledger records.

Each canary moves every released coordinate the accountant charges for by that coordinate's full sensitivity, so
one canary's privacy loss reaches the record's worst case; its score is the Neyman–Pearson statistic of Laplace
noise, the log-likelihood ratio of "in" against "out" summed over those coordinates. Canaries touch disjoint
noise, so their scores are independent trials. Design and canary graphs: docs/design/audit-internals.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from nodedp.accounting._checks import check_int, check_positive
from nodedp.mechanisms.dp_appr import dp_appr_em
from nodedp.mechanisms.nip import laplace_sum_aggregate

__all__ = [
    "LAPLACE_MECHANISMS",
    "dp_appr_values_release_scores",
    "laplace_records",
    "laplace_release_scores",
    "nip_aggregation_release_scores",
]

# The ledger's Laplace records (kind "laplace") audited here, by ``params["mechanism"]``.
LAPLACE_MECHANISMS = ("nip_aggregation", "dp_appr_em_values")

# Entries of one DP-APPR draw: the canaries' rows are released a block of canaries at a time.
_ENTRIES_PER_DRAW = 1 << 22


def laplace_records(ledger: Any) -> list[Any]:
    """The ledger's Laplace records this module audits (kind "laplace", ``LAPLACE_MECHANISMS``), in ledger order."""
    return [r for r in ledger.mechanisms if r.kind == "laplace" and r.params.get("mechanism") in LAPLACE_MECHANISMS]


def laplace_release_scores(record: Any, *, m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The audit of one record of ``laplace_records``, its noise read off the record's params."""
    params = record.params
    mechanism = params.get("mechanism")
    if mechanism == "nip_aggregation":
        return nip_aggregation_release_scores(
            laplace_scale_at_epsilon_a=float(params["laplace_scale_at_epsilon_a"]),
            max_degree=int(params["max_degree"]),
            largest_budget_weights=[float(w) for w in params["largest_budget_weights"]],
            m=m,
            seed=seed,
        )
    if mechanism == "dp_appr_em_values":
        return dp_appr_values_release_scores(
            laplace_scale=float(params["laplace_scale"]),
            clip=float(params["clip"]),
            rows=int(params["m"]),
            k=int(params["k"]),
            m=m,
            seed=seed,
        )
    raise ValueError(f"record {record.name!r}: mechanism {mechanism!r} is not one of {list(LAPLACE_MECHANISMS)}")


def _log_ratio(released: torch.Tensor, shift: float, scale: float | torch.Tensor) -> torch.Tensor:
    """log p(y | Laplace(shift, scale)) − log p(y | Laplace(0, scale)) = clamp(2y − shift, ±shift)/scale, entrywise.

    Clamped, every y beyond the shift (or below 0) scores exactly ±shift/scale: |y| − |y − shift| would
    leave there rounding errors that depend on the world's float grid (1 + n·b against n·b), and the
    bound's ordering of tied scores would read them."""
    return (2.0 * released - shift).clamp(min=-shift, max=shift) / scale


def nip_aggregation_release_scores(
    *, laplace_scale_at_epsilon_a: float, max_degree: int, largest_budget_weights: Sequence[float], m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One NIP-GNN NAP release (Eq. 9, ``laplace_sum_aggregate``) over m canary stars; returns (scores [m],
    included [m]), each canary included with probability ½.

    Row u gets Laplace(b/β_u), b = ``laplace_scale_at_epsilon_a`` (2·D_max/ε_A), as the ledger records it. The
    accountant's worst case is a node of the largest budget β_(1) whose D_max neighbours hold the next largest
    (``largest_budget_weights``, the record's): every canary is that star. Canary c has budget β_(1) and L =
    len(weights) − 1 ≤ D_max leaves of budgets β_(2), …, each leaf's feature e₀ and the canary's e₁. An included
    canary is joined to its leaves: its own row is L·e₀ and every leaf's row e₁, a shift of L·β_(1)/b + Σβ/b,
    which is ε_A·``charged_ratio`` at L = D_max; an excluded one is isolated, so those rows are noise alone. The
    score is the Laplace log-likelihood ratio summed over those L + 1 coordinates, at most that shift in size.
    """
    m = check_int(m, "m", minimum=2)
    max_degree = check_int(max_degree, "max_degree", minimum=1)
    scale = check_positive(laplace_scale_at_epsilon_a, "laplace_scale_at_epsilon_a")
    if isinstance(largest_budget_weights, str | bytes) or not isinstance(largest_budget_weights, Sequence):
        raise ValueError(f"largest_budget_weights must be a sequence of numbers, got {largest_budget_weights!r}")
    weights = sorted(
        (check_positive(w, f"largest_budget_weights[{i}]") for i, w in enumerate(largest_budget_weights)),
        reverse=True,
    )[: max_degree + 1]
    if len(weights) < 2:
        raise ValueError(
            f"largest_budget_weights must hold at least 2 weights (a canary and a neighbour), got {len(weights)}"
        )
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    leaves = len(weights) - 1
    block = 1 + leaves  # the canary, its leaves
    canary = torch.arange(m) * block
    leaf = canary[:, None] + 1 + torch.arange(leaves)  # [m, L]
    x = torch.zeros(m * block, 2, dtype=torch.float64)
    x[leaf.flatten(), 0] = 1.0
    x[canary, 1] = 1.0
    beta = torch.tensor(weights, dtype=torch.float64)
    budgets = torch.empty(m * block, dtype=torch.float64)
    budgets[canary] = beta[0]
    budgets[leaf] = beta[1:]
    kept = included.nonzero().flatten()
    hub, spoke = canary[kept].repeat_interleave(leaves), leaf[kept].flatten()
    edges = torch.stack([torch.cat([hub, spoke]), torch.cat([spoke, hub])])
    # ε_u = 2·D_max·β_u/b: the mechanism's scale 2·D_max/ε_u is then the recorded b/β_u.
    released = laplace_sum_aggregate(
        x, edges, epsilons=2.0 * max_degree * budgets / scale, max_degree=max_degree, generator=generator
    )
    own = _log_ratio(released[canary, 0], float(leaves), scale / beta[0])
    heard = _log_ratio(released[leaf, 1], 1.0, scale / beta[1:]).sum(dim=1)
    return own + heard, included


def dp_appr_values_release_scores(
    *, laplace_scale: float, clip: float, rows: int, k: int, m: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """DPAR em1's values (``dp_appr_em``, option em1) over m canaries; returns (scores [m], included [m]), each
    canary included with probability ½.

    The record charges M·K Laplace(``laplace_scale``) queries of sensitivity C2 = ``clip`` (``rows`` = its
    params["m"], M; ``k``, K): one node may move every selected value of every row by C2. Each canary owns M
    rows of K columns, so all K are selected whatever the Gumbel noise and only the values carry it: an
    included canary's entries are C2, an excluded one's 0, and ``dp_appr_em`` adds Laplace(K·C2/ε2) with ε2 =
    K·C2/``laplace_scale`` to each, the recorded scale. The score is the Laplace log-likelihood ratio summed
    over the canary's M·K values, at most M·K·C2/``laplace_scale`` in size. Cost: m·M·K draws.
    """
    m = check_int(m, "m", minimum=2)
    rows = check_int(rows, "rows", minimum=1)
    k = check_int(k, "k", minimum=1)
    scale = check_positive(laplace_scale, "laplace_scale")
    clip = check_positive(clip, "clip")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(m, generator=generator) < 0.5
    per_draw = max(1, _ENTRIES_PER_DRAW // (rows * k))
    scores = []
    for start in range(0, m, per_draw):
        block = included[start : start + per_draw]
        appr = (block.to(torch.float64) * clip)[:, None, None].expand(-1, rows, k).reshape(-1, k)
        released = dp_appr_em(
            appr,
            k=k,
            epsilon=1.0,  # the selection's noise: every column is selected whatever it is
            clip=clip,
            option="em1",
            generator=generator,
            epsilon_value=k * clip / scale,
        )
        scores.append(_log_ratio(released, clip, scale).view(block.numel(), rows * k).sum(dim=1))
    return torch.cat(scores), included
