"""Every white-box release audit, in one table: which ledger records each covers and how it draws its scores.

A ledger's private releases are its mechanism records. Each entry of ``RELEASES`` picks the records of one kind
of release (NAP, DP-SGD, DP-APPR's selections and values, NIP-GNN's Laplace aggregation, edge and label
randomized response, EdgeRand's edge RR) and draws scores for canaries that reach the sensitivity the record's
accountant assumes, with the record's own noise: ``nodedp.audit.nap``, ``dpsgd``, ``dp_appr``, ``laplace``,
``randomized_response``. ``covering`` says which entry audits a record; a test plans every registered private
method and fails for a record no entry covers. Design: docs/design/audit-internals.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from nodedp.audit.dp_appr import dp_appr_record, dp_appr_release_scores
from nodedp.audit.dpsgd import (
    FIXED_SIZE_KINDS,
    MIXTURE_KINDS,
    dpsgd_records,
    dpsgd_release_scores,
    fixed_size_release_scores,
    mixture_law,
    mixture_release_scores,
)
from nodedp.audit.laplace import laplace_records, laplace_release_scores
from nodedp.audit.nap import nap_edge_record, nap_edge_release_scores, nap_record, nap_release_scores
from nodedp.audit.randomized_response import randomized_response_records, randomized_response_release_scores

__all__ = ["RELEASES", "RELEASE_RUNS", "Release", "ReleaseDraw", "covering"]

# Independent simulated runs (or independent synthetic canaries) of a release whose bound is Clopper–Pearson's.
RELEASE_RUNS = 20000

Scores = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class ReleaseDraw:
    """What drawing one release audit's scores reads: the run's ledger, the δ of its claim, the confidence and the
    seed."""

    ledger: Any
    delta: float
    confidence: float
    seed: int


@dataclass(frozen=True)
class Release:
    """One kind of release: ``records(ledger)`` the records it audits (in ledger order), ``scores(draw, record)``
    (scores, inclusion bits) of its canaries; ``bound`` "one-run" (canaries share one release: the one-run
    bound) or "runs" (independent trials: the Clopper–Pearson threshold bound)."""

    name: str  # a key of the audit JSON's "releases"
    label: str  # the table's row: "<method> · <label>"
    bound: str
    records: Callable[[Any], list[Any]]
    scores: Callable[[ReleaseDraw, Any], Scores]


def _first(pick: Callable[[Any], Any | None]) -> Callable[[Any], list[Any]]:
    return lambda ledger: [r for r in (pick(ledger),) if r is not None]


def _mechanism(records: Callable[[Any], list[Any]], mechanism: str) -> Callable[[Any], list[Any]]:
    return lambda ledger: [r for r in records(ledger) if r.params.get("mechanism") == mechanism][:1]


def _nap(draw: ReleaseDraw, record: Any) -> Scores:
    params = record.params
    # Every canary's block of nodes is its own and every entry's noise independent: independent trials.
    return nap_release_scores(
        noise_std=float(params["noise_std"]),
        row_clip=float(params["row_clip"]),
        max_degree=int(params["max_degree"]),
        m=RELEASE_RUNS,
        seed=draw.seed,
    )


def _nap_edge(draw: ReleaseDraw, record: Any) -> Scores:
    params = record.params
    return nap_edge_release_scores(
        noise_std=float(params["noise_std"]),
        row_clip=params.get("row_clip"),
        undirected=bool(params.get("undirected", False)),
        m=RELEASE_RUNS,
        seed=draw.seed,
    )


def _dpsgd(draw: ReleaseDraw, record: Any) -> Scores:
    params = record.params
    z = float(params["noise_std"]) / float(params["clip_norm"])
    if record.kind in MIXTURE_KINDS:
        shifts, weights, symmetric = mixture_law(record)
        return mixture_release_scores(
            shifts=shifts,
            weights=weights,
            symmetric=symmetric,
            noise_multiplier=z,
            steps=int(params["steps"]),
            runs=RELEASE_RUNS,
            seed=draw.seed,
        )
    if record.kind in FIXED_SIZE_KINDS:
        return fixed_size_release_scores(
            noise_multiplier=z,
            num_examples=int(params["num_examples"]),
            batch_size=int(params["batch_size"]),
            steps=int(params["steps"]),
            max_occurrences=int(params["max_occurrences"]),
            runs=RELEASE_RUNS,
            seed=draw.seed,
        )
    return dpsgd_release_scores(
        noise_multiplier=z,
        sampling_rate=float(params["sampling_rate"]),
        steps=int(params["steps"]),
        node_sample_rate=draw.ledger.node_sample_rate,
        max_occurrences=int(params.get("max_occurrences", 1)),
        runs=RELEASE_RUNS,
        seed=draw.seed,
    )


def _dp_appr(draw: ReleaseDraw, record: Any) -> Scores:
    params = record.params
    noise = {"gumbel_scale": params["gumbel_scale"]} if "gumbel_scale" in params else {"noise_std": params["noise_std"]}
    return dp_appr_release_scores(
        k=int(params["k"]),
        m=int(params["m"]),
        clip=float(params["clip"]),
        node_sample_rate=draw.ledger.node_sample_rate,
        runs=RELEASE_RUNS,
        seed=draw.seed,
        **noise,
    )


def _laplace(draw: ReleaseDraw, record: Any) -> Scores:
    return laplace_release_scores(record, m=RELEASE_RUNS, seed=draw.seed)


def _randomized_response(draw: ReleaseDraw, record: Any) -> Scores:
    return randomized_response_release_scores(record, m=RELEASE_RUNS, seed=draw.seed)


RELEASES: tuple[Release, ...] = (
    Release("nap", "NAP release", "runs", _first(nap_record), _nap),
    Release("nap-edge", "NAP release", "runs", _first(nap_edge_record), _nap_edge),
    Release("dpsgd", "DP-SGD release", "runs", dpsgd_records, _dpsgd),
    Release("dp-appr", "DP-APPR release", "runs", _first(dp_appr_record), _dp_appr),
    Release(
        "dp-appr-values", "DP-APPR values release", "runs", _mechanism(laplace_records, "dp_appr_em_values"), _laplace
    ),
    Release(
        "nip-aggregation",
        "Laplace aggregation release",
        "runs",
        _mechanism(laplace_records, "nip_aggregation"),
        _laplace,
    ),
    Release(
        "nip-edges",
        "edge RR release",
        "runs",
        _mechanism(randomized_response_records, "nip_edge_rr"),
        _randomized_response,
    ),
    Release(
        "nip-labels",
        "label RR release",
        "runs",
        _mechanism(randomized_response_records, "nip_label_rr"),
        _randomized_response,
    ),
    Release(
        "edge-rr", "edge RR release", "runs", _mechanism(randomized_response_records, "edge_rr"), _randomized_response
    ),
)


def covering(ledger: Any, record: Any) -> Release | None:
    """The release audit that audits ``record`` of ``ledger``, or None where none does."""
    for release in RELEASES:
        if any(r is record for r in release.records(ledger)):
            return release
    return None
