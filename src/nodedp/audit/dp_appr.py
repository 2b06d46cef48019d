"""White-box audit of DPAR's DP-APPR release: the noise a run's ledger records, over many independent runs.

DP-APPR (``nodedp.mechanisms.dp_appr``) releases M rows, each the top K of a noised, clipped APPR vector: the
exponential mechanism by Gumbel noise (record kind "gumbel_topk", ``dp_appr_em_select``; em0's and em1's
selections) or Gaussian rows (``dp_appr_gm``). The canary moves every one of the M rows as far as clipping allows
(what the suite's accountant charges a node), drawn through the suite's own ``dp_appr_em`` / ``dp_appr_gm`` with
the recorded noise, K, M and clip, on a node sample of rate q'. The runs are independent (one canary each), so the
Clopper–Pearson threshold bound is a valid lower bound on the record's ε at any δ. Canary design and why it
reaches the accountant's sensitivity: docs/design/audit-internals.md, section ``nodedp.audit.releases``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from nodedp.accounting._checks import check_int, check_positive
from nodedp.accounting.dpar import gm_sensitivity
from nodedp.mechanisms.dp_appr import dp_appr_em, dp_appr_gm

__all__ = ["dp_appr_record", "dp_appr_release_scores"]

_EM_PARAMS = frozenset({"gumbel_scale", "k", "m", "clip"})
_GM_PARAMS = frozenset({"noise_std", "k", "m", "clip"})
# Rows released per call of the mechanism: bounds the memory of a chunk of runs (each row is 2K float64s).
_CHUNK_ROWS = 1 << 20


def dp_appr_record(ledger: Any) -> Any | None:
    """The ledger's first DP-APPR record: the EM selection (kind "gumbel_topk", ``dp_appr_em_select``) or the GM
    rows (``params["mechanism"] == "dp_appr_gm"``), with the parameters the audit reads; None without one."""
    for record in ledger.mechanisms:
        params = record.params
        if record.kind == "gumbel_topk" and set(params) >= _EM_PARAMS:
            return record
        if params.get("mechanism") == "dp_appr_gm" and set(params) >= _GM_PARAMS:
            return record
    return None


def _check_noise(gumbel_scale: Any, noise_std: Any, clip: float) -> None:
    if (gumbel_scale is None) == (noise_std is None):
        raise ValueError(
            "give exactly one of gumbel_scale (an EM selection record) and noise_std (a GM record), got "
            f"gumbel_scale={gumbel_scale!r}, noise_std={noise_std!r}"
        )
    if gumbel_scale is not None and not math.isfinite(clip / check_positive(gumbel_scale, "gumbel_scale")):
        raise ValueError(f"gumbel_scale = {gumbel_scale!r} is too small for clip = {clip!r}: C2/scale overflows")
    if noise_std is not None:
        check_positive(noise_std, "noise_std")


def dp_appr_release_scores(
    *,
    k: int,
    m: int,
    clip: float,
    node_sample_rate: float,
    gumbel_scale: float | None = None,
    noise_std: float | None = None,
    runs: int,
    seed: int,
) -> tuple[Tensor, Tensor]:
    """``runs`` independent runs of the recorded DP-APPR release against the canary of the module docstring, each
    with the canary in with probability ½; returns (scores [runs], included [runs] bool).

    From the record's params: ``k``, ``m``, ``clip`` and either ``gumbel_scale`` (a "gumbel_topk" selection
    record: Gumbel(C2/ε) noise) or ``noise_std`` (a ``dp_appr_gm`` record). ``node_sample_rate`` is the ledger's
    q': there is no default, since auditing at 1 a release the ledger amplifies by q' < 1 would overstate what
    it can leak. A score is the release's log-likelihood ratio, canary in the sample against out: the optimal
    statistic, and monotone in the ratio of the node-sampled mixture too. Cost: runs·M·2K Gumbel or runs·M·K
    Gaussian draws, in chunks."""
    k, m, runs = check_int(k, "k", minimum=1), check_int(m, "m", minimum=1), check_int(runs, "runs", minimum=2)
    seed = check_int(seed, "seed", minimum=0)
    clip = check_positive(clip, "clip")
    _check_noise(gumbel_scale, noise_std, clip)
    if isinstance(node_sample_rate, bool) or not isinstance(node_sample_rate, int | float):
        raise ValueError(f"node_sample_rate must be a number in (0, 1], got {node_sample_rate!r}")
    if not 0 < node_sample_rate <= 1:
        raise ValueError(f"node_sample_rate must be in (0, 1], got {node_sample_rate!r}")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(runs, generator=generator) < 0.5
    present = included & (torch.rand(runs, generator=generator) < node_sample_rate)
    per_call = max(1, _CHUNK_ROWS // m)
    scores = []
    for start in range(0, runs, per_call):
        rows = present[start : start + per_call].repeat_interleave(m)  # the chunk's runs, M rows each
        if gumbel_scale is not None:
            row_llr = _em_rows(rows, k=k, clip=clip, gumbel_scale=float(gumbel_scale), generator=generator)
        else:
            row_llr = _gm_rows(rows, k=k, clip=clip, noise_std=float(noise_std), generator=generator)  # type: ignore[arg-type]
        scores.append(row_llr.view(-1, m).sum(dim=1))
    return torch.cat(scores), included


def _canary_rows(present: Tensor, *, with_canary: Tensor, without: Tensor) -> Tensor:
    """[rows, width] scores: the row ``with_canary`` where the canary is in the sample, ``without`` elsewhere."""
    return torch.where(present.unsqueeze(1), with_canary, without)


def _em_rows(present: Tensor, *, k: int, clip: float, gumbel_scale: float, generator: torch.Generator) -> Tensor:
    """Per row: DP-APPR-EM's selection over 2K columns, the first K at C2 with the canary (0 without), the last K
    the reverse; the log-likelihood ratio of the selected set, by the number of the first K it holds."""
    epsilon = clip / gumbel_scale  # dp_appr_em draws Gumbel(clip/epsilon): exactly the recorded scale
    high = torch.cat([torch.full((k,), clip, dtype=torch.float64), torch.zeros(k, dtype=torch.float64)])
    appr = _canary_rows(present, with_canary=high, without=high.flip(0))
    released = dp_appr_em(appr, k=k, epsilon=epsilon, clip=clip, option="em0", generator=generator)
    hits = (released[:, :k] != 0).sum(dim=1)  # em0 releases 1/K at each selected column
    return _em_llr_table(k=k, epsilon=epsilon)[hits]


def _em_llr_table(*, k: int, epsilon: float) -> Tensor:
    """log P_in(x) − log P_out(x), x = 0..K the selected columns among the first K: Gumbel top-K is K peeling
    draws ∝ exp(score/scale) (Plackett–Luce); with the canary the first K weigh e^ε each, the last K 1. A set's
    chance depends on x alone (the K columns of each half are exchangeable), and P_out(x) = P_in(K − x)."""
    log_p = torch.full((k + 1,), -math.inf, dtype=torch.float64)
    log_p[0] = 0.0
    for step in range(k):
        picked = torch.arange(step + 1, dtype=torch.float64)  # first-half columns drawn so far
        first_left, second_left = k - picked, k - (step - picked)
        # P(next draw from the first half) = (K − a)·e^ε / ((K − a)·e^ε + (K − step + a)); step < K: both > 0.
        logit = epsilon + torch.log(first_left) - torch.log(second_left)
        grown = log_p[: step + 1] + torch.nn.functional.logsigmoid(logit)
        stayed = log_p[: step + 1] + torch.nn.functional.logsigmoid(-logit)
        log_p[: step + 2] = torch.logaddexp(
            torch.cat([stayed, log_p.new_full((1,), -math.inf)]), torch.cat([log_p.new_full((1,), -math.inf), grown])
        )
    return log_p - log_p.flip(0)


def _gm_rows(present: Tensor, *, k: int, clip: float, noise_std: float, generator: torch.Generator) -> Tensor:
    """Per row: DP-APPR-GM over max(K, 2) columns, C1·e₀ with the canary and C1·e₁ without, noise std
    ``noise_std``; the log-likelihood ratio of the released top K (all entries when K ≥ 2)."""
    width = max(k, 2)
    high = torch.zeros(width, dtype=torch.float64)
    high[0] = clip
    appr = _canary_rows(present, with_canary=high, without=high.roll(1))  # C1·e₀ in, C1·e₁ out
    multiplier = noise_std / gm_sensitivity(clip=clip)  # dp_appr_gm's std is multiplier·√2·C1: the recorded std
    released = dp_appr_gm(appr, k=k, noise_multiplier=multiplier, clip=clip, generator=generator)
    if k >= 2:  # every entry released: the Gaussian shift's log-likelihood ratio
        return clip * (released[:, 0] - released[:, 1]) / noise_std**2
    # K = 1: one entry, the larger of two; its column i and value v. With the canary column 0 has mean C1, so
    # for i = 0 the ratio is φ((v − C1)/σ)·Φ(v/σ) / (φ(v/σ)·Φ((v − C1)/σ)), and i = 1 is its negative.
    first = released[:, 0] != 0
    value = released.sum(dim=1) / noise_std
    shift = clip / noise_std
    ratio = shift * (value - shift / 2) + torch.special.log_ndtr(value) - torch.special.log_ndtr(value - shift)
    return torch.where(first, ratio, -ratio)
