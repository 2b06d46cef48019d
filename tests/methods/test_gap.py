"""GAP and ProGAP as methods: NAP queried exactly K times, ledgers that match the noise, neighbouring graphs."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch_geometric.data import Data

from nodedp.accounting import verify_ledger_dict
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import degree_artifact, remove_cross_split_edges
from nodedp.mechanisms import NAP, nap_aggregate
from nodedp.methods.aggregation_perturbation import execute_plan
from nodedp.plans.aggregation_perturbation import plan_progap
from tests.methods._structure import accuracy_on as _accuracy
from tests.methods._structure import extended_graph, with_bound
from tests.methods._structure import within_hops as _within_hops

D = 4
FAST = {"epochs": 1, "batch_size": 32, "hops": 2, "out_degree_bound": D}  # the plan's public D: the artifact's


def _inputs(tiny_inputs) -> RunInputs:
    return with_bound(tiny_inputs, "out-degree", D)


def _run(inputs, method: str, epsilon: float, **hparams):
    info = get_method(method)
    spec = RunSpec(
        dataset="csbm-tiny", method=method, seed=0, target_epsilon=epsilon, target_delta=1e-4 if info.private else 0.0
    )
    fast = {**FAST, "encoder_epochs": 1} if method.startswith("gap") else FAST
    return info.run(inputs, spec, info.parse_hparams({**fast, **hparams}))


@pytest.mark.parametrize("method", ["gap", "progap"])
@pytest.mark.parametrize("epochs", [1, 3])
def test_nap_is_queried_exactly_k_times_whatever_the_epochs(tiny_inputs, method, epochs):
    result = _run(_inputs(tiny_inputs), method, 4.0, epochs=epochs, hops=3)
    assert result.details["nap_queries"] == 3


@pytest.mark.parametrize(("method", "stages"), [("gap", 2), ("progap", 3)])
def test_node_level_ledger_states_the_noise_actually_used(tiny_inputs, method, stages):
    result = _run(_inputs(tiny_inputs), method, 4.0)
    ledger = result.ledger
    spent, _ = ledger.composed()
    assert 0.99 * 4.0 <= spent <= 4.0
    nap, *sgd = ledger.mechanisms
    assert nap.kind == "gaussian" and nap.params["queries"] == 2
    row_clip = math.sqrt(D)  # the default R = √D
    assert nap.sensitivity == pytest.approx(math.sqrt(D + row_clip**2))
    z = nap.params["noise_multiplier"]
    # The noise the run added is > 0 and is what the ledger says: z·Δ for NAP, z·C for DP-SGD.
    assert result.details["nap_noise_std"] == pytest.approx(z * nap.sensitivity)
    assert result.details["nap_noise_std"] > 0
    assert len(sgd) == stages and all(r.kind == "subsampled_gaussian" for r in sgd)
    assert result.details["noise_std"] == pytest.approx(z * sgd[0].params["clip_norm"])
    assert result.details["noise_std"] > 0
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(spent)


def test_noise_falls_as_epsilon_grows(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    low = _run(inputs, "progap", 2.0).details["nap_noise_std"]
    high = _run(inputs, "progap", 16.0).details["nap_noise_std"]
    assert low > high > 0


@pytest.mark.parametrize("method", ["gap-edge", "progap-edge"])
def test_edge_level_charges_only_nap_with_an_edge_sensitivity(tiny_inputs, method):
    result = _run(tiny_inputs, method, 1.0)
    (nap,) = result.ledger.mechanisms
    assert result.ledger.level == "edge" and nap.touches == ("edges",)
    assert nap.sensitivity == pytest.approx(math.sqrt(2.0))  # csbm-tiny is undirected
    assert 0.99 <= result.ledger.composed()[0] <= 1.0
    assert result.details["nap_noise_std"] > 0


@pytest.mark.parametrize("method", ["gap-nodp", "progap-nodp"])
def test_non_private_variants_add_no_noise(tiny_inputs, method):
    result = _run(tiny_inputs, method, math.inf)
    assert not result.ledger.private and result.details["nap_noise_std"] == 0.0
    assert result.details["nap_queries"] == 2


def test_on_neighbouring_graphs_each_hop_moves_within_the_ledgers_sensitivity(tiny_inputs):
    """Remove a node (features zeroed, its kept edges dropped): every hop's aggregation moves ≤ Δ."""
    inputs = _inputs(tiny_inputs)
    spec = RunSpec(dataset="csbm-tiny", method="progap", seed=0, target_epsilon=4.0, target_delta=1e-4)
    hp = get_method("progap").parse_hparams(FAST)
    plan = execute_plan(inputs, spec, hp, level="node", planner=plan_progap)
    (claimed,) = [r.sensitivity for r in plan.ledger.mechanisms if r.kind == "gaussian"]
    edges, row_clip = plan.edges, plan.nap.row_clip
    n = inputs.graph.num_nodes
    embeddings = torch.randn(n, 16, generator=torch.Generator().manual_seed(0))  # any rows: NAP normalizes them
    before = nap_aggregate(embeddings, edges, num_nodes=n, row_clip=row_clip)
    worst = 0.0
    for v in range(n):
        touching = (edges[0] == v) | (edges[1] == v)
        x = embeddings.clone()
        x[v] = 0
        after = nap_aggregate(x, edges[:, ~touching], num_nodes=n, row_clip=row_clip)
        worst = max(worst, (after - before).norm().item())
    assert worst <= claimed * (1 + 1e-6)
    assert worst > 0.5 * claimed  # the bound is not vacuous on this graph


def test_the_guarantee_is_the_plans_whatever_number_of_nodes_exceeds_the_degree_bound(tiny_inputs):
    """Two graphs that differ only in how many nodes exceed D (csbm-tiny, and csbm-tiny with its out-degrees
    sampled to D, where none does) get the same guarantee: no count of the input decides or joins it."""
    degrees = torch.bincount(tiny_inputs.graph.edge_index[0], minlength=tiny_inputs.graph.num_nodes)
    assert int((degrees > D).sum()) > 0  # csbm-tiny exceeds D = 4 somewhere: the sampling is not the identity
    over = _run(_inputs(tiny_inputs), "progap", 4.0).ledger
    g = tiny_inputs.graph
    within = RunInputs(
        graph=Data(x=g.x, y=g.y, edge_index=_inputs(tiny_inputs).structure["out-degree"]["edge_index"]),
        split=tiny_inputs.split,
        num_classes=tiny_inputs.num_classes,
    )
    assert int(torch.bincount(within.graph.edge_index[0]).max()) <= D
    inside = with_bound(within, "out-degree", D)
    assert torch.equal(inside.structure["out-degree"]["edge_index"], within.graph.edge_index)  # the identity
    ledger = _run(inside, "progap", 4.0).ledger
    assert ledger.guarantee() == over.guarantee() and ledger.guarantee_class == "conditional"
    assert ledger.to_dict()["guarantee"]["degree_bound"] == {"kind": "out-degree", "bound": D, "identity_bound": D}
    assert "add or remove one node" in ledger.guarantee()["relation"]
    assert "training-set size are public" in ledger.guarantee()["relation"]
    assert _run(_inputs(tiny_inputs), "progap-edge", 1.0).ledger.guarantee_class == "edge"
    forged = ledger.to_dict()
    forged["guarantee"]["class"] = "unconditional"
    with pytest.raises(ValueError, match="guarantee"):
        verify_ledger_dict(forged)


def test_gap_caches_every_hop_row_normalized_after_its_noise(tiny_inputs):
    """GAP's classifier concatenates the hops and L2-normalizes: an unnormalized noisy hop (norm ~ σ√d) would
    swamp the noise-free X^(0). The reference code normalizes every aggregate; so must we."""
    from nodedp.mechanisms import NAP
    from nodedp.methods.gap import hop_caches
    from nodedp.train import make_generator

    graph = tiny_inputs.graph
    x0 = torch.nn.functional.normalize(torch.randn(graph.num_nodes, 8), dim=-1)
    nap = NAP(level="node", row_clip=2.0, noise_multiplier=5.0, max_degree=D)
    caches = hop_caches(x0, nap, graph.edge_index, hops=2, generator=make_generator(0))
    assert len(caches) == 3 and nap.calls == 2 and caches[0] is x0
    for hop in caches[1:]:
        assert torch.allclose(hop.norm(dim=-1), torch.ones(graph.num_nodes), atol=1e-5)
    raw = NAP(level="node", row_clip=2.0, noise_multiplier=5.0, max_degree=D)(
        x0, graph.edge_index, generator=make_generator(0)
    )
    assert raw.norm(dim=-1).mean() > 5  # without normalisation after the NAP: noise of std 5·√(D + R²) per entry


# --- reference mode (`gap@paper`, `progap@paper`): the papers' noise, the actual ε -------------------------------


def _bbghs_epsilon(rdp_of_order, *, delta: float, orders) -> float:
    """min over α of rdp(α) + log((α − 1)/α) − (log δ + log α)/(α − 1): the RDP → (ε, δ) conversion of
    autodp (the papers' code) and dp_accounting, written out."""
    return min(rdp_of_order(a) + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1) for a in orders)


@pytest.mark.parametrize(("method", "stages"), [("gap", 2), ("progap", 3)])
def test_reference_mode_draws_the_papers_noise_and_records_the_actual_epsilon(tiny_inputs, method, stages):
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    from nodedp.accounting import Ledger, progap_eq11_epsilon

    inputs = _inputs(tiny_inputs)
    claimed = 4.0  # its optimal RDP order is near 4: integer orders (Eq. 11's) lose < 1% there
    result = _run(inputs, method, claimed, accounting="paper")
    ledger = result.ledger
    nap, *sgd = ledger.mechanisms
    n_nodes = inputs.graph.num_nodes
    paper_delta = 10.0 ** -len(str(n_nodes))  # ProGAP §5.3: δ < 1/N, the public code's 1/10**digits(N)
    assert paper_delta < 1 / n_nodes
    assert ledger.reference and ledger.claim.epsilon == claimed and ledger.claim.delta == paper_delta
    stored = ledger.to_dict()  # (each composition costs ~1 s here: compute it once)
    assert stored["claim"]["delta"] == paper_delta and stored["target"]["epsilon"] == claimed
    assert Ledger.from_dict(stored) == ledger
    assert verify_ledger_dict(stored) == pytest.approx(stored["epsilon"])

    # The papers' rule: one z for every DP-SGD stage (std z·C) and NAP's std z·√D, D the public bound.
    assert len(sgd) == stages
    z = sgd[0].params["noise_multiplier"]
    assert all(r.params["noise_multiplier"] == z for r in sgd)
    assert nap.params["noise_std"] == pytest.approx(z * math.sqrt(D))
    assert result.details["nap_noise_std"] == pytest.approx(z * math.sqrt(D))
    assert result.details["noise_std"] == pytest.approx(z * sgd[0].params["clip_norm"])
    # ... sized so that Eq. 11's RDP (DKα/2σ_AP² with σ_AP the drawn std, and the sampled Gaussian of every
    # step), converted to (ε, δ) by hand at the paper's δ, is the claimed ε (calibrated to within 0.5%).
    q, steps = sgd[0].params["sampling_rate"], sgd[0].params["steps"]
    n_train, batch = sgd[0].params["num_examples"], sgd[0].params["expected_batch_size"]
    assert all(r.params["steps"] == steps for r in sgd)  # equal per-stage epochs: T per stage
    assert q == pytest.approx(batch / n_train)
    huge_delta = 0.5  # progap_eq11_epsilon at one order α and δ: rdp(α) + log(1/δ)/(α − 1)

    def eq11_rdp(alpha: int) -> float:
        # Eq. 11 is for K + 1 stages of T steps; GAP has 2 stages: scale the DP-SGD part to `stages`.
        whole = progap_eq11_epsilon(
            num_nodes=n_train,
            batch_size=batch,
            steps=steps,
            clip=1.0,
            sigma_gp=z,
            hops=2,
            nap_sensitivity_sq=D,
            sigma_ap=nap.params["noise_std"],
            delta=huge_delta,
            orders=[alpha],
        ) - math.log(1 / huge_delta) / (alpha - 1)
        nap_part = D * 2 * alpha / (2 * nap.params["noise_std"] ** 2)
        return (whole - nap_part) * stages / 3 + nap_part

    paper_epsilon = _bbghs_epsilon(eq11_rdp, delta=paper_delta, orders=range(2, 257))
    assert 0.99 * claimed <= paper_epsilon <= 1.01 * claimed

    # The ledger charges NAP at its true Δ = √(D + R²) (R = √D): multiplier z·√D/Δ = z/√2, so the actual ε
    # exceeds the claim; its value, composed independently with dp_accounting:
    assert nap.sensitivity == pytest.approx(math.sqrt(2 * D))
    assert nap.params["noise_multiplier"] == pytest.approx(z / math.sqrt(2))
    accountant = RdpAccountant()
    accountant.compose(dp_event.GaussianDpEvent(z / math.sqrt(2)), 2)
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps * stages)
    actual = stored["claim"]["actual_epsilon"]
    assert actual == pytest.approx(accountant.get_epsilon(paper_delta), rel=1e-9)
    assert actual > 1.02 * claimed
    assert stored["epsilon"] == pytest.approx(accountant.get_epsilon(1e-4), rel=1e-9)  # at the suite's δ


def test_reference_mode_is_node_level_only(tiny_inputs):
    assert get_method("gap").has_reference_mode and get_method("progap").has_reference_mode
    for method in ("gap-edge", "progap-edge", "gap-nodp", "progap-nodp"):
        info = get_method(method)
        assert not info.has_reference_mode
        with pytest.raises(ValueError, match="unknown hyperparameter"):
            info.parse_hparams({"accounting": "paper"})
    # Suite mode is the default and carries no claim.
    assert _run(_inputs(tiny_inputs), "progap", 4.0).ledger.claim is None


@pytest.mark.parametrize("method", ["gap", "progap"])
def test_an_out_degree_bound_of_its_own_must_match_the_artifact(tiny_inputs, method):
    with pytest.raises(
        ValueError, match=f"out_degree_bound is {D + 1} but the out-degree artifact was bounded to D={D}"
    ):
        _run(_inputs(tiny_inputs), method, 4.0, out_degree_bound=D + 1)
    nap = _run(_inputs(tiny_inputs), method, 4.0, out_degree_bound=D).ledger.mechanisms[0]
    assert nap.sensitivity == pytest.approx(math.sqrt(2 * D))  # Δ = √(D + R²), R = √D


def test_out_degree_bound_is_a_checked_hyperparameter_under_the_key_the_workflow_reads():
    from nodedp.contract.structure import DEGREE_BOUND_KEYS

    assert DEGREE_BOUND_KEYS["out-degree"] == "out_degree_bound"
    assert get_method("gap").parse_hparams({"out_degree_bound": 168}).out_degree_bound == 168
    with pytest.raises(ValueError, match="out_degree_bound"):
        get_method("gap").parse_hparams({"out_degree_bound": -1})


# --- predict: the trained models, K hops recomputed without noise on a graph that extends the input -------------


def _extended(inputs, extra: int = 6, *, isolated: bool = False) -> Data:
    """``extended_graph`` with this file's degree bound."""
    return extended_graph(inputs, degree_bound=D, extra=extra, isolated=isolated)


EVERY_LEVEL = ["gap", "progap", "gap-edge", "progap-edge", "gap-nodp", "progap-nodp"]


def _epsilon(method: str) -> float:
    return 4.0 if get_method(method).private else math.inf


@pytest.mark.parametrize("method", EVERY_LEVEL)
def test_predict_reads_its_argument_alone_and_reaches_k_hops_from_the_new_nodes(tiny_inputs, method):
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, method, _epsilon(method), hops=1)
    extended = _extended(inputs)
    n, total = inputs.graph.num_nodes, extended.num_nodes
    assert extended.edge_index.size(1) > inputs.graph.edge_index.size(1)
    logits = result.predict(extended).cpu()
    assert logits.shape == (total, inputs.num_classes) and torch.isfinite(logits).all()
    assert torch.equal(result.predict(extended).cpu(), logits)  # no fresh noise: the graph and the weights alone
    own = result.predict(inputs.graph).cpu()
    # local (K sums over in-edges, per-row models): appended nodes without edges change nothing ...
    torch.testing.assert_close(result.predict(_extended(inputs, isolated=True)).cpu()[:n], own, rtol=0, atol=1e-6)
    # ... and with edges, exactly the nodes within K hops of them
    near = _within_hops(extended.edge_index, torch.arange(n, total), num_nodes=total, hops=1)[:n]
    assert near.any() and (~near).any()
    torch.testing.assert_close(logits[:n][~near], own[~near], rtol=0, atol=1e-6)
    assert (logits[:n][near] - own[near]).abs().max() > 1e-6


def _trained(method: str) -> dict:
    """Enough epochs for a model that is not constant, so that equal accuracies say something."""
    return {"epochs": 5, **({"encoder_epochs": 5} if method.startswith("gap") else {})}


def _noise_free(monkeypatch) -> None:
    """NAP without its noise (still counted): the evaluation then reads exactly what predict recomputes."""

    def aggregate(self, x, edge_index, *, generator):
        self.calls += 1
        return nap_aggregate(x, edge_index, num_nodes=x.size(0), row_clip=self.row_clip)

    monkeypatch.setattr(NAP, "__call__", aggregate)


@pytest.mark.parametrize("method", EVERY_LEVEL)
def test_predict_on_the_input_is_the_evaluation_once_nap_adds_no_noise(tiny_inputs, monkeypatch, method):
    """predict skips NAP's noise; with none drawn (the -nodp twins' own, the others' switched off), it scores
    the input exactly as the evaluation did: at node level the artifact's bounding is reproduced from its
    public D and seed."""
    _noise_free(monkeypatch)
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, method, _epsilon(method), **_trained(method))
    graph, split = inputs.graph, inputs.split
    own = result.predict(graph)
    assert own.argmax(1)[split.test].unique().numel() > 1  # not a constant classifier: the equality says more
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    assert _accuracy(own, graph, split.val) == pytest.approx(result.val["accuracy"], abs=1e-9)


@pytest.mark.parametrize("method", ["gap", "progap", "progap-edge"])
def test_inductive_predict_reads_each_parts_edges_and_drops_the_new_nodes_edges(tiny_inputs, monkeypatch, method):
    """Inductive: the artifact is built as the workflow's bound-degree builds it (cross-part edges dropped, then
    bounded); predict reads the given graph the same way, and appended nodes lie in no part."""
    _noise_free(monkeypatch)
    split = dataclasses.replace(tiny_inputs.split, setting="inductive")
    graph = tiny_inputs.graph
    artifact = degree_artifact(
        remove_cross_split_edges(graph.edge_index, split),
        kind="out-degree",
        bound=D,
        seed=3,
        num_nodes=graph.num_nodes,
        train_nodes=split.train,
    )
    inputs = RunInputs(
        graph=graph, split=split, num_classes=tiny_inputs.num_classes, structure={"out-degree": artifact}
    )
    result = _run(inputs, method, 4.0, **_trained(method))
    own = result.predict(graph).cpu()
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    assert _accuracy(own, graph, split.val) == pytest.approx(result.val["accuracy"], abs=1e-9)
    own_parts = Data(x=graph.x, y=graph.y, edge_index=remove_cross_split_edges(graph.edge_index, split))
    assert torch.equal(result.predict(own_parts).cpu(), own)
    extended = result.predict(_extended(inputs)).cpu()
    assert torch.equal(extended, result.predict(_extended(inputs, isolated=True)).cpu())
    torch.testing.assert_close(extended[: graph.num_nodes], own, rtol=0, atol=1e-6)


def test_predict_refuses_a_graph_smaller_than_the_input(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, "gap", 4.0)
    graph = inputs.graph
    keep = (graph.edge_index < graph.num_nodes - 1).all(0)
    smaller = Data(x=graph.x[:-1], y=graph.y[:-1], edge_index=graph.edge_index[:, keep])
    with pytest.raises(ValueError, match="extending the run's input"):
        result.predict(smaller)
