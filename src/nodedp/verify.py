"""`python -m nodedp verify PATH...`: re-derive each finished run's privacy plan from public inputs and compare.

For each run folder (``metrics.json`` and ``ledger.json``): the ledger agrees with itself, metrics.json agrees
with the ledger (and δ < 1/N), and the method's planner (``nodedp.plans``), run again on the run's stated
settings and the dataset's public metadata, gives the same ledger field by field. What it checks and what it
cannot know: docs/design/runtime.md.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodedp.accounting._checks import VERIFY_RTOL

__all__ = [
    "Refusal",
    "RunCheck",
    "UnregisteredMethod",
    "check_run_identity",
    "find_runs",
    "split_path",
    "verify_run",
]

_RTOL = 1e-9  # what a re-plan must reproduce: the same computation, so the same floats up to rounding
# The costs a ledger states are what the accountant computes from its raw parameters (the noise, rates and steps
# above, held to _RTOL), to the accountant's own tolerance: a ledger written by an earlier version whose numerics
# differ in the last digits (a mixture PLD accumulated exactly) states the same cost.
_COSTS = frozenset({"ledger.epsilon", "ledger.claim.actual_epsilon"})


@dataclass(frozen=True)
class Refusal:
    field: str
    stated: Any
    expected: Any
    detail: str = ""  # instead of the two values, where a check words it itself

    def __str__(self) -> str:
        if self.detail:
            return f"{self.field}: {self.detail}"
        return f"{self.field}: states {_short(self.stated)}, re-derived {_short(self.expected)}"


@dataclass(frozen=True)
class RunCheck:
    run: Path
    refusals: tuple[Refusal, ...]
    replanned: bool  # False: the method has no planner yet, or is not registered here (checks 1 and 2 only)
    method: str = ""
    unplanned: str = ""  # why it was not re-planned, when it was not and nothing was refused


class UnregisteredMethod(LookupError):
    """A run's method is not registered in this process: its plugin is not loaded (the message says which)."""


def check_run_identity(metrics: Mapping[str, Any], ledger: Mapping[str, Any]) -> None:
    """The run is what its name says (``nodedp.config.variants.check_run_name``: the name's method is its base, ``@paper``
    iff reference mode, a finite ε iff private) and its ``private`` flag is its method's. Raises ValueError naming
    the rule broken, or UnregisteredMethod naming the plugin module to load."""
    from nodedp.config.variants import check_run_name
    from nodedp.contract.registry import HOW_PLUGINS_ARE_FOUND, PLUGINS_ENV, UnknownMethodError, get_method

    name, base = metrics.get("method"), metrics.get("base_method")
    if not isinstance(name, str) or not isinstance(base, str):
        raise ValueError(f"'method' and 'base_method' must be names, got {name!r} and {base!r}")
    try:
        info = get_method(base)
    except UnknownMethodError:
        plugin = metrics.get("plugin")
        if isinstance(plugin, str) and plugin:
            raise UnregisteredMethod(
                f"method {base!r} comes from the plugin module {plugin!r}, not loaded here: load it with "
                f"{PLUGINS_ENV}={plugin} (or `plugins: [{plugin}]` in config.yaml) and verify again"
            ) from None
        raise UnregisteredMethod(f"method {base!r} is not registered here; {HOW_PLUGINS_ARE_FOUND}") from None
    if metrics.get("private") is not info.private:
        raise ValueError(f"'private' is {metrics.get('private')!r}, but method {base!r} is {info.private}")
    target = metrics.get("target_epsilon")
    epsilon = math.inf if target is None and not info.private else target
    if not isinstance(epsilon, int | float) or isinstance(epsilon, bool):
        raise ValueError(f"'target_epsilon' must be a number (null for a non-private run), got {target!r}")
    check_run_name(name, base=base, reference=ledger.get("claim") is not None, epsilon=float(epsilon))


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders: each PATH that holds a metrics.json, or every folder below it that does."""
    runs: list[Path] = []
    for path in map(Path, paths):
        if (path / "metrics.json").is_file():
            runs.append(path)
        elif path.is_dir():
            runs += sorted(p.parent for p in path.rglob("metrics.json"))
        else:
            raise FileNotFoundError(f"{path}: neither a run folder (metrics.json) nor a folder holding runs")
    return runs


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable JSON file ({err})") from None


def verify_run(run: Path, *, workspace: Path = Path(".")) -> RunCheck:
    """Every check above for one run folder; refusals name the field and both values. A malformed run is refused
    (never raised), so that the runs after it are checked too."""
    try:
        metrics, ledger = _read(run / "metrics.json"), _read(run / "ledger.json")
    except ValueError as err:
        return RunCheck(run, (Refusal("files", str(err), "metrics.json and ledger.json"),), False)
    if not isinstance(metrics, dict) or not isinstance(ledger, dict):
        return RunCheck(
            run, (Refusal("files", None, None, detail="metrics.json and ledger.json must be objects"),), False
        )
    method = str(metrics.get("method", "?"))
    try:
        return _verify(run, metrics, ledger, workspace, method)
    except UnregisteredMethod as err:
        return RunCheck(run, (), False, method, unplanned=str(err))
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # a malformed field: refused, the rest go on
        return RunCheck(run, (Refusal("metrics", None, None, detail=f"malformed: {err!r}"),), False, method)


def _verify(run: Path, metrics: dict[str, Any], ledger: dict[str, Any], workspace: Path, method: str) -> RunCheck:
    from nodedp.accounting.agreement import RunDisagreement, check_run_agreement, private_units
    from nodedp.accounting.ledger import verify_ledger_dict

    refusals: list[Refusal] = []
    try:
        verify_ledger_dict(ledger)
    except (ValueError, KeyError, TypeError) as err:
        return RunCheck(run, (Refusal("ledger", str(err), "a ledger consistent with itself"),), False, method)
    try:
        check_run_identity(metrics, ledger)  # UnregisteredMethod goes up: not a refusal
    except ValueError as err:
        return RunCheck(run, (Refusal("method", None, None, detail=str(err)),), False, method)
    try:
        meta = _read(workspace / "resources/graphs" / str(metrics["dataset"]) / "meta.json")
    except (ValueError, KeyError) as err:
        return RunCheck(run, (Refusal("dataset", str(err), "the dataset's meta.json"),), False, method)
    try:  # metrics.json against the ledger, and δ < 1/N (what collect checks too)
        check_run_agreement(
            metrics, ledger, num_private_units=private_units(meta, level=str(ledger.get("level"))), where=str(run)
        )
    except RunDisagreement as err:
        refusals.append(Refusal(err.field, None, None, detail=err.detail))
    replanned, plan_refusals = _replan(run, metrics, ledger, meta, workspace)
    return RunCheck(run, (*refusals, *plan_refusals), replanned, method)


def _close(a: Any, b: Any, rel_tol: float = _RTOL) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int | float) or not isinstance(b, int | float):
        return a == b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-15)


def _replan(
    run: Path, metrics: Mapping[str, Any], ledger: Mapping[str, Any], meta: Mapping[str, Any], workspace: Path
) -> tuple[bool, list[Refusal]]:
    from nodedp.accounting.ledger import with_current_text
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.plans import PublicInputs, planner_of

    try:
        info = get_method(str(metrics["base_method"]))
        hp = info.parse_hparams(metrics["hyperparameters"])
    except (KeyError, ValueError) as err:
        return False, [Refusal("hyperparameters", str(err), "a registered method's hyperparameters")]
    planner = planner_of(info)
    if planner is None:
        return False, []
    dataset, seed = str(metrics["dataset"]), int(metrics["seed"])
    try:
        path = split_path(workspace, dataset, seed)
        num_train, setting = _split_sizes(str(path), int(meta["num_nodes"]), path.stat().st_mtime_ns)
    except (KeyError, ValueError, OSError) as err:
        return False, [Refusal("split", str(err), f"the seed's split of {dataset}")]
    public = PublicInputs.of(meta, num_train=num_train, setting=setting)
    spec = RunSpec(
        dataset=dataset,
        method=str(metrics["method"]),
        seed=seed,
        target_epsilon=float(metrics["target_epsilon"]) if info.private else math.inf,
        target_delta=float(metrics["target_delta"]) if info.private else 0.0,
        accountant=str(ledger.get("accountant") or "rdp"),
    )
    try:
        planned = planner(public, spec, hp).ledger.to_dict()
    except ValueError as first:
        readers = getattr(planner, "run_supplied", None) or {}
        if not readers:
            return True, [Refusal("plan", str(first), "a plan the method can make from these inputs")]
        try:  # values only the run could compute, read off its ledger; the planner checks them (run_supplied)
            supplied = {name: read(ledger, public, spec, hp) for name, read in readers.items()}
            planned = planner(public, spec, hp, **supplied).ledger.to_dict()
        except (ValueError, KeyError, TypeError) as err:
            return True, [Refusal("plan", str(err), "a plan the method can make from these inputs")]
    worded = with_current_text(ledger)  # a ledger worded before this version: the same numbers
    return True, [Refusal(field, stated, expected) for field, stated, expected in _diff(worded, planned)]


def split_path(workspace: Path, dataset: str, seed: int) -> Path:
    """Where the workflow keeps the seed's split of ``dataset`` in ``workspace`` (its size is a public input of the
    plan). Raises ValueError for a dataset that is not registered."""
    from nodedp.data import get_dataset
    from nodedp.data.preprocess import get_protocol

    setting = get_protocol(get_dataset(dataset).protocol).split.setting
    return workspace / "results/splits" / dataset / setting / f"seed~{seed}.pt"


@functools.lru_cache(maxsize=64)
def _split_sizes(path: str, num_nodes: int, mtime_ns: int) -> tuple[int, str]:
    """(training-set size, setting) of a stored split, read once per file version: the runs of a seed share it."""
    from nodedp.data import load_split

    split = load_split(path, num_nodes=num_nodes)
    return int(split.train.numel()), split.setting


def _diff(stated: Any, expected: Any, where: str = "ledger") -> Iterator[tuple[str, Any, Any]]:
    """(field path, stated, re-derived) of every difference; floats equal up to a relative 1e-9 (the costs the
    accountant derives, ``_COSTS``: ``VERIFY_RTOL``)."""
    if isinstance(stated, Mapping) and isinstance(expected, Mapping):
        for key in sorted(set(stated) | set(expected), key=str):
            if key not in stated:
                yield f"{where}.{key}", "(missing)", expected[key]
            elif key not in expected:
                yield f"{where}.{key}", stated[key], "(absent from the plan)"
            else:
                yield from _diff(stated[key], expected[key], f"{where}.{key}")
    elif isinstance(stated, list) and isinstance(expected, list):
        if len(stated) != len(expected):
            yield f"{where} (length)", len(stated), len(expected)
        for i, (a, b) in enumerate(zip(stated, expected)):
            yield from _diff(a, b, f"{where}[{i}]")
    elif not _close(stated, expected, VERIFY_RTOL if where in _COSTS else _RTOL):
        yield where, stated, expected
