"""Cluster requests of the workflow's jobs, per kind of job (train, audit, structure, data).

``job_resources(config, kind)`` is a rule's ``resources:``: memory and runtime from nodedp.resources' estimates
(or the config's fixed requests), grown per retry, and the partition, account, GRES and constraint that config
`resources: {jobs: ...}` names for the kind. ``train_gres: auto`` asks for one GPU where the Slurm cluster has GPU
nodes (cluster_has_gpus, one `sinfo` call, made only when a training or audit job's GRES is evaluated). Torch-free.
Described in docs/workflow.md.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from nodedp.config.variants import resolve_method
from nodedp.resources import cell_memory_mb, cell_runtime_min, data_memory_mb, data_runtime_min, training_epochs

__all__ = ["JOB_KINDS", "JOB_SETTINGS", "cluster_has_gpus", "job_resources", "resolve_gres"]

# Kinds of jobs (config `resources: {jobs: {<kind>: ...}}`): training cells (rule train), audited cells (rule
# audit_cell), degree bounding, DP-APPR and stability (bound_degree, dp_appr, bounding_stability), graphs and
# splits (graph, split).
JOB_KINDS = ("train", "audit", "structure", "data")
# Keys of a kind's block -> the resource Snakemake (and its SLURM executor plugin) reads.
JOB_SETTINGS = {
    "partition": "slurm_partition",
    "account": "slurm_account",
    "gres": "gres",
    "constraint": "constraint",
    "mem_mb": "mem_mb",
    "runtime": "runtime",
}

Request = Callable[[Any, int], int]


_WARNED: set[str] = set()  # what the console was told already (once per process)


def _warn_once(text: str) -> None:
    if text not in _WARNED:
        _WARNED.add(text)
        print(f"nodedp: {text}", file=sys.stderr)


def cluster_has_gpus(sinfo: str = "sinfo", timeout: float = 30) -> bool:
    """Whether any node of the Slurm cluster this host submits to offers a `gpu` GRES: `sinfo --noheader
    --format=%G` lists one starting with "gpu". False where there is no ``sinfo`` on PATH (no Slurm here), or it
    fails or hangs; then the console is told so, once, and how to set the GRES by hand."""
    if shutil.which(sinfo) is None:
        return False
    command = [sinfo, "--noheader", "--format=%G"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        failure = f"did not answer ({type(err).__name__}: {err})"
    else:
        if out.returncode == 0:
            return any(g.startswith("gpu") for line in out.stdout.split() for g in line.split(","))
        failure = f"failed (exit {out.returncode}: {(out.stderr.strip().splitlines() or ['no message'])[0]})"
    _warn_once(
        f"`{' '.join(command)}` {failure}, so train_gres: auto asks for no GPU; to choose by hand, set "
        '`resources: {train_gres: "gpu:1"}` (a GPU per training job) or `""` (none) in the config'
    )
    return False


def resolve_gres(setting: str, has_gpus: Callable[[], bool] = cluster_has_gpus) -> str:
    """The GRES of a training or audit job for config `train_gres`: "auto" is "gpu:1" where ``has_gpus()``
    and "" elsewhere; any other value (a Slurm GRES, or "" for never) is itself."""
    if setting == "auto":
        return "gpu:1" if has_gpus() else ""
    return setting


def _size(dataset: str) -> Any:
    from nodedp.data import get_dataset

    return get_dataset(dataset).size


class _Requests:
    """A grid's per-job estimates, each computed once per (method, dataset) or dataset."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self.resources = config["resources"]
        self._cells: dict[tuple[str, str, str], int] = {}
        self._gres: str | None = None

    def estimate(self, method: str, key: str) -> Any:
        """A method's own `estimates:` entry for ``key`` (mem_mb or runtime), or None."""
        return self.resources["estimates"].get(method, {}).get(key)

    def grown(self, mem_mb: int, attempt: int) -> int:
        return int(mem_mb * self.resources["train_mem_growth"] ** (attempt - 1))

    def cell(self, key: str, method: str, dataset: str) -> int:
        """A cell's first-attempt memory (MB) or runtime (minutes)."""
        if (key, method, dataset) not in self._cells:
            fixed = self.estimate(method, key)
            base, hparams = resolve_method(self.config, method)
            value: int
            if fixed is not None:
                value = fixed
            elif key == "mem_mb":
                value = cell_memory_mb(
                    base, _size(dataset), margin=self.resources["memory_margin"], floor=self.resources["train_mem_mb"]
                )
            else:
                from nodedp.contract.registry import get_method

                epochs = training_epochs(dataclasses.asdict(get_method(base).parse_hparams(hparams)))
                value = cell_runtime_min(
                    base,
                    _size(dataset),
                    epochs=epochs,
                    margin=self.resources["runtime_margin"],
                    floor=self.resources["train_runtime"],
                )
            self._cells[key, method, dataset] = value
        return self._cells[key, method, dataset]

    def cell_mem_mb(self, wildcards: Any, attempt: int) -> int:
        return self.grown(self.cell("mem_mb", wildcards.method, wildcards.dataset), attempt)

    def cell_runtime(self, wildcards: Any, attempt: int) -> int:
        return attempt * self.cell("runtime", wildcards.method, wildcards.dataset)

    def audit_runtime(self, wildcards: Any, attempt: int) -> int:
        return 3 * self.cell_runtime(wildcards, attempt)  # an audit trains three times

    def data_mem_mb(self, wildcards: Any, attempt: int) -> int:
        """Graph building, splits, degree bounding, stability and DP-APPR: the dataset's graph-sized work."""
        mem = data_memory_mb(
            _size(wildcards.dataset), margin=self.resources["memory_margin"], floor=self.resources["structure_mem_mb"]
        )
        return self.grown(mem, attempt)

    def data_runtime(self, wildcards: Any, attempt: int) -> int:
        return attempt * data_runtime_min(
            _size(wildcards.dataset),
            margin=self.resources["runtime_margin"],
            floor=self.resources["structure_runtime"],
        )

    def gres(self, wildcards: Any) -> str:
        """A string resource, so a group job of many cells asks for it once (integer resources are summed)."""
        if self._gres is None:
            self._gres = resolve_gres(self.resources["train_gres"], cluster_has_gpus)
        return self._gres

    def fixed(self, value: int, key: str) -> Request:
        """A configured request for attempt n: memory × train_mem_growth^(n-1), runtime × n."""

        def request(wildcards: Any, attempt: int) -> int:
            return self.grown(value, attempt) if key == "mem_mb" else value * attempt

        return request

    def kind_request(self, default: Request, fixed: Request, key: str) -> Request:
        """A kind's fixed request, except for a method with its own `estimates:` entry (cells only)."""

        def request(wildcards: Any, attempt: int) -> int:
            method = getattr(wildcards, "method", None)
            if method is not None and self.estimate(method, key) is not None:
                return default(wildcards, attempt)
            return fixed(wildcards, attempt)

        return request


def job_resources(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A rule's resources: the kind's estimates (or `resources.jobs.<kind>.mem_mb`/`runtime`, fixed per job and
    grown per retry: attempt n asks for memory × train_mem_growth^(n-1) and n × runtime), its GRES (training and
    audits: `train_gres` unless the kind names one) and the partition, account and constraint the kind names. A
    method's `estimates:` entry still wins for its cells."""
    if kind not in JOB_KINDS:
        raise ValueError(f"job kind {kind!r}: one of {JOB_KINDS}")
    requests = _Requests(config)
    resources: dict[str, Any] = {
        "train": {"mem_mb": requests.cell_mem_mb, "runtime": requests.cell_runtime},
        "audit": {"mem_mb": requests.cell_mem_mb, "runtime": requests.audit_runtime},
        "structure": {"mem_mb": requests.data_mem_mb, "runtime": requests.data_runtime},
        "data": {"mem_mb": requests.data_mem_mb, "runtime": requests.data_runtime},
    }[kind]
    if kind in ("train", "audit"):
        resources["gres"] = requests.gres
    for key, value in config["resources"]["jobs"].get(kind, {}).items():
        resource = JOB_SETTINGS[key]
        if key in ("mem_mb", "runtime"):
            resources[resource] = requests.kind_request(resources[resource], requests.fixed(value, key), key)
        else:
            resources[resource] = value
    return resources
