"""Planning imports no deep-learning, accounting or dataframe stack: the workflow's `snakemake -n` and the listing
and checking verbs read the registries, hyperparameters and config checks only, so every cell it plans must not
pay seconds of torch, torch_geometric, dp_accounting or scipy imports (nor, when the workflow plans, polars)."""

from __future__ import annotations

import ast
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
# the modules named after the config (PLANNING_HEAVY) it imported.
PLANNING = r"""
import json, math, sys, tempfile

from nodedp.accounting import ACCOUNTANT_POLICIES, ACCOUNTANTS, default_delta, resolve_delta
from nodedp.analysis.paper_tables import PAPER_TABLES
from nodedp.contract.naming import format_epsilon
from nodedp.config.check import check_config
from nodedp.config.read import check_schema, read_config
from nodedp.config.studies import audit_plan
from nodedp.config.variants import resolve_method, variant_overrides
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.contract.structure import structure_bounds
from nodedp.data import DATASETS, dataset_names, get_dataset
from nodedp.data.preprocess import get_protocol
from nodedp.contract.base import MethodInfo, RunInputs, RunResult, RunSpec
from nodedp.contract.registry import get_method, method_names
from nodedp.contract.specs.dpar import appr_spec

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
print(json.dumps([m for m in sys.argv[2:] if m in sys.modules]))
"""


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
        [sys.executable, "-X", "importtime", "-c", PLANNING, str(REPO / "config.yaml"), *PLANNING_HEAVY],
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
        assert name in _defined_names(Path(home.__file__)), f"{name} is not defined in {home.__name__}"
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_registry_entries_are_the_implementations_own():
    """Hyperparameters are the torch-free spec modules' classes, and every run target resolves."""
    from nodedp.contract.base import LazyRun
    from nodedp.contract.registry import get_method, method_names

    for name in method_names():
        info = get_method(name)
        assert isinstance(info.run, LazyRun), name
        assert callable(info.run.resolve()), name
        assert info.hparams.__module__.startswith("nodedp.contract.specs."), name
    assert get_method("dp-gat").run.kwargs == (("layer", "gat"),)
    assert get_method("progap-edge").run.kwargs == (("level", "edge"),)
    with pytest.raises(ValueError, match="module:function"):
        LazyRun("nodedp.methods.mlp")


def test_the_torch_free_names_match_their_torch_twins():
    """The spec's GNN layers and optimizers are named twice (once torch-free): they must agree."""
    from nodedp.contract.base import OPTIMIZERS, OptimHparams
    from nodedp.contract.specs import dpar
    from nodedp.contract.specs.dpar import appr_spec
    from nodedp.contract.specs.gnn import LAYERS
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
    assert out.is_file() and "written" in result.stdout
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

    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.data import load_graph, load_split
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
    spec = RunSpec(
        dataset="csbm-tiny",
        method="dpar-em0",
        seed=0,
        target_epsilon=4.0,
        target_delta=1e-4,
        accountant=info.resolve_accountant("auto"),
    )
    split = load_split(tiny_split_path, num_nodes=graph.num_nodes)
    expected = build_dp_appr(graph, split, spec, info.parse_hparams(hparams))
    written = torch.load(out, weights_only=True)
    assert sorted(written) == sorted(expected)
    for key, value in expected.items():
        if key == "appr_seconds":
            continue
        assert torch.equal(written[key], value) if isinstance(value, torch.Tensor) else written[key] == value, key


# --- the import graph: no circles, and every module imports on its own ------------------------------------------

PACKAGE_DIR = REPO / "src" / "nodedp"


def _module_files(package_dir: Path) -> dict[str, Path]:
    """Every module of the package in ``package_dir``, by dotted name (a package by its ``__init__.py``)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_statements(tree: ast.AST):
    """Every import statement in ``tree``, those inside functions and classes included; not the body of an
    ``if TYPE_CHECKING:`` block, which never runs (its ``else`` does)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _lazy_homes(init: Path) -> dict[str, str]:
    """A lazy package's names -> the submodule that provides each (its ``_SUBMODULES``, ``nodedp._lazy``)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "_SUBMODULES" and node.value is not None:
            return {name: sub for sub, names in ast.literal_eval(node.value).items() for name in names}
    return {}


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports, wherever the import statement is (functions included).

    Relative imports are resolved; ``from package import name`` imports the submodule ``package.name`` where
    one exists, the submodule that provides ``name`` where the package exports it lazily, else the package.
    ``import a.b.c`` counts as importing ``a.b.c`` (its parents' ``__init__`` run first, and cannot import it
    back without a circle of their own).
    """
    modules = _module_files(package_dir)
    lazy = {name: _lazy_homes(path) for name, path in modules.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _import_statements(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
                targets = []
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        targets.append(f"{base}.{alias.name}")
                    elif alias.name in lazy.get(base, {}):
                        targets.append(f"{base}.{lazy[base][alias.name]}")
                    else:
                        targets.append(base)
            for target in targets:
                while target and target not in modules:  # an attribute path, or outside the package
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The circles of ``graph``: its strongly connected groups of two or more modules."""
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each circle of ``graph``, from its first module back to it, as [m, ..., m];
    empty when there is none."""
    cycles = []
    for group in import_circles(graph):
        start = min(group)
        paths = {start: [start]}  # breadth first, inside the group, back to start
        queue = [start]
        while queue:
            node = queue.pop(0)
            if start in graph[node]:
                cycles.append([*paths[node], start])
                break
            for child in sorted(graph[node] & group):
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    queue.append(child)
    return sorted(cycles)


def test_no_module_of_nodedp_is_in_an_import_circle():
    graph = import_graph(PACKAGE_DIR)
    circles = sorted(sorted(group) for group in import_circles(graph))
    assert not circles, "import circles (function-level imports included):\n" + "\n".join(
        [" -> ".join(cycle) for cycle in import_cycles(graph)]
        + [f"circle of {len(group)} modules: {', '.join(group)}" for group in circles]
    )


# The layers of nodedp, bottom first (its top-level modules and packages; "" is the package's own face): a module
# imports only from its own layer or those below, function-level imports included (docs/workflow.md, Layout).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "_lazy", "io", "signals"),
    ("provenance", "accounting"),
    ("data", "mechanisms", "structure"),
    ("models", "train", "resources"),
    ("contract",),  # the method contract: entries, hyperparameters, run inputs and results, cell names
    ("plans",),
    ("methods",),
    ("audit", "config"),
    ("jobs", "verify"),
    ("analysis",),
    ("cli",),
    ("grid", "worker"),
    ("__main__",),
)


def _unit(module: str) -> str:
    """The top-level module or package of nodedp that ``module`` belongs to ("" for nodedp itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` (module -> modules it imports) folded onto nodedp's top-level modules and packages."""
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        unit = _unit(module)
        units.setdefault(unit, set()).update(_unit(t) for t in targets if _unit(t) != unit)
    return units


def test_every_import_runs_down_the_layers_or_within_one():
    graph = import_graph(PACKAGE_DIR)
    rank = {unit: level for level, units in enumerate(LAYERS) for unit in units}
    assert set(package_graph(graph)) <= set(rank), f"place {set(package_graph(graph)) - set(rank)} in LAYERS"
    upward = sorted(
        f"{module} -> {target} ({_unit(module) or 'nodedp'} is below {_unit(target) or 'nodedp'})"
        for module, targets in graph.items()
        for target in targets
        if rank[_unit(target)] > rank[_unit(module)]
    )
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


def test_no_package_of_nodedp_is_in_an_import_circle():
    units = package_graph(import_graph(PACKAGE_DIR))
    assert not import_circles(units), "package circles:\n" + "\n".join(" -> ".join(c) for c in import_cycles(units))


def test_the_layer_check_sees_an_upward_import_and_a_package_circle():
    graph = {"nodedp.plans.x": {"nodedp.methods.y"}, "nodedp.methods.y": {"nodedp.plans.z"}, "nodedp.plans.z": set()}
    units = package_graph(graph)
    assert units == {"plans": {"methods"}, "methods": {"plans"}}
    assert import_cycles(units) == [["methods", "plans", "methods"]]
    rank = {unit: level for level, layer in enumerate(LAYERS) for unit in layer}
    assert rank["plans"] < rank["methods"]  # so plans.x -> methods.y runs up


def _defined_names(path: Path) -> set[str]:
    """The names a module's own top-level statements define (functions, classes, assignments), not those it imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def test_every_name_is_imported_from_its_home():
    """A name is imported from the module that defines it, or from its package's face (an ``__init__`` whose
    ``__all__`` lists it, each face name defined in the submodule it names): no module passes on another's."""
    modules = _module_files(PACKAGE_DIR)
    faces = {name for name, path in modules.items() if path.name == "__init__.py" and "__all__" in _defined_names(path)}
    defined = {name: _defined_names(path) for name, path in modules.items()}
    passed_on = []
    sources = [*REPO.glob("src/**/*.py"), *REPO.glob("tests/**/*.py"), *REPO.glob("benchmarks/*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules):
                continue
            if node.module in faces:
                continue
            passed_on += [
                f"{path.relative_to(REPO)}: {alias.name} from {node.module}"
                for alias in node.names
                if alias.name != "*"  # a face taking its submodule's __all__
                and alias.name not in defined[node.module]
                and f"{node.module}.{alias.name}" not in modules
            ]
    assert not passed_on, "names imported from a module that does not define them:\n" + "\n".join(passed_on)


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / next(iter(files)).split("/")[0]


def test_the_walker_finds_circles_through_function_level_relative_and_lazy_imports(tmp_path):
    """A package with two circles: one closed by a function-level import, one through ``from package import
    submodule``, a relative import and a lazily exported name; and imports that close no circle."""
    package = _write_package(
        tmp_path,
        {
            "pkg/__init__.py": '_SUBMODULES = {"lazy": ("NAME",)}\n',
            "pkg/a.py": "from pkg import b\nimport os\n",
            "pkg/b.py": "def f():\n    from pkg.c import g\n",
            "pkg/c.py": "import pkg.a.attribute_path\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/x.py": "from . import y\n",
            "pkg/sub/y.py": "from ..lazy_user import z\n",
            "pkg/lazy_user.py": "from pkg import NAME\n",
            "pkg/lazy.py": "from .sub.x import w\n",
            "pkg/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import typed_back\n",
            "pkg/typed_back.py": "from pkg import typed\n",
            "pkg/leaf.py": "from pkg.a import thing\nfrom pkg.sub import x\n",
        },
    )
    graph = import_graph(package)
    assert graph["pkg.leaf"] == {"pkg.a", "pkg.sub.x"} and graph["pkg.typed"] == set()
    assert import_cycles(graph) == [
        ["pkg.a", "pkg.b", "pkg.c", "pkg.a"],
        ["pkg.lazy", "pkg.sub.x", "pkg.sub.y", "pkg.lazy_user", "pkg.lazy"],
    ]
    assert sorted(sorted(group) for group in import_circles(graph)) == [
        ["pkg.a", "pkg.b", "pkg.c"],
        ["pkg.lazy", "pkg.lazy_user", "pkg.sub.x", "pkg.sub.y"],
    ]


# Removes every module of the package from sys.modules (third-party ones stay loaded), imports one module fresh,
# and reports each module that failed.
_IMPORT_ALONE = r"""
import importlib, json, sys, traceback

package, modules = sys.argv[1], sys.argv[2:]
failed = {}
for module in modules:
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    try:
        importlib.import_module(module)
    except BaseException as err:
        failed[module] = "".join(traceback.format_exception_only(type(err), err)).strip()
print(json.dumps(failed))
"""


def _modules_failing_alone(package_dir: Path) -> dict[str, str]:
    # __main__ modules are scripts (importing nodedp.__main__ runs the CLI); ``python -m`` runs them elsewhere.
    modules = [name for name in _module_files(package_dir) if name.rpartition(".")[2] != "__main__"]
    env = {**os.environ, "PYTHONPATH": str(package_dir.parent)}
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE, package_dir.name, *modules],
        capture_output=True,
        text=True,
        env=env,
        cwd=package_dir.parent,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_module_of_nodedp_imports_on_its_own():
    failed = _modules_failing_alone(PACKAGE_DIR)
    assert not failed, "modules that fail to import on their own:\n" + "\n".join(
        f"{module}: {error}" for module, error in failed.items()
    )


def test_a_module_that_imports_only_after_another_is_reported(tmp_path):
    package = _write_package(
        tmp_path,
        {
            "alone/__init__.py": "",
            "alone/first.py": "import alone\nalone.SHARED = 1\n",
            "alone/second.py": "import alone\nVALUE = alone.SHARED\n",  # works only after alone.first
            "alone/broken.py": "from alone.first import missing_name\n",
        },
    )
    failed = _modules_failing_alone(package)
    assert sorted(failed) == ["alone.broken", "alone.second"]
    assert "missing_name" in failed["alone.broken"] and "SHARED" in failed["alone.second"]
