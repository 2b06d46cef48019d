"""White-box audit of a DP-SGD release: the noise a run's ledger records, against a Dirac canary, over many runs.

DP-SGD's guarantee covers the whole transcript of noisy gradient sums. The strongest canary for it is a node
whose clipped gradient is the same vector of norm C at every step it is sampled (a Dirac canary: it moves one
coordinate nobody else touches); the optimal statistic is then that coordinate summed over the steps. A run
of the recorded mechanism, with the canary in or out:

* the node sample: a run on a Poisson node sample of rate q' (the ledger's ``node_sample_rate``; DPAR's q',
  1 elsewhere) holds the canary with probability q' when it is in;
* each of the T steps draws the canary with the record's sampling rate γ (Poisson batches) and adds
  N(0, σ²) to the coordinate, σ the record's noise std;
* score = C·(steps that drew it) + Σ noise, in units of σ: count·C/σ + √T·N(0, 1).

The runs are independent (one canary each), so the Clopper–Pearson threshold bound
(``nodedp.audit.statistics.clopper_pearson_epsilon``, Bonferroni over every threshold and both rates) is a
valid lower bound on the ε of the recorded mechanism, and many runs cost little: the runs are drawn, not
trained. This audits the accounting, not the training code: the noise and sampling rates are the ledger's, the
canary's shift is the clip norm C of one example (an added node's own example; records that charge more per
node, 2·C per occurrence, are audited at C, a weaker canary). DPAR's reference mode, which claims q'·ε for
a DP-SGD part sized at ε on the sample at δ/q', is refuted by it at its claimed δ (where every one-run bound is
0: ``best_canary_count``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["DPSGD_KINDS", "dpsgd_record", "dpsgd_release_scores"]

# Ledger record kinds of Poisson-sampled DP-SGD with one example per node (own example at least).
DPSGD_KINDS = ("subsampled_gaussian", "poisson_occurrence_gaussian")


def dpsgd_record(ledger: Any) -> Any | None:
    """The ledger's first Poisson-sampled DP-SGD record (``DPSGD_KINDS``), or None."""
    for record in ledger.mechanisms:
        if record.kind in DPSGD_KINDS and {"noise_std", "clip_norm", "sampling_rate", "steps"} <= set(record.params):
            return record
    return None


def dpsgd_release_scores(
    *, noise_multiplier: float, sampling_rate: float, steps: int, node_sample_rate: float = 1.0, runs: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``runs`` independent runs of the recorded DP-SGD against a Dirac canary (module docstring), each with
    the canary in with probability ½; returns (scores [runs], in [runs]). ``noise_multiplier`` = σ/C."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    for name, rate in (("sampling_rate", sampling_rate), ("node_sample_rate", node_sample_rate)):
        if not 0 < rate <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {rate!r}")
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    generator = torch.Generator().manual_seed(seed)
    included = torch.rand(runs, generator=generator) < 0.5
    sampled = included & (torch.rand(runs, generator=generator) < node_sample_rate)
    drawn = torch.binomial(
        torch.full((runs,), float(steps), dtype=torch.float64),
        torch.full((runs,), float(sampling_rate), dtype=torch.float64),
        generator=generator,
    )
    noise = torch.randn(runs, generator=generator, dtype=torch.float64) * math.sqrt(steps)
    return torch.where(sampled, drawn, torch.zeros_like(drawn)) / noise_multiplier + noise, included
