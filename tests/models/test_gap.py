from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import GAPClassifier, GAPEncoder, ProGAP, ProGAPStage, StageMLP
from nodedp.train import OptimConfig, PerSampleGradients, PrivacyConfig, make_generator, train_model

B, FEATURES, HIDDEN, CLASSES = 6, 7, 16, 3
Inputs = Tensor | tuple[Tensor, ...]


@pytest.fixture(autouse=True)
def _float64() -> Iterator[None]:
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _rows(inputs: Inputs, i: int) -> Inputs:
    return inputs[i : i + 1] if isinstance(inputs, Tensor) else tuple(x[i : i + 1] for x in inputs)


def _progap_inputs(s: int, n: int = B) -> tuple[Tensor, ...]:
    """(X, X̃^(1), ..., X̃^(s)): raw features, then hidden-width aggregates."""
    return (torch.randn(n, FEATURES), *(torch.randn(n, HIDDEN) for _ in range(s)))


def _types(module: nn.Module) -> list[type[nn.Module]]:
    return [type(m) for m in module.layers]


# ---- StageMLP -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("normalization", "plain_last", "expected"),
    [
        ("group", True, [nn.Linear, nn.SELU, nn.GroupNorm, nn.Dropout, nn.Linear]),
        ("group", False, [nn.Linear, nn.SELU, nn.GroupNorm, nn.Dropout, nn.Linear, nn.SELU, nn.GroupNorm, nn.Dropout]),
        ("batch", True, [nn.Linear, nn.SELU, nn.BatchNorm1d, nn.Dropout, nn.Linear]),
        ("none", False, [nn.Linear, nn.SELU, nn.Dropout, nn.Linear, nn.SELU, nn.Dropout]),
    ],
)
def test_stage_mlp_blocks(normalization: str, plain_last: bool, expected: list[type[nn.Module]]) -> None:
    mlp = StageMLP(5, 3, hidden_dim=8, num_layers=2, normalization=normalization, dropout=0.1, plain_last=plain_last)
    assert _types(mlp) == expected
    linears = [m for m in mlp.layers if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(5, 8), (8, 3)]
    assert mlp(torch.randn(4, 5)).shape == (4, 3)


def test_group_norm_has_one_group_so_examples_are_independent() -> None:
    mlp = StageMLP(5, 8, normalization="group", plain_last=False).eval()
    x = torch.randn(4, 5)
    alone = torch.cat([mlp(x[i : i + 1]) for i in range(4)])
    torch.testing.assert_close(mlp(x), alone)
    assert all(m.num_groups == 1 for m in mlp.modules() if isinstance(m, nn.GroupNorm))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: StageMLP(4, 2, normalization="layer"), "group"),
        (lambda: StageMLP(4, 2, num_layers=0), "num_layers"),
        (lambda: StageMLP(4, 2, dropout=1.0), "dropout"),
        (lambda: ProGAP(4, 2, depth=-1), "depth"),
        (lambda: GAPClassifier(4, 2, hops=-1), "hops"),
        (lambda: GAPEncoder(4, 2, normalization="bn"), "batch"),
        (lambda: ProGAP(4, 2, depth=1).stage(2), r"\[0, 1\]"),
    ],
)
def test_invalid_arguments_name_the_valid_ones(make: Callable[[], nn.Module], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


# ---- shapes and architecture --------------------------------------------------------------


def test_progap_stage_shapes_and_embeddings() -> None:
    model = ProGAP(FEATURES, CLASSES, depth=2, base_layers=2)
    assert model.num_stages == 3
    for s in range(3):
        stage = model.stage(s)
        assert stage.index == s
        assert stage.head.in_features == (s + 1) * HIDDEN  # JK: concatenation of X^(0..s)
        inputs = _progap_inputs(s)
        assert stage(inputs).shape == (B, CLASSES)
        emb = stage.embed(inputs[-1])
        assert emb.shape == (B, HIDDEN) and not emb.requires_grad
        torch.testing.assert_close(emb.norm(dim=1), torch.ones(B))


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProGAP(FEATURES, CLASSES, depth=2).stage(2),
        lambda: GAPClassifier(FEATURES, CLASSES, hops=2),
    ],
)
def test_logits_depend_on_every_hop(make: Callable[[], nn.Module]) -> None:
    model = make().eval()
    inputs = tuple(torch.randn(B, FEATURES if k == 0 or isinstance(model, GAPClassifier) else HIDDEN) for k in range(3))
    base = model(inputs)
    for k in range(3):
        moved = tuple(x + 1.0 if j == k else x for j, x in enumerate(inputs))
        assert not torch.allclose(model(moved), base), f"hop {k} is ignored"


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProGAP(FEATURES, CLASSES, depth=1).stage(1),
        lambda: GAPClassifier(FEATURES, CLASSES, hops=1),
    ],
)
def test_wrong_number_of_hops_is_refused(make: Callable[[], nn.Module]) -> None:
    model = make()
    with pytest.raises(ValueError, match="tuple of 2 tensors"):
        model((torch.randn(B, FEATURES),))
    with pytest.raises(ValueError, match="got a tensor"):
        model(torch.randn(B, FEATURES))


def test_gap_encoder_and_classifier_shapes() -> None:
    encoder = GAPEncoder(FEATURES, CLASSES, num_layers=2, dropout=0.5)
    x = torch.randn(B, FEATURES)
    assert encoder(x).shape == (B, CLASSES)
    emb = encoder.embed(x)
    assert emb.shape == (B, HIDDEN) and encoder.training  # mode restored
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(B))
    torch.testing.assert_close(encoder.embed(x), emb)  # eval mode: no dropout
    classifier = GAPClassifier(HIDDEN, CLASSES, hops=3, base_layers=2, head_layers=2)
    assert classifier(tuple(torch.randn(B, HIDDEN) for _ in range(4))).shape == (B, CLASSES)


def test_embed_is_deterministic_and_restores_training_mode() -> None:
    stage = ProGAP(FEATURES, CLASSES, depth=0, dropout=0.5, normalization="batch").stage(0)
    x = torch.randn(B, FEATURES)
    stage.train()
    stats = stage.bases[0].layers[2].running_mean.clone()
    first, second = stage.embed(x), stage.embed(x)
    torch.testing.assert_close(first, second)
    assert stage.training and stage.bases[0].training
    torch.testing.assert_close(stage.bases[0].layers[2].running_mean, stats)  # eval: no statistic update


# ---- per-example gradients ----------------------------------------------------------------


def _brute_force(model: nn.Module, inputs: Inputs, y: Tensor) -> Tensor:
    """[B, P] per-example gradients over the trainable parameters, one backward per example."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    for i in range(len(y)):
        loss = F.cross_entropy(model(_rows(inputs, i)), y[i : i + 1], reduction="sum")
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        rows.append(torch.cat([(g if g is not None else torch.zeros_like(p)).flatten() for g, p in zip(grads, params)]))
    return torch.stack(rows)


def _check_per_sample(model: nn.Module, inputs: Inputs) -> None:
    y = torch.randint(0, CLASSES, (B,))
    expected = _brute_force(model, inputs, y)
    params = [p for p in model.parameters() if p.requires_grad]
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(inputs)
    psg.backward(F.cross_entropy(out, y, reduction="none"))
    torch.testing.assert_close(psg.norms(), expected.norm(dim=1), rtol=1e-5, atol=1e-7)
    factors = torch.rand(B)
    psg.write_clipped_sum(factors)
    got = torch.cat([p.grad.flatten() for p in params])
    torch.testing.assert_close(got, factors @ expected, rtol=1e-5, atol=1e-7)
    psg.remove()


@pytest.mark.parametrize("normalization", ["group", "none"])
@pytest.mark.parametrize("s", [0, 1, 2])
def test_progap_stage_per_sample_gradients_match_brute_force(s: int, normalization: str) -> None:
    model = ProGAP(FEATURES, CLASSES, depth=2, base_layers=2, normalization=normalization)
    _check_per_sample(model.stage(s), _progap_inputs(s))


@pytest.mark.parametrize("normalization", ["group", "none"])
def test_gap_per_sample_gradients_match_brute_force(normalization: str) -> None:
    encoder = GAPEncoder(FEATURES, CLASSES, num_layers=2, normalization=normalization)
    _check_per_sample(encoder, torch.randn(B, FEATURES))
    classifier = GAPClassifier(HIDDEN, CLASSES, hops=2, base_layers=2, head_layers=2, normalization=normalization)
    _check_per_sample(classifier, tuple(torch.randn(B, HIDDEN) for _ in range(3)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProGAP(FEATURES, CLASSES, depth=1, normalization="batch").stage(1),
        lambda: GAPEncoder(FEATURES, CLASSES, normalization="batch"),
        lambda: GAPClassifier(HIDDEN, CLASSES, hops=1, normalization="batch"),
    ],
)
def test_batch_norm_variant_is_refused_by_per_sample_gradients(make: Callable[[], nn.Module]) -> None:
    with pytest.raises(ValueError, match="BatchNorm"):
        PerSampleGradients(make())


# ---- progressive training -----------------------------------------------------------------


def test_stage_trains_only_its_base_and_head() -> None:
    model = ProGAP(FEATURES, CLASSES, depth=2)
    for s in range(3):
        stage = model.stage(s)
        trainable = {id(p) for p in stage.parameters() if p.requires_grad}
        own = {id(p) for p in [*model.base[s].parameters(), *model.heads[s].parameters()]}
        assert trainable == own
        frozen = [p for k in range(s) for p in model.base[k].parameters()]
        assert all(not p.requires_grad for p in frozen)


def _one_step(stage: ProGAPStage, inputs: tuple[Tensor, ...], *, private: bool) -> None:
    y = torch.randint(0, CLASSES, (B,))
    privacy = PrivacyConfig(clip_norm=1.0, noise_std=0.1, expected_batch_size=B) if private else None
    train_model(
        stage,
        batch_fn=lambda i: (tuple(x[i] for x in inputs), y[i]),
        batches=[torch.arange(B)],
        optim=OptimConfig("sgd", lr=1.0),
        privacy=privacy,
        generator=make_generator(0),
        device="cpu",
    )


@pytest.mark.parametrize(("normalization", "private"), [("group", True), ("batch", False)])
def test_training_stage_s_leaves_earlier_stages_unchanged(normalization: str, private: bool) -> None:
    model = ProGAP(FEATURES, CLASSES, depth=2, base_layers=2, normalization=normalization, dropout=0.3)
    inputs = _progap_inputs(2)
    earlier = [model.stage(k).embed(inputs[k]) for k in range(2)]
    states = [{k: v.clone() for k, v in model.base[k].state_dict().items()} for k in range(2)]
    current = model.stage(2).embed(inputs[2])
    _one_step(model.stage(2), inputs, private=private)
    for k in range(2):
        torch.testing.assert_close(model.stage(k).embed(inputs[k]), earlier[k])
        for name, value in model.base[k].state_dict().items():  # BatchNorm running statistics included
            torch.testing.assert_close(value, states[k][name])
    assert not torch.allclose(model.stage(2).embed(inputs[2]), current)  # the step did train stage 2
