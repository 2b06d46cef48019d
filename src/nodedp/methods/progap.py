"""ProGAP (Sajadmanesh & Gatica-Perez, progap.txt, Algorithms 1-2): progressive training over cached NAP outputs.

Stage 0 trains on the features; stage s = 1..K queries NAP once on the previous stage's row-normalized embeddings,
caches it and trains base_s and head_s on (X, X̃^(1), ..., X̃^(s)) with the earlier bases frozen (JK), so NAP is
queried exactly K times per run. ``predict`` recomputes the K aggregations noise-free (``ApRun.predict``).
Ids: `progap` (node level), `progap-edge`, `progap-nodp`. Details: docs/design/methods.md, `nodedp.methods.progap`.
"""

from __future__ import annotations

import time

from torch import Tensor

from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.aggregation_perturbation import ApHparams
from nodedp.mechanisms import NAP
from nodedp.methods.aggregation_perturbation import ApRun
from nodedp.models import ProGAP, ProGAPStage
from nodedp.plans.aggregation_perturbation import plan_progap


def run_progap(inputs: RunInputs, spec: RunSpec, hp: ApHparams, *, level: str) -> RunResult:
    run = ApRun.start(inputs, spec, hp, level=level, planner=plan_progap)
    plan, generator, device = run.plan, run.generator, run.device
    x = inputs.graph.x.to(device)
    edges = plan.edges.to(device)
    model = ProGAP(
        x.size(1),
        inputs.num_classes,
        depth=hp.hops,
        hidden_dim=hp.hidden_dim,
        base_layers=hp.base_layers,
        normalization=hp.normalization_for(level),
        dropout=hp.dropout,
    ).to(device)
    caches = [x]  # X̃^(0) = X, then one NAP output per stage
    stages: list[ProGAPStage] = []

    def aggregate(into: list[Tensor], nap: NAP, over: Tensor) -> None:
        """Eq. 8: the next cache, ``nap`` over edges ``over`` of the last trained stage's embedding of the last."""
        into.append(nap(stages[len(into) - 1].embed(into[-1]), over, generator=generator))

    def forward(features: Tensor, nap: NAP, edges: Tensor) -> Tensor:  # inference on another graph
        other = [features]
        for _ in range(hp.hops):
            aggregate(other, nap, edges)
        return stages[-1](other)

    predict = run.predict(forward)
    start = time.perf_counter()
    result = None
    for s in range(hp.hops + 1):
        if s > 0:  # the one NAP query of stage s, cached for training and inference
            aggregate(caches, plan.nap, edges)
        stages.append(model.stage(s))

        def features(nodes: Tensor, c: tuple[Tensor, ...] = tuple(caches)) -> tuple[Tensor, ...]:
            return tuple(t[nodes] for t in c)

        result = run.train_stage(stages[s], features, stage=s, epochs=hp.epochs, final=s == hp.hops, predict=predict)
    assert result is not None
    return run.finish(result, started=start)
