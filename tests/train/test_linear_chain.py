"""The closed-form chain (nodedp.train.linear_chain) gives bit for bit what the hooks and autograd give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import MLP
from nodedp.train import OptimConfig, PerSampleGradients, PrivacyConfig, make_generator, poisson_batches, train_model
from nodedp.train.linear_chain import linear_chain

B = 12


@pytest.fixture(autouse=True)
def _seeded() -> Iterator[None]:
    torch.manual_seed(0)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


class Shifted(nn.Sequential):
    """A Sequential whose forward does more than its layers."""

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x) + 1.0


class Opaque(nn.Module):
    """The same layers behind a forward the chain cannot see into: the hooks and autograd serve it."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: Tensor) -> Tensor:
        return self.inner(x)


CHAINS = {
    "mlp-relu": lambda: MLP(6, 8, 3),
    "mlp-tanh-3": lambda: MLP(6, 8, 3, num_layers=3, activation="tanh"),
    "linear": lambda: MLP(6, 8, 3, num_layers=1),
    "sequential": lambda: nn.Sequential(
        nn.Linear(6, 5, bias=False), nn.Dropout(0.0), nn.ReLU(inplace=True), nn.Identity(), nn.Linear(5, 3)
    ),
}
NOT_CHAINS = {
    "dropout": lambda: MLP(6, 8, 3, dropout=0.5),
    "normalization": lambda: MLP(6, 8, 3, normalization="layer"),
    "selu": lambda: MLP(6, 8, 3, activation="selu"),
    "ends-in-activation": lambda: nn.Sequential(nn.Linear(6, 3), nn.ReLU()),
    "two-activations": lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Tanh(), nn.Linear(5, 3)),
    "activation-first": lambda: nn.Sequential(nn.ReLU(), nn.Linear(6, 3)),
    "opaque": lambda: Opaque(MLP(6, 8, 3)),
    "subclass": lambda: Shifted(nn.Linear(6, 3)),
}


@pytest.mark.parametrize("make", CHAINS.values(), ids=CHAINS)
def test_chains_are_recognised(make) -> None:
    chain = linear_chain(make())
    assert chain is not None and chain.activations[-1] is None


@pytest.mark.parametrize("make", NOT_CHAINS.values(), ids=NOT_CHAINS)
def test_anything_else_is_left_to_the_hooks(make) -> None:
    model = make()
    assert linear_chain(model) is None
    assert PerSampleGradients(model).chain_backward(torch.randn(B, 6), torch.randint(0, 3, (B,))) is None


def _general(psg: PerSampleGradients, x: Tensor, y: Tensor) -> Tensor:
    with psg.capture():
        out = psg.model(x)
    losses = F.cross_entropy(out, y, reduction="none")
    psg.backward(losses)
    return losses


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("make", CHAINS.values(), ids=CHAINS)
def test_the_chain_gives_what_the_hooks_and_autograd_give_bit_for_bit(make, dtype) -> None:
    model = make().to(dtype)
    x, y = torch.randn(B, 6, dtype=dtype), torch.randint(0, 3, (B,))
    factors = torch.rand(B, dtype=dtype)
    numel = sum(p.numel() for p in model.parameters())
    results = []
    for chain in (True, False):
        psg = PerSampleGradients(model)
        losses = psg.chain_backward(x, y) if chain else _general(psg, x, y)
        assert losses is not None
        onto = torch.ones(numel, dtype=dtype)
        norms, layer_norms = psg.norms(), psg.layer_norms()
        psg.write_clipped_sum(factors, onto=onto)
        results.append((losses.detach(), norms, layer_norms, onto))
        psg.remove()
    (losses, norms, layers, sums), (losses_ref, norms_ref, layers_ref, sums_ref) = results
    assert torch.equal(losses, losses_ref) and torch.equal(norms, norms_ref) and torch.equal(sums, sums_ref)
    assert list(layers) == list(layers_ref) and all(torch.equal(layers[k], layers_ref[k]) for k in layers)
    assert sums.ne(1.0).any()  # the clipped sum was written onto the buffer


def test_a_frozen_parameter_or_an_input_of_another_shape_goes_the_general_way() -> None:
    model = MLP(6, 8, 3)
    psg = PerSampleGradients(model)
    y = torch.randint(0, 3, (B,))
    assert psg.chain_backward(torch.randn(B, 2, 6), y) is None
    model.layers[0].bias.requires_grad_(False)
    assert psg.chain_backward(torch.randn(B, 6), y) is None
    model.layers[0].bias.requires_grad_(True)
    assert psg.chain_backward(torch.randn(B, 6), y) is not None


def test_training_an_mlp_the_chain_way_is_training_it_through_the_hooks(monkeypatch) -> None:
    """The loop with noise, Poisson batches and more steps than the clipped count's buffer: the same weights,
    losses and clipped fraction either way (the MLP's steps all taken by the chain, the wrapped one's by none)."""
    chained: list[bool] = []
    chain_backward = PerSampleGradients.chain_backward

    def spy(self: PerSampleGradients, inputs: Tensor, targets: Tensor) -> Tensor | None:
        losses = chain_backward(self, inputs, targets)
        chained.append(losses is not None)
        return losses

    monkeypatch.setattr(PerSampleGradients, "chain_backward", spy)
    x, y = torch.randn(200, 6), torch.randint(0, 3, (200,))
    privacy = PrivacyConfig(clip_norm=1.5, noise_std=0.3, expected_batch_size=20.0, steps=70)
    stats, weights = [], []

    def mlp() -> MLP:
        torch.manual_seed(1)
        return MLP(6, 8, 3)

    taken = []
    for model in (mlp(), Opaque(mlp())):
        chained.clear()
        generator = make_generator(3)
        stats.append(
            train_model(
                model,
                batch_fn=lambda i: (x[i], y[i]),
                batches=poisson_batches(200, sampling_rate=0.1, steps=70, generator=generator),
                optim=OptimConfig("adam", lr=0.01),
                privacy=privacy,
                generator=generator,
                device="cpu",
            )
        )
        weights.append([p.detach().clone() for p in model.parameters()])
        taken.append(set(chained))
    assert taken == [{True}, {False}]
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))
    chain, general = stats
    assert (chain.final_loss, chain.clipped_fraction, chain.examples_seen) == (
        general.final_loss,
        general.clipped_fraction,
        general.examples_seen,
    )
    assert 0.0 < chain.clipped_fraction < 1.0
