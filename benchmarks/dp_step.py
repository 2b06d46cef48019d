"""Time one DP-SGD step of nodedp's engine against a non-private step and Opacus.

    python benchmarks/dp_step.py [--in-dim 500 --hidden 64 --classes 7 --batch 256 --repeats 200]

All variants train the same MLP architecture on the same batch with SGD on
2 threads (``--threads``); the medians and their ratios to the non-private step are printed.
Variants run in interleaved rounds so that background load affects them
alike. Opacus variants are skipped (with the reason) if they fail to run.

"DP (nodedp)" is what a DP-SGD method training this MLP runs: the engine reads
a Linear–activation chain in closed form (``nodedp.train.linear_chain``). "DP
(nodedp, hooks)" is the same model behind a wrapper the engine cannot see into,
so that it takes the general path any other model takes (forward hooks and
autograd): the same gradients bit for bit, more overhead.

"DP (hand-written)" is a reference, not a method: the same DP-SGD step (one
Gaussian draw over the whole gradient, exact per-example norms, clipping,
clipped sum) written out for this one two-layer ReLU MLP, with no hooks, no
autograd and no per-layer machinery. Its ratio is what the Gaussian draw and
the per-example work cost by themselves; the engine's excess over it is the
price of handling any model.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import statistics
import time
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nodedp.models import MLP
from nodedp.train import OptimConfig, PrivacyConfig, make_generator, train_model

_ROUND = 10  # steps per variant before switching to the next


def _timed(step: Callable[[], None]) -> Callable[[int], list[float]]:
    """A runner: ``run(n)`` performs n steps and returns their durations."""

    def run(n: int) -> list[float]:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return times

    return run


def _engine(model: nn.Module, x: Tensor, y: Tensor, *, privacy: PrivacyConfig | None) -> Callable[[int], list[float]]:
    """A runner timing train_model itself, from timestamps taken in on_step."""
    indices = torch.arange(len(y))
    generator = make_generator(0)

    def run(n: int) -> list[float]:
        stamps: list[float] = []
        train_model(
            model,
            batch_fn=lambda _: (x, y),
            batches=[indices] * (n + 1),
            optim=OptimConfig("sgd", lr=0.01),
            privacy=privacy,
            generator=generator,
            device="cpu",
            on_step=lambda _: stamps.append(time.perf_counter()),
        )
        return [b - a for a, b in itertools.pairwise(stamps)]

    return run


def _hand_written_step(model: nn.Module, x: Tensor, y: Tensor, privacy: PrivacyConfig) -> Callable[[], None]:
    """One DP-SGD step of a two-layer ReLU MLP written out by hand (the reference floor; see the docstring)."""
    first, activation, second = model.layers
    if not (isinstance(first, nn.Linear) and isinstance(activation, nn.ReLU) and isinstance(second, nn.Linear)):
        raise ValueError(f"written for Linear-ReLU-Linear, got {model.layers}")
    params = [first.weight, first.bias, second.weight, second.bias]
    noisy = torch.empty(sum(p.numel() for p in params))
    grads = [part.view_as(p) for part, p in zip(noisy.split([p.numel() for p in params]), params)]
    optimizer = torch.optim.SGD(params, lr=0.01)
    generator = make_generator(0)
    rows = torch.arange(len(y))
    clip, batch = privacy.clip_norm, privacy.expected_batch_size

    @torch.no_grad()
    def step() -> None:
        noisy.normal_(0.0, privacy.noise_std, generator=generator)
        hidden = torch.addmm(first.bias, x, first.weight.t())
        active = torch.relu(hidden)
        g_out = torch.softmax(torch.addmm(second.bias, active, second.weight.t()), dim=1)
        g_out[rows, y] -= 1.0  # ∂ cross-entropy / ∂ logits, per example
        g_hidden = (g_out @ second.weight).mul_(hidden > 0)
        # ‖per-example gradient‖² = Σ_layers ‖g_i‖² (‖a_i‖² + 1) (weight and bias)
        sq = torch.linalg.vecdot(g_out, g_out).mul_(torch.linalg.vecdot(active, active).add_(1.0))
        sq.addcmul_(torch.linalg.vecdot(g_hidden, g_hidden), torch.linalg.vecdot(x, x).add_(1.0))
        factors = sq.sqrt_().div_(clip).clamp_(min=1.0).reciprocal_()
        for g, a, (weight, bias) in ((g_hidden, x, grads[:2]), (g_out, active, grads[2:])):
            weight.addmm_(g.t() * factors, a)
            bias.addmv_(g.t(), factors)
        noisy.div_(batch)
        for p, g in zip(params, grads):
            p.grad = g
        optimizer.step()

    return step


class _Opaque(nn.Module):
    """The model behind a forward of its own: the engine's general path (hooks and autograd) trains it."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: Tensor) -> Tensor:
        return self.inner(x)


def _plain_step(model: nn.Module, x: Tensor, y: Tensor) -> Callable[[], None]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def _opacus_hooks_step(model: nn.Module, x: Tensor, y: Tensor, batch: int) -> Callable[[], None]:
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    module = GradSampleModule(model)
    optimizer = DPOptimizer(
        torch.optim.SGD(module.parameters(), lr=0.01),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        expected_batch_size=batch,
    )

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(module(x), y).backward()
        optimizer.step()

    return step


def _opacus_ghost_step(model: nn.Module, x: Tensor, y: Tensor, batch: int) -> Callable[[], None]:
    from opacus import PrivacyEngine

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    module, optimizer, criterion, _ = PrivacyEngine().make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        criterion=nn.CrossEntropyLoss(),
        grad_sample_mode="ghost",
    )

    def step() -> None:
        optimizer.zero_grad()
        criterion(module(x), y).backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--in-dim", type=int, default=500)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--classes", type=int, default=7)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # Opacus' hook warnings would bury the table
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = MLP(args.in_dim, args.hidden, args.classes)
    x = torch.randn(args.batch, args.in_dim)
    y = torch.randint(0, args.classes, (args.batch,))
    privacy = PrivacyConfig(clip_norm=1.0, noise_std=1.0, expected_batch_size=args.batch)

    runners = {
        "non-private (nodedp)": _engine(copy.deepcopy(model), x, y, privacy=None),
        "DP (nodedp)": _engine(copy.deepcopy(model), x, y, privacy=privacy),
        "DP (nodedp, hooks)": _engine(_Opaque(copy.deepcopy(model)), x, y, privacy=privacy),
        "non-private (torch)": _timed(_plain_step(copy.deepcopy(model), x, y)),
        "DP (hand-written)": _timed(_hand_written_step(copy.deepcopy(model), x, y, privacy)),
    }
    for name, make in [("DP (opacus hooks)", _opacus_hooks_step), ("DP (opacus ghost)", _opacus_ghost_step)]:
        try:
            runners[name] = _timed(make(copy.deepcopy(model), x, y, args.batch))
            runners[name](1)
        except Exception as error:  # optional baselines: report and go on
            runners.pop(name, None)
            print(f"{name}: skipped ({type(error).__name__}: {error})")
    # Interleave rounds of all variants so that background load hits them alike.
    times: dict[str, list[float]] = {name: [] for name in runners}
    for run in runners.values():
        run(10)  # warm-up
    for done in range(0, args.repeats, _ROUND):
        for name, run in runners.items():
            times[name] += run(min(_ROUND, args.repeats - done))

    base = times["non-private (nodedp)"]
    print(
        f"MLP {args.in_dim}-{args.hidden}-{args.classes}, batch {args.batch}, "
        f"{torch.get_num_threads()} threads, {args.repeats} steps each"
    )
    print(f"{'':22s} {'median':>10s} {'ratio':>7s} {'fastest':>10s} {'ratio':>7s}")
    for name, ts in times.items():
        median, fastest = statistics.median(ts), min(ts)
        print(
            f"{name:22s} {median * 1e3:7.3f} ms {median / statistics.median(base):6.2f}x "
            f"{fastest * 1e3:7.3f} ms {fastest / min(base):6.2f}x"
        )
    print("ratios are to the non-private step of the same engine; 'fastest' is the least disturbed by background load")
    ratio = statistics.median(times["DP (nodedp)"]) / statistics.median(base)
    print(f"DP/non-private ratio: {ratio:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
