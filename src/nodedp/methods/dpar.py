"""DPAR (Zhang et al., KDD 2024): DP top-K approximate personalized PageRank + DP-SGD.

`dpar-em0`, `dpar-em1`, `dpar-gm`, the paper's "Features" baseline
`dpar-features` (below) and the non-private `dpar-nodp`, in two stages, which
are two rules of the DAG:

1. ``build_dp_appr`` (verb ``dp-appr``; a structure artifact with its own
   ledger, shared by every run with the same DP-APPR settings):
   * every training node is kept independently with probability q'
     (``sample_rate``, 9%); the sample S and its induced graph stay internal;
   * M sources (``num_sources``; 0: ⌈q'·|train|⌉): every training node holds
     a random priority (``source_priority``, drawn from the artifact's stream
     independently of the data and before the sample), and the sources are
     the M sampled nodes of smallest priority, the i-th of them computing row
     i (``rank_sources``);
   * APPR of each source on the sampled graph (ℓ1-regularized PageRank to
     ISTA's optimality conditions, ``nodedp.structure.appr_push``);
   * DP-APPR (Algorithm 1 option I/II, Algorithm 3) over a fixed, public
     column universe: all training node ids, so one node's presence never
     changes the candidate set (nodes outside S score 0). Rows beyond |S| are
     empty (scores 0) so that exactly M rows are always released;
   * each column is kept in at most ``max_rows`` rows (post-processing).
2. ``run_dpar`` (verb ``train``), ``training_examples``:
   * the examples are the nodes of S: a source's row is its DP-APPR row,
     every other node's row is the node itself with weight 1 (as in the
     reference code); Algorithm 2, line 3 clips the columns of Π, the released
     M × N DP-APPR matrix, to ℓ1 ≤ τ, so the column sums run over its M rows
     (the self rows of non-sources are not rows of Π and do not enter); then
     entries outside S are dropped (they hold no data of the sample);
   * PPRGo's model (``nodedp.models.PPRGo``): an MLP on features, logits
     aggregated with the row's weights;
   * DP-SGD with Poisson batches of rate γ = batch_size/(q'·|train|) (public),
     per-row clipping to C. One node changes at most d = max_rows + 2
     examples (below), each by ≤ 2C, so the step is the Gaussian mixed over
     ρ ~ Binomial(d, γ) (``poisson_occurrence_gaussian_rdp``): Theorem 2's
     constants are unspecified, so it cannot calibrate noise;
   * inference: f(X) on the inference graph and P = ``power_steps`` steps of
     power iteration with teleport α (§4). Inductive splits infer on each
     part's own edges; transductive ones on the whole graph (not private,
     as in DP-GNN). ``RunResult.predict`` runs the same inference on a
     graph it is given (the audit's, canaries appended).

Why d = max_rows + 2 (ledger params ``max_occurrences``, ``max_rows`` and
``occurrence_rule`` = "ranked_sources"). Neighbouring samples are S and
S' = S ∖ {v}. No rule that picks sources from S for a FIXED priority can keep
every other source in its row under every removal (M = 2, priorities
a < b < c < d: removing a from {a, c, d} must put d in a's row, removing b
from {b, c, d} must put d in b's row, yet both leave {c, d}). So the argument
couples the priority draws instead (``remove_coupled``): if v has rank
j ≤ m = min(M, |S|), the node w of rank M + 1 (or, if |S| ≤ M, the source of
rank m) takes v's priority; otherwise nothing moves. Every order of S' is the
image of exactly |S| orders of S, so the coupled order of S' is uniform, as
the mechanism draws it: M(S) = E_π M_π(S), M(S') = E_π M_ψ(π)(S'), and by
the joint quasi-convexity of the Rényi divergence (joint convexity of the
hockey-stick divergence for (ε, δ) or PLD) a bound on every coupled pair
bounds the mixtures, in both directions. In a coupled pair every source other
than v keeps its row and w alone changes role, so:
* DP-APPR: every one of the M rows may still change arbitrarily (the graph
  changes, and rows j and m change source or become empty); its accounting
  charges each row its worst case over any two inputs in the clipped domain
  (entries in [0, C2], non-negative rows of ℓ2 ≤ C1), so nothing changes there;
* DP-SGD, conditional on the released (capped) matrix: v's example goes,
  w's example changes (itself → row j, or row m → row j), and the ≤ max_rows
  examples whose rows hold v lose that entry. No other example moves: the
  column factors are a function of the release alone. Hence d = max_rows + 2.
  (Had the column sums run over the n × n training matrix, with the self rows
  of non-sources, w's self weight leaving column w would rescale the ≤ max_rows
  rows holding w too: d = 2·max_rows + 2, for no gain in fidelity.)

Accounting. All mechanisms run on the sample, so the run's ledger has
``node_sample_rate`` = q': its mechanisms compose (RDP) to (ε_in, δ/q') and
the ledger charges ln(1 + q'(e^ε_in − 1)), δ. A ``ratio`` of ε_in =
ln(1 + (e^ε − 1)/q') goes to DP-APPR, calibrated alone; DP-SGD's noise is
then calibrated on the whole ledger (artifact records + DP-SGD) to the target.
The public reference code multiplies each part's ε by q' and never composes
them; its figures are recorded as ``claimed_epsilon`` in ``details``, computed
from public settings alone (DP-SGD's rate at the planned sample size
q'·|train|, the training-set size being public): no count of the realised
sample (|S|, the sources it held, empty rows) leaves a run.

Features (``dpar-features``, option "features"). §4's baseline "utilizes the
original DP-SGD to achieve node DP. Note that it is equal to the case where we
use a one-hot vector as each node's APPR vector in Algorithm 2": DPAR's own
pipeline (node sample at rate q', PPRGo's MLP, Poisson DP-SGD on the sample,
power-iteration inference) with no DP-APPR at all. Its artifact carries the
node sample alone, drawn from the artifact's stream exactly as the other
options draw it (the same sample as theirs for the same seed and q'), no
sources and no released rows, and a ledger with no mechanisms; its settings
are q' alone (``APPR_KEYS``). Every example is its node's self row (weight 1;
``training_examples`` with no sources, K = 1). Removing a node changes exactly
one example, its own (no row holds a column, no source is replaced): DP-SGD's
record charges d = 1 (``occurrence_rule`` "self_only", ``max_rows`` = 0), and
all of ε goes to DP-SGD (``ratio`` is not read): suite mode calibrates it on
the ledger alone; reference mode sizes it with DP-APPR's share 0
(``FEATURES_RATIO``: ε/q' and the whole δ/q' on the sample, ``PAPER_FEATURES_RULE``).

Reference mode (``accounting: paper``, runs ``dpar-*@paper``). The noise is
what the paper's own accounting gives the claimed (ε, δ): ``paper_noise``
(``nodedp.accounting.dpar``: Theorems 1 and 3 for DP-APPR at ratio·ε/q', the
public code's DP-SGD accountant, one example per node, at (1 − ratio)·ε/q';
δ from ``paper_delta``, half to each part; Features: ε/q' and all of δ to
DP-SGD). The mechanisms that run are those of suite mode and the ledgers
record them alike (Gumbel / Laplace / Gaussian DP-APPR, d = max_rows + 2
occurrences (Features: no DP-APPR, d = 1), amplification by the node sample),
with the paper's ``Claim``, so their ε is the actual one for that noise
(``reference_ledger`` computes it without running).
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import torch
from torch import Tensor

from nodedp.accounting import (
    Claim,
    Ledger,
    MechanismRecord,
    calibrate_ledger,
    claimed_dp_appr_epsilon,
    dp_appr_plan,
    epsilon_of,
    inner_budget,
    poisson_occurrence_gaussian_params,
    reference_understated,
    subsampled_gaussian_event,
)
from nodedp.accounting.dpar import (
    FEATURES_RATIO,
    PAPER_DELTA_SHARE,
    PAPER_FEATURES_RULE,
    PAPER_RULE,
    PAPER_SOURCE,
    dp_appr_em_records,
    dp_appr_gm_record,
    paper_delta,
    paper_dp_appr_noise,
    paper_dp_sgd_noise_multiplier,
)
from nodedp.accounting.hypergeometric import RANKED_SOURCES, SELF_ONLY, occurrence_bound
from nodedp.data import remove_cross_split_edges
from nodedp.mechanisms.dp_appr import cap_row_occurrences, clip_columns_l1, dp_appr_em, dp_appr_gm
from nodedp.methods.base import RunInputs, RunResult, RunSpec
from nodedp.methods.dpsgd import privacy_from_record
from nodedp.methods.node_classifier import fit_node_classifier
from nodedp.methods.specs.dpar import (  # re-exported: the registry's, torch-free (planning keys artifacts)
    APPR_KEYS,
    ARTIFACT_KIND,
    FEATURES,
    OPTIONS,
    DparHparams,
    appr_spec,
)
from nodedp.structure import appr_push
from nodedp.train import make_generator, poisson_batches, resolve_device, seed_everything

__all__ = [
    "APPR_KEYS",
    "ARTIFACT_KIND",
    "FEATURES",
    "OPTIONS",
    "SOURCE_RULE",
    "DparHparams",
    "appr_spec",
    "build_dp_appr",
    "dp_sgd_record",
    "paper_claim",
    "paper_noise",
    "rank_sources",
    "reference_ledger",
    "remove_coupled",
    "run_dpar",
    "source_priority",
    "training_examples",
]

# The artifact's own stream: never the training seed's (batches must not correlate with the node sample).
_ARTIFACT_STREAM = 1 << 40
# How sources are chosen and how many examples one removal changes (module docstring).
SOURCE_RULE = RANKED_SOURCES


def _num_rows(hp: DparHparams, num_train: int) -> int:
    return hp.num_sources or max(1, math.ceil(hp.sample_rate * num_train))


def _sgd_schedule(hp: DparHparams, num_train: int) -> tuple[float, int]:
    """DP-SGD's public Poisson rate γ = batch_size/(q'·|train|) and its number of steps."""
    rate = min(1.0, hp.batch_size / (hp.sample_rate * num_train))
    return rate, hp.epochs * math.ceil(1 / rate)


def _private_option(method: str) -> str:
    if OPTIONS.get(method, "nodp") == "nodp":
        raise ValueError(f"{method!r} is not a private DPAR method; valid: "
                         f"{[m for m, o in OPTIONS.items() if o != 'nodp']}")
    return OPTIONS[method]


def _row_width(option: str, hp: DparHparams) -> int:
    """Entries per training example: K, or 1 for Features (every example is its node's self row)."""
    return 1 if option == FEATURES else hp.k


def _occurrence_rule(option: str, hp: DparHparams) -> tuple[str, int]:
    """DP-SGD's (``occurrence_rule``, ``max_rows``): Features' examples are self rows only, so no example holds
    another node (max_rows 0, d = 1); the DP-APPR options' ``SOURCE_RULE`` with the cap (d = max_rows + 2)."""
    return (SELF_ONLY, 0) if option == FEATURES else (SOURCE_RULE, hp.max_rows)


def _paper_ratio(option: str, hp: DparHparams) -> float:
    """DP-APPR's share of the claimed ε in the paper's accounting: ``ratio``, or none for Features."""
    return FEATURES_RATIO if option == FEATURES else hp.ratio


def _paper_dp_appr_noise(method: str, hp: DparHparams, *, num_train: int, epsilon: float,
                         delta: float) -> dict[str, float]:
    return paper_dp_appr_noise(option=_private_option(method), epsilon=epsilon, delta=delta, k=hp.k,
                               m=_num_rows(hp, num_train), sample_rate=hp.sample_rate, ratio=hp.ratio,
                               value_share=hp.value_share)


def paper_noise(method: str, hp: DparHparams, *, num_train: int, epsilon: float, delta: float) -> dict[str, Any]:
    """The noise DPAR's own accounting gives a run of ``method`` it claims is (``epsilon``, ``delta``)-DP.

    Pure: hyperparameters and the public number of training nodes only. "dp_appr": DP-APPR's noise
    (``paper_dp_appr_noise``: per-selection ``epsilon`` and em1's ``epsilon_value``, or GM's
    ``noise_multiplier`` of √2·C1; empty for Features, which runs none); "sgd_noise_multiplier": DP-SGD's
    (``paper_dp_sgd_noise_multiplier``) at the run's public Poisson rate and steps, with DP-APPR's share
    ``ratio`` of ε, or for Features ``FEATURES_RATIO`` = 0 (the whole ε and δ on DP-SGD).
    """
    option = _private_option(method)
    rate, steps = _sgd_schedule(hp, num_train)
    appr = ({} if option == FEATURES
            else _paper_dp_appr_noise(method, hp, num_train=num_train, epsilon=epsilon, delta=delta))
    return {
        "dp_appr": appr,
        "sgd_noise_multiplier": paper_dp_sgd_noise_multiplier(epsilon=epsilon, delta=delta,
                                                              sample_rate=hp.sample_rate,
                                                              ratio=_paper_ratio(option, hp),
                                                              sampling_rate=rate, steps=steps),
    }


def paper_claim(epsilon: float, delta: float, *, option: str | None = None) -> Claim:
    """What the paper states for a reference run's noise: (ε, δ) by ``PAPER_RULE`` (Features:
    ``PAPER_FEATURES_RULE``, DP-SGD alone)."""
    rule = PAPER_FEATURES_RULE if option == FEATURES else PAPER_RULE
    return Claim(epsilon=epsilon, delta=delta, rule=rule, source=PAPER_SOURCE)


def _dp_appr_records(option: str, noise: dict[str, float], *, k: int, m: int,
                     clip: float) -> tuple[MechanismRecord, ...]:
    """The ledger records of DP-APPR with ``noise`` (``dp_appr_plan``'s keys), as suite mode records them."""
    if option == "gm":
        return (dp_appr_gm_record(noise_multiplier=noise["noise_multiplier"], k=k, m=m, clip=clip),)
    return dp_appr_em_records(option=option, epsilon=noise["epsilon"], k=k, m=m, clip=clip,
                              epsilon_value=noise.get("epsilon_value"))


def dp_sgd_record(name: str, hp: DparHparams, *, option: str, sampling_rate: float, steps: int,
                  noise_multiplier: float) -> MechanismRecord:
    """DP-SGD's ledger record of a run of DPAR ``option``: the Gaussian mixed over ρ ~ Binomial(d, γ) changed
    examples, d = max_rows + 2 ("ranked_sources"), or d = 1 for Features ("self_only"; module docstring)."""
    rule, max_rows = _occurrence_rule(option, hp)
    occurrences = occurrence_bound(rule=rule, max_rows=max_rows)
    if option == FEATURES:
        reason = ("every training example is its node's own features and label with weight 1 (Algorithm 2 with "
                  "one-hot APPR rows: no DP-APPR matrix, no sources, no example holds another node), so "
                  "removing a node changes exactly d = 1 example, its own; it is clipped to C, so the gradient "
                  "sum moves by ≤ 2·C·ρ, ρ ~ Binomial(1, γ) in a Poisson batch")
    else:
        reason = (f"given the released DP-APPR matrix, removing a node changes at most d = max_rows + 2 = "
                  f"{occurrences} training examples: its own, the ≤ {max_rows} whose DP-APPR rows hold its "
                  "column, and that of the one node that takes its source row (sources: the sampled nodes of "
                  "smallest random priority, coupled so that every other source keeps its row; column ℓ1 "
                  "factors computed over the released rows alone); each is clipped to C, so the gradient sum "
                  "moves by ≤ 2·C·ρ, ρ ~ Binomial(d, γ) of them in a Poisson batch")
    return MechanismRecord(
        name=name,
        kind="poisson_occurrence_gaussian",
        touches=("features", "labels"),
        params=poisson_occurrence_gaussian_params(sampling_rate=sampling_rate, max_rows=max_rows,
                                                  noise_multiplier=noise_multiplier, clip_norm=hp.clip_norm,
                                                  steps=steps, occurrence_rule=rule),
        sensitivity=2 * hp.clip_norm * occurrences,
        sensitivity_reason=reason,
        dp_event=None,
    )


def reference_ledger(method: str, hp: DparHparams, *, num_train: int, target_epsilon: float, target_delta: float,
                     claimed_delta: float, accountant: str = "rdp") -> Ledger:
    """The ledger of a reference run of ``method`` (its noise ``paper_noise`` for the claimed
    (``target_epsilon``, ``claimed_delta``)), without running it: ``composed()`` is its actual ε at the
    suite's ``target_delta``, ``actual_claim_epsilon()`` at the paper's δ. Public sizes only."""
    option = _private_option(method)
    noise = paper_noise(method, hp, num_train=num_train, epsilon=target_epsilon, delta=claimed_delta)
    rate, steps = _sgd_schedule(hp, num_train)
    records = () if option == FEATURES else _dp_appr_records(option, noise["dp_appr"], k=hp.k,
                                                             m=_num_rows(hp, num_train),
                                                             clip=hp.gm_clip if option == "gm" else hp.em_clip)
    sgd = dp_sgd_record(f"dp-sgd:{method}@paper", hp, option=option, sampling_rate=rate, steps=steps,
                        noise_multiplier=noise["sgd_noise_multiplier"])
    return Ledger(level="node", target_epsilon=target_epsilon, target_delta=target_delta, mechanisms=(*records, sgd),
                  accountant=accountant, node_sample_rate=hp.sample_rate,
                  claim=paper_claim(target_epsilon, claimed_delta, option=option))


def source_priority(num_train: int, *, generator: torch.Generator) -> Tensor:
    """A uniformly random priority per training position (a permutation of 0..num_train − 1), drawn
    independently of the data: the sources are the sampled nodes of smallest priority."""
    return torch.randperm(num_train, generator=generator)


def rank_sources(priority: Tensor, *, num_rows: int) -> Tensor:
    """Positions of the ≤ ``num_rows`` smallest of ``priority`` (distinct; one per sampled node), smallest
    first: the sampled node at the i-th of them computes DP-APPR row i."""
    return priority.argsort()[:num_rows]


def remove_coupled(sample: Tensor, priority: Tensor, node: int, *, num_rows: int) -> tuple[Tensor, Tensor]:
    """S' = ``sample`` ∖ {``node``} and its priorities under the coupling ψ (module docstring).

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
    graph: Any,
    split: Any,
    *,
    method: str,
    hp: DparHparams,
    target_epsilon: float,
    target_delta: float,
    seed: int,
    accountant: str = "rdp",
    dataset: str | None = None,
) -> dict[str, Any]:
    """Stage 1 (module docstring): the DP-APPR artifact, its ledger as JSON under "ledger".

    In reference mode (``hp.accounting == "paper"``) the noise is ``paper_noise``'s for the claimed
    (``target_epsilon``, ``paper_delta(dataset, …)``), ``dataset`` naming Table 1's δ (without it, §4.1's
    rule), and the ledger carries the claim; training reads the claimed δ from it.

    Features (``dpar-features``): the node sample alone, drawn exactly as the other options draw it; no
    sources, no released rows (``sources``, ``index`` and ``value`` empty) and a ledger with no mechanisms
    (with the claim in reference mode): all of ε is DP-SGD's.
    """
    spec = appr_spec(method, hp)
    option = spec["option"]
    private = option != "nodp"
    if private != math.isfinite(target_epsilon):
        raise ValueError(f"{method}: target ε must be {'finite' if private else 'inf'}, got {target_epsilon}")
    generator = make_generator(seed + _ARTIFACT_STREAM)
    train = split.train
    num_train, num_rows = train.numel(), _num_rows(hp, split.train.numel())
    if hp.k > num_train and option != FEATURES:
        raise ValueError(f"k = {hp.k} exceeds the {num_train} training nodes (the column universe)")
    priority = source_priority(num_train, generator=generator)  # before the sample: independent of it
    kept = torch.rand(num_train, generator=generator) < hp.sample_rate
    sample, sample_priority = train[kept], priority[kept]

    def artifact(ledger: Ledger, **released: Any) -> dict[str, Any]:
        return {"kind": ARTIFACT_KIND, "method": method, "spec": spec, "seed": seed, "target_epsilon": target_epsilon,
                "target_delta": target_delta, "accountant": accountant, "sample": sample, **released,
                "ledger": json.dumps(ledger.to_dict())}

    if option == FEATURES:
        claim = None
        if hp.accounting == "paper":
            claim = paper_claim(target_epsilon, paper_delta(dataset, num_train=num_train, sample_rate=hp.sample_rate),
                                option=option)
        # Nothing is released but the sample, whose rate the ledger carries; DP-SGD's record joins it in training.
        ledger = Ledger(level="node", target_epsilon=target_epsilon, target_delta=target_delta, mechanisms=(),
                        accountant=accountant, node_sample_rate=hp.sample_rate, claim=claim)
        width = _row_width(option, hp)
        return artifact(ledger, source_rule=SELF_ONLY, sources=sample[:0],
                        index=torch.zeros(0, width, dtype=torch.long), value=torch.zeros(0, width), noise={},
                        claimed_epsilon_on_sample=0.0, appr_seconds=0.0)
    position = torch.full((graph.num_nodes,), -1, dtype=torch.long)
    position[sample] = torch.arange(sample.numel())
    src, dst = graph.edge_index
    inside = (position[src] >= 0) & (position[dst] >= 0)
    local_edges = torch.stack([position[src[inside]], position[dst[inside]]])
    sources = rank_sources(sample_priority, num_rows=num_rows)

    start = time.perf_counter()
    appr = appr_push(local_edges, num_nodes=sample.numel(), sources=sources, alpha=hp.alpha, rho=hp.rho, tol=hp.tol)
    appr_seconds = time.perf_counter() - start
    scores = torch.zeros(num_rows, num_train, dtype=torch.float64)  # columns: the training ids, in order
    scores[: sources.numel(), kept.nonzero().squeeze(1)] = appr.to_dense()

    noise: dict[str, float] = {}
    records: tuple[MechanismRecord, ...] = ()
    claimed = None
    if private:
        inner_epsilon, inner_delta = inner_budget(
            target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=hp.sample_rate)
        clip = hp.gm_clip if option == "gm" else hp.em_clip
        claim = None
        if hp.accounting == "paper":
            claim = paper_claim(target_epsilon, paper_delta(dataset, num_train=num_train, sample_rate=hp.sample_rate))
            noise = _paper_dp_appr_noise(method, hp, num_train=num_train, epsilon=target_epsilon, delta=claim.delta)
            records = _dp_appr_records(option, noise, k=hp.k, m=num_rows, clip=clip)
            inner_delta = PAPER_DELTA_SHARE * claim.delta / hp.sample_rate  # the paper's δ_APPR on the sample
        else:
            noise, records = dp_appr_plan(option=option, epsilon=hp.ratio * inner_epsilon, delta=inner_delta,
                                          k=hp.k, m=num_rows, clip=clip, value_share=hp.value_share,
                                          accountant=accountant)
        if option == "gm":
            rows = dp_appr_gm(scores, k=hp.k, noise_multiplier=noise["noise_multiplier"], clip=clip,
                              generator=generator)
        else:
            rows = dp_appr_em(scores, k=hp.k, epsilon=noise["epsilon"], clip=clip, option=option,
                              generator=generator, epsilon_value=noise.get("epsilon_value"))
        claimed = claimed_dp_appr_epsilon(option=option, noise=noise, k=hp.k, m=num_rows, delta=inner_delta)
        ledger = Ledger(level="node", target_epsilon=target_epsilon, target_delta=target_delta, mechanisms=records,
                        accountant=accountant, node_sample_rate=hp.sample_rate, claim=claim)
    else:
        top = scores.topk(hp.k, dim=1)
        rows = torch.zeros_like(scores).scatter_(1, top.indices, top.values)
        ledger = Ledger.non_private()
    ledger.check()
    rows = cap_row_occurrences(rows, max_rows=hp.max_rows, generator=generator)
    columns = rows.abs().topk(hp.k, dim=1).indices  # the K released entries (zeros where the cap dropped one)
    # the sources are ``rank_sources`` of ``source_priority``, in row order
    return artifact(ledger, source_priority=sample_priority, source_rule=SOURCE_RULE, sources=sample[sources],
                    index=train[columns], value=rows.gather(1, columns).float(), noise=noise,
                    claimed_epsilon_on_sample=claimed, appr_seconds=appr_seconds)


def training_examples(sample: Tensor, sources: Tensor, index: Tensor, value: Tensor, *, num_nodes: int,
                      k: int, tau: float) -> tuple[Tensor, Tensor]:
    """Neighbour positions [n, K] into ``sample`` and weights [n, K] of every sampled node's training example.

    ``sources`` are the node ids of the first rows' sources, in row order;
    ``index`` / ``value`` [M, K] the released matrix (node ids, values). A
    source's example is its row, any other node's is itself with weight 1
    (with no sources, as for Features, every example is its self row).
    Algorithm 2, line 3: the columns of Π, the released matrix and all its M
    rows, to ℓ1 ≤ τ; the factors depend on the release alone, so removing a
    node moves no example except those the module docstring counts.
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


def _training_rows(artifact: dict[str, Any], *, num_nodes: int, k: int, tau: float) -> tuple[Tensor, Tensor]:
    """``training_examples`` of an artifact."""
    return training_examples(artifact["sample"], artifact["sources"], artifact["index"], artifact["value"],
                             num_nodes=num_nodes, k=k, tau=tau)


def _check_artifact(artifact: dict[str, Any] | None, spec: RunSpec, method: str, hp: DparHparams) -> dict[str, Any]:
    if artifact is None:
        raise ValueError(f"{spec.method} needs its {ARTIFACT_KIND} structure artifact; build it with "
                         f"`python -m nodedp dp-appr` (the workflow's dp_appr rule does)")
    expected = {"spec": appr_spec(method, hp), "seed": spec.seed, "target_epsilon": spec.target_epsilon,
                "target_delta": spec.target_delta, "accountant": spec.accountant}
    wrong = {key: (artifact.get(key), value) for key, value in expected.items() if artifact.get(key) != value}
    if wrong:
        raise ValueError(f"{spec.method}: the {ARTIFACT_KIND} artifact was built for other settings "
                         f"(artifact, run): {wrong}")
    return artifact


def run_dpar(inputs: RunInputs, spec: RunSpec, hp: DparHparams, *, method: str) -> RunResult:
    artifact = _check_artifact(inputs.structure.get(ARTIFACT_KIND), spec, method, hp)
    generator = seed_everything(spec.seed)
    device = resolve_device(spec.device)
    graph, split = inputs.graph, inputs.split
    sample = artifact["sample"]
    n = sample.numel()
    if n == 0:
        raise ValueError(f"the node sample (rate {hp.sample_rate}) of {split.train.numel()} training nodes is empty")
    option = OPTIONS[method]
    nbr, weight = _training_rows(artifact, num_nodes=graph.num_nodes, k=_row_width(option, hp), tau=hp.tau)
    x_sample = graph.x[sample].to(device)
    nbr, weight = nbr.to(device), weight.to(device)
    from nodedp.models import PPRGo  # here: the dp-appr verb, which builds artifacts only, skips torch_geometric

    model = PPRGo(graph.num_features, hp.hidden_dim, inputs.num_classes, dropout=hp.dropout).to(device)

    rate, steps = _sgd_schedule(hp, split.train.numel())
    private = option != "nodp"
    appr_ledger = Ledger.from_dict(json.loads(artifact["ledger"]))
    privacy, details = None, {}
    if private:
        claim = appr_ledger.claim
        if (claim is not None) != (hp.accounting == "paper") or (claim is not None
                                                                  and claim.epsilon != spec.target_epsilon):
            raise ValueError(f"{spec.method}: the {ARTIFACT_KIND} artifact's claim {claim} does not fit a run "
                             f"with accounting {hp.accounting!r} at ε = {spec.target_epsilon}")

        def ledger_of(z: float) -> Ledger:
            sgd = dp_sgd_record(f"dp-sgd:{spec.method}", hp, option=option, sampling_rate=rate, steps=steps,
                                noise_multiplier=z)
            return Ledger(level="node", target_epsilon=spec.target_epsilon, target_delta=spec.target_delta,
                          mechanisms=(*appr_ledger.mechanisms, sgd), accountant=spec.accountant,
                          node_sample_rate=hp.sample_rate, claim=claim)

        if claim is None:
            z = calibrate_ledger(target_epsilon=spec.target_epsilon, ledger_of=ledger_of)
        else:  # reference mode: DP-SGD's noise as the paper sizes it, at the claimed δ the artifact carries
            z = paper_dp_sgd_noise_multiplier(epsilon=spec.target_epsilon, delta=claim.delta,
                                              sample_rate=hp.sample_rate, ratio=_paper_ratio(option, hp),
                                              sampling_rate=rate, steps=steps)
        ledger = ledger_of(z)
        privacy = privacy_from_record(ledger.mechanisms[-1], expected_batch_size=hp.batch_size)
        details = {"sgd_noise_multiplier": z, "epsilon_on_sample": ledger.composed_on_sample()[0]}
        if claim is None:
            inner_delta = spec.target_delta / hp.sample_rate
            # What the reference code would report: each part × q', never composed; DP-SGD by the
            # plain subsampled Gaussian (sensitivity C) at the planned rate batch/(q'·|train|), not the
            # realised |S| (a count of the private sample).
            reference_sgd = epsilon_of(subsampled_gaussian_event(noise_multiplier=z, sampling_rate=rate,
                                                                 steps=steps), delta=inner_delta)
            claimed_appr = artifact["claimed_epsilon_on_sample"]
            details |= {
                "claimed_epsilon": reference_understated(claimed_appr + reference_sgd, rate=hp.sample_rate),
                "claimed_epsilon_parts_on_sample": {"dp_appr": claimed_appr, "dp_sgd": reference_sgd},
            }
        else:
            ratio = _paper_ratio(option, hp)
            details |= {
                "claimed_epsilon": claim.epsilon,
                "claimed_delta": claim.delta,
                "actual_epsilon_at_claimed_delta": ledger.actual_claim_epsilon(),
                "claimed_epsilon_parts_on_sample": {"dp_appr": ratio * claim.epsilon / hp.sample_rate,
                                                    "dp_sgd": (1 - ratio) * claim.epsilon / hp.sample_rate},
            }
    else:
        ledger = Ledger.non_private()
    ledger.check()

    def predict(other: Any, parts: Any = None) -> Tensor:
        """§4's inference on ``other``: f(X) for every node, then P power-iteration steps over its edges; the
        evaluation below is this on the input graph. Inductive splits keep each part's own edges, by ``parts``
        (``other``'s split; default the run's (public) split: nodes it does not cover, as the extra nodes of a
        larger graph, keep none, so they read their features alone). Reads ``other``, the weights and public
        settings only."""
        parts = split if parts is None else parts
        edges = other.edge_index
        if parts.setting == "inductive":
            edges = remove_cross_split_edges(edges, parts)
        return model.propagate(other.x.to(device), edges.to(device), alpha=hp.alpha, steps=hp.power_steps)

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
        total=steps,
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
    return RunResult(val=result.val, test=result.test, ledger=result.ledger, train_seconds=result.train_seconds,
                     details={**result.details, **details}, predict=result.predict)
