"""Exact per-example gradient norms and clipped gradient sums, without a loop over examples.

``PerSampleGradients(model)``: ``capture()`` the forward pass, ``backward(per_example_losses)``, then ``norms()`` or
``layer_norms()`` and ``write_clipped_sum(factors)``. Closed forms for Linear, LayerNorm, GroupNorm and Embedding,
``torch.func`` for any other module; a Linear–activation chain skips hooks and autograd (``chain_backward``).
What is supported and why it is exact: docs/design/engine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.graph import GradientEdge, get_gradient_edge
from torch.func import functional_call, grad, vmap
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils._pytree import tree_flatten, tree_map_only, tree_unflatten

from nodedp.train.linear_chain import chain_pass, linear_chain

__all__ = ["PerSampleGradients", "split_flat", "trainable_layer_names"]


def _layer_name(path: str, module: nn.Module) -> str:
    return path or type(module).__name__  # the model itself owns parameters


def trainable_layer_names(model: nn.Module) -> list[str]:
    """The layers of ``model``: modules owning trainable parameters, named by path, in model order."""
    return [
        _layer_name(name, m)
        for name, m in model.named_modules()
        if any(p.requires_grad for p in m.parameters(recurse=False))
    ]


def split_flat(flat: Tensor, params: list[nn.Parameter]) -> dict[nn.Parameter, Tensor]:
    """Views of a flat vector shaped like each parameter, in order."""
    sizes = [p.numel() for p in params]
    if flat.shape != (sum(sizes),):
        raise ValueError(f"need a flat vector of {sum(sizes)} entries, got shape {tuple(flat.shape)}")
    return {p: part.view_as(p) for p, part in zip(params, flat.split(sizes))}


@dataclass
class _Call:
    """One forward call of a module: its inputs, where its output enters the graph until backward (the output
    itself, or the edge into its grad_fn), then ∂loss/∂output."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    out: Tensor | GradientEdge | None
    grad: Tensor | None = None


@dataclass
class _PerSample:
    """A module's share of the per-example gradient norms and a way to add its clipped sum."""

    # [B] squared ℓ2 norm of each example's gradient over the module's trainable parameters
    sq_norms: Tensor
    # add_clipped_sum(factors, into): into[p] += Σ_i factors[i] ∇_p ℓ_i, in place
    add_clipped_sum: Callable[[Tensor, dict[nn.Parameter, Tensor]], None]


@dataclass
class _Owner:
    module: nn.Module
    name: str
    params: dict[str, nn.Parameter]
    calls: list[_Call] = field(default_factory=list)


def _first_tensor(obj: Any) -> Tensor | None:
    """The first tensor in nested tuples, lists and dicts (a subgraph batch is a tuple)."""
    if isinstance(obj, Tensor):
        return obj
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (tuple, list)) else ()
    return next((t for t in map(_first_tensor, items) if t is not None), None)


_Inputs = TypeVar("_Inputs", tuple[Any, ...], dict[str, Any])


def _detached(inputs: _Inputs) -> _Inputs:
    """A module's args or kwargs with every tensor off the graph; flat ones (most calls) without pytree's cost."""
    values = inputs.values() if isinstance(inputs, dict) else inputs
    if not all(isinstance(x, Tensor) for x in values):
        return tree_map_only(Tensor, Tensor.detach, inputs)
    if isinstance(inputs, dict):
        return {k: x.detach() if x.requires_grad else x for k, x in inputs.items()}
    return tuple(x.detach() if x.requires_grad else x for x in inputs)


def _trainable(module: nn.Module) -> dict[str, nn.Parameter]:
    """``module``'s own trainable parameters by name, as ``named_parameters(recurse=False)`` (read per step)."""
    params = {n: p for n, p in module._parameters.items() if p is not None and p.requires_grad}
    if len(set(params.values())) < len(params):  # one parameter under two names: count it once
        params = {n: p for n, p in module.named_parameters(recurse=False) if p.requires_grad}
    return params


def _first_input(call: _Call) -> Tensor:
    return call.args[0] if call.args else next(iter(call.kwargs.values()))


def _grad(call: _Call) -> Tensor:
    """∂loss/∂output of a call that reached the loss (the only calls the rules see)."""
    if call.grad is None:
        raise RuntimeError("a call without an output gradient reached a per-example rule")
    return call.grad


def _row_sq(x: Tensor) -> Tensor:
    """[B, ...] -> [B]: the squared ℓ2 norm of each example's slice."""
    rows = x.flatten(1)
    return torch.linalg.vecdot(rows, rows)


def _summed(sq_norms: list[Tensor]) -> Tensor:
    """Σ_k s_k elementwise: the squared norm over disjoint blocks of coordinates, from each block's.

    Squares add, so the square root is taken once, by whoever needs a norm. Few ops
    per step matter more than flops here: one add per extra block for a few blocks
    (a lone block is returned as is), one stack and one sum for many.
    """
    if len(sq_norms) > 4:
        return torch.stack(sq_norms).sum(0)
    total = sq_norms[0]
    for s in sq_norms[1:]:
        total = total + s
    return total


def _as_sequence(x: Tensor, width: int) -> Tensor:
    """[B, ..., width] -> [B, T, width]: inner dimensions act like positions of a sequence."""
    return x.reshape(x.shape[0], -1, width)


def _linear(owner: _Owner, calls: list[_Call]) -> _PerSample:
    if len(calls) == 1 and _grad(calls[0]).dim() == 2:
        return _linear_rows(owner, _first_input(calls[0]), _grad(calls[0]))
    # Calls of a shared module add up per example: treat them as extra positions.
    out_f, in_f = cast(nn.Linear, owner.module).weight.shape
    a = torch.cat([_as_sequence(_first_input(c), in_f) for c in calls], dim=1)
    g = torch.cat([_as_sequence(_grad(c), out_f) for c in calls], dim=1)
    return _linear_sequence(owner, a, g)


def _linear_rows(owner: _Owner, a: Tensor, g: Tensor) -> _PerSample:
    """Input [B, in], output gradient [B, out]: example i's weight gradient is g_i a_iᵀ."""
    weight, bias = owner.params.get("weight"), owner.params.get("bias")
    g_sq = torch.linalg.vecdot(g, g)  # the bias gradient is g_i
    if weight is None:
        sq = g_sq
    elif bias is None:
        sq = torch.linalg.vecdot(a, a).mul_(g_sq)  # ‖g_i a_iᵀ‖² = ‖g_i‖²‖a_i‖²
    else:
        sq = torch.addcmul(g_sq, g_sq, torch.linalg.vecdot(a, a))  # ‖g_i‖²(‖a_i‖² + 1)

    def add_clipped_sum(factors: Tensor, into: dict[nn.Parameter, Tensor]) -> None:
        g_t = g.t()
        if weight is not None:
            into[weight].addmm_(g_t * factors, a)  # (c ⊙ G)ᵀA, scaling G's columns after the transpose
        if bias is not None:
            into[bias].addmv_(g_t, factors)

    return _PerSample(sq, add_clipped_sum)


def _linear_sequence(owner: _Owner, a: Tensor, g: Tensor) -> _PerSample:
    """Input [B, T, in], output gradient [B, T, out]: example i's weight gradient is Σ_t g_it a_itᵀ."""
    weight, bias = owner.params.get("weight"), owner.params.get("bias")
    (_, positions, in_f), out_f = a.shape, g.shape[-1]
    parts = [_row_sq(g.sum(1))] if bias is not None else []
    if weight is not None:
        if positions * positions < in_f * out_f:
            # ‖Σ_t g_t a_tᵀ‖² = Σ_{t,s} (g_t·g_s)(a_t·a_s): no [B, out, in] tensor. Clamped
            # because rounding can take a zero norm slightly below 0.
            sq = (g @ g.transpose(1, 2) * (a @ a.transpose(1, 2))).sum((1, 2))
            parts.append(sq.clamp_min_(0))
        else:
            parts.append(_row_sq(torch.einsum("bto,bti->boi", g, a)))

    def add_clipped_sum(factors: Tensor, into: dict[nn.Parameter, Tensor]) -> None:
        scaled = (g * factors.view(-1, 1, 1)).reshape(-1, out_f)
        if weight is not None:
            into[weight].addmm_(scaled.t(), a.reshape(-1, in_f))
        if bias is not None:
            into[bias].add_(scaled.sum(0))

    return _PerSample(_summed(parts), add_clipped_sum)


def _embedding(owner: _Owner, calls: list[_Call]) -> _PerSample:
    module = cast(nn.Embedding, owner.module)
    if module.scale_grad_by_freq or module.sparse:
        raise NotImplementedError(
            f"{owner.name} ({type(module).__name__}): per-example gradients need "
            "scale_grad_by_freq=False and sparse=False"
        )
    weight = owner.params["weight"]
    num_rows, dim = weight.shape
    idx = torch.cat([_first_input(c).reshape(_grad(c).shape[0], -1) for c in calls], dim=1)
    g = torch.cat([_grad(c).reshape(_grad(c).shape[0], -1, dim) for c in calls], dim=1)
    if module.padding_idx is not None:
        g = g.masked_fill((idx == module.padding_idx).unsqueeze(-1), 0.0)
    batch = idx.shape[0]
    # Example b's gradient has one row per distinct index it looks up: sum the
    # lookups sharing (b, row), then add the squared row norms per example.
    owner_row = torch.arange(batch, device=idx.device).unsqueeze(1) * num_rows + idx
    keys, inverse = torch.unique(owner_row, return_inverse=True)
    rows = g.new_zeros(keys.shape[0], dim).index_add_(0, inverse.flatten(), g.reshape(-1, dim))
    sq = g.new_zeros(batch).index_add_(0, keys // num_rows, rows.pow(2).sum(1))

    def add_clipped_sum(factors: Tensor, into: dict[nn.Parameter, Tensor]) -> None:
        into[weight].index_add_(0, idx.flatten(), (g * factors.view(-1, 1, 1)).reshape(-1, dim))

    return _PerSample(sq, add_clipped_sum)


def _materialized(grads: dict[nn.Parameter, Tensor]) -> _PerSample:
    """From explicit per-example gradients {param: [B, *param.shape]}."""
    sq_norms = _summed([_row_sq(gr) for gr in grads.values()])

    def add_clipped_sum(factors: Tensor, into: dict[nn.Parameter, Tensor]) -> None:
        for p, gr in grads.items():
            into[p].add_(torch.tensordot(factors, gr, dims=1))

    return _PerSample(sq_norms, add_clipped_sum)


def _affine_norm(
    owner: _Owner,
    calls: list[_Call],
    normalize: Callable[[Tensor], Tensor],
    reduce_dims: Callable[[Tensor], tuple[int, ...]],
) -> _PerSample:
    """y = x̂ ⊙ weight + bias: per-example grads are Σ g ⊙ x̂ and Σ g over ``reduce_dims``."""
    grads: dict[nn.Parameter, Tensor] = {}
    for call in calls:
        g = _grad(call)
        x_hat = normalize(_first_input(call))
        dims = reduce_dims(g)
        parts = {"weight": g * x_hat, "bias": g}
        for name, part in parts.items():
            param = owner.params.get(name)
            if param is not None:
                total = part.sum(dims) if dims else part
                grads[param] = grads[param] + total if param in grads else total
    return _materialized(grads)


def _layer_norm(owner: _Owner, calls: list[_Call]) -> _PerSample:
    module = cast(nn.LayerNorm, owner.module)
    shape = tuple(module.normalized_shape)
    return _affine_norm(
        owner,
        calls,
        lambda x: F.layer_norm(x, shape, eps=module.eps),
        lambda g: tuple(range(1, g.dim() - len(shape))),
    )


def _group_norm(owner: _Owner, calls: list[_Call]) -> _PerSample:
    module = cast(nn.GroupNorm, owner.module)
    return _affine_norm(
        owner,
        calls,
        lambda x: F.group_norm(x, module.num_groups, eps=module.eps),
        lambda g: tuple(range(2, g.dim())),
    )


# Non-tensor leaves of a module's inputs that cannot hide a tensor, so the fallback may pass them whole.
_PLAIN = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    slice,
    type(Ellipsis),
    torch.Size,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)


def _functional(owner: _Owner, calls: list[_Call], batch: int) -> _PerSample:
    """Generic fallback: vmap(grad) of the module alone, one example at a time.

    Every tensor leaf of the inputs (through tuples, lists, dicts) is mapped
    over dim 0: a container passed whole would give example i the gradient of
    Σ_j out_j·g_i, mixing examples. Leaves the flattening cannot open are
    refused unless they are plain values.
    """
    module, names = owner.module, list(owner.params)
    params = {n: p.detach() for n, p in owner.params.items()}
    grads: dict[nn.Parameter, Tensor] = {}
    for call in calls:
        leaves, spec = tree_flatten((call.args, call.kwargs))
        opaque = sorted({type(x).__name__ for x in leaves if not isinstance(x, (Tensor, *_PLAIN))})
        if opaque:
            raise NotImplementedError(
                f"{owner.name} ({type(module).__name__}): inputs of type {opaque} may hold tensors the "
                "per-example replay cannot slice; pass tensors, or tuples, lists and dicts of them"
            )
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        if any(t.dim() == 0 or t.shape[0] != batch for t in tensors):
            raise NotImplementedError(
                f"{owner.name} ({type(module).__name__}): every tensor input of a module "
                f"without a closed-form rule must have the examples (size {batch}) in dim 0"
            )

        def one_example(
            p: dict[str, Tensor], ts: list[Tensor], g: Tensor, leaves: list[Any] = leaves, spec: Any = spec
        ) -> Tensor:
            it = iter(t.unsqueeze(0) for t in ts)
            args, kwargs = tree_unflatten([next(it) if isinstance(x, Tensor) else x for x in leaves], spec)
            out = functional_call(module, p, tuple(args), kwargs)
            return (out * g.unsqueeze(0)).sum()

        # randomness="error": a stochastic forward (dropout) could not be replayed exactly.
        per = vmap(grad(one_example), in_dims=(None, 0, 0), randomness="error")(params, tensors, _grad(call))
        for n in names:
            p = owner.params[n]
            grads[p] = grads[p] + per[n] if p in grads else per[n]
    return _materialized(grads)


_RULES: dict[type[nn.Module], Callable[[_Owner, list[_Call]], _PerSample]] = {
    nn.Linear: _linear,
    nn.Embedding: _embedding,
    nn.LayerNorm: _layer_norm,
    nn.GroupNorm: _group_norm,
}


class PerSampleGradients:
    """Per-example gradient norms and clipped sums for every trainable parameter of ``model``.

    The trainable set is read at each ``capture()``, so freezing parameters
    between steps (progressive training) is fine. BatchNorm mixes examples and
    is refused.
    """

    def __init__(self, model: nn.Module) -> None:
        batch_norms = [n for n, m in model.named_modules() if isinstance(m, _BatchNorm)]
        if batch_norms:
            raise ValueError(
                f"BatchNorm mixes examples, so per-example gradients are undefined; "
                f"found at {batch_norms}. Use LayerNorm or GroupNorm in a DP model."
            )
        self.model = model
        self._owners: dict[nn.Module, _Owner] = {}
        self._params: list[nn.Parameter] = []  # trainable, in model order, as of the last capture()
        self._trainable_key: tuple[int, ...] | None = None  # what _params was read from
        self._active = False
        self._batch: int | None = None
        self._per_sample: dict[nn.Module, _PerSample] | None = None
        self._flat_views: tuple[tuple[int, int, tuple[int, ...]], dict[nn.Parameter, Tensor]] | None = None
        self._handles = [model.register_forward_pre_hook(self._record_batch, with_kwargs=True)]
        for name, module in model.named_modules():
            if next(module.parameters(recurse=False), None) is not None:
                self._handles.append(module.register_forward_hook(self._record_call, with_kwargs=True))
                self._owners[module] = _Owner(module, _layer_name(name, module), {})
        self._chain = linear_chain(model)
        # every parameter the chain's Linears own: the closed form needs them all trainable
        self._chain_params = (
            []
            if self._chain is None
            else [p for lin in self._chain.linears for p in lin._parameters.values() if p is not None]
        )

    def remove(self) -> None:
        """Detach the hooks from the model."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    @property
    def parameters(self) -> list[nn.Parameter]:
        """Trainable parameters, in model order, as of the last ``capture()``."""
        return list(self._params)

    def _read_trainable(self) -> None:
        """Each owner's trainable parameters, read again only when a parameter was replaced, frozen or unfrozen
        since the last read (the key: every owned parameter's id, negated while frozen)."""
        key = tuple(
            id(p) if p.requires_grad else -id(p) for m in self._owners for p in m._parameters.values() if p is not None
        )
        if key == self._trainable_key:
            return
        seen: set[nn.Parameter] = set()
        for owner in self._owners.values():
            owner.params = _trainable(owner.module)
            shared = seen.intersection(owner.params.values())
            if shared:
                raise NotImplementedError(f"{owner.name}: a parameter shared between modules is not supported")
            seen.update(owner.params.values())
        self._params = [p for o in self._owners.values() for p in o.params.values()]
        self._trainable_key = key

    @contextmanager
    def capture(self) -> Iterator[None]:
        """Run the forward pass of a batch inside this context."""
        self._read_trainable()
        if not self._params:
            raise ValueError("the model has no trainable parameters")
        for owner in self._owners.values():
            owner.calls = []
        self._batch, self._per_sample = None, None
        self._active = True
        try:
            yield
        finally:
            self._active = False

    def chain_backward(self, inputs: Tensor, targets: Tensor) -> Tensor | None:
        """Forward and backward of a Linear–activation chain under cross-entropy in closed form: afterwards
        ``norms()``, ``layer_norms()`` and ``write_clipped_sum()`` give what ``capture()``, the model, the
        per-example cross-entropy and ``backward()`` would have, bit for bit. Returns the per-example losses
        [B]; None, having done nothing, when the model is no chain, ``inputs`` is not [B, in] or a chain
        parameter is frozen (then run that general sequence instead)."""
        if self._chain is None or inputs.dim() != 2:
            return None
        self._read_trainable()
        if len(self._params) != len(self._chain_params):  # the trainable ones are a subset, in order
            return None
        for owner in self._owners.values():
            owner.calls = []
        done = chain_pass(self._chain, inputs, targets)
        self._batch = inputs.shape[0]
        self._per_sample = {
            linear: _linear_rows(self._owners[linear], a, g)
            for linear, a, g in zip(self._chain.linears, done.inputs, done.grads)
        }
        return done.losses

    def _record_batch(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not self._active:
            return
        first = _first_tensor((args, kwargs))
        if first is None or first.dim() == 0:
            raise ValueError("the model's first tensor input must have the examples in dim 0")
        self._batch = first.shape[0]

    def _record_call(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Tensor | None:
        if not self._active:
            return None
        owner = self._owners[module]
        if not (owner.params and torch.is_grad_enabled()):
            return None
        if self._batch is None:
            raise RuntimeError(f"{owner.name} ran before the model: call the wrapped model itself in capture()")
        if not isinstance(out, Tensor):
            raise NotImplementedError(
                f"{owner.name} ({type(module).__name__}) returns {type(out).__name__}; "
                "per-example gradients need modules with trainable parameters to return one tensor"
            )
        if out.dim() == 0 or out.shape[0] != self._batch:
            raise NotImplementedError(
                f"{owner.name} ({type(module).__name__}): output shape {tuple(out.shape)} does not "
                f"have the {self._batch} examples in dim 0"
            )
        # Inputs detached: the per-example math must not join (and keep alive) the graph.
        call = _Call(_detached(args), _detached(kwargs), out)
        owner.calls.append(call)
        if out.grad_fn is not None and out._base is None:
            # The edge into the output's grad_fn receives ∂loss/∂output even if a later op rewrites the output
            # in place (ReLU(inplace=True): that op's backward feeds the edge), so the model goes on with it.
            call.out = get_gradient_edge(out)
            return None
        # A view (an in-place op on it would route the gradient around its grad_fn) or an output needing no
        # gradient: record it and let the model continue with a copy, which in-place ops may rewrite.
        if not out.requires_grad:
            call.out = out = out.detach().requires_grad_()
        return out.clone()

    def backward(self, losses: Tensor) -> None:
        """Backpropagate the per-example losses [B] of the captured batch (their sum)."""
        if self._batch is None:
            raise RuntimeError("run the forward pass inside capture() first")
        if losses.shape != (self._batch,):
            raise ValueError(f"need one loss per example, shape ({self._batch},), got {tuple(losses.shape)}")
        calls = [c for o in self._owners.values() for c in o.calls if c.out is not None]
        if not calls:
            return
        # Seeding the backward with ones is differentiating the sum, without the sum's op and node.
        outputs = cast(list[Tensor], [c.out for c in calls])  # tensors or gradient edges: autograd takes both
        grads = torch.autograd.grad(losses, outputs, torch.ones_like(losses), allow_unused=True)
        for call, g in zip(calls, grads):
            call.grad, call.out = g, None

    def _compute(self) -> dict[nn.Module, _PerSample]:
        if self._per_sample is not None:
            return self._per_sample
        if self._batch is None:
            raise RuntimeError("run the forward pass inside capture() and backward() first")
        per_sample = {}
        for module, owner in self._owners.items():
            if not owner.params:
                continue
            if not owner.calls:
                raise RuntimeError(
                    f"{owner.name} ({type(module).__name__}) owns trainable parameters but was not "
                    "called in the forward pass: its parameters are used elsewhere, which per-example "
                    "gradients cannot attribute. Freeze them (requires_grad=False) or call the module."
                )
            calls = [c for c in owner.calls if c.grad is not None]
            if not calls:  # the output did not reach the loss: zero gradient
                continue
            rule = _RULES.get(type(module))
            per_sample[module] = rule(owner, calls) if rule else _functional(owner, calls, self._batch)
        self._per_sample = per_sample
        return per_sample

    def _batch_size(self) -> int:
        if self._batch is None:
            raise RuntimeError("run the forward pass inside capture() and backward() first")
        return self._batch

    @torch.no_grad()
    def norms(self) -> Tensor:
        """[B] ℓ2 norm of each example's gradient over all trainable parameters."""
        per_sample = self._compute()
        if not per_sample:  # no trainable parameter reached the loss
            p = self._params[0]
            return torch.zeros(self._batch_size(), dtype=p.dtype, device=p.device)
        return _summed([ps.sq_norms for ps in per_sample.values()]).sqrt()  # a new tensor: the caller's

    @torch.no_grad()
    def layer_norms(self) -> dict[str, Tensor]:
        """{layer name: [B] ℓ2 norm of each example's gradient over that layer's trainable parameters}.

        Every layer trainable at the last ``capture()`` is present (zeros if it did not reach the loss).
        """
        per_sample = self._compute()
        norms = {}
        for module, owner in self._owners.items():
            if not owner.params:
                continue
            ps = per_sample.get(module)
            if ps is None:
                p = next(iter(owner.params.values()))
                norms[owner.name] = torch.zeros(self._batch_size(), dtype=p.dtype, device=p.device)
            else:
                norms[owner.name] = ps.sq_norms.sqrt()
        return norms

    def _views(self, flat: Tensor, params: list[nn.Parameter]) -> dict[nn.Parameter, Tensor]:
        """``split_flat(flat, params)``, kept while both stay the same: a training loop reuses its buffer.

        Keyed by ids, which stay unique while cached: the views keep ``flat`` alive, the dict the parameters.
        """
        key = (id(flat), flat.data_ptr(), tuple(map(id, params)))
        if self._flat_views is None or self._flat_views[0] != key:
            self._flat_views = (key, split_flat(flat, params))
        return self._flat_views[1]

    @torch.no_grad()
    def write_clipped_sum(self, factors: Tensor | Mapping[str, Tensor], *, onto: Tensor | None = None) -> None:
        """Set ``p.grad = onto_p + Σ_i factors[i] · ∇_p ℓ_i`` for every trainable parameter.

        ``factors`` is one [B] tensor for every layer, or a mapping with one [B]
        tensor per layer name (exactly the keys of ``layer_norms()``).

        ``onto`` is a flat vector over ``parameters`` (in order), e.g. the noise
        of the Gaussian mechanism; it is updated in place and the gradients
        become views of it, so that one more in-place op on it (dividing by
        the batch size) updates them all. Zero if None. Frees the recorded
        activations: call once per captured batch.
        """
        params = self._params
        per_sample = self._compute()
        if onto is None:
            onto = params[0].new_zeros(sum(p.numel() for p in params))
        grads = self._views(onto, params)
        if isinstance(factors, Tensor):
            for ps in per_sample.values():
                ps.add_clipped_sum(factors, grads)
        else:
            layers = [o.name for o in self._owners.values() if o.params]
            if set(factors) != set(layers):
                raise ValueError(f"need clipping factors for exactly the layers {layers}, got {sorted(factors)}")
            for module, ps in per_sample.items():
                ps.add_clipped_sum(factors[self._owners[module].name], grads)
        for p in params:
            g = grads[p]
            if p.grad is not g:  # a loop passing the same buffer every step sets them once
                p.grad = g
        for owner in self._owners.values():
            owner.calls = []
        self._per_sample = None
