"""NIP-GNN (node-influence-adaptive Laplace noise), and through its hyperparameters its ablations.

Pure ε, transductive, in stages: (1) the degree-bounded graph randomized and resampled (ε_B); (2) TNIE influence
and NAP budgets on the released graph (post-processing); (3) Laplace NAP of the features with those budgets (ε_A);
(4) M-ary randomized response on the labels (ε_C); (5) ACA over the released graph, then an MLP. The ledger is
``nodedp.plans.nip_gnn``'s; ``exact`` runs release parts without their mechanism (diagnosis, never private).
Theorem 3's constraint and its worst-case scaling, reference mode, diagnosis and inference on another graph:
docs/design/methods.md, section `nodedp.methods.nip_gnn`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import Tensor

from nodedp.accounting.nip_bounds import worst_case_budget_ratio
from nodedp.contract.base import RunInputs, RunResult, RunSpec
from nodedp.contract.specs.nip_gnn import (
    NipHparams,
    exact_parts,
)
from nodedp.data import bound_undirected_degree, remove_cross_split_edges
from nodedp.mechanisms import (
    degree_preserving_randomization,
    influence_ranks,
    laplace_sum_aggregate,
    nip_budget_weights,
    randomize_labels,
    sum_aggregate,
    theorem3_ratio,
)
from nodedp.mechanisms.nip import ScaledBudgets, paper_sampling_probability, scale_budgets_to_worst_case
from nodedp.mechanisms.nip_sparse import randomize_and_resample, randomize_and_resample_with_probabilities
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.models import MLP, aca_propagate
from nodedp.plans import PublicInputs
from nodedp.plans.nip_gnn import NipReleased, nip_noise, plan_nip_gnn
from nodedp.train import resolve_device, seed_everything, shuffled_epochs

__all__ = [
    "nap_budgets",
    "paper_budgets",
    "run_nip_gnn",
    "scheme_budgets",
    "tnie_scores",
]


def tnie_scores(edge_index: Tensor, *, num_nodes: int, layers: int, lam: float, phi: float) -> Tensor:
    """TNIE (Eq. 7-8) with h⁰ = 1: T symmetric-normalized aggregations, times σ(λ·log D_u + φ)."""
    src, dst = edge_index
    degree = torch.bincount(dst, minlength=num_nodes).to(torch.float64)
    norm = degree.clamp(min=1).rsqrt()
    h = torch.ones(num_nodes, dtype=torch.float64)
    for _ in range(layers):
        h = torch.zeros_like(h).index_add_(0, dst, h[src] * norm[src] * norm[dst])
    return torch.sigmoid(lam * degree.clamp(min=1).log() + phi) * h


def scheme_budgets(
    released: Tensor, *, num_nodes: int, max_degree: int, hp: NipHparams, seed: int
) -> tuple[Tensor, Tensor]:
    """The released graph re-bounded to ``max_degree`` (public ``seed``) and the `budgets` scheme's β on it,
    unscaled."""
    rebounded = bound_undirected_degree(released, num_nodes=num_nodes, max_degree=max_degree, seed=seed)
    if hp.budgets == "uniform":
        return rebounded, torch.ones(num_nodes, dtype=torch.float64)
    ranks = influence_ranks(
        tnie_scores(rebounded, num_nodes=num_nodes, layers=hp.tnie_layers, lam=hp.tnie_lambda, phi=hp.tnie_phi)
    )
    return rebounded, nip_budget_weights(
        rebounded, num_nodes=num_nodes, ranks=ranks, max_degree=max_degree, scheme=hp.budgets
    )


def nap_budgets(
    released: Tensor, *, num_nodes: int, max_degree: int, hp: NipHparams, seed: int
) -> tuple[Tensor, ScaledBudgets]:
    """Step 2: NAP's budget weights from the released graph alone (post-processing of the ε_B release).

    Returns the released graph re-bounded to D_max (public ``seed``) and the
    scheme's β on it divided by its worst-case Theorem 3 ratio over all graphs
    with degrees ≤ D_max, so NAP costs ≤ ε_A whatever the private graph.
    """
    rebounded, beta = scheme_budgets(released, num_nodes=num_nodes, max_degree=max_degree, hp=hp, seed=seed)
    return rebounded, scale_budgets_to_worst_case(beta, max_degree=max_degree)


def paper_budgets(
    released: Tensor, *, num_nodes: int, max_degree: int, paper_max_degree: int, hp: NipHparams, seed: int
) -> tuple[Tensor, ScaledBudgets]:
    """Step 2 of a reference run: Eq. 11 as printed (or uniform β) at the paper's D_max, *not* scaled.

    The released graph is re-bounded to the paper's D_max = ``paper_max_degree``
    (Eq. 11 needs D_k ≤ D_max). ``largest`` and ``worst_case_ratio`` are taken
    over every graph with degrees ≤ ``max_degree``, the bound actually enforced;
    ``scale`` is 1, and the ratio may exceed 1 (the ledger charges it).
    """
    scheme = "uniform" if hp.budgets == "uniform" else "paper"
    rebounded, beta = scheme_budgets(
        released,
        num_nodes=num_nodes,
        max_degree=paper_max_degree,
        hp=dataclasses.replace(hp, budgets=scheme),
        seed=seed,
    )
    largest = tuple(beta.topk(min(max_degree + 1, num_nodes)).values.tolist())
    ratio = worst_case_budget_ratio(largest, max_degree=max_degree)
    return rebounded, ScaledBudgets(
        weights=beta, largest=largest, worst_case_ratio=ratio, worst_case_ratio_before_scaling=ratio, scale=1.0
    )


def run_nip_gnn(inputs: RunInputs, spec: RunSpec, hp: NipHparams) -> RunResult:
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    n = graph.num_nodes
    public = PublicInputs.from_run(inputs, spec)
    artifact = inputs.structure["degree"]
    paper = hp.accounting == "paper"
    bounded = artifact["edge_index"]
    noise, paper_max_degree = _noise(public, spec, hp, artifact, num_nodes=n)
    max_degree, noise_degree = noise.max_degree, noise.noise_degree
    eps_a = noise.epsilon_a

    exact = exact_parts(hp.exact)
    released = _release_edges(bounded, noise, hp, exact=exact, num_nodes=n, generator=generator, device=device)
    # 2. Budgets from the released graph, scaled to hold on every graph with degrees ≤ D_max (the paper's: unscaled).
    if paper:
        rebounded, budgets = paper_budgets(
            released, num_nodes=n, max_degree=max_degree, paper_max_degree=noise_degree, hp=hp, seed=spec.seed
        )
    else:
        rebounded, budgets = nap_budgets(released, num_nodes=n, max_degree=max_degree, hp=hp, seed=spec.seed)
    planned = _complete_plan(public, spec, hp, noise, budgets, paper_max_degree=paper_max_degree, artifact=artifact)
    ledger, actual = planned.ledger, planned.parts["actual"]
    epsilons = eps_a * budgets.weights
    released_ratio = theorem3_ratio(rebounded, num_nodes=n, epsilons=epsilons, epsilon_a=eps_a, max_degree=noise_degree)
    h0, noisy_y = _release_features_and_labels(
        inputs, bounded, noise, epsilons=epsilons, exact=exact, generator=generator
    )

    # 5. ACA over the released graph, then the MLP, trained without further noise (post-processing).
    features = aca_propagate(
        h0.to(device), released.to(device), hops=hp.hops, tau=hp.tau, adaptive=hp.aggregation == "aca"
    )
    model = MLP(features.size(1), hp.hidden_dim, inputs.num_classes, num_layers=2).to(device)
    predict = _inference(model, hp, split=split, max_degree=max_degree, bound_seed=int(artifact["seed"]), device=device)
    num_train = split.train.numel()
    batches = shuffled_epochs(num_train, batch_size=hp.batch_size, epochs=hp.epochs, generator=generator)
    result = fit_node_classifier(
        model,
        inputs_of=lambda nodes: features[nodes],
        y=graph.y.to(device),
        train_labels=noisy_y.to(device),
        split=split,
        spec=spec,
        optim=hp.optim_config(),
        batches=batches,
        privacy=None,  # every input is already private: training is post-processing
        ledger=ledger,
        generator=generator,
        device=device,
        predict=predict,
    )
    details = _details(noise, budgets, actual, exact=exact, released=released, released_ratio=released_ratio)
    return RunResult(
        val=result.val,
        test=result.test,
        ledger=ledger,
        train_seconds=result.train_seconds,
        details={**result.details, **details},
        predict=result.predict,
    )


def _noise(
    public: PublicInputs, spec: RunSpec, hp: NipHparams, artifact: Any, *, num_nodes: int
) -> tuple[Any, int | None]:
    """The plan's noise (``nip_noise``: public but for D_p; its budgets come from step 1's release) and, in
    reference mode, the paper's D_max = D_p, the private (bounded) graph's maximum degree (an uncharged read);
    checks that the degree artifact was bounded to the plan's public D_max."""
    bounded = artifact["edge_index"]
    paper_max_degree = (
        (max(1, int(torch.bincount(bounded[0], minlength=num_nodes).max())) if bounded.numel() else 1)
        if hp.accounting == "paper"
        else None
    )
    noise = nip_noise(public, spec, hp, paper_max_degree=paper_max_degree)
    max_degree = noise.max_degree
    if int(artifact["bound"]) != max_degree:
        raise ValueError(
            f"max_degree is {max_degree} (the plan's public D_max: the hyperparameter's, else the "
            f"dataset's) but the degree artifact was bounded to {artifact['bound']}; build it with "
            f"`bound-degree --kind degree --bound {max_degree}` (the workflow does)"
        )
    return noise, paper_max_degree


def _release_features_and_labels(
    inputs: RunInputs, bounded: Tensor, noise: Any, *, epsilons: Tensor, exact: Any, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Steps 3 and 4: NAP (ε_A) on the private bounded graph, Laplace 2·D/ε_u on row u (D the paper's D_p in
    reference mode), then M-ary randomized response on the labels (ε_C); the ``exact`` parts released as they
    are."""
    graph = inputs.graph
    if "features" in exact:
        h0 = sum_aggregate(graph.x, bounded)
    else:
        h0 = laplace_sum_aggregate(
            graph.x, bounded, epsilons=epsilons, max_degree=noise.noise_degree, generator=generator
        )
    noisy_y = (
        graph.y
        if "labels" in exact
        else randomize_labels(graph.y, num_classes=inputs.num_classes, epsilon=noise.epsilon_c, generator=generator)
    )
    return h0, noisy_y


def _release_edges(
    bounded: Tensor,
    noise: Any,
    hp: NipHparams,
    *,
    exact: Any,
    num_nodes: int,
    generator: torch.Generator,
    device: torch.device,
) -> Tensor:
    """Step 1, edges (ε_B): the bounded graph randomized with keep parameter s, then resampled (post-processing;
    in reference mode Eq. 12 reads the private degrees). With ``exact`` "edges", the bounded graph itself."""
    n, s = num_nodes, noise.s
    if "edges" in exact:
        return bounded
    if not hp.resample:  # "w/o D-s": the randomized graph itself, ≈ s·N²/4 edges
        return degree_preserving_randomization(bounded, num_nodes=n, s=s, generator=generator)
    if hp.accounting == "paper":
        private_degree = torch.bincount(bounded[1], minlength=n).to(torch.float64)
        return randomize_and_resample_with_probabilities(
            bounded,
            paper_sampling_probability(private_degree, num_nodes=n, s=s),
            num_nodes=n,
            s=s,
            generator=generator,
            device=device,
        )
    # unbiased but noisy degree estimates, clamped to [0, D_max], where every true (bounded) degree lies
    return randomize_and_resample(
        bounded, num_nodes=n, s=s, max_degree=noise.max_degree, generator=generator, device=device
    )


def _complete_plan(
    public: PublicInputs,
    spec: RunSpec,
    hp: NipHparams,
    noise: Any,
    budgets: ScaledBudgets,
    *,
    paper_max_degree: int | None,
    artifact: Any,
) -> Any:
    """The plan, complete: every record from public inputs, the budgets and D_p as released and read; checked
    against the noise step 1 drew and the degree artifact's identity bound."""
    planned = plan_nip_gnn(
        public,
        spec,
        hp,
        released=NipReleased(
            largest_budget_weights=budgets.largest,
            worst_case_ratio_before_scaling=budgets.worst_case_ratio_before_scaling,
            budget_scale=budgets.scale,
            paper_max_degree=paper_max_degree,
        ),
    )
    ledger = planned.ledger
    if planned.parts["noise"] != noise:
        raise AssertionError("the plan's noise is not the noise step 1 drew")
    if int(artifact.get("identity_bound", -1)) != ledger.degree_bound.identity_bound:
        raise ValueError(
            f"the degree artifact's identity bound {artifact.get('identity_bound')!r} is not the "
            f"plan's {ledger.degree_bound.identity_bound}; rebuild it with `python -m nodedp "
            "bound-degree` (the workflow's bound_degree rule)"
        )
    return planned


def _inference(
    model: torch.nn.Module, hp: NipHparams, *, split: Any, max_degree: int, bound_seed: int, device: torch.device
) -> Any:
    """``RunResult.predict``: the trained MLP on ACA features recomputed on a given graph."""

    def predict(other: Any, parts: Any = None) -> Tensor:
        """The MLP on ACA features recomputed on ``other`` (docs/design/methods.md, "Inference on another graph"):
        ``other`` degree-bounded to D_max with the artifact's seed, H⁰ its exact sum aggregation (NAP without
        its Laplace noise), ACA over those bounded edges (not randomized). An inductive split (``parts``,
        ``other``'s; default the run's) first drops the cross-part edges, as the workflow does before bounding.
        Reads ``other``, the weights and public settings only: neither the private bounded graph nor the
        released H⁰ or graph."""
        parts = split if parts is None else parts
        edges = other.edge_index
        if parts.setting == "inductive":
            edges = remove_cross_split_edges(edges, parts)
        edges = bound_undirected_degree(edges, num_nodes=other.num_nodes, max_degree=max_degree, seed=bound_seed)
        inputs = aca_propagate(
            sum_aggregate(other.x, edges).to(device),
            edges.to(device),
            hops=hp.hops,
            tau=hp.tau,
            adaptive=hp.aggregation == "aca",
        )
        return model(inputs)

    return predict


def _details(
    noise: Any, budgets: ScaledBudgets, actual: Any, *, exact: Any, released: Tensor, released_ratio: float
) -> dict[str, Any]:
    """The run's details, all from released data: the private graph's own ratio (or edge count) would be an
    unaccounted release; reference runs add D_p (an uncharged read) and the actual ε's parts."""
    details: dict[str, Any] = {
        "epsilon_parts": {"nap": noise.epsilon_a, "edges": noise.epsilon_b, "labels": noise.epsilon_c},
        "keep_parameter_s": noise.s,
        # all from released data: the private graph's own ratio (or edge count) would be an unaccounted release
        "theorem3_ratio_released": released_ratio,
        "worst_case_ratio_before_scaling": budgets.worst_case_ratio_before_scaling,
        "budget_scale": budgets.scale,
        "budget_weight_mean": float(budgets.weights.mean()),
        "released_edges": int(released.size(1)),
        "exact": list(exact),
    }
    if actual is not None:
        details.update(
            {
                "paper_max_degree": noise.noise_degree,  # D_p, a private statistic: reference runs only
                "actual_epsilon_parts": {"nap": actual.nap, "edges": actual.edges, "labels": actual.labels},
                "charged_ratio": actual.charged_ratio,
            }
        )
    return details
