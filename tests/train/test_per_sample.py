from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import MLP
from nodedp.train import PerSampleGradients, trainable_layer_names

B = 5


@pytest.fixture(autouse=True)
def _float64() -> Iterator[None]:
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _brute_force(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """[B, P] per-example gradients over the trainable parameters, one backward per example."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    for i in range(len(y)):
        grads = torch.autograd.grad(
            F.cross_entropy(model(x[i : i + 1]), y[i : i + 1], reduction="sum"), params, allow_unused=True
        )
        rows.append(torch.cat([(g if g is not None else torch.zeros_like(p)).flatten() for g, p in zip(grads, params)]))
    return torch.stack(rows)


def _check(model: nn.Module, x: Tensor, y: Tensor) -> None:
    """Norms and clipped sums agree with brute force to 1e-5."""
    expected = _brute_force(model, x, y)
    params = [p for p in model.parameters() if p.requires_grad]
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(x)
    psg.backward(F.cross_entropy(out, y, reduction="none"))
    assert all(p.grad is None for p in params)  # backward skipped the unclipped gradients
    torch.testing.assert_close(psg.norms(), expected.norm(dim=1), rtol=1e-5, atol=1e-7)
    factors = torch.rand(len(y))
    psg.write_clipped_sum(factors)
    assert not any(p.grad.requires_grad for p in params)  # detached from the forward graph
    got = torch.cat([p.grad.flatten() for p in params])
    torch.testing.assert_close(got, factors @ expected, rtol=1e-5, atol=1e-7)
    assert all(p.requires_grad for p in params)  # unfrozen after capture
    psg.remove()


class Pool(nn.Module):
    """``inner`` on [B, ...] inputs, mean over inner positions, then a linear head."""

    def __init__(self, inner: nn.Module, width: int, classes: int = 3) -> None:
        super().__init__()
        self.inner, self.head = inner, nn.Linear(width, classes)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.tanh(self.inner(x))
        return self.head(h.reshape(h.shape[0], -1, h.shape[-1]).mean(1))


def _labels() -> Tensor:
    return torch.randint(0, 3, (B,))


@pytest.mark.parametrize("bias", [True, False])
def test_linear_2d(bias: bool) -> None:
    model = nn.Sequential(nn.Linear(6, 8, bias=bias), nn.ReLU(), nn.Linear(8, 3, bias=bias))
    _check(model, torch.randn(B, 6), _labels())


@pytest.mark.parametrize(
    ("shape", "width"),
    [((B, 3, 4), 5), ((B, 6, 2), 3), ((B, 2, 3, 4), 5)],  # Gram trick, materialised, 4-D input
    ids=["gram", "einsum", "4d"],
)
def test_linear_on_sequences(shape: tuple[int, ...], width: int) -> None:
    _check(Pool(nn.Linear(shape[-1], width), width), torch.randn(*shape), _labels())


def test_linear_called_twice_adds_per_example() -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.head = nn.Linear(4, 3)

        def forward(self, x: Tensor) -> Tensor:
            return self.head(self.lin(torch.tanh(self.lin(x))))

    _check(Shared(), torch.randn(B, 4), _labels())


def test_inplace_activation_after_sequence_linear() -> None:
    # F.linear of a 3-D input returns a view; an in-place ReLU on it must not lose the hook.
    inner = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 5))
    _check(Pool(inner, 5), torch.randn(B, 3, 4), _labels())


@pytest.mark.parametrize("shape", [(B, 6), (B, 3, 6)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm(shape: tuple[int, ...], bias: bool) -> None:
    _check(Pool(nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6, bias=bias)), 6), torch.randn(*shape), _labels())


@pytest.mark.parametrize("shape", [(B, 6), (B, 6, 4)])
def test_group_norm(shape: tuple[int, ...]) -> None:
    model = nn.Sequential(nn.GroupNorm(2, 6), nn.Flatten(), nn.Linear(6 * (shape[2] if len(shape) == 3 else 1), 3))
    _check(model, torch.randn(*shape), _labels())


def test_embedding_with_repeats_and_padding() -> None:
    idx = torch.tensor([[1, 1, 2, 0], [0, 0, 0, 0], [3, 4, 3, 3], [5, 2, 1, 0], [4, 4, 4, 4]])
    _check(Pool(nn.Embedding(6, 5, padding_idx=0), 5), idx, _labels())


class Attention(nn.Module):
    """A module with a directly owned parameter and a child: goes through the torch.func fallback."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(width))
        self.value = nn.Linear(width, width)

    def forward(self, x: Tensor) -> Tensor:
        weights = torch.softmax(x @ self.query, dim=1)
        return self.value(x * weights.unsqueeze(-1))


def test_generic_fallback_module() -> None:
    _check(Pool(Attention(4), 4), torch.randn(B, 3, 4), _labels())


@pytest.mark.parametrize("normalization", [None, "group", "layer"])
@pytest.mark.parametrize("activation", ["relu", "selu", "tanh"])
def test_mlp_variants(normalization: str | None, activation: str) -> None:
    model = MLP(5, 6, 3, num_layers=3, activation=activation, normalization=normalization)
    _check(model, torch.randn(B, 5), _labels())


def test_frozen_parameters_are_skipped() -> None:
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    model[0].weight.requires_grad_(False)
    _check(model, torch.randn(B, 4), _labels())
    assert model[0].weight.grad is None


def test_module_not_reaching_the_loss_gets_zero_gradient() -> None:
    class Branch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(4, 3), nn.Linear(4, 3)

        def forward(self, x: Tensor) -> Tensor:
            self.unused(x)
            return self.used(x)

    model = Branch()
    _check(model, torch.randn(B, 4), _labels())
    assert torch.count_nonzero(model.unused.weight.grad) == 0


def test_batch_norm_is_refused() -> None:
    with pytest.raises(ValueError, match="BatchNorm"):
        PerSampleGradients(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))


def test_parameter_used_outside_its_module_is_refused() -> None:
    class Leaky(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.other = nn.Linear(4, 3), nn.Linear(4, 3)

        def forward(self, x: Tensor) -> Tensor:
            return self.other(x) + x @ self.lin.weight.t()  # as nn.MultiheadAttention's out_proj

    psg = PerSampleGradients(Leaky())
    with psg.capture():
        out = psg.model(torch.randn(B, 4))
    psg.backward(out.sum(1))
    with pytest.raises(RuntimeError, match="not called"):
        psg.norms()


def test_module_mixing_examples_into_rows_is_refused() -> None:
    class Flattens(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x: Tensor) -> Tensor:
            return self.lin(x.reshape(-1, 4))  # rows are no longer examples

    psg = PerSampleGradients(Flattens())
    with pytest.raises(NotImplementedError, match="examples"), psg.capture():
        psg.model(torch.randn(B, 2, 4))
    assert all(p.requires_grad for p in psg.model.parameters())  # unfrozen even after an error


class Packed(nn.Module):
    """Owns its parameters and takes its inputs packed: a tuple (x, w), a dict {"x", "w"} or a list inside a
    dict, with x [B, T, width] and w [B, T]; goes through the torch.func fallback."""

    def __init__(self, width: int, classes: int = 3) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.randn(width))
        self.head = nn.Parameter(torch.randn(width, classes))

    def forward(self, inputs: Any, *, shift: Any = None) -> Tensor:
        x, w = (inputs["x"], inputs["w"]) if isinstance(inputs, dict) else inputs
        if isinstance(x, list):
            x = x[0] + x[1]
        out = (torch.tanh(x * self.scale) * w.unsqueeze(-1)).sum(1) @ self.head
        return out if shift is None else out + shift["b"]


def _packed_inputs(kind: str, x: Tensor, w: Tensor) -> tuple[Any, dict[str, Any]]:
    if kind == "tuple":
        return (x, w), {}
    if kind == "dict":
        return {"x": x, "w": w}, {}
    return {"x": [x, 0.5 * x], "w": w}, {"shift": {"b": w[:, :3] * 2.0}}  # nested, and a packed keyword


def _sliced(inputs: Any, i: int) -> Any:
    """Example i of every tensor in ``inputs``."""
    if isinstance(inputs, Tensor):
        return inputs[i : i + 1]
    if isinstance(inputs, dict):
        return {k: _sliced(v, i) for k, v in inputs.items()}
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(_sliced(v, i) for v in inputs)
    return inputs


@pytest.mark.parametrize("kind", ["tuple", "dict", "nested"])
def test_fallback_maps_every_tensor_inside_packed_inputs(kind: str) -> None:
    """Each example's gradient equals plain autograd on that example alone (a container passed whole to every
    example's replay would give example i the gradient of Σ_j out_j·g_i instead)."""
    model, y = Packed(4), _labels()
    inputs, kwargs = _packed_inputs(kind, torch.randn(B, 3, 4), torch.rand(B, 3))
    params = list(model.parameters())
    expected = torch.stack(
        [
            torch.cat(
                [
                    g.flatten()
                    for g in torch.autograd.grad(
                        F.cross_entropy(model(_sliced(inputs, i), **_sliced(kwargs, i)), y[i : i + 1], reduction="sum"),
                        params,
                    )
                ]
            )
            for i in range(B)
        ]
    )
    psg = PerSampleGradients(model)
    for i in range(B):  # one-hot factors: the clipped sum is example i's own gradient
        with psg.capture():
            out = model(inputs, **kwargs)
        psg.backward(F.cross_entropy(out, y, reduction="none"))
        torch.testing.assert_close(psg.norms(), expected.norm(dim=1), rtol=1e-10, atol=1e-12)
        psg.write_clipped_sum(torch.eye(B)[i])
        torch.testing.assert_close(torch.cat([p.grad.flatten() for p in params]), expected[i], rtol=1e-10, atol=1e-12)


def test_fallback_refuses_inputs_it_cannot_slice() -> None:
    @dataclass
    class Holder:
        w: Tensor

    class Opaque(Packed):
        def forward(self, inputs: Any, *, shift: Any = None) -> Tensor:
            x, holder = inputs
            return super().forward((x, holder.w))

    model = Opaque(4)
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model((torch.randn(B, 3, 4), Holder(torch.rand(B, 3))))
    psg.backward(out.sum(1))
    with pytest.raises(NotImplementedError, match="Holder"):
        psg.norms()


def test_fallback_refuses_random_forward() -> None:
    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(4))

        def forward(self, x: Tensor) -> Tensor:
            return F.dropout(x * self.scale, p=0.5, training=True)

    psg = PerSampleGradients(Noisy())
    with psg.capture():
        out = psg.model(torch.randn(B, 4))
    psg.backward(out.sum(1))
    with pytest.raises(RuntimeError, match="random"):
        psg.norms()


def test_fallback_refuses_tuple_outputs() -> None:
    model = nn.GRU(4, 3, batch_first=True)
    psg = PerSampleGradients(model)
    with pytest.raises(NotImplementedError, match="GRU"), psg.capture():
        model(torch.randn(B, 2, 4))


def test_backward_needs_one_loss_per_example() -> None:
    model = nn.Linear(4, 3)
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(torch.randn(B, 4))
    with pytest.raises(ValueError, match="one loss per example"):
        psg.backward(F.cross_entropy(out, _labels()))  # a mean, not per-example losses


def test_clipped_sum_is_added_onto_a_flat_vector_whose_views_are_the_grads() -> None:
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    x, y = torch.randn(B, 4), _labels()
    expected = _brute_force(model, x, y)
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(x)
    psg.backward(F.cross_entropy(out, y, reduction="none"))
    factors = torch.rand(B)
    with pytest.raises(ValueError, match="flat vector"):
        psg.write_clipped_sum(factors, onto=torch.zeros(3))
    base = torch.randn(expected.shape[1])
    onto = base.clone()
    psg.write_clipped_sum(factors, onto=onto)

    def grads() -> Tensor:
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    torch.testing.assert_close(grads(), base + factors @ expected)
    onto.div_(4.0)  # one op on the flat vector updates every gradient
    torch.testing.assert_close(grads(), (base + factors @ expected) / 4)


def _brute_force_by_layer(model: nn.Module, x: Tensor, y: Tensor) -> dict[str, Tensor]:
    """{layer name: [B, P_l] per-example gradients of that module's own trainable parameters}."""
    expected = _brute_force(model, x, y)
    layers, start = {}, 0
    for name, module in model.named_modules():
        size = sum(p.numel() for p in module.parameters(recurse=False) if p.requires_grad)
        if size:
            layers[name] = expected[:, start : start + size]
            start += size
    assert start == expected.shape[1]
    return layers


def test_layer_norms_and_layerwise_clipped_sums_match_brute_force() -> None:
    model = Pool(nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Tanh(), nn.Linear(6, 6)), 6)
    model.inner[0].bias.requires_grad_(False)  # a layer with some parameters frozen keeps the rest
    x, y = torch.randn(B, 2, 4), _labels()
    expected = _brute_force_by_layer(model, x, y)
    assert trainable_layer_names(model) == list(expected) == ["inner.0", "inner.1", "inner.3", "head"]
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(x)
    psg.backward(F.cross_entropy(out, y, reduction="none"))
    norms = psg.layer_norms()
    assert list(norms) == list(expected)
    for name, grads in expected.items():
        torch.testing.assert_close(norms[name], grads.norm(dim=1), rtol=1e-5, atol=1e-7)
    # The layer norms make up the whole gradient's norm.
    torch.testing.assert_close(torch.stack(list(norms.values())).square().sum(0).sqrt(), psg.norms())
    factors = {name: torch.rand(B) for name in expected}
    psg.write_clipped_sum(factors)
    params = psg.parameters
    got = torch.cat([p.grad.flatten() for p in params])
    torch.testing.assert_close(got, torch.cat([factors[n] @ g for n, g in expected.items()]), rtol=1e-5, atol=1e-7)
    psg.remove()


def test_layerwise_factors_must_name_exactly_the_layers() -> None:
    model = Pool(nn.Linear(4, 6), 6)
    psg = PerSampleGradients(model)
    with psg.capture():
        out = model(torch.randn(B, 4))
    psg.backward(F.cross_entropy(out, _labels(), reduction="none"))
    with pytest.raises(ValueError, match=r"exactly the layers \['inner', 'head'\], got \['head'\]"):
        psg.write_clipped_sum({"head": torch.ones(B)})


def test_parameter_registered_under_two_names_counts_once() -> None:
    class Aliased(nn.Linear):
        def __init__(self) -> None:
            super().__init__(4, 3)
            self.alias = self.weight  # one Parameter, two names: model.parameters() lists it once

    model = nn.Sequential(Aliased(), nn.Tanh(), nn.Linear(3, 3))
    assert len(list(model.parameters())) == 4
    _check(model, torch.randn(B, 4), _labels())


def test_a_reused_flat_vector_keeps_receiving_the_clipped_sums() -> None:
    # A training loop passes the same buffer every step: the grads stay its views and
    # take each batch's sums; another buffer (or a frozen parameter) rebinds them.
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    psg = PerSampleGradients(model)
    buffer = torch.empty(sum(p.numel() for p in model.parameters()))

    def step(x: Tensor, y: Tensor, onto: Tensor) -> Tensor:
        with psg.capture():
            out = model(x)
        psg.backward(F.cross_entropy(out, y, reduction="none"))
        onto.fill_(1.0)
        psg.write_clipped_sum(torch.ones(B), onto=onto)
        return torch.cat([p.grad.flatten() for p in psg.parameters])

    for _ in range(2):
        x, y = torch.randn(B, 4), _labels()
        torch.testing.assert_close(step(x, y, buffer), 1.0 + _brute_force(model, x, y).sum(0))
        assert model[0].weight.grad.data_ptr() == buffer.data_ptr()
    other = torch.empty_like(buffer)
    step(x, y, other)
    assert model[0].weight.grad.data_ptr() == other.data_ptr()
    model[0].bias.requires_grad_(False)
    smaller = buffer[: buffer.numel() - 6]
    torch.testing.assert_close(step(x, y, smaller), 1.0 + _brute_force(model, x, y).sum(0))
    assert model[2].bias.grad.data_ptr() == smaller[-3:].data_ptr()


def test_returned_norms_are_the_callers() -> None:
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    for layers in (model, model[0]):  # several layers, and one (whose norm is the whole norm)
        psg = PerSampleGradients(layers)
        with psg.capture():
            out = layers(torch.randn(B, 4))
        psg.backward(out.sum(1))
        expected = psg.norms().clone()
        psg.norms().zero_()
        for norms in psg.layer_norms().values():
            norms.zero_()
        torch.testing.assert_close(psg.norms(), expected)
        assert all(n.count_nonzero() == B for n in psg.layer_norms().values())
        psg.remove()
