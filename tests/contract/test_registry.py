from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch

from nodedp.accounting import Ledger
from nodedp.contract.base import MethodInfo
from nodedp.contract.registry import UnknownMethodError, get_method, method_names, register_method
from tests.methods._structure import QUICK_HPARAMS


def test_registry_has_the_walking_skeleton_methods():
    assert {"mlp", "gcn", "dp-mlp"} <= set(method_names())
    assert get_method("dp-mlp").private and get_method("dp-mlp").level == "node"
    assert not get_method("mlp").private and get_method("gcn").level == "none"


def test_unknown_method_names_the_choices():
    with pytest.raises(UnknownMethodError, match=r"unknown method 'dp-foo'.*dp-mlp"):
        get_method("dp-foo")


def test_duplicate_registration_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register_method(get_method("mlp"))


def test_private_method_must_declare_a_level():
    @dataclass(frozen=True)
    class Hp:
        lr: float = 0.1

    with pytest.raises(ValueError, match="level"):
        MethodInfo(name="x", description="", private=True, level="none", hparams=Hp, run=lambda *a: None)


def test_parse_hparams_refuses_unknown_keys_and_wrong_types():
    info = get_method("dp-mlp")
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['clip'\].*clip_norm"):
        info.parse_hparams({"clip": 1.0})
    with pytest.raises(ValueError, match="'epochs' must be int"):
        info.parse_hparams({"epochs": 2.5})
    with pytest.raises(ValueError, match="'epochs' must be int"):
        info.parse_hparams({"epochs": True})
    with pytest.raises(ValueError, match="clip_norm must be > 0"):
        info.parse_hparams({"clip_norm": 0.0})
    with pytest.raises(ValueError, match="optimizer"):
        info.parse_hparams({"optimizer": "lbfgs"})
    hp = info.parse_hparams({"lr": 1, "epochs": 3})
    assert hp.lr == 1.0 and isinstance(hp.lr, float) and hp.epochs == 3


def test_check_epsilon_matches_privacy():
    get_method("dp-mlp").check_epsilon(1.0)
    get_method("mlp").check_epsilon(math.inf)
    with pytest.raises(ValueError, match="non-private"):
        get_method("mlp").check_epsilon(1.0)
    for bad in (math.inf, 0.0, -1.0):
        with pytest.raises(ValueError, match="private"):
            get_method("dp-mlp").check_epsilon(bad)


def test_non_private_methods_return_an_empty_ledger(tiny_inputs):
    from nodedp.contract.base import RunSpec

    for name in ("mlp", "gcn"):
        info = get_method(name)
        spec = RunSpec(dataset="csbm-tiny", method=name, seed=0, target_epsilon=math.inf, target_delta=0.0)
        result = info.run(tiny_inputs, spec, info.parse_hparams({"epochs": 3}))
        assert result.ledger == Ledger.non_private()
        assert 0.0 <= result.test["accuracy"] <= 1.0


def test_gcn_inductive_split_never_sees_cross_split_edges(tiny_inputs, monkeypatch):
    """With an inductive split the GCN's graph has no edge between train, val and test."""
    import dataclasses

    import nodedp.methods.gnn as gnn_module
    from nodedp.contract.base import RunInputs, RunSpec
    from nodedp.data import split_masks

    seen = {}
    real = gnn_module.GraphReadout

    def spy(gnn, x, edge_index):
        seen["edges"] = edge_index
        return real(gnn, x, edge_index)

    monkeypatch.setattr(gnn_module, "GraphReadout", spy)
    split = dataclasses.replace(tiny_inputs.split, setting="inductive")
    inputs = RunInputs(graph=tiny_inputs.graph, split=split, num_classes=tiny_inputs.num_classes)
    info = get_method("gcn")
    spec = RunSpec(dataset="csbm-tiny", method="gcn", seed=0, target_epsilon=math.inf, target_delta=0.0)
    info.run(inputs, spec, info.parse_hparams({"epochs": 1}))
    part = torch.zeros(tiny_inputs.graph.num_nodes, dtype=torch.long)
    for i, mask in enumerate(split_masks(split, tiny_inputs.graph.num_nodes)):
        part[mask] = i
    src, dst = seen["edges"]
    assert seen["edges"].size(1) > 0 and torch.equal(part[src], part[dst])


_BOUNDED = sorted(
    m
    for m in method_names()
    if get_method(m).private and set(get_method(m).needs) & {"in-degree", "out-degree", "degree"}
)


def _public_bound(hp, kind: str) -> int:
    """The bound the method's plan takes for ``kind`` on csbm-tiny (its hyperparameter's, else the dataset's)."""
    import dataclasses

    from nodedp.contract.structure import structure_bounds
    from nodedp.data import get_dataset

    return structure_bounds(get_dataset("csbm-tiny"), dataclasses.asdict(hp))[kind]


@pytest.mark.parametrize("method", _BOUNDED)
def test_every_degree_bounded_method_states_its_bound_in_the_guarantee(tiny_inputs, method):
    """A method whose sensitivity rests on a sampled degree bound must say so: its ledger is never
    'unconditional', and names the bound it used."""
    from nodedp.contract.base import RunSpec
    from tests.methods._structure import with_bound

    info = get_method(method)
    (kind,) = set(info.needs) & {"in-degree", "out-degree", "degree"}
    fields = {f.name for f in __import__("dataclasses").fields(info.hparams)}
    hp = info.parse_hparams({k: v for k, v in QUICK_HPARAMS.items() if k in fields})
    bound = _public_bound(hp, kind)
    inputs = with_bound(tiny_inputs, kind, bound)
    spec = RunSpec(
        dataset="csbm-tiny",
        method=method,
        seed=0,
        target_epsilon=4.0,
        target_delta=1e-4,
        accountant="rdp" if "rdp" in info.accountants else info.auto_accountant,
    )
    ledger = info.run(inputs, spec, hp).ledger
    assert ledger.degree_bound is not None and ledger.degree_bound.kind == kind and ledger.degree_bound.bound == bound
    assert ledger.guarantee_class == "conditional"  # every degree-bounded method, whatever the graph
    assert ledger.to_dict()["guarantee"]["degree_bound"] == ledger.degree_bound.to_dict()


_REFERENCE = sorted(m for m in method_names() if get_method(m).has_reference_mode)


def test_every_node_level_private_method_has_a_reference_mode():
    node_level = {m for m in method_names() if get_method(m).level == "node"}
    assert set(_REFERENCE) == node_level, "a node-level method without its paper's accounting (`accounting` field)"
    assert not [m for m in method_names() if not get_method(m).private and get_method(m).has_reference_mode]


@pytest.mark.parametrize("method", [m for m in _REFERENCE if "dp-appr" not in get_method(m).needs])
def test_the_reference_path_of_every_method_states_its_claim_and_actual_epsilon(tiny_inputs, method):
    """`<method>@paper` on a tiny graph: the ledger carries the claim at the target, verifies, and the paper's
    rule never spends less than it claims (test_dpar.py runs DPAR's, which needs its DP-APPR artifact)."""
    from nodedp.accounting import verify_ledger_dict
    from nodedp.config.variants import check_run_name
    from nodedp.contract.base import RunSpec
    from tests.methods._structure import with_bound

    info = get_method(method)
    fields = {f.name for f in __import__("dataclasses").fields(info.hparams)}
    hp = info.parse_hparams({**{k: v for k, v in QUICK_HPARAMS.items() if k in fields}, "accounting": "paper"})
    inputs = tiny_inputs
    for kind in set(info.needs) & {"in-degree", "out-degree", "degree"}:
        inputs = with_bound(inputs, kind, _public_bound(hp, kind))
    check_run_name(f"{method}@paper", base=method, reference=hp.accounting == "paper", epsilon=4.0)
    spec = RunSpec(
        dataset="csbm-tiny",
        method=f"{method}@paper",
        seed=0,
        target_epsilon=4.0,
        target_delta=1e-4,
        accountant=info.auto_accountant,
    )
    ledger = info.run(inputs, spec, hp).ledger
    assert ledger.claim is not None and ledger.claim.epsilon == 4.0 and ledger.target_epsilon == 4.0
    actual = verify_ledger_dict(ledger.to_dict())
    assert actual == pytest.approx(ledger.composed()[0])
    # The papers' rules never over-noise, except against a record that is itself conditional on reads no finite ε
    # covers (HeterPoisson's public sampler: its mixture's correct PLD is below the claim its RDP grid states).
    unbounded = [r for r in ledger.uncharged if "no finite epsilon" in r.reason.replace("ε", "epsilon")]
    assert ledger.actual_claim_epsilon() >= 4.0 * 0.99 or (unbounded and ledger.guarantee_class == "conditional")


def test_every_spec_module_is_found_without_a_list():
    """Each module of nodedp.contract.specs is imported when the registry loads (pkgutil), so a new family's spec
    module registers itself; the entries' batch rule is a field of each entry."""
    import pkgutil
    import sys

    import nodedp.contract.specs as specs

    modules = [m.name for m in pkgutil.iter_modules(specs.__path__)]
    assert "mlp" in modules and "dp_gnn" in modules
    assert all(f"nodedp.contract.specs.{m}" in sys.modules for m in modules)
    batch = {m for m in method_names() if get_method(m).batch_of_training_nodes}
    assert {"dp-mlp", "dp-gcn", "gap", "progap", "dpdgc"} <= batch
    assert not batch & {"dpar-em0", "nip-gnn", "mlp", "gap-edge"}


def test_an_entry_refuses_a_bad_id_a_batch_rule_without_a_batch_size_and_a_bad_plan():
    @dataclass(frozen=True)
    class Hp:
        lr: float = 0.1

    def info(**kwargs):
        fields = {"name": "x", "description": "", "private": False, "level": "none", "hparams": Hp, "run": print}
        return MethodInfo(**{**fields, **kwargs})

    for bad in ("DP-X", "x_y", "x@paper", "-x", ""):
        with pytest.raises(ValueError, match="method id"):
            info(name=bad)
    with pytest.raises(ValueError, match="batch_of_training_nodes needs a hyperparameter batch_size"):
        info(batch_of_training_nodes=True)
    with pytest.raises(ValueError, match="plan is 'module:function'"):
        info(private=True, level="node", plan="mymethods.specs")
    with pytest.raises(ValueError, match="reference_floor is 'module:function'"):
        info(private=True, level="node", reference_floor="mymethods.plans:")
    with pytest.raises(ValueError, match="hparams must be a dataclass"):
        info(hparams=dict)


def _registry_in_a_process(tmp_path, code: str, env: dict[str, str]):
    import os
    import subprocess
    import sys

    environment = {k: v for k, v in os.environ.items() if k != "NODEDP_PLUGINS"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )


PLUGIN_SPEC = """
from nodedp.contract.base import MethodInfo, lazy_run
from nodedp.contract.registry import register_method
from nodedp.contract.specs.mlp import MlpHparams

register_method(MethodInfo(name="my-mlp", description="a plugin's MLP", private=False, level="none",
                           hparams=MlpHparams, run=lazy_run("nodedp.methods.mlp:run_mlp")))
"""


def test_an_installed_packages_entry_point_registers_its_methods(tmp_path):
    """A package installed with an entry point of group nodedp.methods (as pip lays it out: the module and a
    .dist-info folder with entry_points.txt on the path) registers its methods in every process."""
    site = tmp_path / "site"
    (site / "myplugin").mkdir(parents=True)
    (site / "myplugin" / "specs.py").write_text(PLUGIN_SPEC)
    dist = site / "myplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nodedp.methods]\nmy-mlp = myplugin.specs\n")
    code = "from nodedp.contract.registry import get_method, method_names; print(get_method('my-mlp').description)"
    done = _registry_in_a_process(tmp_path, code, {"PYTHONPATH": str(site)})
    assert done.returncode == 0 and done.stdout.strip() == "a plugin's MLP", done.stderr
    (dist / "entry_points.txt").write_text("[nodedp.methods]\nmy-mlp = myplugin.spec\n")
    done = _registry_in_a_process(tmp_path, code, {"PYTHONPATH": str(site)})
    assert done.returncode != 0
    assert "entry point 'my-mlp' of myplugin (group 'nodedp.methods'): cannot import the plugin module " in done.stderr


def test_nodedp_plugins_names_modules_and_an_unknown_name_says_how_to_register(tmp_path):
    (tmp_path / "mine.py").write_text(PLUGIN_SPEC)
    code = "from nodedp.contract.registry import method_names; print('my-mlp' in method_names())"
    done = _registry_in_a_process(tmp_path, code, {"NODEDP_PLUGINS": "mine"})  # found in the current directory
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    done = _registry_in_a_process(tmp_path, code, {"NODEDP_PLUGINS": "mine, nope"})
    assert "$NODEDP_PLUGINS: cannot import the plugin module 'nope'" in done.stderr
    with pytest.raises(
        UnknownMethodError,
        match=r"unknown method 'my-mlp' \(from a plugin\?.*\$NODEDP_PLUGINS.*valid choices: .*dp-mlp",
    ):
        get_method("my-mlp")


def test_a_plugin_that_cannot_be_imported_is_one_line_from_the_cli_and_never_skipped_later(tmp_path):
    done = _registry_in_a_process(
        tmp_path, "import sys; from nodedp.cli import main; sys.exit(main(['methods']))", {"NODEDP_PLUGINS": "nope"}
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "nodedp methods: error: $NODEDP_PLUGINS: cannot import the plugin module 'nope' (no module named 'nope'): "
        "install its package, or run from the folder that holds it (or put that folder on PYTHONPATH)"
    ]
    (tmp_path / "mine.py").write_text(PLUGIN_SPEC)
    # A failed discovery is not remembered as done: the next read fails again rather than miss the later plugins.
    code = (
        "from nodedp.contract.registry import method_names\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        method_names()\n"
        "    except ValueError as err:\n"
        "        print(type(err).__name__)\n"
    )
    done = _registry_in_a_process(tmp_path, code, {"NODEDP_PLUGINS": "nope, mine"})
    assert done.stdout.split() == ["PluginError", "PluginError"], (done.stdout, done.stderr)


def test_every_entry_says_where_its_spec_plan_and_run_live_and_each_resolves():
    """The registry is the one table of the wiring: each entry's hyperparameters live in its spec module (the
    contract, torch-free), its planner in nodedp.plans, its run in nodedp.methods; each resolves."""
    from nodedp.contract.base import LazyRun
    from nodedp.plans import planner_of, reference_floor_of

    for name in method_names():
        info = get_method(name)
        assert info.hparams.__module__.startswith("nodedp.contract.specs."), (name, info.hparams.__module__)
        assert isinstance(info.run, LazyRun) and info.run.target.startswith("nodedp.methods."), name
        assert callable(info.run.resolve()), name
        if info.private:
            assert info.plan is not None and info.plan.startswith("nodedp.plans."), (name, info.plan)
            assert callable(planner_of(info)), name
        else:
            assert info.plan is None and planner_of(info) is not None, name
        if info.reference_floor is not None:  # a floor of a paper's accountant: plain math in nodedp.accounting
            assert info.reference_floor.startswith("nodedp.accounting.") and callable(reference_floor_of(info)), name
    assert get_method("dp-gcn").reference_floor and not get_method("gap").reference_floor


def _family_rows() -> list[dict[str, set[str]]]:
    """The family table of docs/design/methods.md: one dict per row, column -> the files it names."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "design" / "methods.md").read_text(encoding="utf-8")
    table = text.split("## Each family's files", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        {column: set(re.findall(r"`([\w/]+\.py)`", cell)) for column, cell in zip(header, row.strip("|").split("|"))}
        for row in lines[2:]
    ]


def test_the_family_table_names_each_entry_s_spec_plan_and_run_and_every_module():
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "nodedp"
    rows = _family_rows()
    named = set().union(*(files for row in rows for files in row.values()))
    assert named and not {f for f in named if not (src / f).is_file()}, "files the table names that do not exist"
    for layer in ("contract/specs", "plans", "methods"):
        modules = {f"{layer}/{p.name}" for p in (src / layer).glob("*.py") if p.name != "__init__.py"}
        assert modules <= named, f"{layer} modules in no family's row: {sorted(modules - named)}"

    def file_of(module: str) -> str:
        return module.removeprefix("nodedp.").replace(".", "/") + ".py"

    for name in method_names():
        info = get_method(name)
        wiring = {
            "contract": file_of(info.hparams.__module__),
            "run": file_of(info.run.target.partition(":")[0]),
            **({"plan": file_of(info.plan.partition(":")[0])} if info.plan else {}),
        }
        assert any(all(f in row[column] for column, f in wiring.items()) for row in rows), (name, wiring)
