"""MLP on node features only: `mlp` (non-private) and `dp-mlp` (DP-SGD).

No edges are used, so one node is exactly one training example; DP-SGD with
Poisson sampling then gives node-level DP at the usual add/remove sensitivity C.

Reference mode (``dp-mlp@paper``): the DP-MLP baseline of GAP and ProGAP, whose
public code calibrates the same Poisson DP-SGD by RDP, at its δ (10^−digits of N,
``nodedp.accounting.gap.gap_paper_delta``). Its accounting is the suite's, so
the actual ε at that δ is the claimed one; only δ may differ from the suite's.
"""

from __future__ import annotations

from nodedp.accounting import Ledger
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.mlp import DpMlpHparams, MlpHparams
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import MLP
from nodedp.plans import PublicInputs
from nodedp.plans.mlp import plan_mlp
from nodedp.train import (
    poisson_batches,
    resolve_device,
    seed_everything,
    shuffled_epochs,
)


def run_mlp(inputs: RunInputs, spec: RunSpec, hp: MlpHparams) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    x, y = graph.x.to(device), graph.y.to(device)
    model = MLP(x.size(1), hp.hidden_dim, inputs.num_classes, num_layers=hp.num_layers, dropout=hp.dropout).to(device)
    n = split.train.numel()
    if isinstance(hp, DpMlpHparams):
        public = PublicInputs.from_run(inputs, spec)
        planned = plan_mlp(public, spec, hp)  # before spending any time on training
        ledger, plan = planned.ledger, planned.parts["dpsgd"]
        batches = poisson_batches(n, sampling_rate=plan.sampling_rate, steps=plan.steps, generator=generator)
        privacy = plan.privacy_config()
    else:
        ledger = Ledger.non_private()
        batches = shuffled_epochs(n, batch_size=hp.batch_size, epochs=hp.epochs, generator=generator)
        privacy = None
    return fit_node_classifier(
        model,
        inputs_of=lambda nodes: x[nodes],
        y=y,
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=batches,
        privacy=privacy,
        ledger=ledger,
        generator=generator,
        device=device,
        predict=lambda other, split=None: model(other.x.to(device)),  # features only: no edges, no parts
    )
