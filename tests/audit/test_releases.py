"""The release-audit table: every release a registered private method's ledger records (its suite accounting and,
where it has one, its reference mode) is covered by an audit; a record of an unknown kind is not."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from nodedp.accounting.ledger import MechanismRecord
from nodedp.audit.releases import RELEASES, covering
from nodedp.config.variants import resolve_method
from nodedp.contract.base import RunSpec
from nodedp.contract.naming import REFERENCE_SUFFIX
from nodedp.contract.registry import get_method, method_names
from nodedp.plans import PublicInputs, planner_of
from nodedp.plans.nip_gnn import NipReleased

PUBLIC = PublicInputs(
    dataset="csbm-homophilous", num_nodes=3000, num_train=2250, num_features=32, num_classes=5, num_edges=18000
)


def _runs() -> list[str]:
    runs = []
    for name in method_names():
        info = get_method(name)
        if not info.private:
            continue
        runs.append(name)
        if "accounting" in {f.name for f in dataclasses.fields(info.hparams)}:
            runs.append(name + REFERENCE_SUFFIX)
    return runs


def _ledger(run: str):
    """The ledger ``run`` plans at ε = 1 on a csbm-homophilous-sized graph (NIP-GNN's budgets and D_p given as an
    edge release would give them: every budget weight 1, D_p the public bound)."""
    base, hparams = resolve_method({}, run)
    info = get_method(base)
    hp = info.parse_hparams(hparams)
    delta = 1e-4 if info.level == "node" else 1e-5
    accountant = "rdp" if "rdp" in info.accountants else info.auto_accountant  # PLD-only pairs: their PLD
    spec = RunSpec(
        dataset=PUBLIC.dataset, method=run, seed=0, target_epsilon=1.0, target_delta=delta, accountant=accountant
    )
    planner = planner_of(info)
    kwargs = {}
    if "released" in inspect.signature(planner).parameters:
        d = int(PUBLIC.degree_bounds(dataclasses.asdict(hp))["degree"])
        kwargs["released"] = NipReleased(largest_budget_weights=(1.0,) * (d + 1), paper_max_degree=d)
    return planner(PUBLIC, spec, hp, **kwargs).ledger


@pytest.mark.parametrize("run", _runs())
def test_every_release_a_private_methods_ledger_records_is_covered_by_a_release_audit(run):
    ledger = _ledger(run)
    assert ledger.private and ledger.mechanisms
    uncovered = [(r.name, r.kind) for r in ledger.mechanisms if covering(ledger, r) is None]
    assert not uncovered, f"{run}: no release audit covers {uncovered}; add one to nodedp.audit.releases.RELEASES"


def test_a_record_of_a_kind_no_audit_knows_is_not_covered_and_the_names_are_unique():
    record = MechanismRecord(
        name="new-release",
        kind="gaussian",
        touches=("edges",),
        params={"mechanism": "something_new", "noise_std": 1.0},
        sensitivity=1.0,
        sensitivity_reason="a test's",
        dp_event=None,
        pure_epsilon=1.0,
    )

    class Ledger:
        mechanisms = (record,)
        node_sample_rate = 1.0

    assert covering(Ledger(), record) is None
    assert len({r.name for r in RELEASES}) == len(RELEASES)
    assert all(r.bound in ("one-run", "runs") for r in RELEASES)
