"""The parameters a run's releases were drawn with, read off its noise trace (``nodedp.mechanisms.trace``).

The white-box release audits draw a release with its ledger record's parameters unless the run's trace says how
the run drew it: then with the executed ones, so that a run adding less noise than its ledger states (a std
divided between the plan and the sampler) is audited as it ran and caught at the ledger's ε. What is read:

* a node- or edge-level NAP record: the smallest std among the run's NAP draws at that level, with their R and D;
* the i-th DP-SGD record (ledger order): the run's i-th DP-SGD stage (the i-th training loop that drew noise),
  its smallest std, its clip norm C (so σ/C is the executed noise multiplier; where the record clips each example
  to ``example_clip_norm``, the applied clip norm times C / example_clip_norm) and its step count.

A run whose trace and ledger disagree in kind or number (a DP-SGD stage or a NAP its ledger does not record) is
refused: its ledger does not describe it. Records of other kinds (DP-APPR, Laplace, randomized response) are
drawn with the record's parameters; their draw sites are not traced.
"""

from __future__ import annotations

from typing import Any

from nodedp.audit.dpsgd import dpsgd_records
from nodedp.audit.nap import nap_edge_record, nap_record

__all__ = ["executed_params"]


def executed_params(ledger: Any, trace: Any) -> dict[str, dict[str, Any]]:
    """{record name: the parameters the run drew it with} for every NAP and DP-SGD record ``trace`` (a
    ``NoiseTrace`` of the run) covers; raises ValueError where the trace holds draws the ledger does not record."""
    executed: dict[str, dict[str, Any]] = {}
    for level, record in (("node", nap_record(ledger)), ("edge", nap_edge_record(ledger))):
        draws = [d for stage in trace.stages("nap") for d in stage if d.params.get("level") == level]
        if not draws:
            continue
        if record is None:
            raise ValueError(f"the run drew {level}-level NAP noise that its ledger does not record")
        least = min(draws, key=lambda d: d.std)
        executed[record.name] = {"noise_std": least.std, **_sensitivity_params(least.params, level)}
    stages, records = trace.stages("dp-sgd"), dpsgd_records(ledger)
    if stages and len(stages) != len(records):
        raise ValueError(
            f"the run trained {len(stages)} DP-SGD stage(s), its ledger records {len(records)} "
            f"({[r.name for r in records]}): the ledger does not describe the run"
        )
    for record, stage in zip(records, stages, strict=False):
        least = min(stage, key=lambda d: d.std)
        executed[record.name] = {
            "noise_std": least.std,
            "clip_norm": float(least.params["clip_norm"]) * _clip_units(record.params),
            "steps": sum(d.count for d in stage),
        }
    return executed


def _clip_units(params: Any) -> float:
    """The record's C per unit of the clip norm the loop applied: 1, or C / ``example_clip_norm`` where a record
    clips each example to a fraction of its C (HeterPoisson: C/2, its mixture's shifts in units of C)."""
    example = params.get("example_clip_norm")
    return 1.0 if example is None else float(params["clip_norm"]) / float(example)


def _sensitivity_params(params: Any, level: str) -> dict[str, Any]:
    if level == "node":
        return {"row_clip": float(params["row_clip"]), "max_degree": int(params["max_degree"])}
    clip = params["row_clip"]
    return {"row_clip": None if clip is None or clip == float("inf") else float(clip)}  # the record's None: no clip
