"""DPAR as a method: the DP-APPR artifact's bounds, the composed ledger, neighbouring graphs, the artifact checks."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from types import SimpleNamespace

import pytest
import torch
from torch_geometric.data import Data

from nodedp.accounting import Ledger, inner_budget, poisson_occurrence_gaussian_params, verify_ledger_dict
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.contract.specs.dpar import OPTIONS
from nodedp.data import remove_cross_split_edges
from nodedp.mechanisms import clip_columns_l1
from nodedp.methods.dpar import _training_rows, build_dp_appr, rank_sources, remove_coupled, training_examples
from nodedp.models import PPRGo
from nodedp.plans.dpar import SOURCE_RULE
from nodedp.train import PerSampleGradients
from tests.methods._structure import accuracy_on as _accuracy
from tests.methods._structure import extended_graph
from tests.methods._structure import within_hops as _within_hops

# A tiny graph: sample half the 180 training nodes, 20 sources.
FAST = {"epochs": 2, "batch_size": 16, "sample_rate": 0.5, "num_sources": 20, "k": 3, "max_rows": 2}
DELTA = 1e-4


def _artifact(tiny_inputs, method: str, epsilon: float, seed: int = 0, **hparams):
    hp = get_method(method).parse_hparams({**FAST, **hparams})
    delta = DELTA if math.isfinite(epsilon) else 0.0
    spec = RunSpec(dataset="", method=method, seed=seed, target_epsilon=epsilon, target_delta=delta)
    artifact = build_dp_appr(tiny_inputs.graph, tiny_inputs.split, spec, hp)
    return artifact, hp


def _run(tiny_inputs, method: str, epsilon: float, artifact=None, seed: int = 0, **hparams):
    info = get_method(method)
    if artifact is None:
        artifact, _ = _artifact(tiny_inputs, method, epsilon, seed=seed, **hparams)
    inputs = RunInputs(
        graph=tiny_inputs.graph,
        split=tiny_inputs.split,
        num_classes=tiny_inputs.num_classes,
        structure={"dp-appr": artifact},
    )
    spec = RunSpec(
        dataset="csbm-tiny",
        method=method,
        seed=seed,
        target_epsilon=epsilon,
        target_delta=DELTA if info.private else 0.0,
    )
    return info.run(inputs, spec, info.parse_hparams({**FAST, **hparams}))


@pytest.mark.parametrize("method", [m for m, option in OPTIONS.items() if option != "features"])
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
    sizes = [
        _artifact(tiny_inputs, "dpar-nodp", math.inf, seed=s, sample_rate=0.3)[0]["sample"].numel() for s in range(30)
    ]
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
    assert sgd.kind == "poisson_occurrence_gaussian" and sgd.params["max_occurrences"] == FAST["max_rows"] + 2
    assert sgd.params["occurrence_rule"] == "ranked_sources" and sgd.params["max_rows"] == FAST["max_rows"]
    assert result.details["noise_std"] == pytest.approx(sgd.params["noise_std"]) and sgd.params["noise_std"] > 0
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(spent)
    # the reference code's figure is recorded beside ours: its two parts × q', never composed
    parts = result.details["claimed_epsilon_parts_on_sample"]
    assert result.details["claimed_epsilon"] == pytest.approx(
        FAST["sample_rate"] * (parts["dp_appr"] + parts["dp_sgd"])
    )


def test_non_private_variant_has_an_empty_ledger(tiny_inputs):
    result = _run(tiny_inputs, "dpar-nodp", math.inf)
    assert not result.ledger.private and result.test["accuracy"] > 0.5


def test_training_rows_keep_columns_of_the_release_within_tau_and_drop_nodes_outside_the_sample(tiny_inputs):
    artifact, hp = _artifact(tiny_inputs, "dpar-gm", 4.0, tau=0.3)
    nbr, weight = _training_rows(artifact, num_nodes=tiny_inputs.graph.num_nodes, k=hp.k, tau=0.3)
    n = artifact["sample"].numel()
    position = {int(v): i for i, v in enumerate(artifact["sample"])}
    sources = {position[int(s)] for s in artifact["sources"]}
    others = [i for i in range(n) if i not in sources]
    # a non-source's row is itself only, weight 1: not a row of Π, so no column clipping
    assert others and all(nbr[i, 0] == i and weight[i, 0] == 1 and (weight[i, 1:] == 0).all() for i in others)
    rows = torch.tensor(sorted(sources))
    column_l1 = torch.zeros(n).index_add_(0, nbr[rows].flatten(), weight[rows].abs().flatten())
    assert column_l1.max() <= 0.3 + 1e-6
    # the factors are those of the whole released matrix (Π's columns over all its M rows)
    index, value = artifact["index"], artifact["value"]
    released = torch.zeros(tiny_inputs.graph.num_nodes).index_add_(0, index.flatten(), value.abs().flatten())
    assert released.max() > 0.3  # the clip binds somewhere
    in_order = torch.tensor([position[int(s)] for s in artifact["sources"]])  # row i's source
    inside = torch.isin(index[: in_order.numel()], artifact["sample"])
    factor = (0.3 / released[index[: in_order.numel()]]).clamp(max=1.0)
    assert torch.allclose(weight[in_order].abs()[inside], (value[: in_order.numel()].abs() * factor)[inside])
    # GM may select training nodes outside the sample: they carry no weight
    outside = ~torch.isin(index, artifact["sample"])
    assert outside.any()
    assert (weight[in_order].abs().sum(1) <= value[: in_order.numel()].abs().sum(1) + 1e-6).all()


def test_sources_are_the_sampled_nodes_of_smallest_priority(tiny_inputs):
    artifact, hp = _artifact(tiny_inputs, "dpar-em0", 4.0)
    sample, priority = artifact["sample"], artifact["source_priority"]
    assert artifact["source_rule"] == SOURCE_RULE and priority.shape == sample.shape
    assert torch.equal(artifact["sources"], sample[rank_sources(priority, num_rows=hp.num_sources)])
    ranked = priority[torch.isin(sample, artifact["sources"])]
    assert ranked.max() < priority[~torch.isin(sample, artifact["sources"])].min()


@pytest.mark.parametrize(("size", "num_rows"), [(5, 2), (5, 5), (5, 7), (6, 1)])
def test_the_coupling_keeps_the_order_of_the_smaller_sample_uniform(size, num_rows):
    """ψ maps the |S|! orders of S onto the (|S| − 1)! orders of S ∖ {v}, each hit exactly |S| times (so the
    coupled draw has the law the mechanism draws for S ∖ {v}), and keeps every other source in its row."""
    sample = torch.arange(10, 10 + size)
    for v in sample.tolist():
        hits: dict[tuple[int, ...], int] = {}
        for perm in itertools.permutations(range(size)):
            priority = torch.tensor(perm)
            rows = sample[rank_sources(priority, num_rows=num_rows)].tolist()
            rest, moved = remove_coupled(sample, priority, v, num_rows=num_rows)
            order = tuple(rest[moved.argsort()].tolist())
            hits[order] = hits.get(order, 0) + 1
            new_rows = rest[rank_sources(moved, num_rows=num_rows)].tolist()
            kept = [i for i, u in enumerate(rows) if u != v]
            assert all(new_rows[i] == rows[i] for i in kept if i < len(new_rows))
            assert len(set(new_rows) - set(rows)) <= 1
        assert len(hits) == math.factorial(size - 1) and set(hits.values()) == {size}


def _preferential_attachment(n: int, m: int, rng: random.Random) -> torch.Tensor:
    """Barabási–Albert: each new node links to m earlier ones chosen by degree (both directions)."""
    targets, ends, edges = list(range(m)), [], []
    for u in range(m, n):
        for t in set(targets):
            edges.append((u, t))
            ends += [u, t]
        targets = [rng.choice(ends) for _ in range(m)]
    return torch.tensor(edges + [(b, a) for a, b in edges]).T


def _random_graph(n: int, p: float, rng: random.Random) -> torch.Tensor:
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < p]
    return torch.tensor(edges + [(b, a) for a, b in edges]).T


def _examples(sample, sources, index, value, *, num_nodes, k, tau, clip=training_examples):
    """Every sampled node id → its example: the (neighbour id, weight) pairs of non-zero weight."""
    nbr, weight = clip(sample, sources, index, value, num_nodes=num_nodes, k=k, tau=tau)
    return {
        int(u): tuple(sorted((int(sample[c]), float(w)) for c, w in zip(nbr[i], weight[i], strict=True) if w))
        for i, u in enumerate(sample)
    }


def _old_training_examples(sample, sources, index, value, *, num_nodes, k, tau):
    """The previous reading: column sums over the n × n training matrix, self rows of non-sources included."""
    n = sample.numel()
    position = torch.full((num_nodes,), -1, dtype=torch.long)
    position[sample] = torch.arange(n)
    nbr = torch.arange(n).unsqueeze(1).repeat(1, k)
    weight = torch.zeros(n, k)
    weight[:, 0] = 1.0
    rows = position[sources]
    cols = position[index[: rows.numel()]]
    nbr[rows] = torch.where(cols >= 0, cols, rows.unsqueeze(1))
    weight[rows] = value[: rows.numel()] * (cols >= 0)
    return nbr, clip_columns_l1(nbr, weight, num_columns=n, tau=tau)


def _changed(before: dict, after: dict) -> int:
    return sum(before.get(u) != after.get(u) for u in before.keys() | after.keys())


GRAPHS = [("preferential", 80, 2), ("preferential", 60, 3), ("random", 60, 0.08)]


@pytest.mark.parametrize(("method", "num_sources"), [("dpar-nodp", 16), ("dpar-nodp", 40), ("dpar-em0", 20)])
def test_every_removal_from_the_sample_changes_at_most_d_training_examples(method, num_sources):
    """Hold the released DP-APPR matrix fixed (DP-SGD's analysis is conditional on it), remove each sampled
    node v in turn with the coupled priorities, rebuild every example and count those that changed."""
    k, max_rows, tau = 3, 2, 1.0
    d = poisson_occurrence_gaussian_params(
        sampling_rate=0.1, max_rows=max_rows, noise_multiplier=1.0, clip_norm=1.0, steps=1, occurrence_rule=SOURCE_RULE
    )["max_occurrences"]
    hp = get_method(method).parse_hparams(
        {"k": k, "max_rows": max_rows, "sample_rate": 0.6, "num_sources": num_sources, "tau": tau}
    )
    epsilon = math.inf if method == "dpar-nodp" else 200.0
    worst = worst_old = worst_fixed = 0
    for seed, (kind, n, shape) in enumerate(GRAPHS):
        rng = random.Random(seed)
        edges = _preferential_attachment(n, shape, rng) if kind == "preferential" else _random_graph(n, shape, rng)
        graph, split = SimpleNamespace(edge_index=edges, num_nodes=n), SimpleNamespace(train=torch.arange(n))
        delta = 0.0 if method == "dpar-nodp" else DELTA
        spec = RunSpec(dataset="", method=method, seed=seed, target_epsilon=epsilon, target_delta=delta)
        art = build_dp_appr(graph, split, spec, hp)
        sample, priority, index, value = (art[key] for key in ("sample", "source_priority", "index", "value"))
        common = {"num_nodes": n, "k": k, "tau": tau}
        before = _examples(sample, art["sources"], index, value, **common)
        old_before = _examples(sample, art["sources"], index, value, clip=_old_training_examples, **common)
        for v in sample.tolist():
            rest, moved = remove_coupled(sample, priority, v, num_rows=num_sources)
            sources = rest[rank_sources(moved, num_rows=num_sources)]
            count = _changed(before, _examples(rest, sources, index, value, **common))
            assert count <= d, (kind, n, v, count)
            worst = max(worst, count)
            worst_old = max(
                worst_old,
                _changed(old_before, _examples(rest, sources, index, value, clip=_old_training_examples, **common)),
            )
            # the same priorities, uncoupled: later sources shift rows
            fixed = rest[rank_sources(priority[sample != v], num_rows=num_sources)]
            worst_fixed = max(worst_fixed, _changed(before, _examples(rest, fixed, index, value, **common)))
    assert d == max_rows + 2 and worst == d  # attained: the bound is exact
    assert worst > max_rows + 1  # d = max_rows + 1 would be too small
    assert worst_old > d  # column sums over the training matrix moved more rows
    assert worst_fixed > d  # and without the coupling the rows shift


def test_one_node_moves_the_clipped_gradient_sum_by_at_most_2c_times_d(tiny_inputs):
    """Neighbouring samples, same released DP-APPR matrix: remove each sampled node (coupled priorities,
    examples rebuilt); the clipped sum over all training examples moves by ≤ 2·C·d, d the ledger's."""
    artifact, hp = _artifact(tiny_inputs, "dpar-em0", 50.0, max_rows=2, num_sources=30)
    graph = tiny_inputs.graph
    d = poisson_occurrence_gaussian_params(
        sampling_rate=0.1,
        max_rows=hp.max_rows,
        noise_multiplier=1.0,
        clip_norm=1.0,
        steps=1,
        occurrence_rule=SOURCE_RULE,
    )["max_occurrences"]
    torch.manual_seed(0)
    model = PPRGo(graph.num_features, 8, tiny_inputs.num_classes)
    clip = 0.05  # small enough that every example's gradient is clipped

    def clipped_sum(sample: torch.Tensor, sources: torch.Tensor) -> torch.Tensor:
        nbr, weight = training_examples(
            sample, sources, artifact["index"], artifact["value"], num_nodes=graph.num_nodes, k=hp.k, tau=hp.tau
        )
        hooks = PerSampleGradients(model)
        with hooks.capture():
            out = model((graph.x[sample][nbr], weight))
        hooks.backward(torch.nn.functional.cross_entropy(out, graph.y[sample], reduction="none"))
        factors = (clip / hooks.norms().clamp(min=1e-12)).clamp(max=1.0)
        hooks.write_clipped_sum(factors)
        flat = torch.cat([p.grad.flatten() for p in hooks.parameters])
        hooks.remove()
        return flat

    sample, priority = artifact["sample"], artifact["source_priority"]
    base = clipped_sum(sample, artifact["sources"])
    worst = 0.0
    for v in sample.tolist():
        rest, moved = remove_coupled(sample, priority, v, num_rows=hp.num_sources)
        moved_sum = clipped_sum(rest, rest[rank_sources(moved, num_rows=hp.num_sources)])
        worst = max(worst, float((moved_sum - base).norm()))
    assert 2 * clip < worst <= 2 * clip * d * (1 + 1e-5)  # more than one example's 2C moved somewhere


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


@pytest.mark.parametrize(
    ("hparams", "match"),
    [
        ({"ratio": 1.0}, "ratio"),
        ({"sample_rate": 0.0}, "sample_rate"),
        ({"max_rows": 0}, "max_rows"),
        ({"tau": 0.0}, "tau"),
    ],
)
def test_bad_hyperparameters_are_refused(hparams, match):
    with pytest.raises(ValueError, match=match):
        get_method("dpar-em0").parse_hparams(hparams)


def test_artifact_settings_hold_only_what_the_option_reads():
    from nodedp.contract.specs.dpar import appr_spec

    info = get_method("dpar-em0")
    base, other = info.parse_hparams({}), info.parse_hparams({"gm_clip": 0.5, "lr": 0.1, "tau": 0.5})
    assert appr_spec("dpar-em0", base) == appr_spec("dpar-em0", other)  # GM's clip and training keys: not read
    assert appr_spec("dpar-gm", base) != appr_spec("dpar-gm", other)
    assert "ratio" not in appr_spec("dpar-nodp", base) and appr_spec("dpar-em1", base)["value_share"] == 0.5


# Reference mode (accounting: paper): the noise DPAR's own accounting gives the claimed ε, the ledger's actual ε.


def _rule_delta(num_train: int, q: float) -> float:
    """§4.1: δ ≈ 1 / (nodes of the sampled training graph, ⌈q'·|train|⌉)."""
    return 1 / math.ceil(q * num_train)


@pytest.mark.parametrize("method", ["dpar-em0", "dpar-em1", "dpar-gm"])
def test_reference_run_records_the_claim_and_its_actual_epsilon(tiny_inputs, method):
    from nodedp.accounting.dpar import PAPER_RULE, reference_dpsgd_epsilon
    from nodedp.plans.dpar import paper_noise, reference_ledger

    q, eps = FAST["sample_rate"], 4.0
    num_train = tiny_inputs.split.train.numel()
    delta = _rule_delta(num_train, q)
    result = _run(tiny_inputs, method, eps, accounting="paper")
    ledger = result.ledger
    assert ledger.claim is not None and ledger.claim.epsilon == eps and ledger.claim.delta == pytest.approx(delta)
    assert ledger.claim.rule == PAPER_RULE
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(ledger.composed()[0])
    # the same mechanisms as a suite run, only the noise differs
    suite = _run(tiny_inputs, method, eps).ledger
    assert [(r.name, r.kind, r.sensitivity) for r in ledger.mechanisms] == [
        (r.name, r.kind, r.sensitivity) for r in suite.mechanisms
    ]
    sgd = ledger.mechanisms[-1]
    assert sgd.params["max_occurrences"] == FAST["max_rows"] + 2
    noise = paper_noise(method, get_method(method).parse_hparams(FAST), num_train=num_train, epsilon=eps, delta=delta)
    assert sgd.params["noise_multiplier"] == pytest.approx(noise["sgd_noise_multiplier"], rel=1e-12)
    # DP-SGD by the public code's accountant (one example per node) at (1 − ratio)·ε/q', δ/2q' on the sample
    assert reference_dpsgd_epsilon(
        noise_multiplier=sgd.params["noise_multiplier"],
        sampling_rate=sgd.params["sampling_rate"],
        steps=sgd.params["steps"],
        delta=delta / (2 * q),
    ) == pytest.approx(0.5 * eps / q, rel=1e-9)
    first = ledger.mechanisms[0].params
    if method == "dpar-gm":
        assert first["noise_multiplier"] == pytest.approx(noise["dp_appr"]["noise_multiplier"], rel=1e-12)
    else:
        assert first["epsilon"] == pytest.approx(noise["dp_appr"]["epsilon"], rel=1e-12)
    # the paper multiplies each part's ε by q': the actual, amplified composition is far above the claim
    actual = ledger.actual_claim_epsilon()
    assert actual > eps and ledger.composed()[0] > eps
    on_sample = ledger._composed_on_sample(delta / q)[0]
    assert actual == pytest.approx(math.log1p(q * math.expm1(on_sample)), rel=1e-12)
    assert result.details["claimed_epsilon"] == eps and result.details["claimed_delta"] == pytest.approx(delta)
    assert result.details["actual_epsilon_at_claimed_delta"] == pytest.approx(actual)
    # the pure function gives the run's ledger without running
    hp = get_method(method).parse_hparams({**FAST, "accounting": "paper"})
    offline = reference_ledger(
        method, hp, num_train=num_train, target_epsilon=eps, target_delta=DELTA, claimed_delta=delta
    )
    assert offline.actual_claim_epsilon() == pytest.approx(actual, rel=1e-9)


def test_reference_gm_artifact_actual_epsilon_by_hand(tiny_inputs):
    """DP-APPR-GM alone: M Gaussians of multiplier z are one of z/√M; at δ_APPR/q' on the sample, amplified."""
    from dp_accounting import dp_event

    from nodedp.accounting import amplified, epsilon_of

    q, eps = FAST["sample_rate"], 4.0
    delta = _rule_delta(tiny_inputs.split.train.numel(), q)
    artifact, hp = _artifact(tiny_inputs, "dpar-gm", eps, accounting="paper")
    ledger = Ledger.from_dict(json.loads(artifact["ledger"]))
    z, m = artifact["noise"]["noise_multiplier"], hp.num_sources
    on_sample = epsilon_of(dp_event.GaussianDpEvent(z / math.sqrt(m)), delta=delta / (2 * q))
    assert ledger.composed_at(delta / 2)[0] == pytest.approx(amplified(on_sample, delta / (2 * q), rate=q)[0], rel=1e-6)
    # the paper's forward claim of this noise is its part ratio·ε/q' (Theorem 3 with sensitivity C1)
    assert artifact["claimed_epsilon_on_sample"] == pytest.approx(hp.ratio * eps / q, rel=1e-9)


def test_reference_artifacts_are_distinct_and_take_table_1s_delta(tiny_inputs):
    from nodedp.contract.specs.dpar import appr_spec

    info = get_method("dpar-em0")
    suite, paper = info.parse_hparams(FAST), info.parse_hparams({**FAST, "accounting": "paper"})
    assert appr_spec("dpar-em0", suite) != appr_spec("dpar-em0", paper)
    with pytest.raises(ValueError, match="no paper reference mode"):
        appr_spec("dpar-nodp", paper)
    spec = RunSpec(dataset="cora-ml", method="dpar-em0", seed=0, target_epsilon=1.0, target_delta=DELTA)
    artifact = build_dp_appr(tiny_inputs.graph, tiny_inputs.split, spec, paper)
    assert Ledger.from_dict(json.loads(artifact["ledger"])).claim.delta == 2e-3  # Table 1, Cora-ML
    # a suite artifact cannot serve a reference run, nor the other way round
    with pytest.raises(ValueError, match="built for other settings"):
        _run(tiny_inputs, "dpar-em0", 1.0, artifact=artifact)
    with pytest.raises(ValueError, match="built for other settings"):
        _run(tiny_inputs, "dpar-em0", 1.0, artifact=_artifact(tiny_inputs, "dpar-em0", 1.0)[0], accounting="paper")


# Features (dpar-features): §4's baseline, Algorithm 2 with one-hot APPR rows, no DP-APPR.


@pytest.mark.parametrize("accounting", ["suite", "paper"])
def test_features_artifact_is_em0s_node_sample_alone_and_every_example_is_a_self_row(tiny_inputs, accounting):
    features, hp = _artifact(tiny_inputs, "dpar-features", 4.0, accounting=accounting)
    em0, _ = _artifact(tiny_inputs, "dpar-em0", 4.0, accounting=accounting)
    assert torch.equal(features["sample"], em0["sample"])  # the same draws of the artifact's stream
    other_seed, _ = _artifact(tiny_inputs, "dpar-features", 4.0, seed=1, accounting=accounting)
    assert not torch.equal(features["sample"], other_seed["sample"])
    assert features["sources"].numel() == 0 and features["index"].numel() == features["value"].numel() == 0
    assert features["noise"] == {} and features["source_rule"] == "self_only"
    ledger = Ledger.from_dict(json.loads(features["ledger"]))
    assert ledger.mechanisms == () and ledger.node_sample_rate == hp.sample_rate
    assert ledger.composed()[0] == 0.0 and (ledger.claim is not None) == (accounting == "paper")
    nbr, weight = _training_rows(features, num_nodes=tiny_inputs.graph.num_nodes, k=1, tau=hp.tau)
    n = features["sample"].numel()
    assert nbr.shape == weight.shape == (n, 1)
    assert torch.equal(nbr[:, 0], torch.arange(n)) and (weight == 1).all()


def test_features_settings_are_the_node_sample_rate_alone():
    from nodedp.contract.specs.dpar import appr_spec

    info = get_method("dpar-features")
    base = info.parse_hparams({})
    assert appr_spec("dpar-features", base) == {"option": "features", "sample_rate": base.sample_rate}
    # no DP-APPR hyperparameter (ratio included: all of ε goes to DP-SGD) names its artifact
    other = info.parse_hparams({"ratio": 0.2, "k": 5, "num_sources": 10, "max_rows": 7, "em_clip": 0.1, "lr": 0.1})
    assert appr_spec("dpar-features", base) == appr_spec("dpar-features", other)
    assert appr_spec("dpar-features", base) != appr_spec("dpar-features", info.parse_hparams({"sample_rate": 0.2}))
    paper = appr_spec("dpar-features", info.parse_hparams({"accounting": "paper"}))
    assert paper == {**appr_spec("dpar-features", base), "accounting": "paper"}
    assert get_method("dpar-features").private and get_method("dpar-features").level == "node"
    assert get_method("dpar-features").has_reference_mode


def test_features_every_removal_from_the_sample_changes_exactly_one_training_example():
    """Remove each sampled node in turn (no sources, no rows: nothing to couple) and rebuild every example:
    exactly one changes, the removed node's own, so d = 1 is attained and never exceeded."""
    from nodedp.plans.dpar import dp_sgd_record

    hp = get_method("dpar-features").parse_hparams({"sample_rate": 0.6, "max_rows": 3, "k": 4})
    record = dp_sgd_record(
        "dp-sgd:dpar-features", hp, option="features", sampling_rate=0.1, steps=1, noise_multiplier=1.0
    )
    d = record.params["max_occurrences"]
    assert d == 1 and record.params["occurrence_rule"] == "self_only" and record.params["max_rows"] == 0
    assert record.sensitivity == 2 * hp.clip_norm
    removals = 0
    for seed, (kind, n, shape) in enumerate(GRAPHS):
        rng = random.Random(seed)
        edges = _preferential_attachment(n, shape, rng) if kind == "preferential" else _random_graph(n, shape, rng)
        graph, split = SimpleNamespace(edge_index=edges, num_nodes=n), SimpleNamespace(train=torch.arange(n))
        spec = RunSpec(dataset="", method="dpar-features", seed=seed, target_epsilon=1.0, target_delta=DELTA)
        art = build_dp_appr(graph, split, spec, hp)
        sample, sources, index, value = (art[key] for key in ("sample", "sources", "index", "value"))
        common = {"num_nodes": n, "k": 1, "tau": hp.tau}
        before = _examples(sample, sources, index, value, **common)
        assert before == {u: ((u, 1.0),) for u in sample.tolist()}
        for v in sample.tolist():
            rest = sample[sample != v]
            after = _examples(rest, sources, index, value, **common)
            assert _changed(before, after) == d, (kind, n, v)
            assert after == {u: ((u, 1.0),) for u in rest.tolist()}
            removals += 1
    assert removals > 50


def test_features_one_node_moves_the_clipped_gradient_sum_by_at_most_2c(tiny_inputs):
    artifact, hp = _artifact(tiny_inputs, "dpar-features", 4.0)
    graph = tiny_inputs.graph
    torch.manual_seed(0)
    model = PPRGo(graph.num_features, 8, tiny_inputs.num_classes)
    clip = 0.05

    def clipped_sum(sample: torch.Tensor) -> torch.Tensor:
        nbr, weight = training_examples(
            sample,
            artifact["sources"],
            artifact["index"],
            artifact["value"],
            num_nodes=graph.num_nodes,
            k=1,
            tau=hp.tau,
        )
        hooks = PerSampleGradients(model)
        with hooks.capture():
            out = model((graph.x[sample][nbr], weight))
        hooks.backward(torch.nn.functional.cross_entropy(out, graph.y[sample], reduction="none"))
        hooks.write_clipped_sum((clip / hooks.norms().clamp(min=1e-12)).clamp(max=1.0))
        flat = torch.cat([p.grad.flatten() for p in hooks.parameters])
        hooks.remove()
        return flat

    sample = artifact["sample"]
    base = clipped_sum(sample)
    moves = [float((clipped_sum(sample[sample != v]) - base).norm()) for v in sample.tolist()]
    assert max(moves) <= 2 * clip * (1 + 1e-5)  # d = 1 example, ≤ 2C (here C: the example goes)
    assert min(moves) > 0


def test_features_suite_run_spends_all_of_the_target_on_dp_sgd_at_one_occurrence(tiny_inputs):
    result = _run(tiny_inputs, "dpar-features", 4.0)
    ledger = result.ledger
    spent, delta = ledger.composed()
    assert 0.99 * 4.0 <= spent <= 4.0 and delta == DELTA and ledger.node_sample_rate == FAST["sample_rate"]
    (sgd,) = ledger.mechanisms
    assert sgd.name == "dp-sgd:dpar-features" and sgd.kind == "poisson_occurrence_gaussian"
    assert sgd.params["max_occurrences"] == 1 and sgd.params["occurrence_rule"] == "self_only"
    assert sgd.params["max_rows"] == 0 and sgd.sensitivity == 2 * sgd.params["clip_norm"]
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(spent)
    assert result.details["noise_std"] == pytest.approx(sgd.params["noise_std"])
    assert not {"sample_size", "num_sources", "empty_source_rows"} & set(result.details)  # counts of the sample
    assert result.details["dp_appr_noise"] == {}
    parts = result.details["claimed_epsilon_parts_on_sample"]
    assert parts["dp_appr"] == 0.0 and result.details["claimed_epsilon"] == pytest.approx(
        FAST["sample_rate"] * parts["dp_sgd"]
    )
    # the whole budget on d = 1: less noise than em0's DP-SGD (half the budget, d = max_rows + 2)
    em0 = _run(tiny_inputs, "dpar-em0", 4.0).ledger.mechanisms[-1]
    assert sgd.params["noise_multiplier"] < em0.params["noise_multiplier"]
    # a forged d is refused by the verifier, which recomputes it from the rule and max_rows
    for change in ({"max_occurrences": 4}, {"occurrence_rule": "ranked_sources"}, {"max_rows": 2}):
        forged = ledger.to_dict()
        forged["mechanisms"][0]["params"].update(change)
        with pytest.raises(ValueError, match="max_occurrences|max_rows"):
            verify_ledger_dict(forged)


def test_features_reference_run_puts_the_whole_claim_on_dp_sgd(tiny_inputs):
    from nodedp.accounting.dpar import PAPER_FEATURES_RULE, paper_dp_sgd_noise_multiplier, reference_dpsgd_epsilon
    from nodedp.plans.dpar import paper_noise, reference_ledger

    q, eps = FAST["sample_rate"], 4.0
    num_train = tiny_inputs.split.train.numel()
    delta = _rule_delta(num_train, q)
    result = _run(tiny_inputs, "dpar-features", eps, accounting="paper")
    ledger = result.ledger
    assert ledger.claim is not None and ledger.claim.epsilon == eps and ledger.claim.delta == pytest.approx(delta)
    assert ledger.claim.rule == PAPER_FEATURES_RULE
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(ledger.composed()[0])
    (sgd,) = ledger.mechanisms
    assert sgd.params["max_occurrences"] == 1
    hp = get_method("dpar-features").parse_hparams(FAST)
    noise = paper_noise("dpar-features", hp, num_train=num_train, epsilon=eps, delta=delta)
    assert noise["dp_appr"] == {}
    z = sgd.params["noise_multiplier"]
    assert z == pytest.approx(noise["sgd_noise_multiplier"], rel=1e-12)
    # literally the paper's rule with DP-APPR's share 0: the public accountant gives ε/q' at δ/q' (not δ/2q')
    assert reference_dpsgd_epsilon(
        noise_multiplier=z, sampling_rate=sgd.params["sampling_rate"], steps=sgd.params["steps"], delta=delta / q
    ) == pytest.approx(eps / q, rel=1e-9)
    # and less noise than DP-SGD's half of a DP-APPR option (ratio 0.5, δ/2)
    half = paper_dp_sgd_noise_multiplier(
        epsilon=eps,
        delta=delta,
        sample_rate=q,
        ratio=0.5,
        sampling_rate=sgd.params["sampling_rate"],
        steps=sgd.params["steps"],
    )
    assert z < half
    actual = ledger.actual_claim_epsilon()
    assert actual >= eps and result.details["actual_epsilon_at_claimed_delta"] == pytest.approx(actual)
    assert result.details["claimed_epsilon_parts_on_sample"] == {"dp_appr": 0.0, "dp_sgd": pytest.approx(eps / q)}
    offline = reference_ledger(
        "dpar-features", hp, num_train=num_train, target_epsilon=eps, target_delta=DELTA, claimed_delta=delta
    )
    assert offline.actual_claim_epsilon() == pytest.approx(actual, rel=1e-9)
    assert offline.claim == ledger.claim and len(offline.mechanisms) == 1
    assert verify_ledger_dict(offline.to_dict()) == pytest.approx(offline.composed()[0])


# predict: §4's inference (f(X), then power iteration) on a graph that extends the run's input.


def _extended(inputs, extra: int = 6, *, isolated: bool = False) -> Data:
    """``extended_graph`` with this file's degree bound."""
    return extended_graph(inputs, degree_bound=10**6, extra=extra, isolated=isolated)


@pytest.mark.parametrize("method", list(OPTIONS))
def test_predict_is_the_evaluations_inference_and_reaches_power_steps_hops(tiny_inputs, method):
    result = _run(tiny_inputs, method, math.inf if OPTIONS[method] == "nodp" else 4.0)
    graph, split = tiny_inputs.graph, tiny_inputs.split
    own = result.predict(graph).cpu()
    # on the input graph: the logits the evaluation scored (deterministic, so exactly its accuracies)
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    assert _accuracy(own, graph, split.val) == pytest.approx(result.val["accuracy"], abs=1e-9)
    extended = _extended(tiny_inputs)
    n, total = graph.num_nodes, extended.num_nodes
    logits = result.predict(extended).cpu()
    assert logits.shape == (total, tiny_inputs.num_classes) and torch.isfinite(logits).all()
    assert torch.equal(result.predict(extended).cpu(), logits)  # its argument and the weights alone
    # local: nodes without edges change nothing; P steps of power iteration reach P hops from the new nodes
    torch.testing.assert_close(result.predict(_extended(tiny_inputs, isolated=True)).cpu()[:n], own, rtol=0, atol=1e-6)
    near = _within_hops(
        extended.edge_index,
        torch.arange(n, total),
        num_nodes=total,
        hops=get_method(method).parse_hparams(FAST).power_steps,
    )[:n]
    assert near.any() and (~near).any()
    torch.testing.assert_close(logits[:n][~near], own[~near], rtol=0, atol=1e-6)
    assert (logits[:n][near] - own[near]).abs().max() > 1e-4


def test_inductive_predict_keeps_each_parts_edges_and_appended_nodes_read_their_features(tiny_inputs):
    split = dataclasses.replace(tiny_inputs.split, setting="inductive")
    inputs = RunInputs(graph=tiny_inputs.graph, split=split, num_classes=tiny_inputs.num_classes)
    result = _run(inputs, "dpar-em0", 4.0)
    graph, n = inputs.graph, inputs.graph.num_nodes
    own = result.predict(graph).cpu()
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    # the cross-part edges are not read: the same logits without them
    own_parts = Data(x=graph.x, y=graph.y, edge_index=remove_cross_split_edges(graph.edge_index, split))
    assert torch.equal(result.predict(own_parts).cpu(), own)
    # the appended nodes are in no part: their edges (to training nodes) are dropped, as if isolated
    extended = result.predict(_extended(inputs)).cpu()
    torch.testing.assert_close(extended, result.predict(_extended(inputs, isolated=True)).cpu(), rtol=0, atol=0)
    torch.testing.assert_close(extended[:n], own, rtol=0, atol=1e-6)
