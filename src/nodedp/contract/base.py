"""What every method receives and returns, and its registry entry.

Torch-free: the registry (``nodedp.contract.specs``) is read by planning and by the listing and checking verbs;
a method's implementation is imported when it runs (``LazyRun``).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodedp.accounting.constants import ACCOUNTANT_POLICIES, ACCOUNTANTS

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from nodedp.accounting import Ledger
    from nodedp.data import Split

LEVELS = ("node", "edge", "none")
# A private method with a reference mode has a hyperparameter ``accounting``: "suite" calibrates its noise to
# the target ε with the suite's accountant; "paper" sizes it as its paper (or public code) would for that ε,
# and its ledger carries the paper's claim beside the actual ε. Reference runs are named ``<method>@paper``
# (nodedp.config.variants.resolve_method sets the mode from the name), never anything else.
ACCOUNTING_MODES = ("suite", "paper")
STRUCTURE_KINDS = ("in-degree", "out-degree", "degree", "dp-appr")
# A method id names its runs' folders and the workflow's wildcards: lower case, digits and hyphens.
METHOD_ID = re.compile(r"[a-z][a-z0-9-]*")
# The optimizers nodedp.train builds (``OptimConfig``), named here so that checking hyperparameters needs no torch.
OPTIMIZERS = ("sgd", "adam", "adamw")


@dataclass(frozen=True)
class OptimHparams:
    """Hyperparameters every trained method shares; method specs extend it."""

    epochs: int = 100
    lr: float = 0.01
    optimizer: str = "adam"
    weight_decay: float = 0.0

    def optim_config(self):
        from nodedp.train import OptimConfig

        return OptimConfig(optimizer=self.optimizer, lr=self.lr, weight_decay=self.weight_decay)

    def check(self) -> None:
        """The optimizer and weight decay as ``OptimConfig`` checks them (its wording), epochs and lr, without
        building it: checking a config imports no torch."""
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose from {list(OPTIMIZERS)}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.epochs < 1 or not self.lr > 0:
            raise ValueError(f"need epochs ≥ 1 and lr > 0, got {self.epochs} and {self.lr}")


@dataclass(frozen=True)
class RunSpec:
    """One cell of the grid, with the privacy target already resolved."""

    dataset: str
    method: str
    seed: int
    target_epsilon: float  # math.inf for non-private methods
    target_delta: float  # 0.0 for non-private methods
    accountant: str = "rdp"
    device: str = "auto"
    progress: bool = False


@dataclass(frozen=True)
class RunInputs:
    graph: Data
    split: Split
    num_classes: int  # public metadata (meta.json), never read off the labels
    # Degree-bounded edge sets a method declared in `needs`, by kind:
    # {"kind", "bound" (the public K or D), "seed", "edge_index"}.
    structure: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The dataset's public metadata (its meta.json): the plan's sizes (N, edges, direction) come from it, never from
    # the graph, so that a neighbouring graph gets the same plan (PublicInputs.from_run). None: the graph's own
    # (the audit's graphs with canaries, tests).
    meta: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunResult:
    val: Mapping[str, float | None]  # None where the split has no validation part
    test: Mapping[str, float]
    ledger: Ledger
    train_seconds: float
    details: Mapping[str, Any] = field(default_factory=dict)
    # The trained model's inference on another graph that extends the one it trained on (the audit's canaries
    # appended): (Data, split=None) -> logits for every node. ``split``: the given graph's parts, for methods
    # whose inference reads them (an inductive split drops cross-part edges); None: the run's own split, on
    # which appended nodes lie in no part. Not private (inference reads the graph it is given), never stored;
    # None where a method does not offer it.
    predict: Callable[..., Any] | None = None


@dataclass(frozen=True)
class LazyRun:
    """A method's run function by reference, ``"module:function"``, imported at its first call, so that the
    registry loads without the implementation's torch; called as ``function(inputs, spec, hp, **kwargs)``
    (``kwargs``: what the family's entry fixes, e.g. a GNN layer or a privacy level)."""

    target: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        module, _, function = self.target.partition(":")
        if not (module and function.isidentifier()):
            raise ValueError(f"a run target is 'module:function', got {self.target!r}")

    def resolve(self) -> Callable[..., RunResult]:
        module, _, function = self.target.partition(":")
        return getattr(importlib.import_module(module), function)

    def __call__(self, inputs: RunInputs, spec: RunSpec, hp: Any) -> RunResult:
        return self.resolve()(inputs, spec, hp, **dict(self.kwargs))


def lazy_run(target: str, **kwargs: Any) -> LazyRun:
    """``LazyRun`` of ``target`` ("module:function") with the keyword arguments its entry fixes."""
    return LazyRun(target, tuple(kwargs.items()))


@dataclass(frozen=True)
class MethodInfo:
    """A registry entry: a method id, its hyperparameter spec and the function that runs it (registered
    methods: a ``LazyRun``, so that reading the entry imports no implementation)."""

    name: str
    description: str
    private: bool
    level: str
    hparams: type  # a frozen dataclass whose fields all have defaults
    run: Callable[[RunInputs, RunSpec, Any], RunResult]
    needs: tuple[str, ...] = ()
    # The accountant the config's "auto" resolves to: "pld" where the method's occurrence mixtures have a
    # privacy loss distribution (nodedp.accounting.mixture_pld) and it is tighter, "rdp" elsewhere.
    auto_accountant: str = "rdp"
    # The accountants that can account its ledger: ("pld",) where a record's pair has a PLD and no RDP curve
    # (SparseGNN's, HeterPoisson's); a run asked for another is refused before any work (``resolve_accountant``).
    accountants: tuple[str, ...] = ACCOUNTANTS
    # Its privacy planner, "module:function" (nodedp.plans): the ledger from public inputs before any private
    # data is read, which `nodedp verify` re-derives. None: not yet (verify checks such a ledger against itself).
    plan: str | None = None
    # Whether its training draws ``batch_size`` of the training nodes per step and refuses a larger batch (DP-SGD
    # over the training nodes; DPDGC in both modes): `nodedp.config` then refuses a grid whose batch exceeds a
    # dataset's training set before any job. Not so for DPAR (an expected batch of its own node sample, the rate
    # capped at 1), NIP-GNN (trains on already private inputs) or the non-private baselines (a large batch is one
    # full batch there).
    batch_of_training_nodes: bool = False
    # "module:function" (nodedp.plans), ``floor(num_train) -> float``: in reference mode (``accounting: paper``),
    # the least claimed ε its paper's accountant can state on that many training nodes (DP-GNN's: its RDP-to-(ε, δ)
    # conversion alone costs it). None: any claim can be met. `nodedp.config` refuses a grid claiming less before
    # any job, where a dataset's public size gives its training nodes.
    reference_floor: str | None = None

    def __post_init__(self) -> None:
        if not METHOD_ID.fullmatch(self.name):
            raise ValueError(f"method id {self.name!r}: use lower-case letters, digits and '-' (e.g. dp-foo)")
        if self.level not in LEVELS:
            raise ValueError(f"method {self.name!r}: level {self.level!r} not in {list(LEVELS)}")
        if self.private == (self.level == "none"):
            raise ValueError(f"method {self.name!r}: private methods need level node/edge, others 'none'")
        if self.auto_accountant not in ACCOUNTANTS:
            raise ValueError(
                f"method {self.name!r}: auto_accountant must be one of {list(ACCOUNTANTS)}, "
                f"got {self.auto_accountant!r}"
            )
        if not self.accountants or not set(self.accountants) <= set(ACCOUNTANTS):
            raise ValueError(f"method {self.name!r}: accountants must be a subset of {list(ACCOUNTANTS)}")
        if self.auto_accountant not in self.accountants:
            raise ValueError(f"method {self.name!r}: auto_accountant {self.auto_accountant!r} not in its accountants")
        unknown = set(self.needs) - set(STRUCTURE_KINDS)
        if unknown:
            raise ValueError(f"method {self.name!r}: unknown needs {sorted(unknown)}; valid: {list(STRUCTURE_KINDS)}")
        if not (isinstance(self.hparams, type) and dataclasses.is_dataclass(self.hparams)):
            raise ValueError(f"method {self.name!r}: hparams must be a dataclass, got {self.hparams!r}")
        fields = {f.name for f in dataclasses.fields(self.hparams)}
        if self.batch_of_training_nodes and "batch_size" not in fields:
            raise ValueError(f"method {self.name!r}: batch_of_training_nodes needs a hyperparameter batch_size")
        for key, target in (("plan", self.plan), ("reference_floor", self.reference_floor)):
            module, _, function = (target or "").partition(":")
            if target is not None and not (module and function.isidentifier()):
                raise ValueError(f"method {self.name!r}: {key} is 'module:function', got {target!r}")

    def parse_hparams(self, values: Mapping[str, Any] | None) -> Any:
        """Build the hyperparameter dataclass, refusing unknown keys and wrong types."""
        values = dict(values or {})
        fields = {f.name: f for f in dataclasses.fields(self.hparams)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"method {self.name!r}: unknown hyperparameter(s) {unknown}; valid: {sorted(fields)}")
        defaults = self.hparams()
        for key, value in values.items():
            expected = type(getattr(defaults, key))
            ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                values[key] = float(value)
                ok = True
            if not ok:
                raise ValueError(
                    f"method {self.name!r}: hyperparameter {key!r} must be {expected.__name__}, got {value!r}"
                )
        hp = dataclasses.replace(defaults, **values)
        if getattr(hp, "accounting", "suite") not in ACCOUNTING_MODES:
            raise ValueError(
                f"method {self.name!r}: accounting must be one of {list(ACCOUNTING_MODES)}, got {hp.accounting!r}"
            )
        check = getattr(hp, "check", None)
        if check is not None:
            try:
                check()
            except ValueError as err:
                raise ValueError(f"method {self.name!r}: {err}") from None
        return hp

    @property
    def has_reference_mode(self) -> bool:
        """Whether the method can size its noise by its paper's accounting (``ACCOUNTING_MODES``); never for a
        non-private method, even one sharing a private sibling's hyperparameters."""
        return self.private and any(f.name == "accounting" for f in dataclasses.fields(self.hparams))

    def resolve_accountant(self, policy: str) -> str:
        """The accountant of a run asked for with ``policy`` ("auto", "rdp" or "pld")."""
        if policy not in ACCOUNTANT_POLICIES:
            raise ValueError(f"unknown accountant {policy!r}; valid choices: {list(ACCOUNTANT_POLICIES)}")
        resolved = self.auto_accountant if policy == "auto" else policy
        if resolved not in self.accountants:
            raise ValueError(
                f"method {self.name!r} is accounted by {' or '.join(repr(a) for a in self.accountants)} only "
                f"(its pair has no {resolved.upper()} curve), got accountant {policy!r}; valid choices: "
                f"{['auto', *self.accountants]}"
            )
        return resolved

    def check_epsilon(self, epsilon: float) -> None:
        if self.private and not (0 < epsilon < math.inf):
            raise ValueError(f"method {self.name!r} is private: ε must be finite and > 0, got {epsilon}")
        if not self.private and epsilon != math.inf:
            raise ValueError(f"method {self.name!r} is non-private: its ε is 'inf', got {epsilon}")


def degree_bound_of(artifact: Mapping[str, Any]) -> Any:
    """The ledger's ``DegreeBound`` from a degree-bounding structure artifact (``bound-degree``)."""
    from nodedp.accounting import DegreeBound

    if "identity_bound" not in artifact:
        raise ValueError(
            f"this {artifact.get('kind')} artifact predates guarantee classes (no 'identity_bound'); "
            "rebuild it with `python -m nodedp bound-degree` (the workflow's bound_degree rule)"
        )
    return DegreeBound(
        kind=artifact["kind"], bound=int(artifact["bound"]), identity_bound=int(artifact["identity_bound"])
    )
