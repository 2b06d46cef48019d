"""DP-SGD planning shared by every method that trains with Poisson-sampled DP-SGD.

Turns (examples, batch size, epochs, clip norm, target) into the sampling
rate, steps and calibrated noise, plus the ledger record that states them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from nodedp.accounting import (
    MechanismRecord,
    calibrate_dpsgd,
    subsampled_gaussian_event,
)


@dataclass(frozen=True)
class DpSgdPlan:
    """A calibrated DP-SGD run: its ledger record holds every number the loop uses."""

    expected_batch_size: float
    record: MechanismRecord

    @property
    def sampling_rate(self) -> float:
        return self.record.params["sampling_rate"]

    @property
    def steps(self) -> int:
        return self.record.params["steps"]

    def privacy_config(self):
        return privacy_from_record(self.record, expected_batch_size=self.expected_batch_size)


def privacy_from_record(
    record: MechanismRecord, *, expected_batch_size: float, layer_clip_norms: Mapping[str, float] | None = None
):
    """The training loop's DP-SGD settings read off the ledger record that charges them.

    The loop then draws exactly the record's noise std, clips to its C and
    refuses to take another number of steps than the record's: what the run
    does is what its ledger says, by construction.
    """
    from nodedp.train import PrivacyConfig

    params = record.params
    return PrivacyConfig(
        clip_norm=params["clip_norm"],
        noise_std=params["noise_std"],
        expected_batch_size=expected_batch_size,
        layer_clip_norms=layer_clip_norms,
        steps=params["steps"],
    )


def dpsgd_record(
    *,
    name: str,
    touches: tuple[str, ...],
    noise_multiplier: float,
    clip_norm: float,
    sampling_rate: float,
    num_examples: int,
    batch_size: int,
    steps: int,
    epochs: float,
    sensitivity_reason: str,
) -> MechanismRecord:
    """The ledger record of ``steps`` Poisson-sampled DP-SGD steps, one example per private unit (sensitivity C)."""
    return MechanismRecord(
        name=name,
        kind="subsampled_gaussian",
        touches=touches,
        params={
            "noise_multiplier": noise_multiplier,
            "noise_std": noise_multiplier * clip_norm,
            "clip_norm": clip_norm,
            "sampling": "poisson",
            "sampling_rate": sampling_rate,
            "num_examples": num_examples,
            "expected_batch_size": batch_size,
            "steps": steps,
            "epochs": epochs,
        },
        sensitivity=clip_norm,
        sensitivity_reason=sensitivity_reason,
        dp_event=subsampled_gaussian_event(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps),
    )


def plan_dpsgd(
    *,
    name: str,
    num_examples: int,
    batch_size: int,
    epochs: float,
    clip_norm: float,
    target_epsilon: float,
    target_delta: float,
    accountant: str,
    touches: tuple[str, ...],
    sensitivity_reason: str,
) -> DpSgdPlan:
    """Calibrate Poisson-sampled DP-SGD to (target_epsilon, target_delta).

    Valid where one private unit is in at most one example: adding or removing
    it changes the clipped gradient sum by at most C (methods whose examples
    overlap, like DP-GNN's subgraphs, need their own multi-occurrence analysis).
    """
    if num_examples < 1:
        raise ValueError(f"{name}: no training examples")
    if not 1 <= batch_size <= num_examples:
        raise ValueError(f"{name}: batch_size {batch_size} must be in [1, {num_examples}] (training examples)")
    if not (epochs > 0 and clip_norm > 0):
        raise ValueError(f"{name}: epochs ({epochs}) and clip_norm ({clip_norm}) must be > 0")
    q = batch_size / num_examples
    steps = max(1, math.ceil(epochs / q))
    sigma = calibrate_dpsgd(
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        sampling_rate=q,
        steps=steps,
        accountant=accountant,
    )
    record = dpsgd_record(
        name=name,
        touches=touches,
        noise_multiplier=sigma,
        clip_norm=clip_norm,
        sampling_rate=q,
        num_examples=num_examples,
        batch_size=batch_size,
        steps=steps,
        epochs=epochs,
        sensitivity_reason=sensitivity_reason,
    )
    return DpSgdPlan(expected_batch_size=float(batch_size), record=record)
