"""GAP (Sajadmanesh et al. 2023): encoder, K cached NAP hops, classifier.

The encoder (MLP + linear head) is trained on the features and labels; its row-normalized output X^(0) is
aggregated K times, X̃^(k) = NAP(X̃^(k-1)), each hop queried once and cached; the classifier trains on
(X^(0), X̃^(1), ..., X̃^(K)) per node and predicts from the same caches; ``predict`` recomputes them, noise-free, on
the given graph (``ApRun.predict``). At node level the encoder and the classifier are two DP-SGD stages.
`encoder_epochs` trains the encoder, `epochs` the classifier. Ids: `gap` (node level), `gap-edge`, `gap-nodp`.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import Tensor

from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.gap import GapHparams
from nodedp.mechanisms import NAP
from nodedp.methods.aggregation_perturbation import ApRun
from nodedp.models import GAPClassifier, GAPEncoder
from nodedp.plans.aggregation_perturbation import plan_gap


def hop_caches(x0: Tensor, nap: NAP, edges: Tensor, *, hops: int, generator: torch.Generator) -> list[Tensor]:
    """[X^(0), X̃^(1), ..., X̃^(K)]: K NAP queries, each hop row-normalized after its noise.

    The normalization is post-processing, and it is the reference code's
    (``compute_aggregations`` normalizes every aggregate): without it the noisy
    hops, of norm ~ σ·√d, swamp the noise-free X^(0) in the classifier's
    L2-normalized concatenation, and GAP falls to chance where ProGAP (whose
    base MLPs normalize each hop) and DP-MLP do not.
    """
    caches = [x0]
    for _ in range(hops):
        caches.append(F.normalize(nap(caches[-1], edges, generator=generator), p=2, dim=-1))
    return caches


def run_gap(inputs: RunInputs, spec: RunSpec, hp: GapHparams, *, level: str) -> RunResult:
    run = ApRun.start(inputs, spec, hp, level=level, planner=plan_gap)
    plan, generator, device = run.plan, run.generator, run.device
    x = inputs.graph.x.to(device)
    norm = hp.normalization_for(level)
    encoder = GAPEncoder(
        x.size(1),
        inputs.num_classes,
        hidden_dim=hp.hidden_dim,
        num_layers=hp.encoder_layers,
        normalization=norm,
        dropout=hp.dropout,
    ).to(device)
    start = time.perf_counter()
    run.train_stage(encoder, lambda nodes: x[nodes], stage=0, epochs=hp.encoder_epochs)

    def caches_of(features: Tensor, nap: NAP, edges: Tensor) -> list[Tensor]:
        return hop_caches(encoder.embed(features), nap, edges, hops=hp.hops, generator=generator)

    caches = caches_of(x, plan.nap, plan.edges.to(device))
    classifier = GAPClassifier(
        hp.hidden_dim,
        inputs.num_classes,
        hops=hp.hops,
        hidden_dim=hp.hidden_dim,
        base_layers=hp.base_layers,
        head_layers=hp.head_layers,
        normalization=norm,
        dropout=hp.dropout,
    ).to(device)
    predict = run.predict(lambda features, nap, edges: classifier(caches_of(features, nap, edges)))
    result = run.train_stage(
        classifier,
        lambda nodes: tuple(t[nodes] for t in caches),
        stage=1,
        epochs=hp.epochs,
        final=True,
        predict=predict,
    )
    assert result is not None
    return run.finish(result, started=start)
