"""Planning imports no deep-learning, accounting or dataframe stack: the workflow's `snakemake -n` and the listing
and checking verbs read the registries, hyperparameters and config checks only, so every cell it plans must not
pay seconds of torch, torch_geometric, dp_accounting or scipy imports (nor, when the workflow plans, polars)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "torch_geometric", "dp_accounting", "scipy")
# The workflow's planning (common.smk) also reads the paper tables' layouts, which need no dataframe.
PLANNING_HEAVY = (*HEAVY, "polars")

# What planning does (workflow/rules/common.smk, nodedp.config, the CLI's list and check verbs), then which of
# PLANNING_HEAVY it imported.
PLANNING = r"""
import json, math, sys, tempfile

from nodedp.accounting import ACCOUNTANT_POLICIES, ACCOUNTANTS, default_delta, resolve_delta
from nodedp.analysis.paper_tables import PAPER_TABLES
from nodedp.cli import format_epsilon
from nodedp.config import (REFERENCE_SUFFIX, audit_plan, check_config, check_schema, read_config, resolve_method,
                           structure_bounds, variant_overrides)
from nodedp.data import DATASETS, dataset_names, get_dataset
from nodedp.data.preprocess import get_protocol
from nodedp.methods import MethodInfo, RunInputs, RunResult, RunSpec, get_method, method_names
from nodedp.methods.specs.dpar import appr_spec

assert PAPER_TABLES and set(DATASETS) == set(dataset_names()) and REFERENCE_SUFFIX == "@paper"
assert format_epsilon(float("inf")) == "inf"
assert default_delta(1000) == resolve_delta("auto", num_private_units=1000) == 1e-4
for name in method_names():
    info = get_method(name)
    assert isinstance(info, MethodInfo) and info.name == name and info.description
    assert info.level in ("node", "edge", "none") and isinstance(info.needs, tuple)
    assert info.auto_accountant in ACCOUNTANTS and info.resolve_accountant("auto") == info.auto_accountant
    hp = info.parse_hparams({})
    info.check_epsilon(1.0 if info.private else math.inf)
    if info.has_reference_mode:
        assert info.parse_hparams({"accounting": "paper"}).accounting == "paper"
    if "dp-appr" in info.needs:
        assert appr_spec(name, hp)["option"]
    try:  # OptimHparams.check names the optimizers without building nodedp.train's OptimConfig
        info.parse_hparams({"optimizer": "lbfgs"})
    except ValueError as err:
        assert "unknown optimizer 'lbfgs'; choose from ['sgd', 'adam', 'adamw']" in str(err), err
    else:
        raise AssertionError(f"{name} accepted optimizer 'lbfgs'")
assert ACCOUNTANT_POLICIES == ("auto", *ACCOUNTANTS)

config = read_config(sys.argv[1])
check_schema(config)
check_config(config, graphs_dir=tempfile.mkdtemp())
variant_overrides(config)
for study, spec in config["studies"].items():
    if "audit" in spec:
        audit_plan(config, study)
    for method in spec["methods"]:
        base, hparams = resolve_method(config, method)
        get_method(base).parse_hparams(hparams)
        for dataset in spec["datasets"]:
            structure_bounds(get_dataset(dataset), hparams)
            get_protocol(get_dataset(dataset).protocol).split.setting
for method in config.get("methods") or {}:
    resolve_method(config, method)
print(json.dumps([m for m in %r if m in sys.modules]))
""" % (PLANNING_HEAVY,)


def _import_chain(importtime: str, module: str) -> list[str]:
    """Who imported ``module`` first, outermost first, from ``python -X importtime``'s report (children are
    listed before their parent, one indent level deeper)."""
    rows = []
    for line in importtime.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1]
            rows.append((len(name) - len(name.lstrip()), name.strip()))
    start = next((i for i, (_, name) in enumerate(rows) if name == module), None)
    if start is None:
        return [module]
    chain, depth = [module], rows[start][0]
    for level, name in rows[start + 1 :]:
        if level < depth:
            chain.append(name)
            depth = level
    return chain[::-1]


def test_planning_imports_no_torch_torch_geometric_dp_accounting_scipy_or_polars():
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PLANNING, str(REPO / "config.yaml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    chains = {m: " -> ".join(_import_chain(out.stderr, m)) for m in loaded}
    assert not loaded, f"planning imported {loaded}: {chains}"


def test_the_import_chain_names_who_imported_a_module():
    report = "\n".join(
        f"import time: 1 | 1 | {name}"
        for name in (
            "      torch._C",
            "    torch",
            "  nodedp.data.graph",
            "    numpy",
            "  nodedp.data.other",
            "nodedp.data",
        )
    )
    assert _import_chain(report, "torch") == ["nodedp.data", "nodedp.data.graph", "torch"]


@pytest.mark.parametrize("package", ["nodedp.accounting", "nodedp.analysis", "nodedp.data"])
def test_lazy_packages_still_provide_every_public_name(package):
    module = importlib.import_module(package)
    homes = {name: sub for sub, names in module._SUBMODULES.items() for name in names}
    assert sorted(homes) == module.__all__
    for name in module.__all__:
        value = getattr(module, name)
        home = importlib.import_module(f"{package}.{homes[name]}")
        assert value is getattr(home, name), name
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_registry_entries_are_the_implementations_own():
    """Hyperparameters are the classes the implementation modules export, and every run target resolves."""
    from nodedp.methods import get_method, method_names
    from nodedp.methods.base import LazyRun

    for name in method_names():
        info = get_method(name)
        assert isinstance(info.run, LazyRun), name
        module = importlib.import_module(info.run.target.partition(":")[0])
        assert callable(info.run.resolve()) and getattr(module, info.hparams.__name__) is info.hparams, name
    assert get_method("dp-gat").run.kwargs == (("layer", "gat"),)
    assert get_method("progap-edge").run.kwargs == (("level", "edge"),)
    with pytest.raises(ValueError, match="module:function"):
        LazyRun("nodedp.methods.mlp")


def test_the_torch_free_names_match_their_torch_twins():
    """The spec's GNN layers and optimizers are named twice (once torch-free): they must agree."""
    from nodedp.methods.base import OPTIMIZERS, OptimHparams
    from nodedp.methods.dpar import appr_spec
    from nodedp.methods.specs import dpar
    from nodedp.methods.specs.gnn import LAYERS
    from nodedp.models import LAYERS as MODEL_LAYERS
    from nodedp.train import OptimConfig

    assert LAYERS == MODEL_LAYERS and appr_spec is dpar.appr_spec
    with pytest.raises(ValueError) as torch_free:
        OptimHparams(optimizer="lbfgs").check()
    with pytest.raises(ValueError) as built:
        OptimConfig(optimizer="lbfgs", lr=0.1)
    assert str(torch_free.value) == str(built.value)
    for name in OPTIMIZERS:
        OptimHparams(optimizer=name).check()
        assert OptimHparams(optimizer=name).optim_config().optimizer == name


@pytest.mark.parametrize(
    "verb",
    [
        ["--help"],
        ["datasets"],
        ["methods", "--verbose", "--config", "config.yaml"],
        ["check-config", "config.yaml"],
        ["train-cells", "--help"],
    ],
)
def test_listing_and_checking_verbs_import_no_torch(verb):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nodedp", *verb],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()  # it printed what it lists or checks
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")
    }
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_the_degree_bounding_verb_imports_no_torch_geometric(tiny_graph_dir, tiny_split_path, tmp_path):
    """A structure job reads the graph's tensors only: torch_geometric's seconds of import would be paid by every
    one of the grid's degree-bounding jobs."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = tmp_path / "in-degree~3.pt"
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "nodedp",
            "bound-degree",
            "--graph",
            str(tiny_graph_dir),
            "--split",
            str(tiny_split_path),
            "--kind",
            "in-degree",
            "--bound",
            "3",
            "--seed",
            "0",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert out.is_file() and "kept" in result.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")
    }
    assert "torch" in imported and "torch_geometric" not in imported, " -> ".join(
        _import_chain(result.stderr, "torch_geometric")
    )


def test_the_dp_appr_verb_imports_no_torch_geometric_and_builds_what_the_full_graph_builds(
    tiny_graph_dir, tiny_split_path, tmp_path
):
    """DPAR's artifact needs the edges and sizes only: the verb skips torch_geometric (and PPRGo's module), and
    its artifact is the one build_dp_appr gives on the loaded graph."""
    import torch

    from nodedp.data import load_graph, load_split
    from nodedp.methods import get_method
    from nodedp.methods.dpar import build_dp_appr

    hparams = {"num_sources": 20, "k": 3, "sample_rate": 0.5, "max_rows": 2}
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = tmp_path / "eps~4.pt"
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "nodedp",
            "dp-appr",
            "--graph",
            str(tiny_graph_dir),
            "--split",
            str(tiny_split_path),
            "--method",
            "dpar-em0",
            "--hparams",
            json.dumps(hparams),
            "--epsilon",
            "4",
            "--delta",
            "1e-4",
            "--accountant",
            "auto",
            "--seed",
            "0",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")
    }
    assert "torch_geometric" not in imported, " -> ".join(_import_chain(result.stderr, "torch_geometric"))
    graph = load_graph(tiny_graph_dir)
    info = get_method("dpar-em0")
    expected = build_dp_appr(
        graph,
        load_split(tiny_split_path, num_nodes=graph.num_nodes),
        method="dpar-em0",
        hp=info.parse_hparams(hparams),
        target_epsilon=4.0,
        dataset="csbm-tiny",
        target_delta=1e-4,
        seed=0,
        accountant=info.resolve_accountant("auto"),
    )
    written = torch.load(out, weights_only=True)
    assert sorted(written) == sorted(expected)
    for key, value in expected.items():
        if key == "appr_seconds":
            continue
        assert torch.equal(written[key], value) if isinstance(value, torch.Tensor) else written[key] == value, key
