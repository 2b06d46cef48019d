from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import MLP
from nodedp.train import (
    OptimConfig,
    PerSampleGradients,
    PrivacyConfig,
    TrainStats,
    evaluate,
    fixed_size_batches,
    make_generator,
    poisson_batches,
    resolve_device,
    seed_everything,
    shuffled_epochs,
    total_clip_norm,
    train_model,
)

SGD = OptimConfig("sgd", lr=0.1)
FROZEN = OptimConfig("sgd", lr=0.0)  # leaves weights alone: only the gradients are inspected


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    # Tiny tensors gain nothing from intra-op threads, and on a busy 2-core machine
    # their synchronisation makes these training loops tens of times slower.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _data(n: int = 64, d: int = 5, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    return x, (x[:, 0] + x[:, 1] > 0).long()  # linearly separable


def _grads_after(
    model: nn.Module,
    batches: list[Tensor],
    *,
    privacy: PrivacyConfig | None,
    optim: OptimConfig = FROZEN,
    seed: int = 0,
) -> list[Tensor]:
    """The gradient applied at each step, flattened over all parameters."""
    x, y = _data()
    applied: list[Tensor] = []
    train_model(
        model,
        batch_fn=lambda i: (x[i], y[i]),
        batches=batches,
        optim=optim,
        privacy=privacy,
        generator=make_generator(seed),
        device="cpu",
        on_step=lambda _: applied.append(torch.cat([p.grad.flatten() for p in model.parameters()])),
    )
    return applied


def test_dp_without_noise_or_clipping_equals_the_non_private_update() -> None:
    torch.manual_seed(0)
    model = MLP(5, 8, 2, activation="tanh")
    batch = torch.arange(0, 40, 3)
    private = PrivacyConfig(clip_norm=1e6, noise_std=0.0, expected_batch_size=len(batch))
    dp_model, plain_model = copy.deepcopy(model), copy.deepcopy(model)
    dp = _grads_after(dp_model, [batch], privacy=private, optim=SGD)
    plain = _grads_after(plain_model, [batch], privacy=None, optim=SGD)
    torch.testing.assert_close(dp[0], plain[0])  # sum / expected batch size == mean here
    for a, b in zip(dp_model.parameters(), plain_model.parameters()):
        torch.testing.assert_close(a, b)
    # The divisor is the expected batch size, never the realised one.
    halved = PrivacyConfig(clip_norm=1e6, noise_std=0.0, expected_batch_size=2 * len(batch))
    torch.testing.assert_close(_grads_after(copy.deepcopy(model), [batch], privacy=halved)[0], plain[0] / 2)


def test_each_example_contributes_at_most_c() -> None:
    torch.manual_seed(0)
    model = MLP(5, 8, 2)
    unclipped = _grads_after(
        copy.deepcopy(model),
        [torch.tensor([i]) for i in range(6)],
        privacy=PrivacyConfig(clip_norm=1e6, noise_std=0.0, expected_batch_size=1),
    )
    c = 0.5 * min(g.norm().item() for g in unclipped)
    clipped = _grads_after(
        model,
        [torch.tensor([i]) for i in range(6)],
        privacy=PrivacyConfig(clip_norm=c, noise_std=0.0, expected_batch_size=1),
    )
    for before, after in zip(unclipped, clipped):
        assert after.norm().item() <= c * (1 + 1e-6)  # float32 rounding
        assert after.norm().item() == pytest.approx(c, rel=1e-5)  # every one was clipped...
        torch.testing.assert_close(after / after.norm(), before / before.norm())  # ...along its direction


def test_noise_has_the_configured_std_on_every_tensor() -> None:
    # Signal clipped to 1e-9: the applied gradient is the noise / expected batch size.
    model = nn.Sequential(nn.Linear(5, 400), nn.Tanh(), nn.Linear(400, 30))
    privacy = PrivacyConfig(clip_norm=1e-9, noise_std=3.0, expected_batch_size=4.0)
    (grad,) = _grads_after(model, [torch.arange(4)], privacy=privacy)
    assert grad.mean().item() == pytest.approx(0.0, abs=0.02)
    assert grad.std().item() == pytest.approx(0.75, rel=0.02)
    for p in model.parameters():  # the same std per coordinate, whatever the tensor's size
        assert p.grad.std().item() == pytest.approx(0.75, rel=0.15)


def test_every_step_gets_fresh_noise() -> None:
    # The loop reuses one gradient buffer: each step must overwrite it with a new draw,
    # neither adding to the last one nor repeating it; the empty batch included.
    model = nn.Sequential(nn.Linear(5, 400), nn.Tanh(), nn.Linear(400, 30))
    privacy = PrivacyConfig(clip_norm=1e-9, noise_std=3.0, expected_batch_size=4.0)
    batches = [torch.arange(4), torch.empty(0, dtype=torch.long), torch.arange(4, 8)]
    grads = _grads_after(model, batches, privacy=privacy)
    for grad in grads:
        assert grad.std().item() == pytest.approx(0.75, rel=0.02)
    for i in range(len(grads)):
        for j in range(i):
            assert abs(torch.corrcoef(torch.stack([grads[i], grads[j]]))[0, 1].item()) < 0.03


def test_empty_poisson_batch_still_adds_noise() -> None:
    model = MLP(5, 8, 2)
    before = copy.deepcopy(model)

    def batch_fn(indices: Tensor) -> tuple[Tensor, Tensor]:
        raise AssertionError("an empty batch must not reach the model")

    privacy = PrivacyConfig(clip_norm=1.0, noise_std=1.0, expected_batch_size=2.0)
    stats = train_model(
        model,
        batch_fn=batch_fn,
        batches=[torch.empty(0, dtype=torch.long)],
        optim=SGD,
        privacy=privacy,
        generator=make_generator(0),
        device="cpu",
    )
    assert stats.steps == 1 and stats.examples_seen == 0 and math.isnan(stats.final_loss)
    for p, q in zip(model.parameters(), before.parameters()):
        assert not torch.equal(p, q)


def _run(seed: int, *, privacy: PrivacyConfig | None) -> tuple[nn.Module, TrainStats]:
    generator = seed_everything(seed)
    x, y = _data()
    model = MLP(5, 16, 2, dropout=0.2)  # init and dropout from the global seed
    stats = train_model(
        model,
        batch_fn=lambda i: (x[i], y[i]),
        optim=OptimConfig("adam", lr=0.01),
        privacy=privacy,
        batches=poisson_batches(64, sampling_rate=0.25, steps=15, generator=generator),
        generator=generator,
        device="cpu",
    )
    return model, stats


@pytest.mark.parametrize("privacy", [PrivacyConfig(1.0, 0.5, 16.0), None], ids=["dp", "non-private"])
def test_same_seed_same_run_different_seed_different_run(privacy: PrivacyConfig | None) -> None:
    model_a, stats_a = _run(3, privacy=privacy)
    model_b, stats_b = _run(3, privacy=privacy)
    model_c, _ = _run(4, privacy=privacy)
    for a, b in zip(model_a.state_dict().values(), model_b.state_dict().values()):
        assert torch.equal(a, b)
    assert {**vars(stats_a), "seconds": 0} == {**vars(stats_b), "seconds": 0}
    assert not all(torch.equal(a, c) for a, c in zip(model_a.state_dict().values(), model_c.state_dict().values()))


@pytest.mark.parametrize(
    ("optim", "privacy"),
    [
        (OptimConfig("sgd", lr=0.5, momentum=0.5), None),
        (OptimConfig("adam", lr=0.05), PrivacyConfig(clip_norm=1.0, noise_std=0.5, expected_batch_size=32)),
        (
            OptimConfig("adamw", lr=0.05, weight_decay=1e-3),
            PrivacyConfig(clip_norm=1.0, noise_std=0.5, expected_batch_size=32),
        ),
    ],
    ids=["sgd", "dp-adam", "dp-adamw"],
)
def test_training_learns_a_separable_task(optim: OptimConfig, privacy: PrivacyConfig | None) -> None:
    seed_everything(0)
    x, y = _data(n=256)
    model = MLP(5, 16, 2)
    batches = (
        shuffled_epochs(256, batch_size=32, epochs=10, generator=make_generator(0))
        if privacy is None
        else fixed_size_batches(256, batch_size=32, steps=80, generator=make_generator(0))
    )
    stats = train_model(
        model,
        batch_fn=lambda i: (x[i], y[i]),
        batches=batches,
        optim=optim,
        privacy=privacy,
        generator=make_generator(1),
        device=resolve_device("cpu"),
    )
    assert stats.steps == 80 and stats.examples_seen == 80 * 32
    assert stats.noise_std == (privacy.noise_std if privacy else 0.0)
    assert evaluate(model, x, y)["accuracy"] > 0.9
    assert stats.final_loss < 0.4


def test_clipped_fraction() -> None:
    x, y = _data()
    fractions = []
    for c in (1e-6, 1e6):
        stats = train_model(
            MLP(5, 8, 2),
            batch_fn=lambda i: (x[i], y[i]),
            batches=[torch.arange(10)] * 3,
            optim=SGD,
            privacy=PrivacyConfig(c, 0.0, 10.0),
            generator=make_generator(0),
            device="cpu",
        )
        fractions.append(stats.clipped_fraction)
    assert fractions == [1.0, 0.0]
    plain = train_model(
        MLP(5, 8, 2),
        batch_fn=lambda i: (x[i], y[i]),
        batches=[torch.arange(10)],
        optim=SGD,
        privacy=None,
        generator=make_generator(0),
        device="cpu",
    )
    assert plain.clipped_fraction is None


def test_clipped_fraction_over_more_steps_than_are_counted_at_once() -> None:
    """The loop counts clipped examples every 64 steps and at the end: 70 steps of one batch, weights left
    alone, clip at the batch's median norm: exactly the examples above it, every step."""
    x, y = _data()
    model, batch = MLP(5, 8, 2), torch.arange(16)
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(x[batch])
    psg.backward(F.cross_entropy(out, y[batch], reduction="none"))
    norms = psg.norms()
    psg.remove()
    c = float(norms.median())
    stats = train_model(
        model,
        batch_fn=lambda i: (x[i], y[i]),
        batches=[batch] * 70,
        optim=FROZEN,
        privacy=PrivacyConfig(c, 0.0, 16.0),
        generator=make_generator(0),
        device="cpu",
    )
    assert stats.steps == 70 and stats.clipped_fraction == int((norms > c).sum()) / 16


def test_progress_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _data()
    train_model(
        MLP(5, 8, 2),
        batch_fn=lambda i: (x[i], y[i]),
        batches=[torch.arange(4)] * 2,
        optim=SGD,
        privacy=None,
        generator=make_generator(0),
        device="cpu",
        progress="dp-mlp",
    )
    captured = capsys.readouterr()
    assert "dp-mlp" in captured.err and "2/2" in captured.err and captured.out == ""  # the bar knows its length


def test_batch_norm_model_is_refused_only_when_private() -> None:
    x, y = _data()
    model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    kwargs = dict(
        batch_fn=lambda i: (x[i], y[i]), batches=[torch.arange(8)], optim=SGD, generator=make_generator(0), device="cpu"
    )
    train_model(model, privacy=None, **kwargs)
    with pytest.raises(ValueError, match="BatchNorm"):
        train_model(model, privacy=PrivacyConfig(1.0, 1.0, 8.0), **kwargs)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: OptimConfig("rmsprop", lr=0.1), "sgd"),
        (lambda: OptimConfig("adam", lr=0.1, momentum=0.9), "momentum"),
        (lambda: PrivacyConfig(clip_norm=0.0, noise_std=1.0, expected_batch_size=1.0), "clip_norm"),
        (lambda: PrivacyConfig(clip_norm=1.0, noise_std=-1.0, expected_batch_size=1.0), "noise_std"),
        (lambda: PrivacyConfig(clip_norm=1.0, noise_std=1.0, expected_batch_size=0.0), "expected_batch_size"),
        (
            lambda: PrivacyConfig(
                clip_norm=1.0, noise_std=1.0, expected_batch_size=1.0, layer_clip_norms={"a": 1.0, "b": 1.0}
            ),
            r"must be the total bound √\(Σ C_l²\) = 1.414",
        ),
        (
            lambda: PrivacyConfig(
                clip_norm=1.0, noise_std=1.0, expected_batch_size=1.0, layer_clip_norms={"a": 1.0, "b": 0.0}
            ),
            "finite thresholds > 0",
        ),
    ],
)
def test_invalid_configs(make: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


def test_unknown_loss_names_the_choices() -> None:
    with pytest.raises(ValueError, match="cross_entropy"):
        train_model(
            MLP(2, 2, 2),
            batch_fn=lambda i: (i, i),
            batches=[],
            optim=SGD,
            privacy=None,
            generator=make_generator(0),
            device="cpu",
            loss="hinge",
        )


def _layer_slices(model: nn.Module) -> dict[str, slice]:
    """Where each layer's parameters sit in the flat gradient (model order)."""
    slices, start = {}, 0
    for name, module in model.named_modules():
        size = sum(p.numel() for p in module.parameters(recurse=False))
        if size:
            slices[name] = slice(start, start + size)
            start += size
    return slices


def _applied(model: nn.Module, x: Tensor, y: Tensor, batches: list[Tensor], privacy: PrivacyConfig) -> list[Tensor]:
    """The flat gradient applied at each step to a copy of ``model`` (lr 0)."""
    model = copy.deepcopy(model)
    grads: list[Tensor] = []
    train_model(
        model,
        batch_fn=lambda i: (x[i], y[i]),
        batches=batches,
        optim=FROZEN,
        privacy=privacy,
        generator=make_generator(0),
        device="cpu",
        on_step=lambda _: grads.append(torch.cat([p.grad.flatten() for p in model.parameters()])),
    )
    return grads


def test_layerwise_clipping_bounds_each_layer_and_sums_like_brute_force() -> None:
    torch.manual_seed(0)
    model = MLP(5, 8, 2).double()
    x, y = _data(n=8)
    x = x.double()
    slices = _layer_slices(model)
    assert list(slices) == ["layers.0", "layers.2"]
    per_example = []  # brute force: one backward per example
    for i in range(len(y)):
        grads = torch.autograd.grad(F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]), list(model.parameters()))
        per_example.append(torch.cat([g.flatten() for g in grads]))
    per_example = torch.stack(per_example)
    layer_norms = {name: per_example[:, sl].norm(dim=1) for name, sl in slices.items()}
    # Thresholds at each layer's median: some examples are clipped in each layer, others not.
    layer_clips = {name: n.median().item() for name, n in layer_norms.items()}
    privacy = PrivacyConfig(
        clip_norm=total_clip_norm(layer_clips), noise_std=0.0, expected_batch_size=1.0, layer_clip_norms=layer_clips
    )

    singles = _applied(model, x, y, [torch.tensor([i]) for i in range(len(y))], privacy)
    for i, grad in enumerate(singles):
        for name, sl in slices.items():
            assert grad[sl].norm().item() <= layer_clips[name] * (1 + 1e-9)
            if layer_norms[name][i] <= layer_clips[name]:  # unclipped layers pass unchanged
                torch.testing.assert_close(grad[sl], per_example[i, sl])
    expected = sum(
        torch.cat([row[sl] * min(1.0, layer_clips[name] / row[sl].norm().item()) for name, sl in slices.items()])
        for row in per_example
    )
    (summed,) = _applied(model, x, y, [torch.arange(len(y))], privacy)
    torch.testing.assert_close(summed, expected, rtol=1e-5, atol=1e-7)


def test_layerwise_noise_is_one_gaussian_of_std_noise_std_over_the_whole_gradient() -> None:
    # Per-tensor noise at each C_l (the reference code's bug) would make the std differ per layer.
    model = nn.Sequential(nn.Linear(5, 400), nn.Tanh(), nn.Linear(400, 30))
    layer_clips = {"0": 1e-9, "2": 1e-12}  # the signal vanishes: the applied gradient is the noise / 4
    privacy = PrivacyConfig(
        clip_norm=total_clip_norm(layer_clips), noise_std=3.0, expected_batch_size=4.0, layer_clip_norms=layer_clips
    )
    x, y = _data()
    (grad,) = _applied(model, x, y, [torch.arange(4)], privacy)
    assert grad.mean().item() == pytest.approx(0.0, abs=0.02)
    assert grad.std().item() == pytest.approx(0.75, rel=0.02)
    for sl in _layer_slices(model).values():
        assert grad[sl].std().item() == pytest.approx(0.75, rel=0.1)


def test_layer_clip_norms_must_name_exactly_the_trainable_layers() -> None:
    model = MLP(5, 8, 2)
    layer_clips = {"layers.0": 1.0, "layers.1": 1.0}
    privacy = PrivacyConfig(
        clip_norm=total_clip_norm(layer_clips), noise_std=0.0, expected_batch_size=1.0, layer_clip_norms=layer_clips
    )
    x, y = _data()
    with pytest.raises(ValueError, match=r"exactly the model's trainable layers \['layers.0', 'layers.2'\]"):
        train_model(
            model,
            batch_fn=lambda i: (x[i], y[i]),
            batches=[torch.arange(4)],
            optim=FROZEN,
            privacy=privacy,
            generator=make_generator(0),
            device="cpu",
        )
    assert not model._forward_pre_hooks and not model.layers[0]._forward_hooks  # no hooks left behind


def test_the_loop_refuses_to_end_after_another_number_of_steps_than_the_ledger_charges() -> None:
    _, stats = _run(0, privacy=PrivacyConfig(1.0, 0.5, 16.0, steps=15))
    assert stats.steps == 15
    with pytest.raises(RuntimeError, match="took 15 steps, but the ledger charges 14"):
        _run(0, privacy=PrivacyConfig(1.0, 0.5, 16.0, steps=14))
