"""A run's metrics.json against its ledger.json: every privacy figure a table reads must be the ledger's.

``check_run_agreement`` refuses a metrics file that states another ε, δ, level, accountant, target, guarantee,
claim or DP-SGD hyperparameter than its ledger, field by field, comparing with figures recomputed from the
ledger's raw parameters (``Ledger.from_dict``), never with the ones it stores; and a δ not below 1/N for the
dataset's N private units (from its public meta.json). What is compared, and what is not and why, is in
docs/design/accounting.md. Torch-free, like the rest of ``nodedp.accounting``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from nodedp.accounting._checks import VERIFY_RTOL
from nodedp.accounting.ledger import _BUDGET_SLACK, Ledger, current_guarantee

__all__ = ["RunDisagreement", "check_run_agreement", "private_units"]

# Ledger record kind -> (record param, the hyperparameter it states); "epochs" matches any epoch count.
_HYPERPARAMETERS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "subsampled_gaussian": (("clip_norm", "clip_norm"), ("expected_batch_size", "batch_size"), ("epochs", "epochs")),
    "hypergeometric_gaussian": (("batch_size", "batch_size"),),
}
_Refuse = Callable[[str, str], NoReturn]
# Exact inputs written twice (targets, hyperparameters) agree up to float rounding.
_INPUT_RTOL = 1e-9


class RunDisagreement(ValueError):
    """metrics.json states ``field`` other than its ledger; ``detail`` says both values, ``where`` the run."""

    def __init__(self, where: str, field: str, detail: str) -> None:
        super().__init__(f"{where}: {field}: {detail}")
        self.where, self.field, self.detail = where, field, detail


def private_units(meta: Mapping[str, Any], *, level: str) -> int:
    """N of a dataset's public meta.json: its nodes (node level) or edges (edge level, an undirected one once)."""
    if level == "edge":
        edges = int(meta["num_edges"])
        return edges // 2 if meta.get("is_undirected") else edges
    return int(meta["num_nodes"])


def _number(value: Any) -> float | None:
    """A JSON number ("inf" for ∞); None for anything else."""
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _same(stated: Any, expected: float, *, rtol: float) -> bool:
    value = _number(stated)
    if value is None:
        return False
    if math.isinf(value) or math.isinf(expected):
        return value == expected
    return math.isclose(value, expected, rel_tol=rtol, abs_tol=1e-12 if expected == 0 else 0.0)


def check_run_agreement(
    metrics: Mapping[str, Any],
    ledger: Mapping[str, Any],
    *,
    num_private_units: int | None,
    where: str,
) -> None:
    """Raise ``RunDisagreement`` naming ``where``, the field and both values unless ``metrics`` states what
    ``ledger`` gives (docs/design/accounting.md). Run it after ``verify_ledger_dict``: a ledger that does not agree with
    itself is that check's to refuse. ``num_private_units``: N, or None when the dataset's meta.json is out of
    reach (δ < 1/N is then not checked)."""

    def refuse(field: str, detail: str) -> NoReturn:
        raise RunDisagreement(where, field, detail)

    def states(field: str, expected: Any, *, rtol: float | None = None) -> None:
        stated = current_guarantee(metrics.get(field)) if field == "guarantee" else metrics.get(field)
        agree = stated == expected if rtol is None else _same(stated, expected, rtol=rtol)
        if not agree:
            refuse(field, f"metrics.json states {stated!r}, its ledger {expected!r}")

    run = Ledger.from_dict(ledger)
    states("private", run.private)
    states("level", run.level)
    states("accountant", run.accountant)
    states("guarantee", run.guarantee())
    if not run.private:
        for field in ("target_epsilon", "target_delta", "epsilon", "delta", "claim"):
            if metrics.get(field) is not None:
                refuse(
                    field,
                    f"metrics.json states {metrics[field]!r} for a non-private run; its ledger is "
                    "non-private (no target, no mechanisms)",
                )
        return
    states("target_epsilon", run.target_epsilon, rtol=_INPUT_RTOL)
    states("target_delta", run.target_delta, rtol=_INPUT_RTOL)
    epsilon, delta = run.composed()
    states("epsilon", epsilon, rtol=VERIFY_RTOL)
    states("delta", delta, rtol=VERIFY_RTOL)
    if run.claim is None and not epsilon <= run.target_epsilon * (1 + _BUDGET_SLACK):
        refuse("epsilon", f"its ledger's ε = {epsilon!r} exceeds the target ε = {run.target_epsilon!r}")
    if not math.isfinite(epsilon):
        refuse("epsilon", f"a private run's ledger gives ε = {epsilon!r}")
    _check_claim(metrics.get("claim"), run, refuse)
    if num_private_units is not None and not run.target_delta < 1 / num_private_units:
        refuse(
            "target_delta",
            f"δ = {run.target_delta!r} (metrics.json and ledger) is not below 1/N = "
            f"{1 / num_private_units!r} (N = {num_private_units} private units, {run.level} level)",
        )
    _check_hyperparameters(metrics.get("hyperparameters"), ledger, refuse)


def _check_claim(stated: Any, run: Ledger, refuse: _Refuse) -> None:
    if run.claim is None:
        if stated is not None:
            refuse("claim", f"metrics.json states {stated!r}, its ledger None")
        return
    expected = {**run.claim.to_dict(), "actual_epsilon": run.actual_claim_epsilon()}
    if not isinstance(stated, Mapping) or set(stated) != set(expected):
        refuse("claim", f"metrics.json states {stated!r}, its ledger {expected!r}")
    for key, value in expected.items():
        if isinstance(value, str):
            agree = stated[key] == value
        else:
            agree = _same(stated[key], value, rtol=VERIFY_RTOL if key == "actual_epsilon" else _INPUT_RTOL)
        if not agree:
            refuse(f"claim.{key}", f"metrics.json states {stated[key]!r}, its ledger {value!r}")


def _check_hyperparameters(hyperparameters: Any, ledger: Mapping[str, Any], refuse: _Refuse) -> None:
    for record in ledger["mechanisms"]:
        for param, name in _HYPERPARAMETERS.get(record["kind"], ()):
            value = record["params"].get(param)
            field = f"hyperparameters.{name}"
            if not isinstance(hyperparameters, Mapping):
                refuse(
                    field,
                    f"metrics.json states no hyperparameters, its ledger's record {record['name']!r} "
                    f"{param} = {value!r}",
                )
            if name == "epochs":
                stated = {k: v for k, v in hyperparameters.items() if k == "epochs" or k.endswith("_epochs")}
            else:
                stated = {name: hyperparameters.get(name)}
            expected = _number(value)
            if expected is None or not any(_same(v, expected, rtol=_INPUT_RTOL) for v in stated.values()):
                refuse(
                    field, f"metrics.json states {stated!r}, its ledger's record {record['name']!r} {param} = {value!r}"
                )
