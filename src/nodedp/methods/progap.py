"""ProGAP (Sajadmanesh & Gatica-Perez, progap.txt, Algorithms 1-2): progressive training over cached NAP outputs.

Stage 0 trains base MLP_0 + head_0 on the features X. Stage s = 1..K first
queries NAP once on the previous stage's row-normalized embeddings
X^(s-1) = base_{s-1}(X̃^(s-1)) and caches X̃^(s); it then trains base_s and
head_s on (X, X̃^(1), ..., X̃^(s)) with the earlier bases frozen (JK:
concatenation). Inference runs stage K on the caches, so it costs nothing
more: NAP is queried exactly K times per run, whatever the epochs.
Ids: `progap` (node level), `progap-edge`, `progap-nodp`.
"""

from __future__ import annotations

import dataclasses
import time

from nodedp.methods.aggregation_perturbation import ApHparams, plan_aggregation_perturbation, train_stage
from nodedp.methods.base import MethodInfo, RunInputs, RunResult, RunSpec
from nodedp.methods.registry import register_method
from nodedp.models import ProGAP
from nodedp.train import resolve_device, seed_everything


def run_progap(inputs: RunInputs, spec: RunSpec, hp: ApHparams, *, level: str) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    plan = plan_aggregation_perturbation(inputs, spec, hp, level=level, stage_epochs=[hp.epochs] * (hp.hops + 1),
                                         name=spec.method)
    x = inputs.graph.x.to(device)
    edges = plan.edges.to(device)
    model = ProGAP(x.size(1), inputs.num_classes, depth=hp.hops, hidden_dim=hp.hidden_dim,
                   base_layers=hp.base_layers, normalization=hp.normalization_for(level), dropout=hp.dropout).to(device)
    caches = [x]  # X̃^(0) = X, then one NAP output per stage
    start = time.perf_counter()
    result = None
    for s in range(hp.hops + 1):
        if s > 0:  # Eq. 8: the one NAP query of stage s, cached for training and inference
            caches.append(plan.nap(model.stage(s - 1).embed(caches[s - 1]), edges, generator=generator))
        stage = model.stage(s)
        result = train_stage(stage, lambda nodes, c=tuple(caches): tuple(t[nodes] for t in c), plan=plan, stage=s,
                             epochs=hp.epochs, inputs=inputs, spec=spec, hp=hp, generator=generator, device=device,
                             final=s == hp.hops)
    assert result is not None and plan.nap.calls == hp.hops
    return dataclasses.replace(
        result, train_seconds=time.perf_counter() - start,
        details={**result.details, "nap_queries": plan.nap.calls, "nap_noise_std": plan.nap.noise_std},
    )


for _suffix, _level, _what in (("", "node", "node-level DP: out-degree bounded NAP, DP-Adam per stage"),
                               ("-edge", "edge", "edge-level DP: NAP over all edges, non-private stages"),
                               ("-nodp", "none", "non-private: NAP without noise")):
    register_method(
        MethodInfo(
            name=f"progap{_suffix}",
            description=f"ProGAP, progressive stages over cached NAP outputs; {_what}",
            private=_level != "none",
            level=_level,
            hparams=ApHparams,
            run=lambda inputs, spec, hp, _l=_level: run_progap(inputs, spec, hp, level=_l),
            needs=("out-degree",) if _level == "node" else (),
        )
    )
