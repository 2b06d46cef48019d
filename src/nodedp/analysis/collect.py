"""Collect finished runs into one polars frame, refusing any run that breaks the privacy contract."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from nodedp.io import atomic_write

LEDGER_NAME = "ledger.json"

RUNS_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(),
    "method": pl.String(),
    # The registered method a run name resolves to (a variant's `base`; `m` of `m@paper`); null for runs
    # recorded before metrics.json carried it.
    "base_method": pl.String(),
    "seed": pl.Int64(),
    "private": pl.Boolean(),
    "target_epsilon": pl.Float64(),
    "epsilon": pl.Float64(),
    "delta": pl.Float64(),
    "level": pl.String(),
    "fully_accounted": pl.Boolean(),  # false: the run read private data without charge (see its ledger)
    # false: its plan was not re-derived from public inputs where it was collected (no meta.json or split beside
    # the runs, or its plugin not loaded); tables mark it (UNVERIFIED_MARK). Null for tables collected before.
    "replanned": pl.Boolean(),
    "guarantee": pl.String(),  # the ledger's guarantee class (nodedp.accounting.GUARANTEE_CLASSES)
    # Reference mode (`<method>@paper`): target_epsilon is the paper's claimed ε, epsilon the actual one at the
    # suite's δ; claimed_delta is the paper's δ and claim_actual_epsilon the actual ε there. Null elsewhere.
    "reference": pl.Boolean(),
    "claimed_delta": pl.Float64(),
    "claim_actual_epsilon": pl.Float64(),
    "test_accuracy": pl.Float64(),
    "test_macro_f1": pl.Float64(),
    # How many classes the run predicts on the test set (1: a constant predictor), and the test accuracy of
    # always predicting the training set's most frequent class (a non-private reference line); null for runs
    # recorded before metrics.json carried them.
    "test_predicted_classes": pl.Int64(),
    "test_majority_accuracy": pl.Float64(),
    "val_accuracy": pl.Float64(),
    "val_macro_f1": pl.Float64(),
    "train_s": pl.Float64(),
    "total_s": pl.Float64(),
    # The run's hyperparameters as JSON with sorted keys (one string column whatever the method), so figures can
    # plot against what a variant changes (nodedp.analysis.sweep.plot_sweep); null where metrics.json lacks them.
    "hyperparameters": pl.String(),
    "git_commit": pl.String(),
}

# Dotted paths into metrics.json that every run must carry.
_REQUIRED_KEYS = (
    "dataset",
    "method",
    "seed",
    "private",
    "target_epsilon",
    "target_delta",
    "epsilon",
    "delta",
    "level",
    "test.accuracy",
    "test.macro_f1",
    "val.accuracy",
    "val.macro_f1",
    "timings.total_s",
    "timings.train_s",
    "version.git_commit",
)

RUN_KEY = ("dataset", "method", "target_epsilon", "seed")


class InvalidRunError(ValueError):
    """A run that must not enter the results; ``run_dir`` names it."""

    def __init__(self, run_dir: Path, reason: str) -> None:
        super().__init__(f"refusing run {run_dir}: {reason}")
        self.run_dir = run_dir


def _lookup(metrics: dict[str, Any], dotted: str) -> Any:
    value: Any = metrics
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _read_json(path: Path, run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InvalidRunError(run_dir, f"{path.name} is missing") from None
    except json.JSONDecodeError as err:
        raise InvalidRunError(run_dir, f"{path.name} is not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise InvalidRunError(run_dir, f"{path.name} holds {type(data).__name__}, expected an object")
    return data


def _workspace_root(run_dir: Path) -> Path | None:
    """The workspace a run folder lies in, as the workflow lays it out (``<root>/results/runs/<dataset>/<method>/
    eps~<ε>/seed~<s>``), or None outside that layout."""
    parents = run_dir.absolute().parents  # not resolved: a results folder may be a link to other storage
    if len(parents) < 6 or (parents[4].name, parents[3].name) != ("results", "runs"):
        return None
    return parents[5]


def replan_run(run_dir: Path, metrics: dict[str, Any]) -> bool:
    """Re-derive the run's plan from public inputs and compare (``nodedp.verify``), where the run lies in a
    workspace that holds its dataset's meta.json (as the workflow's do); refuse it, naming the field, if its ledger
    is not that plan. Whether it was re-derived: False for a run folder outside a workspace, a workspace without
    the dataset's meta.json or the seed's split, or a method whose plugin is not loaded (tables mark such runs)."""
    from nodedp.verify import split_path, verify_run

    root = _workspace_root(run_dir)
    if root is None or not (root / "resources" / "graphs" / str(metrics["dataset"]) / "meta.json").is_file():
        return False
    try:
        if not split_path(root, str(metrics["dataset"]), int(metrics["seed"])).is_file():
            return False
    except (KeyError, TypeError, ValueError):
        pass  # an unknown dataset or a malformed seed: verify_run refuses it, naming the field
    check = verify_run(run_dir, workspace=root)
    if check.refusals:
        raise InvalidRunError(
            run_dir,
            "its ledger and metrics are not the plan re-derived from public inputs "
            f"(`python -m nodedp verify`): {'; '.join(map(str, check.refusals[:3]))}",
        )
    return check.replanned


def _num_private_units(run_dir: Path, metrics: dict[str, Any]) -> int | None:
    """N of the run's dataset from its public meta.json, found as the workflow lays a workspace out
    (``<root>/results/runs/<dataset>/<method>/eps~<ε>/seed~<s>`` beside ``<root>/resources/graphs/<dataset>``);
    None for a run outside that layout or a workspace without the graph (δ < 1/N is then left unchecked)."""
    root = _workspace_root(run_dir)
    if root is None:
        return None
    meta_path = root / "resources" / "graphs" / str(metrics["dataset"]) / "meta.json"
    if not meta_path.is_file():
        return None
    from nodedp.accounting.agreement import private_units

    meta = _read_json(meta_path, run_dir)
    try:
        return private_units(meta, level=str(metrics["level"]))
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidRunError(run_dir, f"{meta_path} gives no number of private units ({err!r})") from None


def _run_row(
    metrics_path: Path,
    verify_ledger: Callable[[dict], float],
    check_agreement: Callable[..., None],
    replan: Callable[[Path, dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """One run's row, after its checks: the privacy fields against the ledger (``_privacy``), metrics.json against
    the ledger (``_agreement``), and, given ``replan``, the ledger against the plan re-derived from public inputs."""
    run_dir = metrics_path.parent
    metrics = _read_json(metrics_path, run_dir)
    missing = []
    for key in _REQUIRED_KEYS:
        try:
            _lookup(metrics, key)
        except KeyError:
            missing.append(key)
    if missing:
        raise InvalidRunError(run_dir, f"metrics.json lacks {missing}")
    ledger = _read_json(run_dir / LEDGER_NAME, run_dir)
    private = metrics["private"]
    if not isinstance(private, bool):
        raise InvalidRunError(run_dir, f"'private' must be true or false, got {private!r}")
    if private:
        target, spent, guarantee, claim = _privacy(run_dir, metrics, ledger, verify_ledger)
    else:
        # Non-private baselines spend ε = ∞ by definition and have an empty ledger.
        target, spent, guarantee, claim = math.inf, math.inf, "none", None
    _agreement(run_dir, metrics, ledger, check_agreement)
    identified = _identity(run_dir, metrics, ledger)
    # the plan re-derived from public inputs, as `nodedp verify` does
    replanned = identified and replan is not None and replan(run_dir, metrics)
    row = _row(run_dir, metrics, ledger, target=target, spent=spent, guarantee=guarantee, claim=claim)
    return {**row, "replanned": bool(replanned)}


def _identity(run_dir: Path, metrics: dict, ledger: dict) -> bool:
    """The run is what its name says (``nodedp.verify.check_run_identity``), checked wherever it lies. False where
    it cannot be checked, so neither can its plan (the row is marked): a run recorded before metrics.json carried
    its base method, or whose method's plugin is not loaded."""
    from nodedp.verify import UnregisteredMethod, check_run_identity

    if metrics.get("base_method") is None:
        return False
    try:
        check_run_identity(metrics, ledger)
    except UnregisteredMethod:
        return False
    except ValueError as err:
        raise InvalidRunError(run_dir, str(err)) from None
    return True


def _privacy(
    run_dir: Path, metrics: dict, ledger: dict, verify_ledger: Callable[[dict], float]
) -> tuple[float, float, str, dict | None]:
    """A private run's (target ε, spent ε, guarantee class, claim), checked against its verified ledger."""
    target, spent = metrics["target_epsilon"], metrics["epsilon"]
    if target is None or spent is None:
        raise InvalidRunError(run_dir, "a private run needs target_epsilon and epsilon")
    target, spent = float(target), float(spent)
    if not math.isfinite(target):
        raise InvalidRunError(run_dir, f"a private run needs a finite target_epsilon, got {target}")
    claim = ledger.get("claim")
    if metrics.get("claim") != claim:
        raise InvalidRunError(run_dir, f"metrics.json states the claim {metrics.get('claim')!r}, its ledger {claim!r}")
    if claim is not None and claim.get("epsilon") != target:
        raise InvalidRunError(
            run_dir, f"a reference run's target ε {target} differs from its claimed {claim.get('epsilon')!r}"
        )
    # A reference run's actual ε may exceed its claimed one (its target): that is what it reports.
    if claim is None and not spent <= target:
        raise InvalidRunError(run_dir, f"recorded epsilon {spent} exceeds target {target}")
    try:
        recomputed = float(verify_ledger(ledger))
    except ValueError as err:
        raise InvalidRunError(run_dir, f"ledger failed verification: {err}") from err
    # The ledger checks itself against its own target; it must also meet the run's.
    if claim is None and not recomputed <= target:
        raise InvalidRunError(run_dir, f"ledger epsilon {recomputed} exceeds target {target}")
    guarantee = ledger["guarantee"]["class"]  # verification checked it against the degree bound
    if (metrics.get("guarantee") or {}).get("class") != guarantee:
        raise InvalidRunError(
            run_dir, f"metrics.json states guarantee {metrics.get('guarantee')!r}, its ledger {guarantee!r}"
        )
    return target, spent, guarantee, claim


def _agreement(run_dir: Path, metrics: dict, ledger: dict, check_agreement: Callable[..., None]) -> None:
    """The ledger agrees with itself (``_privacy``); metrics.json, which the tables read, must agree with it."""
    try:
        check_agreement(metrics, ledger, num_private_units=_num_private_units(run_dir, metrics), where=str(run_dir))
    except InvalidRunError:
        raise
    except ValueError as err:
        field, detail = getattr(err, "field", None), getattr(err, "detail", None)  # a RunDisagreement's
        reason = (
            f"metrics.json disagrees with its ledger on {field}: {detail}"
            if field and detail
            else f"metrics.json and its ledger cannot be compared: {err}"
        )
        raise InvalidRunError(run_dir, reason) from err
    except (KeyError, TypeError) as err:
        raise InvalidRunError(run_dir, f"metrics.json and its ledger cannot be compared: {err!r}") from err


def _row(
    run_dir: Path, metrics: dict, ledger: dict, *, target: float, spent: float, guarantee: str, claim: dict | None
) -> dict[str, Any]:
    """The summary's row of a checked run."""
    private = metrics["private"]
    predicted = metrics["test"].get("predicted_classes")
    if predicted is not None and (isinstance(predicted, bool) or not isinstance(predicted, int) or predicted < 1):
        raise InvalidRunError(run_dir, f"test.predicted_classes must be a count >= 1, got {predicted!r}")
    majority = _optional_float(metrics["test"].get("majority_accuracy"))
    if majority is not None and not 0.0 <= majority <= 1.0:
        raise InvalidRunError(run_dir, f"test.majority_accuracy must lie in [0, 1], got {majority}")
    delta, commit = metrics["delta"], metrics["version"]["git_commit"]
    base, hparams = metrics.get("base_method"), metrics.get("hyperparameters")
    if hparams is not None and not isinstance(hparams, dict):
        raise InvalidRunError(run_dir, f"'hyperparameters' must be an object, got {type(hparams).__name__}")
    return {
        "dataset": str(metrics["dataset"]),
        "method": str(metrics["method"]),
        "base_method": None if base is None else str(base),
        "seed": int(metrics["seed"]),
        "private": private,
        "target_epsilon": target,
        "epsilon": spent,
        "delta": None if delta is None else float(delta),
        "level": str(metrics["level"]),
        # Derived from the ledger's uncharged reads, which verification checked against its flag.
        "fully_accounted": not ledger.get("uncharged"),
        "guarantee": guarantee,
        "reference": claim is not None,
        "claimed_delta": None if claim is None else float(claim["delta"]),
        "claim_actual_epsilon": None if claim is None else float(claim["actual_epsilon"]),
        "test_accuracy": float(metrics["test"]["accuracy"]),
        "test_macro_f1": float(metrics["test"]["macro_f1"]),
        "test_predicted_classes": predicted,
        "test_majority_accuracy": majority,
        # null where a protocol has no validation part (DPAR's 80/20)
        "val_accuracy": _optional_float(metrics["val"]["accuracy"]),
        "val_macro_f1": _optional_float(metrics["val"]["macro_f1"]),
        "train_s": float(metrics["timings"]["train_s"]),
        "total_s": float(metrics["timings"]["total_s"]),
        "hyperparameters": None if hparams is None else json.dumps(hparams, sort_keys=True),
        "git_commit": None if commit is None else str(commit),  # None outside a git checkout
    }


def collect_runs(
    metrics_paths: Sequence[Path],
    *,
    verify_ledger: Callable[[dict], float] | None = None,
    check_agreement: Callable[..., None] | None = None,
    replan: Callable[[Path, dict[str, Any]], bool] | None = replan_run,
) -> pl.DataFrame:
    """One row per run, read from each ``metrics.json`` and the ``ledger.json`` beside it.

    ``verify_ledger`` recomputes a ledger's ε and raises a ``ValueError`` when it
    exceeds the ledger's target; it defaults to ``nodedp.accounting.verify_ledger_dict``.
    ``check_agreement(metrics, ledger, *, num_private_units, where)`` raises a ``ValueError`` when
    metrics.json states another ε, δ, target, level, accountant, guarantee, claim or hyperparameter than its
    ledger, or δ ≥ 1/N; it defaults to ``nodedp.accounting.agreement.check_run_agreement``, and N is read
    from the dataset's meta.json where the run lies in a workspace's ``results/runs`` (``_num_private_units``).
    ``replan(run_dir, metrics)`` raises :class:`InvalidRunError` when the run's ledger is not the plan re-derived
    from public inputs (``replan_run``, the check of `python -m nodedp verify`; None: not re-planned) and says
    whether it could re-derive it (the ``replanned`` column; tables mark the runs it could not). Every run must be
    what its name says (``nodedp.verify.check_run_identity``), wherever it lies.
    Raises :class:`InvalidRunError` for the first run that is malformed, lacks its
    ledger, overspends its budget, disagrees with its ledger, or duplicates (dataset, method, target_epsilon,
    seed).
    """
    if verify_ledger is None:
        # Lazy: the accounting package is only needed when ledgers are checked.
        from nodedp.accounting import verify_ledger_dict

        verify_ledger = verify_ledger_dict
    if check_agreement is None:
        from nodedp.accounting.agreement import check_run_agreement

        check_agreement = check_run_agreement
    rows = []
    seen: dict[tuple[Any, ...], Path] = {}
    for path in map(Path, metrics_paths):
        row = _run_row(path, verify_ledger, check_agreement, replan)
        key = tuple(row[k] for k in RUN_KEY)
        if key in seen:
            raise InvalidRunError(path.parent, f"duplicates {dict(zip(RUN_KEY, key))} already read from {seen[key]}")
        seen[key] = path.parent
        rows.append(row)
    return pl.DataFrame(rows, schema=RUNS_SCHEMA)


def write_runs(df: pl.DataFrame, path: Path) -> None:
    """Write the runs frame to parquet atomically, so readers never see half a file."""
    atomic_write(path, df.write_parquet)
