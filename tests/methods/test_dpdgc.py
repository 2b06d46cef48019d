"""DPDGC: the sensitivity the column normalization buys, the encoder's occurrence count, its DP-Adam on the
batch's adjacency columns, its ledger, and the reference mode (the public code's noise)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from dp_accounting.dp_event import GaussianDpEvent
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch_geometric.data import Data

from nodedp.accounting import Ledger, verify_ledger_dict
from nodedp.accounting.pld import pld_of_event
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import bound_out_degree, degree_artifact, remove_cross_split_edges
from nodedp.mechanisms import NAP, nap_aggregate
from nodedp.mechanisms.clipping import clip_factors, clip_rows
from nodedp.methods.dpdgc import adjacency_rows, clipped_gradient_sum, in_neighbours, plan_dpdgc
from nodedp.models import AdjacencyEncoder
from nodedp.models.dpdgc import AdjacencyRows
from nodedp.plans.dpdgc import (
    PLD_MIN_NOISE_MULTIPLIER,
    public_code_delta,
    public_code_epsilon,
    public_code_noise,
    reference_accountant,
)
from nodedp.train import OptimConfig, PerSampleGradients, PrivacyConfig, train_model
from nodedp.train.per_sample import split_flat
from tests.methods._structure import accuracy_on as _accuracy
from tests.methods._structure import with_bound
from tests.methods.test_gap import _extended, _noise_free

D = 10  # csbm-tiny's public out-degree bound: a run plans at it and refuses an artifact bounded otherwise
FAST = {"epochs": 1, "encoder_epochs": 1, "batch_size": 32, "hidden_dim": 8}


def _inputs(tiny_inputs) -> RunInputs:
    return with_bound(tiny_inputs, "out-degree", D)


def _spec(method: str, epsilon: float) -> RunSpec:
    private = get_method(method).private
    return RunSpec(
        dataset="csbm-tiny",
        method=method,
        seed=0,
        target_epsilon=epsilon if private else math.inf,
        target_delta=1e-4 if private else 0.0,
    )


def _run(inputs, method: str, epsilon: float = 4.0, **hparams):
    info = get_method(method)
    return info.run(inputs, _spec(method, epsilon), info.parse_hparams({**FAST, **hparams}))


def _dense(rows: AdjacencyRows, num_nodes: int) -> torch.Tensor:
    """The rows [B, N] that ``rows`` keeps on its columns."""
    return rows.counts.new_zeros(rows.counts.size(0), num_nodes).index_copy_(1, rows.columns, rows.counts)


def _remove_node(edge_index: torch.Tensor, v: int) -> torch.Tensor:
    """G' on the same kept edge list: v's edges dropped, v stays an isolated row."""
    keep = (edge_index[0] != v) & (edge_index[1] != v)
    return edge_index[:, keep]


def _release(table: torch.Tensor, edges: torch.Tensor, row_clip: float) -> torch.Tensor:
    """The method's DP-Emb path without noise: the encoder's normalization, then one NAP aggregation."""
    encoder = AdjacencyEncoder(table.size(0), 2, hidden_dim=table.size(1), row_clip=row_clip)
    with torch.no_grad():
        encoder.table.weight.copy_(table.t())
    encoder.normalize_()
    return nap_aggregate(encoder.embedding_table(), edges, num_nodes=table.size(0), row_clip=row_clip)


def _random_out_bounded_graph(n: int, max_degree: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.arange(n).repeat_interleave(max_degree)
    dst = torch.randint(0, n, (n * max_degree,), generator=g)
    edges = torch.stack([src, dst])[:, src != dst].unique(dim=1)
    return bound_out_degree(edges, num_nodes=n, max_degree=max_degree, seed=seed)


@pytest.mark.parametrize("kind", ["gaussian", "huge_row", "zero_rows"])
def test_released_embedding_moves_by_at_most_its_sensitivity_for_any_table(kind):
    n, h, r = 40, 6, 1.5
    edges = _random_out_bounded_graph(n, D, seed=1)
    table = torch.randn(n, h, generator=torch.Generator().manual_seed(2))
    if kind == "huge_row":
        table[3] *= 1e6
    elif kind == "zero_rows":
        table[::3] = 0
    bound = math.sqrt(D + r * r)
    full = _release(table, edges, r)
    for v in range(n):
        change = torch.linalg.vector_norm(full - _release(table, _remove_node(edges, v), r))
        assert change <= bound * (1 + 1e-6)


def test_sensitivity_is_tight_and_needs_the_own_row_term():
    # v has D out-neighbours whose only in-neighbour is v, and many in-neighbours with one
    # embedding, so its own row is clipped to exactly R: the change is √(D + R²).
    r, n_in = 2.0, 9
    v, outs, ins = 0, list(range(1, D + 1)), list(range(D + 1, D + 1 + n_in))
    n = 1 + D + n_in
    edges = torch.tensor([[v] * D + ins, outs + [v] * n_in])
    table = torch.randn(n, 5, generator=torch.Generator().manual_seed(0))
    table[ins] = table[ins[0]].clone()
    change = torch.linalg.vector_norm(_release(table, edges, r) - _release(table, _remove_node(edges, v), r))
    assert change.item() == pytest.approx(math.sqrt(D + r * r), rel=1e-6)
    assert change.item() > math.sqrt(D) * 1.01  # the public √D-per-direction count omits this row


def test_without_the_normalization_the_change_is_unbounded():
    # The public code's no-op normalization: X_A = A·W with W as trained. Scaling one node's
    # embedding scales the change it causes, past any fixed Δ.
    n, r = 30, math.sqrt(D)
    edges = _random_out_bounded_graph(n, D, seed=3)
    v = int(edges[0, 0])
    table = torch.randn(n, 4, generator=torch.Generator().manual_seed(4))
    table[v] *= 1e3

    def raw(e: torch.Tensor) -> torch.Tensor:
        return _dense(adjacency_rows(e, torch.arange(n), num_nodes=n), n) @ table

    bound = math.sqrt(D + r * r)
    assert torch.linalg.vector_norm(raw(edges) - raw(_remove_node(edges, v))) > 10 * bound
    assert torch.linalg.vector_norm(_release(table, edges, r) - _release(table, _remove_node(edges, v), r)) <= bound


def test_a_state_dict_assignment_does_not_normalize():
    # The public bug, as a control for `normalize_`: assigning into state_dict() leaves the weight.
    encoder = AdjacencyEncoder(20, 3, hidden_dim=4, row_clip=1.0)
    with torch.no_grad():
        encoder.table.weight.mul_(7.0)
    encoder.state_dict()["table.weight"] = F.normalize(encoder.table.weight, dim=0)
    assert torch.linalg.vector_norm(encoder.table.weight, dim=0).min() > 6.9
    encoder.normalize_()
    assert torch.allclose(torch.linalg.vector_norm(encoder.table.weight, dim=0), torch.ones(20))


def test_trained_table_is_normalized_and_the_cache_is_one_nap_aggregation(tiny_inputs, monkeypatch):
    # A large lr pushes raw rows far from norm 1; what the run releases must still be the
    # aggregation of a unit-norm table (noise switched off to see it).
    captured = {}
    real_call = NAP.__call__

    def spy(self, x, edge_index, *, generator):
        captured["table"], captured["edges"] = x.clone(), edge_index
        self_noise, self.noise_multiplier = self.noise_multiplier, 1e-12
        try:
            out = real_call(self, x, edge_index, generator=generator)
        finally:
            self.noise_multiplier = self_noise
        captured["released"] = out
        return out

    monkeypatch.setattr(NAP, "__call__", spy)
    inputs = _inputs(tiny_inputs)
    _run(inputs, "dpdgc", 4.0, encoder_epochs=2, encoder_lr=5.0)
    norms = torch.linalg.vector_norm(captured["table"], dim=1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5)
    expected = nap_aggregate(captured["table"], captured["edges"], num_nodes=norms.numel(), row_clip=math.sqrt(D))
    assert torch.allclose(captured["released"], expected, atol=1e-6)


def test_each_node_changes_at_most_d_plus_one_training_examples(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    graph, train = inputs.graph, inputs.split.train
    edges = inputs.structure["out-degree"]["edge_index"]
    n = graph.num_nodes
    rows = _dense(adjacency_rows(edges, train, num_nodes=n), n)
    worst = 0
    for v in range(n):
        changed = (rows != _dense(adjacency_rows(_remove_node(edges, v), train, num_nodes=n), n)).any(1)
        changed |= train == v  # its own example disappears
        worst = max(worst, int(changed.sum()))
    assert 1 < worst <= D + 1


def test_adjacency_rows_match_the_dense_matrix_on_exactly_the_batchs_in_neighbours():
    edges = torch.cat([_random_out_bounded_graph(25, 3, seed=5), torch.tensor([[7, 7], [4, 4]])], dim=1)  # 7 -> 4 twice
    dense = torch.zeros(25, 25).index_put_((edges[1], edges[0]), torch.ones(edges.size(1)), accumulate=True)
    nodes = torch.tensor([4, 0, 24, 4])
    rows = adjacency_rows(edges, nodes, num_nodes=25)
    assert torch.equal(_dense(rows, 25), dense[nodes]) and dense[4, 7] == 2
    assert torch.equal(rows.columns, dense[nodes].sum(0).nonzero().flatten())  # no column beyond the batch's


class _DenseEncoder(nn.Module):
    """``encoder`` as ``PerSampleGradients`` takes it: an nn.Linear over dense rows [B, N] holding the same table."""

    def __init__(self, encoder: AdjacencyEncoder) -> None:
        super().__init__()
        hidden, n = encoder.table.weight.shape
        self.table = nn.Linear(n, hidden, bias=False)
        self.table.weight = encoder.table.weight
        self.shift, self.dropout, self.head = encoder.shift, encoder.dropout, encoder.head
        self.row_clip = encoder.row_clip

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        z = self.shift(clip_rows(self.table(rows), max_norm=self.row_clip))
        return self.head(F.selu(self.dropout(z)))


def _encoder_case(n: int = 30, seed: int = 0):
    """An encoder with a trained-looking shift, and a graph where a batch has duplicates, double edges and an
    empty row."""
    torch.manual_seed(seed)
    encoder = AdjacencyEncoder(n, 3, hidden_dim=5, row_clip=1.5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        encoder.shift.bias.normal_()
    edges = torch.cat([_random_out_bounded_graph(n, 4, seed=seed), torch.tensor([[2, 2], [3, 3]])], dim=1)
    edges = edges[:, edges[1] != n - 1]  # node n - 1 has no in-neighbour
    labels = torch.randint(0, 3, (n,), generator=torch.Generator().manual_seed(seed))
    return encoder, edges, labels


@pytest.mark.parametrize("clip_norm", [1e-3, 0.3, 100.0])  # every example clipped, some, none
def test_clipped_gradient_sum_is_per_sample_gradients_of_the_dense_model(clip_norm):
    n = 30
    encoder, edges, labels = _encoder_case(n)
    nodes = torch.tensor([3, 3, n - 1, 0, 7, 12, 29, 5])
    rows = adjacency_rows(edges, nodes, num_nodes=n)
    noise = torch.randn(encoder.table.weight.numel() + encoder.shift.bias.numel())
    dense_model = _DenseEncoder(encoder)
    psg = PerSampleGradients(dense_model)
    with psg.capture():
        out = dense_model(_dense(rows, n))
    psg.backward(F.cross_entropy(out, labels[nodes], reduction="none"))
    expected = noise.clone()
    psg.write_clipped_sum(clip_factors(psg.norms(), max_norm=clip_norm), onto=expected)
    psg.remove()

    got = noise.clone()
    grads = split_flat(got, [encoder.table.weight, encoder.shift.bias])
    clipped_gradient_sum(
        encoder,
        rows,
        labels[nodes],
        clip_norm=clip_norm,
        table_grad=grads[encoder.table.weight],
        shift_grad=grads[encoder.shift.bias],
    )
    torch.testing.assert_close(got, expected)
    untouched = torch.ones(n, dtype=torch.bool).index_fill_(0, rows.columns, False)
    assert torch.equal(grads[encoder.table.weight][:, untouched], noise[: 5 * n].view(5, n)[:, untouched])


def test_encoder_training_with_the_closed_form_clipped_sum_equals_the_generic_rule_on_the_dense_model():
    n = 30
    encoder, edges, labels = _encoder_case(n, seed=2)
    reference = AdjacencyEncoder(n, 3, hidden_dim=5, row_clip=1.5)
    reference.load_state_dict(encoder.state_dict())
    batches = [torch.tensor([0, 4, 9, 29]), torch.tensor([], dtype=torch.long), torch.tensor([1, 2, 3, 3, 17])]
    privacy = PrivacyConfig(clip_norm=0.5, noise_std=0.7, expected_batch_size=4.0, steps=len(batches))
    optim = OptimConfig(optimizer="adam", lr=0.05, weight_decay=1e-5)

    def batch_fn(idx: torch.Tensor) -> tuple[AdjacencyRows, torch.Tensor]:
        return adjacency_rows(edges, idx, num_nodes=n), labels[idx]

    def sparse_sum(rows, targets, grads):
        clipped_gradient_sum(
            encoder,
            rows,
            targets,
            clip_norm=privacy.clip_norm,
            table_grad=grads[encoder.table.weight],
            shift_grad=grads[encoder.shift.bias],
        )

    def train_sparse(privacy: PrivacyConfig) -> int:
        return train_model(
            encoder,
            batch_fn=batch_fn,
            batches=batches,
            optim=optim,
            privacy=privacy,
            generator=torch.Generator().manual_seed(3),
            device="cpu",
            clipped_sum=sparse_sum,
            on_step=lambda _step: encoder.normalize_(),
        ).steps

    steps = train_sparse(privacy)
    train_model(
        _DenseEncoder(reference),
        batch_fn=lambda idx: (_dense(batch_fn(idx)[0], n), labels[idx]),
        batches=batches,
        optim=optim,
        privacy=privacy,
        generator=torch.Generator().manual_seed(3),
        device="cpu",
        on_step=lambda _step: reference.normalize_(),
    )
    assert steps == len(batches)
    torch.testing.assert_close(encoder.table.weight, reference.table.weight)
    torch.testing.assert_close(encoder.shift.bias, reference.shift.bias)
    with pytest.raises(RuntimeError, match="ledger charges 4"):
        train_sparse(dataclasses.replace(privacy, steps=4))


class _OpOutputs(TorchDispatchMode):
    """Records the size of every tensor an op returns, except those living in ``exempt``'s storage."""

    def __init__(self, exempt: torch.Tensor) -> None:
        super().__init__()
        self.exempt = exempt.untyped_storage().data_ptr()
        self.sizes: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() != self.exempt:
                self.sizes.append((str(func), t.numel()))
        return out


def test_an_encoder_batch_costs_its_edges_not_the_graphs_size():
    # Dense rows [B, N] (or anything else of the graph's size) per batch would make the encoder quadratic in N:
    # building a batch and its clipped sum may write the gradient buffer in place, and create nothing of N entries.
    n, hidden = 5000, 4
    encoder = AdjacencyEncoder(n, 3, hidden_dim=hidden, row_clip=2.0)
    edges = _random_out_bounded_graph(n, 3, seed=6)
    csr = in_neighbours(edges, num_nodes=n)
    nodes = torch.randperm(n, generator=torch.Generator().manual_seed(0))[:16]
    noisy = torch.zeros(hidden * n + hidden)
    grads = split_flat(noisy, [encoder.table.weight, encoder.shift.bias])
    with _OpOutputs(exempt=noisy) as recorded:
        rows = adjacency_rows(edges, nodes, num_nodes=n, csr=csr)
        clipped_gradient_sum(
            encoder,
            rows,
            torch.zeros(16, dtype=torch.long),
            clip_norm=1.0,
            table_grad=grads[encoder.table.weight],
            shift_grad=grads[encoder.shift.bias],
        )
    assert recorded.sizes and max(size for _, size in recorded.sizes) < n, max(recorded.sizes, key=lambda x: x[1])
    assert noisy[: hidden * n].count_nonzero() > 0


def test_encoder_gradient_sum_moves_by_2c_rho_and_can_exceed_the_public_factor():
    # v's D out-neighbours have v as their only in-neighbour, with one label: removing v
    # changes D + 1 examples in the same direction, so the clipped sum moves past 2C√(D+1)
    # (the public noise factor) but never past 2C(D+1).
    d, c = 20, 1.0
    n = d + 1
    v = 0
    edges = torch.stack([torch.zeros(d, dtype=torch.long), torch.arange(1, n)])
    labels = torch.zeros(n, dtype=torch.long)
    nodes = torch.arange(n)

    def clipped_sum(e: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(0)
        encoder = AdjacencyEncoder(
            n, 2, hidden_dim=8, row_clip=math.sqrt(d), generator=torch.Generator().manual_seed(1)
        )
        flat = torch.zeros(encoder.table.weight.numel() + encoder.shift.bias.numel())
        grads = split_flat(flat, [encoder.table.weight, encoder.shift.bias])
        clipped_gradient_sum(
            encoder,
            adjacency_rows(e, nodes[present], num_nodes=n),
            labels[present],
            clip_norm=c,
            table_grad=grads[encoder.table.weight],
            shift_grad=grads[encoder.shift.bias],
        )
        return flat

    everyone = torch.ones(n, dtype=torch.bool)
    without_v = everyone.clone()
    without_v[v] = False
    change = torch.linalg.vector_norm(clipped_sum(edges, everyone) - clipped_sum(_remove_node(edges, v), without_v))
    assert change <= 2 * c * (d + 1) + 1e-5
    assert change > 2 * c * math.sqrt(d + 1)


@pytest.mark.parametrize("epsilon", [1.0, 4.0, 12.0])
def test_ledger_spends_the_target_with_the_shares_honoured(tiny_inputs, epsilon):
    inputs = _inputs(tiny_inputs)
    info = get_method("dpdgc")
    hp = info.parse_hparams({**FAST, "encoder_epochs": 3, "epochs": 3})
    plan = plan_dpdgc(inputs, _spec("dpdgc", epsilon), hp, private=True)
    ledger = plan.ledger
    assert 0.99 * epsilon <= ledger.composed()[0] <= epsilon
    encoder, emb, classifier = ledger.mechanisms
    assert encoder.kind == "poisson_occurrence_gaussian" and encoder.params["max_occurrences"] == D + 1
    assert emb.kind == "gaussian" and emb.params["queries"] == 1
    assert emb.sensitivity == pytest.approx(math.sqrt(2 * D))  # R = √D by default
    assert classifier.kind == "subsampled_gaussian" and classifier.sensitivity == hp.clip_norm

    def alone(record):
        return type(ledger)(level="node", target_epsilon=epsilon, target_delta=1e-4, mechanisms=(record,)).composed()[0]

    assert alone(encoder) == pytest.approx(hp.encoder_share * epsilon, rel=0.01)
    assert alone(emb) == pytest.approx(hp.emb_share * epsilon, rel=0.01)
    assert plan.nap.noise_std == pytest.approx(emb.params["noise_std"])
    assert verify_ledger_dict(ledger.to_dict()) == pytest.approx(ledger.composed()[0])


def test_run_uses_the_ledgers_noise_and_queries_dp_emb_once(tiny_inputs):
    result = _run(_inputs(tiny_inputs), "dpdgc", 4.0, epochs=2, encoder_epochs=2)
    details, (_, emb, classifier) = result.details, result.ledger.mechanisms
    assert details["emb_queries"] == 1
    assert details["emb_noise_std"] == pytest.approx(emb.params["noise_std"]) and details["emb_noise_std"] > 0
    assert details["noise_std"] == pytest.approx(classifier.params["noise_std"])
    assert details["encoder_steps"] == math.ceil(2 / (32 / _inputs(tiny_inputs).split.train.numel()))


def test_no_encoder_training_writes_no_encoder_record(tiny_inputs):
    result = _run(_inputs(tiny_inputs), "dpdgc", 4.0, encoder_epochs=0, encoder_share=0.0, emb_share=0.25)
    assert [r.name.split(":")[0] for r in result.ledger.mechanisms] == ["dp-emb", "dp-sgd"]
    assert 0.99 * 4.0 <= result.ledger.composed()[0] <= 4.0


def test_released_noise_has_the_ledgers_std(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    plan = plan_dpdgc(inputs, _spec("dpdgc", 4.0), get_method("dpdgc").parse_hparams(FAST), private=True)
    n = inputs.graph.num_nodes
    table = torch.randn(n, 64, generator=torch.Generator().manual_seed(0))
    noisy = plan.nap(table, plan.edges, generator=torch.Generator().manual_seed(1))
    residual = noisy - nap_aggregate(table, plan.edges, num_nodes=n, row_clip=plan.row_clip)
    assert residual.std().item() == pytest.approx(plan.nap.noise_std, rel=0.03)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"encoder_share": 0.6, "emb_share": 0.4}, "must be < 1"),
        ({"encoder_epochs": 0}, "encoder_share must be 0"),
        ({"encoder_share": 0.0}, "encoder_share must be 0"),
        ({"emb_share": 0.0}, "emb_share"),
        ({"paper_max_degree": -1}, "paper_max_degree"),
    ],
)
def test_bad_shares_are_refused_before_any_work(values, match):
    with pytest.raises(ValueError, match=match):
        get_method("dpdgc").parse_hparams(values)


def test_non_private_twin_learns_and_has_no_noise(tiny_inputs):
    result = _run(_inputs(tiny_inputs), "dpdgc-nodp", epochs=20, encoder_epochs=20, lr=0.01, encoder_lr=0.01)
    assert result.ledger.level == "none" and not result.ledger.mechanisms
    assert result.details["noise_std"] == 0.0
    assert result.test["accuracy"] > 0.6


def test_standardizing_the_embedding_is_post_processing(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    plain = _run(inputs, "dpdgc", 4.0)
    scaled = _run(inputs, "dpdgc", 4.0, standardize_embedding=True)
    assert scaled.ledger.to_dict() == plain.ledger.to_dict()
    assert scaled.details["emb_noise_std"] == plain.details["emb_noise_std"] > 0


# --- reference mode: the public code's noise (Chien et al. 2023, thupchnsky/dp-gnn) ------------------------------

PAPER = {**FAST, "accounting": "paper"}


def _paper_plan(inputs, epsilon: float = 4.0, **hparams):
    hp = get_method("dpdgc").parse_hparams({**PAPER, **hparams})
    return plan_dpdgc(inputs, _spec("dpdgc", epsilon), hp, private=True)


def test_reference_run_records_the_claim_and_its_ledger_round_trips(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, "dpdgc", 4.0, accounting="paper")
    ledger, n = result.ledger, inputs.split.train.numel()
    assert (ledger.claim.epsilon, ledger.claim.delta) == (4.0, public_code_delta(n))
    assert (ledger.target_epsilon, ledger.target_delta) == (4.0, 1e-4)
    assert ledger.accountant == result.details["ledger_accountant"] == "rdp"
    d = ledger.to_dict()
    assert Ledger.from_dict(d).to_dict() == d
    assert verify_ledger_dict(d) == pytest.approx(ledger.composed()[0])
    # The same records as suite mode (kinds, params, sensitivities); only the noise differs.
    suite = plan_dpdgc(inputs, _spec("dpdgc", 4.0), get_method("dpdgc").parse_hparams(FAST), private=True).ledger
    for ours, theirs in zip(ledger.mechanisms, suite.mechanisms, strict=True):
        assert (ours.name, ours.kind, ours.sensitivity) == (theirs.name, theirs.kind, theirs.sensitivity)
        assert ours.params.keys() == theirs.params.keys()
        assert ours.params["noise_multiplier"] != pytest.approx(theirs.params["noise_multiplier"])


@pytest.mark.parametrize(
    ("num_train_nodes", "delta"), [(1, 0.1), (150, 1e-3), (999, 1e-3), (1000, 1e-4), (2031, 1e-4), (100_000, 1e-6)]
)
def test_public_delta_is_one_over_ten_to_the_digits(num_train_nodes, delta):
    assert public_code_delta(num_train_nodes) == pytest.approx(delta, rel=1e-12)


def test_public_sigma_reproduces_autodp_on_cora_sizes():
    # The public code's own calibration (autodp 0.2.3.1: AmplificationBySampling(PoissonSampling=False) with the
    # improved bound, 100·2031 // 64 steps a stage, ExactGaussianMechanism for DP-Emb, δ = 1e-4), run
    # independently of this suite for Cora's 2031 training nodes, batch 64, 100 + 100 epochs, ε = 4: σ = 5.38216.
    noise = public_code_noise(
        claimed_epsilon=4.0, num_train_nodes=2031, batch_size=64, encoder_epochs=100, epochs=100, max_degree=20
    )
    assert noise.sigma == pytest.approx(5.38216, rel=2e-4)
    assert noise.delta == pytest.approx(1e-4)


def test_reference_noise_is_the_public_codes_rule(tiny_inputs):
    inputs = _inputs(tiny_inputs)
    n = inputs.split.train.numel()
    plan = _paper_plan(inputs)
    sigma = plan.noise["public_sigma"]
    # σ is what the code's accountant calls ε = 4 (its search: ε(σ) within 1e-4 below the claim).
    claimed = public_code_epsilon(
        sigma, num_train_nodes=n, batch_size=32, encoder_epochs=1, epochs=1, delta=public_code_delta(n)
    )
    assert 4.0 * (1 - 1e-4) <= claimed <= 4.0
    encoder, emb, classifier = plan.ledger.mechanisms
    # The literal noise of dpdgc_ndp.py: DPOptimizer(σ·2√(D+1)), PMA std σ·norm_scale·√(2D), DPOptimizer(σ·2).
    assert encoder.params["noise_multiplier"] == pytest.approx(sigma * 2 * math.sqrt(D + 1))
    assert emb.params["noise_std"] == pytest.approx(sigma * 1e-8 * math.sqrt(2 * D))
    assert plan.nap.noise_std == pytest.approx(sigma * 1e-8 * math.sqrt(2 * D))
    assert classifier.params["noise_multiplier"] == pytest.approx(2 * sigma)
    # The public scripts' D = 100 in the noise, the structure's D in the sensitivities.
    wide = _paper_plan(inputs, paper_max_degree=100)
    encoder, emb, _ = wide.ledger.mechanisms
    assert wide.noise["public_sigma"] == sigma
    assert encoder.params["noise_multiplier"] == pytest.approx(sigma * 2 * math.sqrt(101))
    assert emb.params["noise_std"] == pytest.approx(sigma * 1e-8 * math.sqrt(200))
    assert emb.sensitivity == pytest.approx(math.sqrt(2 * D)) and encoder.params["max_occurrences"] == D + 1


def test_reference_actual_epsilon_is_dp_embs_near_noiseless_gaussian(tiny_inputs):
    ledger = _paper_plan(_inputs(tiny_inputs)).ledger
    z = ledger.mechanisms[1].params["noise_multiplier"]
    assert z < PLD_MIN_NOISE_MULTIPLIER
    with pytest.raises(ValueError):  # no PLD of it can be built: hence RDP for the whole ledger
        pld_of_event(GaussianDpEvent(z))
    actual = ledger.actual_claim_epsilon()
    # RDP's least order, 1.1, dominates: ε = 1.1/(2z²) + terms below 1e3 (the conversion, the DP-SGD stages).
    assert actual == pytest.approx(1.1 / (2 * z * z), rel=1e-9)
    assert actual > 1e10 * ledger.claim.epsilon


def test_reference_accountant_falls_back_to_rdp_only_below_the_pld_floor():
    assert reference_accountant(PLD_MIN_NOISE_MULTIPLIER, "pld") == "pld"
    assert reference_accountant(0.5 * PLD_MIN_NOISE_MULTIPLIER, "pld") == "rdp"
    assert reference_accountant(0.5 * PLD_MIN_NOISE_MULTIPLIER, "rdp") == "rdp"


# --- predict: the classifier on X_A recomputed without DP-Emb's noise on a graph that extends the input ----------


@pytest.mark.parametrize("method", ["dpdgc", "dpdgc-nodp"])
def test_predict_reads_its_argument_alone_and_one_hop_into_the_new_nodes(tiny_inputs, method):
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, method)
    extended = _extended(inputs)
    n, total = inputs.graph.num_nodes, extended.num_nodes
    assert extended.edge_index.size(1) > inputs.graph.edge_index.size(1)
    logits = result.predict(extended).cpu()
    assert logits.shape == (total, inputs.num_classes) and torch.isfinite(logits).all()
    assert torch.equal(result.predict(extended).cpu(), logits)  # no fresh noise: the graph and the weights alone
    own = result.predict(inputs.graph).cpu()
    isolated = result.predict(_extended(inputs, isolated=True)).cpu()
    # One hop, and an appended node has no trained embedding (a zero row of Ŵ): the original nodes read what
    # they read without the new nodes (the canaries' edges are within D, so the bounding keeps the rest) ...
    torch.testing.assert_close(isolated[:n], own, rtol=0, atol=1e-6)
    torch.testing.assert_close(logits[:n], own, rtol=0, atol=1e-6)
    # ... while each new node reads its in-neighbours' embeddings
    assert (logits[n:] - isolated[n:]).abs().amax(1).min() > 1e-6


@pytest.mark.parametrize(
    ("method", "hparams"), [("dpdgc", {}), ("dpdgc", {"standardize_embedding": True}), ("dpdgc-nodp", {})]
)
def test_predict_on_the_input_is_the_evaluation_once_dp_emb_adds_no_noise(tiny_inputs, monkeypatch, method, hparams):
    """predict skips DP-Emb's noise; with none drawn (the -nodp twin's own, switched off otherwise) it scores the
    input as the evaluation did: the artifact's bounding reproduced from its public D and seed, the same bias and
    standardization."""
    _noise_free(monkeypatch)
    inputs = _inputs(tiny_inputs)
    result = _run(inputs, method, epochs=5, lr=0.01, **hparams)
    graph, split = inputs.graph, inputs.split
    own = result.predict(graph)
    assert own.argmax(1)[split.test].unique().numel() > 1  # not a constant classifier: the equality says more
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    assert _accuracy(own, graph, split.val) == pytest.approx(result.val["accuracy"], abs=1e-9)


def test_inductive_predict_reads_each_parts_edges_and_drops_the_new_nodes_edges(tiny_inputs, monkeypatch):
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
    result = _run(inputs, "dpdgc", epochs=5, lr=0.01)
    own = result.predict(graph).cpu()
    assert _accuracy(own, graph, split.test) == pytest.approx(result.test["accuracy"], abs=1e-9)
    own_parts = Data(x=graph.x, y=graph.y, edge_index=remove_cross_split_edges(graph.edge_index, split))
    assert torch.equal(result.predict(own_parts).cpu(), own)
    extended = result.predict(_extended(inputs)).cpu()
    assert torch.equal(extended, result.predict(_extended(inputs, isolated=True)).cpu())
