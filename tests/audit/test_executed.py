"""Every private method draws what its ledger records, and the audit reads the draws off the run's noise trace."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from nodedp.audit.dpsgd import dpsgd_records
from nodedp.audit.executed import executed_params
from nodedp.audit.nap import nap_edge_record, nap_record
from nodedp.audit.run import method_trainer
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method, method_names
from nodedp.mechanisms.trace import NoiseTrace, new_source, trace_noise
from tests.methods._structure import QUICK_HPARAMS

_PRIVATE = sorted(m for m in method_names() if get_method(m).private)


def _traced_run(tiny_inputs, method: str, accounting: str):
    from nodedp.contract.structure import structure_bounds
    from nodedp.data import get_dataset

    info = get_method(method)
    fields = {f.name for f in dataclasses.fields(info.hparams)}
    settings = {k: v for k, v in QUICK_HPARAMS.items() if k in fields}
    if accounting == "paper":
        settings["accounting"] = "paper"
    hp = info.parse_hparams(settings)
    bounds = structure_bounds(get_dataset("csbm-tiny"), dataclasses.asdict(hp))
    name = f"{method}@paper" if accounting == "paper" else method
    spec = RunSpec(
        dataset="csbm-tiny",
        method=name,
        seed=0,
        target_epsilon=4.0,
        target_delta=1e-4,
        accountant=info.auto_accountant if accounting == "paper" or "rdp" not in info.accountants else "rdp",
    )
    train = method_trainer(info, spec, hp, bounds=bounds, num_classes=tiny_inputs.num_classes, dataset="csbm-tiny")
    with trace_noise() as trace:
        result = train(tiny_inputs.graph, tiny_inputs.split)
    return result.ledger, trace


_CASES = [(m, "suite") for m in _PRIVATE] + [(m, "paper") for m in _PRIVATE if get_method(m).has_reference_mode]


@pytest.mark.parametrize(("method", "accounting"), _CASES)
def test_every_private_method_draws_the_noise_its_ledger_records(tiny_inputs, method, accounting):
    """Every NAP and DP-SGD draw of a run is one its ledger records, with the recorded std, clip norm and steps:
    the executed parameters the release audits draw with are the ledger's own for a correct method."""
    ledger, trace = _traced_run(tiny_inputs, method, accounting)
    executed = executed_params(ledger, trace)  # raises where the run drew noise the ledger does not record
    records = [r for r in (nap_record(ledger), nap_edge_record(ledger)) if r is not None] + dpsgd_records(ledger)
    for record in records:
        if record.name not in executed:  # a NAP the run never queried (no hop), or a stage it never trained
            assert not trace.stages("dp-sgd") or record not in dpsgd_records(ledger), record.name
            continue
        drawn, params = executed[record.name], record.params
        assert drawn["noise_std"] == pytest.approx(float(params["noise_std"]), rel=1e-9), record.name
        for key in ("clip_norm", "steps", "row_clip", "max_degree"):
            if key in drawn and key in params:
                expected = params[key] if params[key] is None else pytest.approx(params[key], rel=1e-9)
                assert drawn[key] == expected, (record.name, key)
    assert set(executed) <= {r.name for r in records}


def _ledger(*records):
    return SimpleNamespace(mechanisms=list(records), node_sample_rate=1.0)


def _dpsgd(name: str, std: float, steps: int):
    params = {"noise_std": std, "clip_norm": 1.0, "sampling_rate": 0.1, "steps": steps}
    return SimpleNamespace(name=name, kind="subsampled_gaussian", params=params)


def test_the_executed_parameters_are_the_smallest_std_each_stage_drew_and_its_step_count():
    stage0, stage1 = new_source(), new_source()
    trace = NoiseTrace()
    for _ in range(3):
        trace.note("dp-sgd", stage0, 2.0, {"clip_norm": 1.0})
    trace.note("dp-sgd", stage1, 0.5, {"clip_norm": 2.0})
    trace.note("dp-sgd", stage1, 0.25, {"clip_norm": 2.0})
    assert [d.count for d in trace.draws] == [3, 1, 1]  # consecutive repeats merge
    executed = executed_params(_ledger(_dpsgd("a", 2.0, 3), _dpsgd("b", 0.5, 2)), trace)
    assert executed == {
        "a": {"noise_std": 2.0, "clip_norm": 1.0, "steps": 3},
        "b": {"noise_std": 0.25, "clip_norm": 2.0, "steps": 2},
    }


def test_a_run_drawing_noise_its_ledger_does_not_record_is_refused():
    trace = NoiseTrace()
    trace.note("dp-sgd", new_source(), 1.0, {"clip_norm": 1.0})
    trace.note("dp-sgd", new_source(), 1.0, {"clip_norm": 1.0})
    with pytest.raises(ValueError, match=r"trained 2 DP-SGD stage\(s\), its ledger records 1"):
        executed_params(_ledger(_dpsgd("a", 1.0, 1)), trace)
    nap = NoiseTrace()
    nap.note("nap", new_source(), 3.0, {"level": "node", "row_clip": 1.0, "max_degree": 2})
    with pytest.raises(ValueError, match="node-level NAP noise that its ledger does not record"):
        executed_params(_ledger(), nap)


def test_draws_outside_a_trace_are_not_kept_and_a_trace_ends_with_its_block():
    import torch

    from nodedp.mechanisms import NAP

    nap = NAP(level="node", row_clip=1.0, noise_multiplier=2.0, max_degree=2)
    x, edges = torch.eye(3), torch.tensor([[0, 1], [1, 2]])
    nap(x, edges, generator=torch.Generator().manual_seed(0))  # no trace open: nothing to keep
    with trace_noise() as trace:
        nap(x, edges, generator=torch.Generator().manual_seed(0))
        nap(x, edges, generator=torch.Generator().manual_seed(1))
    nap(x, edges, generator=torch.Generator().manual_seed(2))
    (draw,) = trace.draws
    assert draw.count == 2 and draw.std == pytest.approx(nap.noise_std)
    assert draw.params == {"level": "node", "row_clip": 1.0, "max_degree": 2}
