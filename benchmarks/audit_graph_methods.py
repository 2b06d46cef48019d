"""What the audit sees of a graph method with its noise divided, and why only its release audit can catch it.

    python benchmarks/audit_graph_methods.py [--dataset csbm-homophilous] [--epsilon 1] [--divisor 10] [--seed 0]

Builds the (synthetic) dataset and audits GAP and DP-GCN with their default hyperparameters and the audit's
default canaries, each correctly and deliberately broken (made here and nowhere else; ledgers unchanged): GAP with
the NAP it executes at its noise multiplier divided by ``--divisor``, DP-GCN with its DP-SGD noise std divided.
Prints per run the claimed ε, the black-box ε̂ and AUC, and each release audit's ε̂ with the noise std it drew
(the run's executed one, from its noise trace). Then the ceilings that no black-box audit of these runs can pass,
computed from the broken runs' own parameters:

* the separation μ (in noise standard deviations) a canary needs for the one-run bound of 100 canaries at δ = 1e-4
  to exceed 1 (median over 5 draws of perfect Gaussian scores);
* GAP: the broken NAP's white-box one-run bound with 100 perfect canaries (Δ = √(D + R²) each) in one release;
* DP-GCN: its broken DP-SGD against the strongest canary a node within the identity bound ⌊K/2⌋ can be (its own
  example and ⌊K/2⌋ neighbours', C each), over 20,000 independent runs.

Nothing is stored; every figure is computed on the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nodedp.audit.dpsgd import fixed_size_release_scores
from nodedp.audit.nap import nap_release_scores
from nodedp.audit.run import audit_run
from nodedp.audit.statistics import best_canary_count, clopper_pearson_epsilon, epsilon_one_run
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import load_graph
from nodedp.data.registry import build_dataset, get_dataset, make_split
from nodedp.io import read_json
from nodedp.plans import PublicInputs
from nodedp.plans.dp_gnn import plan_dp_gnn


@contextmanager
def nap_noise_divided(divisor: float) -> Iterator[None]:
    """GAP and ProGAP execute a NAP with the plan's noise multiplier divided by ``divisor`` (after the plan's own
    check that NAP and ledger agree); the ledger is the plan's."""
    import nodedp.methods.aggregation_perturbation as module
    from nodedp.mechanisms import NAP

    correct = module.execute_plan

    def broken(*args, **kwargs):
        plan = correct(*args, **kwargs)
        nap = plan.nap
        plan.nap = NAP(
            level=nap.level,
            row_clip=nap.row_clip,
            noise_multiplier=nap.noise_multiplier / divisor,
            max_degree=nap.max_degree,
            undirected=nap.undirected,
        )
        return plan

    module.execute_plan = broken
    try:
        yield
    finally:
        module.execute_plan = correct


@contextmanager
def dp_gnn_noise_divided(divisor: float) -> Iterator[None]:
    """DP-GNN trains with its DP-SGD noise std divided by ``divisor``; the ledger is the plan's."""
    import nodedp.methods.dp_gnn as module

    correct = module.privacy_from_record

    def broken(*args, **kwargs):
        privacy = correct(*args, **kwargs)
        return dataclasses.replace(privacy, noise_std=privacy.noise_std / divisor)

    module.privacy_from_record = broken
    try:
        yield
    finally:
        module.privacy_from_record = correct


# Each broken method, the release its break lives in and how to break it.
BROKEN = {"gap": ("nap", nap_noise_divided), "dp-gcn": ("dpsgd", dp_gnn_noise_divided)}


def separation_needed(m: int = 100, delta: float = 1e-4, target: float = 1.0) -> float:
    """The smallest μ (steps of 0.25) at which perfect Gaussian scores of m canaries give a median one-run bound
    above ``target``."""
    mu = 0.0
    while mu < 10:
        mu += 0.25
        bounds = []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            included = rng.random(m) < 0.5
            scores = rng.normal(size=m) + mu * included
            bounds.append(epsilon_one_run(scores, included, delta=delta, seed=seed).epsilon)
        if statistics.median(bounds) > target:
            return mu
    return float("inf")


def _inputs(dataset: str, seed: int) -> RunInputs:
    folder = Path(tempfile.mkdtemp()) / dataset
    build_dataset(dataset, folder)
    return RunInputs(
        graph=load_graph(folder),
        split=make_split(folder, seed=seed),
        num_classes=read_json(folder / "meta.json")["num_classes"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", default="csbm-homophilous", help="a synthetic dataset id (default: csbm-homophilous)"
    )
    parser.add_argument("--epsilon", type=float, default=1.0, help="the claimed ε (default: 1)")
    parser.add_argument("--delta", type=float, default=1e-4, help="δ of the ledger and of the bounds (default: 1e-4)")
    parser.add_argument("--divisor", type=float, default=10.0, help="the broken runs' noise divisor (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, canaries and training")
    args = parser.parse_args()
    info = get_dataset(args.dataset)
    if info.kind == "download":
        parser.error(f"{args.dataset} is downloaded; this benchmark builds synthetic datasets only")
    inputs = _inputs(args.dataset, args.seed)
    bounds = {"in-degree": info.in_degree_bound, "out-degree": info.out_degree_bound, "degree": info.out_degree_bound}
    print(f"{args.dataset}, claimed ε = {args.epsilon:g} at δ = {args.delta:g}, noise ÷ {args.divisor:g} when broken")
    broken_ledgers = {}
    for method, (release, breaks) in BROKEN.items():
        hp = get_method(method).parse_hparams({})
        spec = RunSpec(
            dataset=args.dataset, method=method, seed=args.seed, target_epsilon=args.epsilon, target_delta=args.delta
        )
        for label in ("correct", "broken"):
            if label == "broken":
                with breaks(args.divisor):
                    result = audit_run(inputs, spec, hp, method=method, bounds=bounds, seed=args.seed)
            else:
                result = audit_run(inputs, spec, hp, method=method, bounds=bounds, seed=args.seed)
            audited = result.releases[release]
            print(
                f"  {method:7s} {label:7s} claimed {result.claimed_epsilon:.2f}  black-box ε̂ "
                f"{result.lower_bound:.2f} (AUC {result.auc:.2f}, {result.canaries} canaries)  {audited.label} ε̂ "
                f"{audited.lower_bound:.2f} (noise std drawn {audited.executed['noise_std']:.3g})"
            )
            if label == "broken":
                broken_ledgers[method] = (result, audited)
    needed = separation_needed(delta=args.delta, target=args.epsilon)
    print(
        f"one-run bound of 100 canaries above {args.epsilon:g} at δ = {args.delta:g}: needs separation μ ≥ {needed:g}"
    )
    _, nap = broken_ledgers["gap"]
    drawn = nap.executed
    m = best_canary_count(args.delta)
    scores, bits = nap_release_scores(
        noise_std=drawn["noise_std"], row_clip=drawn["row_clip"], max_degree=drawn["max_degree"], m=m, seed=args.seed
    )
    one_run = epsilon_one_run(scores.numpy(), bits.numpy(), delta=args.delta, seed=args.seed).epsilon
    mu = (drawn["max_degree"] + drawn["row_clip"] ** 2) ** 0.5 / drawn["noise_std"]
    print(f"  GAP broken NAP, {m} perfect canaries in one release (μ = {mu:.2f} each): one-run ε̂ {one_run:.2f}")
    _, dpsgd = broken_ledgers["dp-gcn"]
    spec = RunSpec(
        dataset=args.dataset, method="dp-gcn", seed=args.seed, target_epsilon=args.epsilon, target_delta=args.delta
    )
    ledger = plan_dp_gnn(PublicInputs.from_run(inputs, spec), spec, get_method("dp-gcn").parse_hparams({}), layer="gcn")
    (record,) = ledger.ledger.mechanisms
    params, reachable = record.params, info.in_degree_bound // 2 + 1
    scores, bits = fixed_size_release_scores(
        noise_multiplier=2 * dpsgd.executed["noise_std"] / dpsgd.executed["clip_norm"],  # C per occurrence, not 2C
        num_examples=int(params["num_examples"]),
        batch_size=int(params["batch_size"]),
        steps=int(dpsgd.executed["steps"]),
        max_occurrences=reachable,
        runs=20000,
        seed=args.seed,
    )
    reached = clopper_pearson_epsilon(scores.numpy(), bits.numpy(), delta=args.delta).epsilon
    print(
        f"  DP-GCN broken DP-SGD against a node in {reachable} of the ledger's {params['max_occurrences']} examples, "
        f"C each, 20,000 independent runs: ε̂ {reached:.2f}"
    )


if __name__ == "__main__":
    main()
