"""DPAR as a method: the DP-APPR artifact's bounds, the composed ledger, neighbouring graphs, the artifact checks."""

from __future__ import annotations

import json
import math

import pytest
import torch

from nodedp.accounting import Ledger, inner_budget, verify_ledger_dict
from nodedp.methods import RunInputs, RunSpec, get_method
from nodedp.methods.dpar import OPTIONS, _training_rows, build_dp_appr
from nodedp.models import PPRGo
from nodedp.train import PerSampleGradients

# A tiny graph: sample half the 180 training nodes, 20 sources.
FAST = {"epochs": 2, "batch_size": 16, "sample_rate": 0.5, "num_sources": 20, "k": 3, "max_rows": 2}
DELTA = 1e-4


def _artifact(tiny_inputs, method: str, epsilon: float, seed: int = 0, **hparams):
    hp = get_method(method).parse_hparams({**FAST, **hparams})
    artifact = build_dp_appr(tiny_inputs.graph, tiny_inputs.split, method=method, hp=hp, target_epsilon=epsilon,
                             target_delta=DELTA if math.isfinite(epsilon) else 0.0, seed=seed)
    return artifact, hp


def _run(tiny_inputs, method: str, epsilon: float, artifact=None, seed: int = 0, **hparams):
    info = get_method(method)
    if artifact is None:
        artifact, _ = _artifact(tiny_inputs, method, epsilon, seed=seed, **hparams)
    inputs = RunInputs(graph=tiny_inputs.graph, split=tiny_inputs.split, num_classes=tiny_inputs.num_classes,
                       structure={"dp-appr": artifact})
    spec = RunSpec(dataset="csbm-tiny", method=method, seed=seed, target_epsilon=epsilon,
                   target_delta=DELTA if info.private else 0.0)
    return info.run(inputs, spec, info.parse_hparams({**FAST, **hparams}))


@pytest.mark.parametrize("method", list(OPTIONS))
def test_artifact_rows_have_k_entries_within_the_sample_and_the_cap(tiny_inputs, method):
    epsilon = math.inf if method == "dpar-nodp" else 4.0
    artifact, hp = _artifact(tiny_inputs, method, epsilon)
    train = set(tiny_inputs.split.train.tolist())
    sample, sources, index, value = (artifact[k] for k in ("sample", "sources", "index", "value"))
    assert set(sample.tolist()) <= train and set(sources.tolist()) <= set(sample.tolist())
    assert sources.numel() == len(set(sources.tolist())) == hp.num_sources
    assert index.shape == value.shape == (hp.num_sources, hp.k)
    assert all(len(set(row)) == hp.k for row in index.tolist())  # K distinct columns per row
    assert set(index.flatten().tolist()) <= train  # the public column universe: training ids
    # the cap: no column holds a non-zero in more than max_rows rows
    kept = index[value != 0]
    assert torch.bincount(kept).max() <= hp.max_rows
    if method == "dpar-em0":
        assert torch.allclose(value[value != 0], torch.tensor(1 / hp.k))


def test_node_sample_has_the_public_rate(tiny_inputs):
    n = tiny_inputs.split.train.numel()
    sizes = [_artifact(tiny_inputs, "dpar-nodp", math.inf, seed=s, sample_rate=0.3)[0]["sample"].numel()
             for s in range(30)]
    mean = sum(sizes) / len(sizes)
    assert abs(mean - 0.3 * n) < 4 * math.sqrt(0.3 * 0.7 * n / len(sizes))


@pytest.mark.parametrize("method", ["dpar-em0", "dpar-em1", "dpar-gm"])
def test_artifact_spends_its_ratio_of_the_inner_budget(tiny_inputs, method):
    artifact, hp = _artifact(tiny_inputs, method, 4.0)
    ledger = Ledger.from_dict(json.loads(artifact["ledger"]))
    inner, _ = inner_budget(target_epsilon=4.0, target_delta=DELTA, sample_rate=hp.sample_rate)
    on_sample, delta = ledger.composed_on_sample()
    assert 0.99 * hp.ratio * inner <= on_sample <= hp.ratio * inner * (1 + 1e-9)
    assert delta == pytest.approx(DELTA / hp.sample_rate)
    assert ledger.node_sample_rate == hp.sample_rate and ledger.composed()[0] < 4.0


@pytest.mark.parametrize("method", ["dpar-em0", "dpar-em1", "dpar-gm"])
def test_run_composes_the_artifact_and_dp_sgd_to_the_target(tiny_inputs, method):
    result = _run(tiny_inputs, method, 4.0)
    ledger = result.ledger
    spent, delta = ledger.composed()
    assert 0.99 * 4.0 <= spent <= 4.0 and delta == DELTA
    names = [r.name for r in ledger.mechanisms]
    assert names[-1] == f"dp-sgd:{method}" and names[0].startswith("dp_appr")
    sgd = ledger.mechanisms[-1]
    assert sgd.kind == "poisson_occurrence_gaussian" and sgd.params["max_occurrences"] == FAST["max_rows"] + 1
    assert result.details["noise_std"] == pytest.approx(sgd.params["noise_std"]) and sgd.params["noise_std"] > 0
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(spent)
    # the reference code's figure is recorded beside ours: its two parts × q', never composed
    parts = result.details["claimed_epsilon_parts_on_sample"]
    assert result.details["claimed_epsilon"] == pytest.approx(FAST["sample_rate"] * (parts["dp_appr"] + parts["dp_sgd"]))


def test_non_private_variant_has_an_empty_ledger(tiny_inputs):
    result = _run(tiny_inputs, "dpar-nodp", math.inf)
    assert not result.ledger.private and result.test["accuracy"] > 0.5


def test_training_rows_keep_columns_within_tau_and_drop_nodes_outside_the_sample(tiny_inputs):
    artifact, hp = _artifact(tiny_inputs, "dpar-gm", 4.0, tau=0.7)
    nbr, weight = _training_rows(artifact, num_nodes=tiny_inputs.graph.num_nodes, k=hp.k, tau=0.7)
    n = artifact["sample"].numel()
    column_l1 = torch.zeros(n).index_add_(0, nbr.flatten(), weight.abs().flatten())
    assert column_l1.max() <= 0.7 + 1e-6
    # a non-source's row is itself only
    position = {int(v): i for i, v in enumerate(artifact["sample"])}
    sources = {position[int(s)] for s in artifact["sources"]}
    others = [i for i in range(n) if i not in sources]
    assert all(nbr[i, 0] == i and (weight[i, 1:] == 0).all() for i in others)
    # GM may select training nodes outside the sample: they carry no weight
    outside = ~torch.isin(artifact["index"], artifact["sample"])
    assert outside.any()
    rows = torch.tensor([position[int(s)] for s in artifact["sources"]])
    assert (weight[rows].abs().sum(1) <= artifact["value"][: rows.numel()].abs().sum(1) + 1e-6).all()


def test_one_node_moves_the_clipped_gradient_sum_by_at_most_2c_times_d(tiny_inputs):
    """Neighbouring graphs, same released DP-APPR matrix: remove a node's features and label (its row is then
    a zero-gradient row); the clipped sum over all training rows moves by ≤ 2·C·(max_rows + 1)."""
    artifact, hp = _artifact(tiny_inputs, "dpar-em0", 50.0, max_rows=2)
    graph = tiny_inputs.graph
    nbr, weight = _training_rows(artifact, num_nodes=graph.num_nodes, k=hp.k, tau=hp.tau)
    sample = artifact["sample"]
    torch.manual_seed(0)
    model = PPRGo(graph.num_features, 8, tiny_inputs.num_classes)
    clip = 0.05  # small enough that every row's gradient is clipped

    def clipped_sum(x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        hooks = PerSampleGradients(model)
        with hooks.capture():
            out = model((x[nbr], weight))
        losses = torch.nn.functional.cross_entropy(out, graph.y[sample], reduction="none") * present
        hooks.backward(losses)
        factors = (clip / hooks.norms().clamp(min=1e-12)).clamp(max=1.0)
        hooks.write_clipped_sum(factors)
        flat = torch.cat([p.grad.flatten() for p in hooks.parameters])
        hooks.remove()
        return flat

    x = graph.x[sample]
    base = clipped_sum(x, torch.ones(sample.numel()))
    worst = 0.0
    for u in range(sample.numel()):  # every node of the sample
        x_u = x.clone()
        x_u[u] = 0.0
        present = torch.ones(sample.numel())
        present[u] = 0.0
        worst = max(worst, float((clipped_sum(x_u, present) - base).norm()))
    bound = 2 * clip * (hp.max_rows + 1)
    assert 0 < worst <= bound * (1 + 1e-5)
    # some node's features enter more than its own row, so one row's 2C would not be a bound
    rows_holding = torch.zeros(sample.numel()).index_add_(0, nbr.flatten(), (weight != 0).flatten().float())
    assert rows_holding.max() > 1


def test_artifact_for_other_settings_is_refused(tiny_inputs):
    artifact, _ = _artifact(tiny_inputs, "dpar-em0", 4.0)
    with pytest.raises(ValueError, match="built for other settings"):
        _run(tiny_inputs, "dpar-em0", 2.0, artifact=artifact)
    with pytest.raises(ValueError, match="built for other settings"):
        _run(tiny_inputs, "dpar-em1", 4.0, artifact=artifact)
    info = get_method("dpar-em0")
    spec = RunSpec(dataset="csbm-tiny", method="dpar-em0", seed=0, target_epsilon=4.0, target_delta=DELTA)
    with pytest.raises(ValueError, match="dp-appr"):
        info.run(tiny_inputs, spec, info.parse_hparams(FAST))


@pytest.mark.parametrize(("hparams", "match"), [({"ratio": 1.0}, "ratio"), ({"sample_rate": 0.0}, "sample_rate"),
                                                 ({"max_rows": 0}, "max_rows"), ({"tau": 0.0}, "tau")])
def test_bad_hyperparameters_are_refused(hparams, match):
    with pytest.raises(ValueError, match=match):
        get_method("dpar-em0").parse_hparams(hparams)


def test_artifact_settings_hold_only_what_the_option_reads():
    from nodedp.methods.dpar import appr_spec

    info = get_method("dpar-em0")
    base, other = info.parse_hparams({}), info.parse_hparams({"gm_clip": 0.5, "lr": 0.1, "tau": 0.5})
    assert appr_spec("dpar-em0", base) == appr_spec("dpar-em0", other)  # GM's clip and training keys: not read
    assert appr_spec("dpar-gm", base) != appr_spec("dpar-gm", other)
    assert "ratio" not in appr_spec("dpar-nodp", base) and appr_spec("dpar-em1", base)["value_share"] == 0.5
