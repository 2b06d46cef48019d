"""DP-GNN: the ledger it writes, and the sensitivity Theorem 1 relies on, on neighbouring graphs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data

from nodedp.accounting import (
    RDP_ORDERS,
    Claim,
    Ledger,
    MechanismRecord,
    hypergeometric_gaussian_params,
    max_occurrences,
    verify_ledger_dict,
)
from nodedp.accounting.dp_gnn_paper import paper_delta, paper_epsilon_floor
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import Split, bound_in_degree, bound_out_degree, degree_artifact, get_dataset, remove_cross_split_edges
from nodedp.mechanisms import clip_factors
from nodedp.models import SubgraphGNN
from nodedp.plans.dp_gnn import paper_epsilon, paper_noise_multiplier, paper_reference_noise_multiplier
from nodedp.structure import gather_features, sample_subgraphs
from nodedp.train.per_sample import PerSampleGradients
from tests.methods._structure import with_bound

K, SEED, CLIP = 3, 0, 0.01  # small enough that clipping bites
# K is not csbm-tiny's public in-degree bound: the runs here set it (the plan's K, which the artifact must match)
PUBLIC_K = {"in_degree_bound": K}


def bounded_edges(graph, train):
    kept = bound_in_degree(graph.edge_index, num_nodes=graph.num_nodes, train_nodes=train, max_degree=K, seed=SEED)
    return bound_out_degree(kept, num_nodes=graph.num_nodes, max_degree=K, seed=SEED)


@pytest.mark.parametrize("method", ["dp-gcn", "dp-sage", "dp-gin", "dp-gat"])
def test_dp_gnn_ledger_is_theorem_one_at_its_target(tiny_inputs, method):
    inputs = _inputs(tiny_inputs)
    info = get_method(method)
    spec = RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=4.0, target_delta=1e-3)
    result = info.run(inputs, spec, info.parse_hparams({"epochs": 2, "batch_size": 64, "hidden_dim": 20, **PUBLIC_K}))
    (record,) = result.ledger.mechanisms
    assert record.kind == "hypergeometric_gaussian" and set(record.touches) == {"features", "labels", "edges"}
    params = record.params
    assert params["max_occurrences"] == max_occurrences(max_degree=K, num_layers=1) == K + 1
    assert params["num_examples"] == tiny_inputs.split.train.numel() and params["batch_size"] == 64
    assert params["sampling"] == "fixed_size_without_replacement"
    assert record.sensitivity == pytest.approx(2 * params["clip_norm"] * (K + 1))
    assert result.details["noise_std"] == pytest.approx(params["noise_multiplier"] * params["clip_norm"])
    assert result.details["noise_std"] > 0
    spent = verify_ledger_dict(result.ledger.to_dict())  # recomputed from the JSON alone
    assert 0.99 * 4.0 <= spent <= 4.0


@pytest.mark.parametrize("layer", ["gcn", "sage"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_removing_a_node_changes_at_most_n_k_r_terms_and_the_clipped_sum_by_2c_each(tiny_inputs, layer, num_layers):
    graph, train = tiny_inputs.graph, tiny_inputs.split.train
    kept = bounded_edges(graph, train)
    subgraphs = sample_subgraphs(kept, roots=train, num_nodes=graph.num_nodes, num_layers=num_layers, max_degree=K)
    # The node in the most subgraphs: the worst case for the bound.
    counts = torch.zeros(graph.num_nodes, dtype=torch.long)
    for row in subgraphs.nodes:
        counts[row[row >= 0]] += 1
    w = int(counts.argmax())
    # The neighbouring graph: w and its edges gone, every other sampled edge list kept.
    kept_without = kept[:, (kept[0] != w) & (kept[1] != w)]
    train_without = train[train != w]
    neighbour = sample_subgraphs(
        kept_without, roots=train_without, num_nodes=graph.num_nodes, num_layers=num_layers, max_degree=K
    )

    torch.manual_seed(0)
    model = SubgraphGNN(graph.num_features, 8, tiny_inputs.num_classes, layer=layer, num_layers=num_layers).double()
    x = graph.x.double()

    def clipped_sum(sg, roots):
        psg = PerSampleGradients(model)
        with psg.capture():
            out = model(*gather_features(sg, x, torch.arange(roots.numel())))
        psg.backward(F.cross_entropy(out, graph.y[roots], reduction="none"))
        psg.write_clipped_sum(clip_factors(psg.norms(), max_norm=CLIP))
        psg.remove()
        return torch.cat([p.grad.flatten() for p in psg.parameters])

    position = {int(v): i for i, v in enumerate(train_without)}
    changed = int((train == w).any())  # w's own example is removed
    for i, root in enumerate(train.tolist()):
        if root == w:
            continue
        j = position[root]
        same = torch.equal(subgraphs.nodes[i], neighbour.nodes[j]) and torch.equal(subgraphs.adj[i], neighbour.adj[j])
        changed += not same
    bound = max_occurrences(max_degree=K, num_layers=num_layers)
    assert 0 < changed <= bound
    difference = torch.linalg.vector_norm(clipped_sum(subgraphs, train) - clipped_sum(neighbour, train_without))
    assert difference <= 2 * CLIP * changed + 1e-9


def _inputs(tiny_inputs) -> RunInputs:
    return with_bound(tiny_inputs, "in-degree", K, seed=SEED)


def test_layerwise_percentile_thresholds_are_an_uncharged_read_and_c_is_their_total(tiny_inputs):
    info = get_method("dp-gcn")
    spec = RunSpec(dataset="csbm-tiny", method="dp-gcn", seed=0, target_epsilon=4.0, target_delta=1e-3)
    hp = info.parse_hparams(
        {"epochs": 1, "batch_size": 32, "hidden_dim": 8, "clipping": "layerwise", "clip_percentile": 75, **PUBLIC_K}
    )
    result = info.run(_inputs(tiny_inputs), spec, hp)
    ledger = result.ledger
    (read,) = ledger.uncharged
    assert "75th percentile" in read.reason and not ledger.fully_accounted
    (record,) = ledger.mechanisms
    layer_clips = record.params["layer_clip_norms"]
    assert len(layer_clips) > 2 and all(c > 0 for c in layer_clips.values())
    total = math.sqrt(sum(c * c for c in layer_clips.values()))
    assert record.params["clip_norm"] == pytest.approx(total, rel=1e-12)
    assert record.params["clip_norm"] != pytest.approx(hp.clip_norm)  # estimated, not the configured C
    assert record.sensitivity == pytest.approx(2 * total * (K + 1))
    assert result.details["noise_std"] == pytest.approx(record.params["noise_multiplier"] * total)
    d = ledger.to_dict()
    assert d["fully_accounted"] is False
    assert verify_ledger_dict(d) <= 4.0


def test_layerwise_from_clip_norm_splits_c_equally_and_stays_fully_accounted(tiny_inputs):
    info = get_method("dp-sage")
    spec = RunSpec(dataset="csbm-tiny", method="dp-sage", seed=0, target_epsilon=4.0, target_delta=1e-3)
    hp = info.parse_hparams(
        {"epochs": 1, "batch_size": 32, "hidden_dim": 8, "clipping": "layerwise", "clip_norm": 2.0, **PUBLIC_K}
    )
    ledger = info.run(_inputs(tiny_inputs), spec, hp).ledger
    (record,) = ledger.mechanisms
    layer_clips = record.params["layer_clip_norms"]
    assert list(layer_clips.values()) == pytest.approx([2.0 / math.sqrt(len(layer_clips))] * len(layer_clips))
    assert record.params["clip_norm"] == pytest.approx(2.0)
    assert ledger.fully_accounted and not ledger.uncharged


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"clipping": "per-tensor"}, r"unknown clipping 'per-tensor'; choose from \['flat', 'layerwise'\]"),
        ({"clip_percentile": 101.0}, r"clip_percentile must be in \(0, 100\]"),
    ],
)
def test_clipping_hparams_are_validated(values, match):
    with pytest.raises(ValueError, match=match):
        get_method("dp-gcn").parse_hparams(values)


def test_an_in_degree_bound_hparam_must_match_the_artifact(tiny_inputs):
    info = get_method("dp-gcn")
    spec = RunSpec(dataset="csbm-tiny", method="dp-gcn", seed=0, target_epsilon=4.0, target_delta=1e-3)
    hp = info.parse_hparams({"epochs": 1, "batch_size": 32, "hidden_dim": 8, "in_degree_bound": K + 1})
    with pytest.raises(ValueError, match=f"in_degree_bound is {K + 1} but the in-degree artifact was bounded to K={K}"):
        info.run(_inputs(tiny_inputs), spec, hp)
    matching = info.parse_hparams({"epochs": 1, "batch_size": 32, "hidden_dim": 8, "in_degree_bound": K})
    (record,) = info.run(_inputs(tiny_inputs), spec, matching).ledger.mechanisms
    assert record.params["max_degree"] == K
    # Unset, K is the dataset's public bound (csbm-tiny's 5): the plan's, which the artifact must match.
    default = info.parse_hparams({"epochs": 1, "batch_size": 32, "hidden_dim": 8})
    with pytest.raises(
        ValueError, match=f"csbm-tiny's public in-degree bound is K=5 but the in-degree artifact was bounded to K={K}"
    ):
        info.run(_inputs(tiny_inputs), spec, default)


@pytest.mark.parametrize("method", ["dp-gcn", "dpdgc"])
def test_auto_accountant_is_pld_and_needs_less_noise_than_rdp_at_the_same_target(tiny_inputs, method):
    info = get_method(method)
    assert info.resolve_accountant("auto") == "pld" and get_method("dp-mlp").resolve_accountant("auto") == "rdp"
    kind = "in-degree" if method == "dp-gcn" else "out-degree"
    # DP-GCN at K (its hyperparameter), DPDGC at csbm-tiny's public out-degree bound D (it has no such hyperparameter)
    inputs = with_bound(tiny_inputs, kind, K if method == "dp-gcn" else get_dataset("csbm-tiny").out_degree_bound)
    hp = info.parse_hparams(
        {"epochs": 1, "batch_size": 64, "hidden_dim": 8, "encoder_epochs": 1}
        if method == "dpdgc"
        else {"epochs": 1, "batch_size": 64, "hidden_dim": 8, **PUBLIC_K}
    )
    noise = {}
    for accountant in ("rdp", "pld"):
        spec = RunSpec(
            dataset="csbm-tiny", method=method, seed=0, target_epsilon=2.0, target_delta=1e-3, accountant=accountant
        )
        ledger = info.run(inputs, spec, hp).ledger
        assert ledger.accountant == accountant
        spent = verify_ledger_dict(ledger.to_dict())
        assert 0.99 * 2.0 <= spent <= 2.0
        noise[accountant] = ledger.mechanisms[0].params["noise_multiplier"]  # the occurrence mixture
    assert noise["pld"] < noise["rdp"]


# --- reference mode (accounting: paper) ----------------------------------------------------------------------------


def _public_code_epsilon(
    lam: float, *, n: int, k: int, m: int, steps: int, delta: float, orders=tuple(1 + 0.1 * i for i in range(1, 90))
) -> float:
    """The paper's public accountant written out by hand: noise multiplier λ relative to the sensitivity
    2C·N(K,1), its Gaussian RDP α/(2λ²) scaled by (i/N(K,1))² for i of the N(K,1) terms in the batch,
    mixed over i ~ Hypergeometric(n, N(K,1), m), times the steps, and converted as dp_accounting does."""
    from scipy.special import logsumexp
    from scipy.stats import hypergeom

    d = k + 1  # N(K, 1)
    i = np.arange(d + 1)
    best = math.inf
    for a in orders:
        beta = a / (2 * lam**2) * (a - 1)
        per_step = logsumexp(hypergeom.logpmf(i, n, d, m) + beta * (i / d) ** 2) / (a - 1)
        best = min(best, steps * per_step + math.log1p(-1 / a) - math.log(delta * a) / (a - 1))
    return best


def test_paper_noise_is_the_public_accountants_lambda_at_delta_one_over_ten_n():
    n, k, m, steps = 2031, 3, 256, 318  # Cora-size: 75% of 2708 nodes train, the config defaults
    sizes = {"num_examples": n, "max_degree": k, "num_layers": 1, "batch_size": m, "steps": steps}
    assert paper_delta(n) == 1 / (10 * n)
    z = paper_noise_multiplier(target_epsilon=4.0, **sizes)
    lam = z / (2 * (k + 1))  # the paper's λ = σ/(2C·N(K,r))
    hand = _public_code_epsilon(lam, n=n, k=k, m=m, steps=steps, delta=1 / (10 * n))
    assert 4.0 * (1 - 2e-4) <= hand <= 4.0 * (1 + 1e-9)  # the claimed ε, by the paper's own formula
    assert _public_code_epsilon(0.999 * lam, n=n, k=k, m=m, steps=steps, delta=1 / (10 * n)) > 4.0  # the least noise
    assert paper_epsilon(noise_multiplier=2 * z, **sizes) == pytest.approx(
        _public_code_epsilon(2 * lam, n=n, k=k, m=m, steps=steps, delta=1 / (10 * n)), rel=1e-9
    )
    # Per clip group, the paper's noise std is z·C_l; over the whole gradient that is z/√L times its bound C.
    assert paper_reference_noise_multiplier(target_epsilon=4.0, num_groups=3, **sizes) == pytest.approx(
        z / math.sqrt(3)
    )
    # Orders ≤ 9.9 cannot state a small ε at δ = 1/(10N) for any useful noise: refused, not faked.
    assert paper_epsilon_floor(90941) == pytest.approx(1.1776, abs=1e-4)
    with pytest.raises(ValueError, match="cannot state epsilon = 1 for any useful noise"):
        paper_noise_multiplier(
            target_epsilon=1.0, num_examples=90941, max_degree=7, num_layers=1, batch_size=10000, steps=910
        )


def _hand_theorem_one_epsilon(z: float, *, n: int, d: int, m: int, steps: int, delta: float) -> float:
    """Theorem 1 at the suite's orders, γ(α) = ln E exp(α(α−1)·2ρ²/z²)/(α−1), converted as dp_accounting does."""
    from scipy.special import logsumexp
    from scipy.stats import hypergeom

    rho = np.arange(d + 1)
    best = math.inf
    for a in RDP_ORDERS:
        gamma = logsumexp(hypergeom.logpmf(rho, n, d, m) + a * (a - 1) * 2 * rho**2 / z**2) / (a - 1)
        best = min(best, steps * gamma + math.log1p(-1 / a) - math.log(delta * a) / (a - 1))
    return best


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_paper_noise_under_reports_by_the_number_of_clip_groups_and_is_sound_for_one(accountant):
    n, k, m, steps = 2031, 3, 256, 318
    sizes = {"num_examples": n, "max_degree": k, "num_layers": 1, "batch_size": m, "steps": steps}
    actual = {}
    for groups in (1, 3):
        z = paper_reference_noise_multiplier(target_epsilon=8.0, num_groups=groups, **sizes)
        params = hypergeometric_gaussian_params(
            noise_multiplier=z, clip_norm=1.0, num_examples=n, max_degree=k, num_layers=1, batch_size=m, steps=steps
        )
        record = MechanismRecord(
            name="dp-sgd",
            kind="hypergeometric_gaussian",
            touches=("features",),
            params=params,
            sensitivity=2 * (k + 1),
            sensitivity_reason="Lemma 2",
            dp_event=None,
        )
        ledger = Ledger(
            level="node",
            target_epsilon=8.0,
            target_delta=1e-4,
            mechanisms=(record,),
            accountant=accountant,
            claim=Claim(epsilon=8.0, delta=paper_delta(n), rule="r", source="s"),
        )
        actual[groups] = ledger.actual_claim_epsilon()
        if accountant == "rdp":
            assert actual[groups] == pytest.approx(
                _hand_theorem_one_epsilon(z, n=n, d=k + 1, m=m, steps=steps, delta=paper_delta(n)), rel=1e-6
            )
    assert actual[1] <= 8.0  # one clip norm: the paper's accountant is sound (the suite's is tighter)
    assert actual[3] > 1.7 * 8.0  # three layers: noise √3 too small, ε about doubles


@pytest.mark.parametrize("method", ["dp-gcn", "dp-gat"])
def test_paper_reference_mode_runs_with_the_papers_noise_and_records_the_actual_epsilon(tiny_inputs, method):
    info = get_method(method)
    assert info.has_reference_mode
    spec = RunSpec(dataset="csbm-tiny", method=f"{method}@paper", seed=0, target_epsilon=4.0, target_delta=1e-3)
    hp = info.parse_hparams(
        {"epochs": 2, "batch_size": 64, "hidden_dim": 20, "accounting": "paper", "clip_norm": 2.0, **PUBLIC_K}
    )
    assert hp.clipping == "flat"  # reference mode clips layer-wise whatever `clipping` says
    result = info.run(_inputs(tiny_inputs), spec, hp)
    ledger = result.ledger
    n = tiny_inputs.split.train.numel()
    assert ledger.claim is not None and ledger.claim.epsilon == 4.0 and ledger.claim.delta == 1 / (10 * n)
    assert ledger.target_delta == 1e-3 and ledger.fully_accounted
    (record,) = ledger.mechanisms
    params = record.params
    layer_clips = params["layer_clip_norms"]
    groups = len(layer_clips)
    assert groups >= 3 and list(layer_clips.values()) == pytest.approx([2.0 / math.sqrt(groups)] * groups)
    assert params["clip_norm"] == pytest.approx(2.0) and record.sensitivity == pytest.approx(2 * 2.0 * (K + 1))
    z = paper_noise_multiplier(
        target_epsilon=4.0, num_examples=n, max_degree=K, num_layers=1, batch_size=64, steps=params["steps"]
    )
    assert params["noise_multiplier"] == pytest.approx(z / math.sqrt(groups), rel=1e-12)
    # The loop's noise std is the paper's per-layer std z·C_l, drawn over the whole gradient.
    assert result.details["noise_std"] == pytest.approx(z * 2.0 / math.sqrt(groups), rel=1e-9)
    d = ledger.to_dict()
    assert Ledger.from_dict(d).to_dict() == d
    spent = verify_ledger_dict(d)
    assert spent == pytest.approx(ledger.composed()[0]) and spent > 4.0
    assert d["claim"]["actual_epsilon"] == pytest.approx(ledger.actual_claim_epsilon())
    assert ledger.actual_claim_epsilon() > 4.0


def test_paper_reference_mode_refuses_percentile_thresholds():
    with pytest.raises(ValueError, match="accounting 'paper' clips each layer to C/√L"):
        get_method("dp-gcn").parse_hparams({"accounting": "paper", "clip_percentile": 75.0})


# --- predict: the evaluation's inference on a graph that extends the training input ------------------------------

PREDICT_METHODS = ["dp-gcn", "dp-sage", "dp-gin", "dp-gat", "gcn", "sage", "gin", "gat"]


def _extend(graph, extra: int, *, wired: bool, seed: int = 0):
    """``graph`` plus ``extra`` appended nodes (random features and labels), each with edges both ways to three
    random existing nodes when ``wired``; the new edges come after the original ones."""
    g = torch.Generator().manual_seed(seed)
    n = graph.num_nodes
    x = torch.cat([graph.x, torch.randn(extra, graph.num_features, generator=g)])
    y = torch.cat([graph.y, torch.randint(int(graph.y.max()) + 1, (extra,), generator=g)])
    edges = graph.edge_index
    endpoints = torch.empty(0, dtype=torch.long)
    if wired:
        endpoints = torch.stack([torch.randperm(n, generator=g)[:3] for _ in range(extra)])  # [extra, 3]
        new = torch.stack([torch.arange(n, n + extra).repeat_interleave(3), endpoints.flatten()])
        edges = torch.cat([edges, new, new.flip(0)], dim=1)
    return Data(x=x, y=y, edge_index=edges), endpoints.flatten().unique()


def _run_with_predict(inputs: RunInputs, method: str):
    info = get_method(method)
    if info.private:
        spec = RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=8.0, target_delta=1e-3)
        hp = info.parse_hparams({"epochs": 2, "batch_size": 64, "hidden_dim": 16, **PUBLIC_K})
    else:
        spec = RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=math.inf, target_delta=0.0)
        hp = info.parse_hparams({"epochs": 5, "hidden_dim": 16})
    result = info.run(inputs, spec, hp)
    assert result.predict is not None
    return result


def _test_accuracy(logits, inputs: RunInputs) -> float:
    test = inputs.split.test
    return float((logits[test].argmax(1).cpu() == inputs.graph.y[test]).double().mean())


@pytest.mark.parametrize("method", PREDICT_METHODS)
def test_predict_is_the_evaluations_full_graph_inference_on_the_given_graph(tiny_inputs, method):
    inputs = _inputs(tiny_inputs)
    graph, n, extra = inputs.graph, inputs.graph.num_nodes, 5
    result = _run_with_predict(inputs, method)
    own = result.predict(graph)
    assert own.shape == (n, inputs.num_classes)
    # (2) Evaluation is deterministic (no inference noise): the same test accuracy to the last bit.
    assert abs(_test_accuracy(own, inputs) - result.test["accuracy"]) <= 1e-9
    # (1) Appended nodes with edges: finite logits for every node.
    wired, endpoints = _extend(graph, extra, wired=True)
    logits = result.predict(wired)
    assert logits.shape == (n + extra, inputs.num_classes) and torch.isfinite(logits).all()
    # (3) Only the argument and the trained weights: the same output twice; edgeless extra nodes leave every
    # original node's logits as they were (message passing is local); the new edges reach their endpoints,
    # so the given graph's edges are read, not the training graph's (unbounded: the evaluation bounds nothing).
    assert torch.equal(result.predict(wired), logits)
    isolated, _ = _extend(graph, extra, wired=False)
    torch.testing.assert_close(result.predict(isolated)[:n], own, rtol=1e-5, atol=1e-6)
    moved = (logits[:n] - own).abs().amax(1) > 1e-6
    assert moved[endpoints].all()
    assert moved.sum() < n  # local: nodes far from the new edges keep theirs


@pytest.mark.parametrize("method", ["dp-gcn", "sage"])
def test_inductive_predict_drops_cross_part_edges_and_isolates_extra_nodes(tiny_inputs, method):
    base = tiny_inputs.split
    split = Split(train=base.train, val=base.val, test=base.test, setting="inductive", seed=base.seed)
    graph = tiny_inputs.graph
    edges = remove_cross_split_edges(graph.edge_index, split)  # as the workflow's bound-degree rule does
    artifact = degree_artifact(
        edges, kind="in-degree", bound=K, seed=SEED, num_nodes=graph.num_nodes, train_nodes=split.train
    )
    inputs = RunInputs(graph=graph, split=split, num_classes=tiny_inputs.num_classes, structure={"in-degree": artifact})
    n, extra = graph.num_nodes, 4
    result = _run_with_predict(inputs, method)
    own = result.predict(graph)
    assert abs(_test_accuracy(own, inputs) - result.test["accuracy"]) <= 1e-9
    # The extra nodes are in no part: their edges are dropped like every cross-part edge, so wiring them in
    # changes nobody's logits, and each extra node is scored exactly as without its edges.
    wired, _ = _extend(graph, extra, wired=True)
    isolated, _ = _extend(graph, extra, wired=False)
    logits = result.predict(wired)
    assert logits.shape == (n + extra, inputs.num_classes) and torch.isfinite(logits).all()
    torch.testing.assert_close(logits, result.predict(isolated), rtol=0, atol=0)
    torch.testing.assert_close(logits[:n], own, rtol=1e-5, atol=1e-6)
    # The original nodes' cross-part edges are dropped too: the given graph already without them reads the same.
    assert edges.size(1) < graph.edge_index.size(1)
    assert torch.equal(result.predict(Data(x=graph.x, y=graph.y, edge_index=edges)), own)
    # Given parts of the extended graph (the extra nodes as training nodes, as the audit scores canaries), the
    # extra nodes' edges to training nodes are read: those with such an edge change, the rest do not.
    parts = Split(
        train=torch.cat([split.train, torch.arange(n, n + extra)]),
        val=split.val,
        test=split.test,
        setting="inductive",
        seed=split.seed,
    )
    read = result.predict(wired, parts)
    src, dst = wired.edge_index
    in_train = torch.zeros(n + extra, dtype=torch.bool)
    in_train[parts.train] = True
    reached = torch.zeros(extra, dtype=torch.bool)
    new_edges = (src >= n) & in_train[dst] & (dst < n)
    reached[src[new_edges] - n] = True
    changed = (read[n:] - logits[n:]).abs().amax(1) > 1e-6
    assert reached.any() and torch.equal(changed, reached)
