"""Pure tensor mechanisms: noise, clipping, NAP aggregation perturbation, randomized response on edges."""

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
from nodedp.mechanisms.noise import gaussian_noise_like, laplace_noise

__all__ = [
    "NAP",
    "cap_row_occurrences",
    "clip_appr_entries",
    "clip_appr_rows",
    "clip_columns_l1",
    "clip_factors",
    "clip_rows",
    "dp_appr_em",
    "dp_appr_gm",
    "flip_probability",
    "gaussian_noise_like",
    "laplace_noise",
    "nap_aggregate",
    "nap_sensitivity",
    "randomize_adjacency",
]
