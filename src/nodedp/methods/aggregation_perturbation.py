"""What GAP and ProGAP share: levels, the NAP mechanism of a run executing its plan, and stage training.

Both methods touch the graph only through NAP, queried once per hop and cached; everything else trains MLPs on each
node's own cached rows. Levels ``node`` (out-degree bounded to D, Δ = √(D + R²), DP-SGD stages, one shared noise
multiplier), ``edge`` and ``none``. The plan is ``nodedp.plans.aggregation_perturbation``'s; ``ApRun.predict`` infers
on another graph noise-free. Levels, inference and reference mode: docs/design/methods.md, section
`nodedp.methods.aggregation_perturbation`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from nodedp.accounting import Ledger
from nodedp.contract.base import RunInputs, RunResult, RunSpec, degree_bound_of
from nodedp.contract.specs.aggregation_perturbation import (
    ApHparams,
)
from nodedp.data import Split, bound_degree, remove_cross_split_edges
from nodedp.mechanisms import NAP
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.plans import Plan, PublicInputs
from nodedp.plans.dpsgd import privacy_from_record
from nodedp.train import (
    Batches,
    PrivacyConfig,
    full_batches,
    poisson_batches,
    resolve_device,
    seed_everything,
    train_model,
)

if TYPE_CHECKING:
    from torch_geometric.data import Data

__all__ = ["ApPlan", "ApRun", "execute_plan", "inference_edges"]


@dataclass
class ApPlan:
    """A run's NAP mechanism, edges, stage schedule and ledger."""

    level: str
    nap: NAP
    edges: Tensor  # the edges NAP aggregates over
    ledger: Ledger
    privacy: tuple[PrivacyConfig, ...] | None  # node level: DP-SGD of each stage, read off its ledger record
    sampling_rate: float | None
    stage_steps: tuple[int, ...]
    nap_queries: int  # K, what the ledger charges (the cache makes it the number of NAP calls)


def execute_plan(
    inputs: RunInputs, spec: RunSpec, hp: ApHparams, *, level: str, planner: Callable[..., Plan]
) -> ApPlan:
    """The run's plan: ``planner`` (``nodedp.plans.aggregation_perturbation``: ``plan_gap``, ``plan_progap``) on the
    run's public inputs, before any training; then NAP and the edges it aggregates, built as the plan says.

    At node level the out-degree artifact must carry the plan's public bound D and identity bound.
    """
    graph, split = inputs.graph, inputs.split
    planned = planner(PublicInputs.from_run(inputs, spec, direction=True), spec, hp, level=level)
    ledger, parts = planned.ledger, planned.parts
    edges = graph.edge_index
    max_degree = parts["max_degree"]
    if level == "node":
        bounded = inputs.structure["out-degree"]
        if int(bounded["bound"]) != max_degree:
            whose = (
                f"out_degree_bound is {hp.out_degree_bound}"
                if hp.out_degree_bound
                else f"the dataset's out-degree bound is D={max_degree} (out_degree_bound unset)"
            )
            raise ValueError(
                f"{whose} but the out-degree artifact was bounded to D={int(bounded['bound'])}; build "
                f"it with `bound-degree --kind out-degree --bound {max_degree}` (the workflow does)"
            )
        if degree_bound_of(bounded) != ledger.degree_bound:
            raise ValueError(
                f"the out-degree artifact's bound {degree_bound_of(bounded)} is not the plan's {ledger.degree_bound}"
            )
        edges = bounded["edge_index"]
    if split.setting == "inductive":  # each part sees only its own edges (only removes edges)
        edges = remove_cross_split_edges(edges, split)
    if level == "none":
        nap = NAP(level="none", row_clip=parts["row_clip"], noise_multiplier=0.0)
        return ApPlan("none", nap, edges, ledger, None, None, (), parts["nap_queries"])
    nap = NAP(
        level=level,
        row_clip=parts["row_clip"],
        noise_multiplier=parts["nap_noise_multiplier"],
        max_degree=max_degree,
        undirected=parts["undirected"],
    )
    record = ledger.mechanisms[0]
    if (nap.sensitivity, nap.noise_std) != (record.sensitivity, record.params["noise_std"]):
        raise RuntimeError(
            f"NAP's sensitivity and noise std {(nap.sensitivity, nap.noise_std)} are not the "
            f"ledger's {(record.sensitivity, record.params['noise_std'])}"
        )
    privacy = None
    if level == "node":
        privacy = tuple(privacy_from_record(r, expected_batch_size=hp.batch_size) for r in ledger.mechanisms[1:])
    return ApPlan(
        level, nap, edges, ledger, privacy, parts["sampling_rate"], tuple(parts["stage_steps"]), parts["nap_queries"]
    )


def inference_edges(graph: Data, *, split: Split, num_nodes: int, bounded: Mapping[str, Any] | None) -> Tensor:
    """The edges of ``graph`` (the run's input with nodes appended) as the run read its input's: the workflow's
    ``bound-degree`` order, cross-part edges dropped on an inductive split (appended nodes lie in no part, so
    theirs go too, as ``nodedp.methods.gnn.full_graph_predict`` reads them), then out-degrees bounded with the
    ``bounded`` artifact's public kind, bound and seed (None: no bounding, edge level). The per-edge hashes of
    the sampling do not depend on the node count, so on the run's own input this gives the artifact's edges.
    ``num_nodes``: the run's input's node count, the least ``graph`` may have."""
    if graph.num_nodes < num_nodes:
        raise ValueError(
            f"predict needs a graph extending the run's input of {num_nodes} nodes, got {graph.num_nodes} nodes"
        )
    edges = graph.edge_index
    if split.setting == "inductive":
        edges = remove_cross_split_edges(edges, split)
    if bounded is not None:
        edges = bound_degree(
            edges,
            kind=bounded["kind"],
            num_nodes=graph.num_nodes,
            max_degree=int(bounded["bound"]),
            seed=int(bounded["seed"]),
        )
    return edges


def _schedule(plan: ApPlan, *, stage: int, epochs: int, num_train: int, generator: torch.Generator) -> Batches:
    if plan.privacy is not None:
        assert plan.sampling_rate is not None  # a private plan samples its stages
        steps = plan.stage_steps[stage]
        return poisson_batches(num_train, sampling_rate=plan.sampling_rate, steps=steps, generator=generator)
    return full_batches(num_train, epochs=epochs, device=generator.device)  # as the papers at edge level


@dataclass(frozen=True)
class ApRun:
    """One GAP or ProGAP run executing its plan: what all its stages share (the plan, the cell, its inputs and
    hyperparameters, the noise stream and the device)."""

    plan: ApPlan
    inputs: RunInputs
    spec: RunSpec
    hp: ApHparams
    generator: torch.Generator
    device: torch.device

    @classmethod
    def start(
        cls, inputs: RunInputs, spec: RunSpec, hp: ApHparams, *, level: str, planner: Callable[..., Plan]
    ) -> ApRun:
        """Seed the run, pick its device and execute ``planner``'s plan (``execute_plan``) at ``level``."""
        generator = seed_everything(spec.seed)
        device = resolve_device(spec.device)
        plan = execute_plan(inputs, spec, hp, level=level, planner=planner)
        return cls(plan, inputs, spec, hp, generator, device)

    def predict(self, forward: Callable[[Tensor, NAP, Tensor], Tensor]) -> Callable[..., Tensor]:
        """``RunResult.predict``: ``forward(x, nap, edges)``, the method's inference from features through its hop
        aggregations, given the graph's features, a noise-free NAP with the run's row clip R and the graph's edges
        (``inference_edges``). Keeps the split's part ids and the input's node count, never its edges or
        features."""
        plan, device = self.plan, self.device
        bounded = self.inputs.structure["out-degree"] if plan.level == "node" else None
        split, num_nodes = self.inputs.split, self.inputs.graph.num_nodes
        # Noise-free on purpose (docs/design/methods.md); its own counter, so the run's K queries stay K.
        noise_free = NAP(level="none", row_clip=plan.nap.row_clip, noise_multiplier=0.0)

        def predict(graph: Data, parts: Split | None = None) -> Tensor:  # parts: the given graph's split
            part = split if parts is None else parts
            edges = inference_edges(graph, split=part, num_nodes=num_nodes, bounded=bounded)
            return forward(graph.x.to(device), noise_free, edges.to(device))

        return predict

    def train_stage(
        self,
        model: nn.Module,
        features: Callable[[Tensor], Tensor | tuple[Tensor, ...]],
        *,
        stage: int,
        epochs: int,
        final: bool = False,
        predict: Callable[[Data], Tensor] | None = None,
    ) -> RunResult | None:
        """Train one stage through the one loop; the final stage also evaluates and returns the RunResult.

        ``features(nodes)`` gives the model's inputs of those nodes (their own rows and cached aggregates);
        ``predict`` (final stage only, from ``predict``) becomes the result's.
        """
        plan, spec, device, generator = self.plan, self.spec, self.device, self.generator
        split, y = self.inputs.split, self.inputs.graph.y.to(device)
        batches = _schedule(plan, stage=stage, epochs=epochs, num_train=split.train.numel(), generator=generator)
        privacy = None if plan.privacy is None else plan.privacy[stage]
        optim = self.hp.optim_config()
        if final:
            return fit_node_classifier(
                model,
                inputs_of=features,
                y=y,
                split=split,
                spec=spec,
                optim=optim,
                batches=batches,
                privacy=privacy,
                ledger=plan.ledger,
                generator=generator,
                device=device,
                predict=predict,
            )
        train_nodes = split.train.to(device)
        train_model(
            model,
            batch_fn=lambda idx: (features(train_nodes[idx.to(device)]), y[train_nodes[idx.to(device)]]),
            batches=batches,
            optim=optim,
            privacy=privacy,
            generator=generator,
            device=device,
            progress=spec.progress and f"{spec.method} {spec.dataset} stage {stage}",
        )
        return None

    def finish(self, result: RunResult, *, started: float) -> RunResult:
        """The final stage's result with the whole run's training time and the NAP counters."""
        plan = self.plan
        if plan.nap.calls != plan.nap_queries:
            raise RuntimeError(f"NAP was queried {plan.nap.calls} times, the ledger charges {plan.nap_queries}")
        return dataclasses.replace(
            result,
            train_seconds=time.perf_counter() - started,
            details={**result.details, "nap_queries": plan.nap.calls, "nap_noise_std": plan.nap.noise_std},
        )
