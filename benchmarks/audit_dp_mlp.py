"""How much a one-run black-box audit of DP-MLP can see: a correct run against one with its DP-SGD noise divided.

    python benchmarks/audit_dp_mlp.py [--dataset csbm-homophilous] [--epsilon 1] [--noise-divisor 10]
        [--canaries 750] [--epochs 100] [--design onehot|shuffled] [--scale 3] [--layers 2] [--optimizer adam]
        [--lr 0.01] [--seed 0]

    e.g. the setting that catches the broken run: --layers 1 --optimizer sgd --lr 0.5 --canaries 300

Builds the (synthetic) dataset, plants canaries (``nodedp.audit.canaries``), trains DP-MLP once on the private
graph twice, correctly and with the noise std divided by ``--noise-divisor`` (a deliberately broken mechanism,
made here and nowhere else), and prints for each the ledger's ε, the one-run lower bound at the ledger's δ with
95% confidence, its guesses, AUC and TPR at 1% FPR. Designs: ``shuffled`` keeps the planted canaries (a training
row shuffled, another label); ``onehot`` gives each canary a feature column of its own (``--scale`` on it, zero
elsewhere, every real node zero there; ``plant_canaries(own_column=...)``) and scores it against the zero input,
which removes the model's default prediction from the score. Nothing is stored; every figure is computed on the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nodedp.audit.canaries import plant_canaries
from nodedp.audit.statistics import attack_auc, epsilon_one_run, tpr_at_fpr
from nodedp.contract.base import RunInputs, RunSpec
from nodedp.contract.registry import get_method
from nodedp.data import load_graph
from nodedp.data.registry import build_dataset, get_dataset, make_split
from nodedp.io import read_json
from nodedp.plans import mlp as mlp_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", default="csbm-homophilous", help="a synthetic dataset id (default: csbm-homophilous)"
    )
    parser.add_argument("--epsilon", type=float, default=1.0, help="the claimed ε (default: 1)")
    parser.add_argument("--delta", type=float, default=1e-4, help="δ of the ledger and of the bound (default: 1e-4)")
    parser.add_argument(
        "--noise-divisor", type=float, default=10.0, help="the broken run's noise divisor (default: 10)"
    )
    parser.add_argument("--canaries", type=int, default=750, help="number of canaries m (default: 750)")
    parser.add_argument("--epochs", type=int, default=100, help="DP-MLP epochs (default: 100)")
    parser.add_argument("--design", choices=["onehot", "shuffled"], default="onehot", help="canary design")
    parser.add_argument("--scale", type=float, default=3.0, help="onehot: the canary's own feature value (default: 3)")
    parser.add_argument("--layers", type=int, default=2, help="DP-MLP layers (1: a linear model; default: 2)")
    parser.add_argument("--optimizer", default="adam", help="DP-MLP optimizer (default: adam)")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate (default: 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, canaries and training")
    args = parser.parse_args()
    if get_dataset(args.dataset).kind == "download":
        parser.error(f"{args.dataset} is downloaded; this benchmark builds synthetic datasets only")
    torch.set_num_threads(1)

    folder = Path(tempfile.mkdtemp()) / args.dataset
    build_dataset(args.dataset, folder)
    graph, meta = load_graph(folder), read_json(folder / "meta.json")
    split = make_split(folder, seed=args.seed)
    m = args.canaries
    plan = plant_canaries(
        graph,
        split,
        m=m,
        degree_bound=get_dataset(args.dataset).out_degree_bound or 10,
        num_classes=meta["num_classes"],
        seed=args.seed,
        own_column=args.scale if args.design == "onehot" else 0.0,
    )
    n = graph.num_nodes
    baseline = plan.baseline_graph() if args.design == "onehot" else None
    private_graph, private_split, _ = plan.private_graph()
    inputs = RunInputs(graph=private_graph, split=private_split, num_classes=meta["num_classes"])
    hp = get_method("dp-mlp").parse_hparams(
        {
            "epochs": args.epochs,
            "batch_size": 64,
            "hidden_dim": 64,
            "lr": args.lr,
            "num_layers": args.layers,
            "optimizer": args.optimizer,
        }
    )
    spec = RunSpec(
        dataset=args.dataset, method="dp-mlp", seed=args.seed, target_epsilon=args.epsilon, target_delta=args.delta
    )
    included = plan.included.numpy()
    correct_plan = mlp_module.plan_dpsgd
    print(
        f"{args.dataset}: {n} nodes, m = {m} canaries ({int(included.sum())} included), design {args.design}, "
        f"{args.epochs} epochs, {args.layers} layer(s), {args.optimizer} lr {args.lr:g}, claimed ε = "
        f"{args.epsilon:g}, δ = {args.delta:g}"
    )
    print("| run | noise std | ledger ε | one-run ε lower bound (95%) | guesses r | right v | AUC | TPR@1%FPR | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, divisor in (("correct", 1.0), (f"noise / {args.noise_divisor:g}", args.noise_divisor)):

        def broken(divisor=divisor, **kwargs):
            plan_ = correct_plan(**kwargs)
            config = plan_.privacy_config
            object.__setattr__(
                plan_, "privacy_config", lambda: dataclasses.replace(config(), noise_std=config().noise_std / divisor)
            )
            return plan_

        mlp_module.plan_dpsgd = broken
        try:
            start = time.perf_counter()
            result = get_method("dp-mlp").run(inputs, spec, hp)
        finally:
            mlp_module.plan_dpsgd = correct_plan
        scores = torch.log_softmax(result.predict(plan.graph), 1)[plan.canaries, plan.labels]
        if baseline is not None:
            scores = scores - torch.log_softmax(result.predict(baseline), 1)[plan.canaries, plan.labels]
        scores = scores.numpy()
        bound = epsilon_one_run(scores, included, delta=args.delta, seed=args.seed)
        print(
            f"| {name} | {result.details['noise_std']:.3g} | {result.ledger.composed()[0]:.3g} | {bound.epsilon:.3f} "
            f"| {bound.guesses} | {bound.correct} | {attack_auc(scores, included):.3f} "
            f"| {tpr_at_fpr(scores, included, 0.01):.3f} | {time.perf_counter() - start:.1f} |"
        )


if __name__ == "__main__":
    main()
