"""The backward pass of a Linear–activation chain under cross-entropy, in closed form.

The per-example inputs and output gradients of every Linear of a plain MLP, computed with the ATen kernels autograd
would run, bit for bit, without hooks or the autograd engine (most of a small DP-SGD step's overhead).
Design: docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["ChainPass", "LinearChain", "chain_pass", "linear_chain"]

# activation module -> (forward, backward(grad of its output, its output) -> grad of its input), the kernels
# autograd runs for it
_ACTIVATIONS: dict[type[nn.Module], tuple[Callable[[Tensor], Tensor], Callable[[Tensor, Tensor], Tensor]]] = {
    nn.ReLU: (torch.relu, lambda grad, out: torch.ops.aten.threshold_backward.default(grad, out, 0)),
    nn.Tanh: (torch.tanh, torch.ops.aten.tanh_backward.default),
}
# Dropout with p = 0 and Identity pass their input through: their backward is the identity.
_PASS_THROUGH = (nn.Identity, nn.Dropout)


@dataclass(frozen=True)
class LinearChain:
    """A model's layers as a chain: its Linear modules, each followed by at most one activation."""

    linears: tuple[nn.Linear, ...]
    # activations[i] follows linears[i] (None: nothing); the last Linear's output is the logits
    activations: tuple[type[nn.Module] | None, ...]


@dataclass(frozen=True)
class ChainPass:
    """One batch through a chain: the per-example losses and, per Linear, its inputs and output gradients."""

    losses: Tensor  # [B]
    inputs: tuple[Tensor, ...]  # a_l [B, in_l]
    grads: tuple[Tensor, ...]  # g_l = ∂ Σ_i loss_i / ∂ out_l [B, out_l]


def linear_chain(model: nn.Module) -> LinearChain | None:
    """The model as a Linear–activation chain, or None when it is anything else (then the hooks and autograd
    serve it). Only models whose forward is known to be "the layers in order" qualify: an ``nn.Sequential``,
    or a model offering ``as_sequential()`` (``nodedp.models.MLP``); dropout must be off (p = 0)."""
    sequential = model if type(model) is nn.Sequential else getattr(model, "as_sequential", lambda: None)()
    if type(sequential) is not nn.Sequential:
        return None
    layers = list(sequential)
    linears: list[nn.Linear] = []
    activations: list[type[nn.Module] | None] = []
    for layer in layers:
        if type(layer) is nn.Linear:
            linears.append(layer)
            activations.append(None)
        elif type(layer) in _PASS_THROUGH and getattr(layer, "p", 0.0) == 0.0:
            continue
        elif type(layer) in _ACTIVATIONS and linears and activations[-1] is None:
            activations[-1] = type(layer)
        else:
            return None
    if not linears or activations[-1] is not None:  # the logits come straight from the last Linear
        return None
    return LinearChain(tuple(linears), tuple(activations))


@torch.no_grad()
def chain_pass(chain: LinearChain, x: Tensor, targets: Tensor) -> ChainPass:
    """Forward ``x`` [B, in] through the chain and backpropagate the summed cross-entropy to every Linear's
    output, as ``F.cross_entropy(model(x), targets, reduction="none")`` and ``autograd.grad`` would."""
    inputs, outputs = [], []
    a = x
    for linear, activation in zip(chain.linears, chain.activations):
        inputs.append(a)
        h = F.linear(a, linear.weight, linear.bias)
        a = h if activation is None else _ACTIVATIONS[activation][0](h)
        outputs.append(a)
    # F.cross_entropy is nll_loss(log_softmax(logits)); its backward, seeded with ones, in autograd's kernels
    log_probs = torch.log_softmax(a, 1)
    losses, total_weight = torch.ops.aten.nll_loss_forward.default(log_probs, targets, None, 0, -100)
    grad = torch.ops.aten.nll_loss_backward.default(
        torch.ones_like(losses), log_probs, targets, None, 0, -100, total_weight
    )
    grad = torch.ops.aten._log_softmax_backward_data.default(grad, log_probs, 1, log_probs.dtype)
    grads = [grad]
    for layer in range(len(chain.linears) - 1, 0, -1):
        grad = grad @ chain.linears[layer].weight  # ∂/∂ input of Linear l = ∂/∂ output of what precedes it
        activation = chain.activations[layer - 1]
        if activation is not None:
            grad = _ACTIVATIONS[activation][1](grad, outputs[layer - 1])
        grads.append(grad)
    return ChainPass(losses, tuple(inputs), tuple(reversed(grads)))
