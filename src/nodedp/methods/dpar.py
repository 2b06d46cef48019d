"""DPAR (Zhang et al., KDD 2024): DP top-K approximate personalized PageRank + DP-SGD.

`dpar-em0`, `dpar-em1`, `dpar-gm`, the Features baseline `dpar-features` and the non-private `dpar-nodp`, in two
stages: ``build_dp_appr`` (verb ``dp-appr``) releases M DP-APPR rows of the sources ranked by a random priority in a
node sample of rate q' (a structure artifact with its own ledger); ``run_dpar`` (verb ``train``) trains PPRGo's model
with Poisson DP-SGD on the sample's examples (``training_examples``), each node in at most d = max_rows + 2 of them.
Both execute the torch-free plans of ``nodedp.plans.dpar``. The coupling proof of d (``remove_coupled``), the
accounting, Features and reference mode: docs/design/methods.md, section `nodedp.methods.dpar`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from nodedp.accounting import Ledger
from nodedp.accounting.hypergeometric import SELF_ONLY
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.dpar import (
    ARTIFACT_KIND,
    FEATURES,
    OPTIONS,
    DparHparams,
    appr_spec,
)
from nodedp.data import remove_cross_split_edges
from nodedp.mechanisms.dp_appr import cap_row_occurrences, clip_columns_l1, dp_appr_em, dp_appr_gm
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.plans import PublicInputs
from nodedp.plans.dpar import (
    SOURCE_RULE,
    plan_dp_appr,
    plan_dpar,
    sgd_schedule,
)
from nodedp.plans.dpsgd import privacy_from_record
from nodedp.structure import appr_push
from nodedp.train import make_generator, poisson_batches, resolve_device, seed_everything

__all__ = [
    "build_dp_appr",
    "rank_sources",
    "remove_coupled",
    "run_dpar",
    "source_priority",
    "training_examples",
]

# The artifact's own stream: never the training seed's (batches must not correlate with the node sample).
_ARTIFACT_STREAM = 1 << 40


def _row_width(option: str, hp: DparHparams) -> int:
    """Entries per training example: K, or 1 for Features (every example is its node's self row)."""
    return 1 if option == FEATURES else hp.k


def source_priority(num_train: int, *, generator: torch.Generator) -> Tensor:
    """A uniformly random priority per training position (a permutation of 0..num_train − 1), drawn
    independently of the data: the sources are the sampled nodes of smallest priority."""
    return torch.randperm(num_train, generator=generator)


def rank_sources(priority: Tensor, *, num_rows: int) -> Tensor:
    """Positions of the ≤ ``num_rows`` smallest of ``priority`` (distinct; one per sampled node), smallest
    first: the sampled node at the i-th of them computes DP-APPR row i."""
    return priority.argsort()[:num_rows]


def remove_coupled(sample: Tensor, priority: Tensor, node: int, *, num_rows: int) -> tuple[Tensor, Tensor]:
    """S' = ``sample`` ∖ {``node``} and its priorities under the coupling ψ (docs/design/methods.md).

    If ``node`` is one of the m = min(num_rows, |S|) sources, the node that
    fills its row (rank num_rows + 1, or the last source when |S| ≤ num_rows)
    takes its priority, so every other source keeps its row. Over uniform
    priorities the order of S' this gives is uniform (each order of S' comes
    from exactly |S| orders of S), as the mechanism would draw it for S'.
    """
    at = (sample == node).nonzero().flatten()
    if at.numel() != 1:
        raise ValueError(f"node {node} is not in the sample")
    i, n = int(at), sample.numel()
    order = priority.argsort()
    moved = priority.clone()
    if int((order == i).nonzero()) < min(num_rows, n):
        moved[order[num_rows] if n > num_rows else order[n - 1]] = priority[i]
    keep = torch.arange(n) != i
    return sample[keep], moved[keep]


def build_dp_appr(
    graph: Any, split: Any, spec: RunSpec, hp: DparHparams, *, public: PublicInputs | None = None
) -> dict[str, Any]:
    """Stage 1 (docs/design/methods.md): the DP-APPR artifact of the cell ``spec``, its ledger as JSON under "ledger".

    The ledger and the noise are ``plan_dp_appr``'s (``nodedp.plans.dpar``), planned from public inputs before
    the graph is read: ``public`` (default: ``spec.dataset``, the graph's node count and the split's training-set
    size). In reference mode (``hp.accounting == "paper"``) the noise is ``paper_noise``'s for the claimed
    (``spec.target_epsilon``, ``paper_delta(dataset, …)``), the dataset naming Table 1's δ (an empty name: §4.1's
    rule), and the ledger carries the claim.

    Features (``dpar-features``): the node sample alone, drawn exactly as the other options draw it; no
    sources, no released rows (``sources``, ``index`` and ``value`` empty) and a ledger with no mechanisms
    (with the claim in reference mode): all of ε is DP-SGD's.
    """
    train = split.train
    if public is None:
        public = PublicInputs(
            dataset=spec.dataset,
            num_nodes=int(graph.num_nodes),
            num_train=int(train.numel()),
            num_features=0,
            num_classes=0,
            setting=getattr(split, "setting", "transductive"),
        )
    method, seed = spec.method, spec.seed
    run = dataclasses.replace(spec, dataset=public.dataset)
    plan = plan_dp_appr(public, run, hp, method=method)  # before any private data is read
    ledger, appr, option = plan.ledger, plan.parts["spec"], plan.parts["option"]
    generator = make_generator(seed + _ARTIFACT_STREAM)
    num_train = train.numel()
    priority = source_priority(num_train, generator=generator)  # before the sample: independent of it
    kept = torch.rand(num_train, generator=generator) < hp.sample_rate
    sample, sample_priority = train[kept], priority[kept]

    def artifact(**released: Any) -> dict[str, Any]:
        return {
            "kind": ARTIFACT_KIND,
            "method": method,
            "spec": appr,
            "seed": seed,
            "target_epsilon": spec.target_epsilon,
            "target_delta": spec.target_delta,
            "accountant": spec.accountant,
            "sample": sample,
            **released,
            "noise": plan.parts["noise"],
            "claimed_epsilon_on_sample": plan.parts["claimed_epsilon_on_sample"],
            "ledger": json.dumps(ledger.to_dict()),
        }

    if option == FEATURES:
        # Nothing is released but the sample, whose rate the ledger carries; DP-SGD's record joins it in training.
        width = _row_width(option, hp)
        return artifact(
            source_rule=SELF_ONLY,
            sources=sample[:0],
            index=torch.zeros(0, width, dtype=torch.long),
            value=torch.zeros(0, width),
            appr_seconds=0.0,
        )
    sources = rank_sources(sample_priority, num_rows=plan.parts["num_rows"])
    scores, appr_seconds = _appr_scores(graph, train, kept, sample, sources, hp, num_rows=plan.parts["num_rows"])
    rows = _release_rows(scores, option, hp, noise=plan.parts["noise"], clip=plan.parts["clip"], generator=generator)
    columns = rows.abs().topk(hp.k, dim=1).indices  # the K released entries (zeros where the cap dropped one)
    # the sources are ``rank_sources`` of ``source_priority``, in row order
    return artifact(
        source_priority=sample_priority,
        source_rule=SOURCE_RULE,
        sources=sample[sources],
        index=train[columns],
        value=rows.gather(1, columns).float(),
        appr_seconds=appr_seconds,
    )


def _appr_scores(
    graph: Any, train: Tensor, kept: Tensor, sample: Tensor, sources: Tensor, hp: DparHparams, *, num_rows: int
) -> tuple[Tensor, float]:
    """APPR of each source on the sample's induced graph, as M × |train| scores over the public column universe
    (the training ids, in order; nodes outside the sample score 0, rows beyond the sources are empty), and the
    seconds APPR took."""
    position = torch.full((graph.num_nodes,), -1, dtype=torch.long)
    position[sample] = torch.arange(sample.numel())
    src, dst = graph.edge_index
    inside = (position[src] >= 0) & (position[dst] >= 0)
    local_edges = torch.stack([position[src[inside]], position[dst[inside]]])
    start = time.perf_counter()
    appr = appr_push(local_edges, num_nodes=sample.numel(), sources=sources, alpha=hp.alpha, rho=hp.rho, tol=hp.tol)
    appr_seconds = time.perf_counter() - start
    scores = torch.zeros(num_rows, train.numel(), dtype=torch.float64)  # columns: the training ids, in order
    scores[: sources.numel(), kept.nonzero().squeeze(1)] = appr.to_dense()
    return scores, appr_seconds


def _release_rows(
    scores: Tensor,
    option: str,
    hp: DparHparams,
    *,
    noise: Mapping[str, Any],
    clip: Any,
    generator: torch.Generator,
) -> Tensor:
    """DP-APPR of the option (Gaussian, or the exponential mechanism's top-K; the exact top-K without privacy),
    then every column capped to ``max_rows`` rows (post-processing)."""
    if option == "gm":
        rows = dp_appr_gm(scores, k=hp.k, noise_multiplier=noise["noise_multiplier"], clip=clip, generator=generator)
    elif option != "nodp":
        rows = dp_appr_em(
            scores,
            k=hp.k,
            epsilon=noise["epsilon"],
            clip=clip,
            option=option,
            generator=generator,
            epsilon_value=noise.get("epsilon_value"),
        )
    else:
        top = scores.topk(hp.k, dim=1)
        rows = torch.zeros_like(scores).scatter_(1, top.indices, top.values)
    return cap_row_occurrences(rows, max_rows=hp.max_rows, generator=generator)


def training_examples(
    sample: Tensor, sources: Tensor, index: Tensor, value: Tensor, *, num_nodes: int, k: int, tau: float
) -> tuple[Tensor, Tensor]:
    """Neighbour positions [n, K] into ``sample`` and weights [n, K] of every sampled node's training example.

    ``sources`` are the node ids of the first rows' sources, in row order;
    ``index`` / ``value`` [M, K] the released matrix (node ids, values). A
    source's example is its row, any other node's is itself with weight 1
    (with no sources, as for Features, every example is its self row).
    Algorithm 2, line 3: the columns of Π, the released matrix and all its M
    rows, to ℓ1 ≤ τ; the factors depend on the release alone, so removing a
    node moves no example except those docs/design/methods.md counts.
    """
    n = sample.numel()
    position = torch.full((num_nodes,), -1, dtype=torch.long)
    position[sample] = torch.arange(n)
    clipped = clip_columns_l1(index, value.float(), num_columns=num_nodes, tau=tau)
    nbr = torch.arange(n).unsqueeze(1).repeat(1, k)  # padding points at the node itself, weight 0
    weight = torch.zeros(n, k)
    weight[:, 0] = 1.0  # a non-source's row is the node itself
    rows = position[sources]
    cols = position[index[: rows.numel()]]
    nbr[rows] = torch.where(cols >= 0, cols, rows.unsqueeze(1))
    weight[rows] = clipped[: rows.numel()] * (cols >= 0)  # entries outside the sample hold no data: dropped
    return nbr, weight


def _training_rows(artifact: Mapping[str, Any], *, num_nodes: int, k: int, tau: float) -> tuple[Tensor, Tensor]:
    """``training_examples`` of an artifact."""
    return training_examples(
        artifact["sample"], artifact["sources"], artifact["index"], artifact["value"], num_nodes=num_nodes, k=k, tau=tau
    )


def _check_artifact(
    artifact: Mapping[str, Any] | None, spec: RunSpec, method: str, hp: DparHparams
) -> Mapping[str, Any]:
    if artifact is None:
        raise ValueError(
            f"{spec.method} needs its {ARTIFACT_KIND} structure artifact; build it with "
            f"`python -m nodedp dp-appr` (the workflow's dp_appr rule does)"
        )
    expected = {
        "spec": appr_spec(method, hp),
        "seed": spec.seed,
        "target_epsilon": spec.target_epsilon,
        "target_delta": spec.target_delta,
        "accountant": spec.accountant,
    }
    wrong = {key: (artifact.get(key), value) for key, value in expected.items() if artifact.get(key) != value}
    if wrong:
        raise ValueError(
            f"{spec.method}: the {ARTIFACT_KIND} artifact was built for other settings (artifact, run): {wrong}"
        )
    return artifact


def _check_artifact_ledger(artifact: Mapping[str, Any], planned: Ledger, spec: RunSpec) -> None:
    """The artifact's ledger must be the one its plan gives (``plan_dp_appr``), field for field."""
    stated = json.loads(artifact["ledger"])
    expected = json.loads(json.dumps(planned.to_dict()))
    if stated != expected:
        fields = sorted(key for key in set(stated) | set(expected) if stated.get(key) != expected.get(key))
        raise ValueError(
            f"{spec.method}: the {ARTIFACT_KIND} artifact's ledger is not the one its plan gives "
            f"(fields {fields}); rebuild it with `python -m nodedp dp-appr`"
        )


def run_dpar(inputs: RunInputs, spec: RunSpec, hp: DparHparams, *, method: str) -> RunResult:
    artifact = _check_artifact(inputs.structure.get(ARTIFACT_KIND), spec, method, hp)
    option = OPTIONS[method]
    graph, split = inputs.graph, inputs.split
    ledger, rate, steps, privacy, details = _run_plan(inputs, spec, hp, artifact, method=method)
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    sample = artifact["sample"]
    n = sample.numel()
    if n == 0:
        raise ValueError(f"the node sample (rate {hp.sample_rate}) of {split.train.numel()} training nodes is empty")
    nbr, weight = _training_rows(artifact, num_nodes=graph.num_nodes, k=_row_width(option, hp), tau=hp.tau)
    x_sample = graph.x[sample].to(device)
    nbr, weight = nbr.to(device), weight.to(device)
    from nodedp.models import PPRGo  # here: the dp-appr verb, which builds artifacts only, skips torch_geometric

    model = PPRGo(graph.num_features, hp.hidden_dim, inputs.num_classes, dropout=hp.dropout).to(device)
    predict = _inference(model, hp, split=split, device=device)
    logits: list[Tensor] = []

    def logits_of(nodes: Tensor) -> Tensor:
        if not logits:  # one power iteration for every part, after training
            logits.append(predict(graph))
        return logits[0][nodes]

    result = fit_node_classifier(
        model,
        inputs_of=lambda nodes: nodes,
        example_inputs=lambda idx: (x_sample[nbr[idx]], weight[idx]),
        example_nodes=sample,
        logits_of=logits_of,
        y=graph.y.to(device),
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=poisson_batches(n, sampling_rate=rate, steps=steps, generator=generator),
        privacy=privacy,
        ledger=ledger,
        generator=generator,
        device=device,
        predict=predict,
    )
    details |= {
        "sampling_rate": rate,
        "dp_appr_noise": dict(artifact["noise"]),
        "appr_seconds": artifact["appr_seconds"],
    }
    return RunResult(
        val=result.val,
        test=result.test,
        ledger=result.ledger,
        train_seconds=result.train_seconds,
        details={**result.details, **details},
        predict=result.predict,
    )


def _run_plan(
    inputs: RunInputs, spec: RunSpec, hp: DparHparams, artifact: Mapping[str, Any], *, method: str
) -> tuple[Ledger, float, int, Any, dict[str, Any]]:
    """(ledger, Poisson rate, steps, DP-SGD's privacy config or None, details): the plan first, from public inputs
    alone; the artifact must hold the ledger the plan expects of it. ``dpar-nodp``: the empty ledger."""
    if OPTIONS[method] == "nodp":
        rate, steps = sgd_schedule(hp, inputs.split.train.numel())
        return Ledger.non_private(), rate, steps, None, {}
    plan = plan_dpar(PublicInputs.from_run(inputs, spec), spec, hp, method=method)
    _check_artifact_ledger(artifact, plan.parts["appr"].ledger, spec)
    ledger, rate, steps = plan.ledger, plan.parts["sampling_rate"], plan.parts["steps"]
    privacy = privacy_from_record(ledger.mechanisms[-1], expected_batch_size=hp.batch_size)
    return ledger, rate, steps, privacy, dict(plan.parts["details"])


def _inference(model: Any, hp: DparHparams, *, split: Any, device: torch.device) -> Callable[..., Tensor]:
    """``RunResult.predict``: §4's inference with the trained model on a given graph."""

    def predict(other: Any, parts: Any = None) -> Tensor:
        """§4's inference on ``other``: f(X) for every node, then P power-iteration steps over its edges; the
        evaluation is this on the input graph. Inductive splits keep each part's own edges, by ``parts``
        (``other``'s split; default the run's (public) split: nodes it does not cover, as the extra nodes of a
        larger graph, keep none, so they read their features alone). Reads ``other``, the weights and public
        settings only."""
        parts = split if parts is None else parts
        edges = other.edge_index
        if parts.setting == "inductive":
            edges = remove_cross_split_edges(edges, parts)
        return model.propagate(other.x.to(device), edges.to(device), alpha=hp.alpha, steps=hp.power_steps)

    return predict
