"""Pure tensor mechanisms: noise, clipping, NAP aggregation perturbation, randomized response on edges,
DP-APPR, and NIP-GNN's building blocks."""

from __future__ import annotations

from nodedp.mechanisms.clipping import clip_factors, clip_rows
from nodedp.mechanisms.dp_appr import (
    cap_row_occurrences,
    clip_appr_entries,
    clip_appr_rows,
    clip_columns_l1,
    dp_appr_em,
    dp_appr_gm,
)
from nodedp.mechanisms.edge_rr import flip_probability, randomize_adjacency
from nodedp.mechanisms.nap import NAP, nap_aggregate, nap_sensitivity
from nodedp.mechanisms.nip import (
    SAMPLING_RULES,
    debiased_degree,
    degree_preserving_randomization,
    influence_ranks,
    laplace_sum_aggregate,
    nip_budget_weights,
    paper_sampling_probability,
    randomize_labels,
    sample_randomized_edges,
    sum_aggregate,
    theorem3_ratio,
    unbiased_sampling_probability,
    worst_case_theorem3_ratio,
)
from nodedp.mechanisms.noise import gaussian_noise_like, laplace_noise

__all__ = [
    "NAP",
    "SAMPLING_RULES",
    "cap_row_occurrences",
    "clip_appr_entries",
    "clip_appr_rows",
    "clip_columns_l1",
    "clip_factors",
    "clip_rows",
    "debiased_degree",
    "degree_preserving_randomization",
    "dp_appr_em",
    "dp_appr_gm",
    "flip_probability",
    "gaussian_noise_like",
    "influence_ranks",
    "laplace_noise",
    "laplace_sum_aggregate",
    "nap_aggregate",
    "nap_sensitivity",
    "nip_budget_weights",
    "paper_sampling_probability",
    "randomize_adjacency",
    "randomize_labels",
    "sample_randomized_edges",
    "sum_aggregate",
    "theorem3_ratio",
    "unbiased_sampling_probability",
    "worst_case_theorem3_ratio",
]
