"""DPAR's plans (``nodedp.methods.dpar``): the DP-APPR artifact's ledger and a run's, from public inputs alone.

``plan_dp_appr``: the DP-APPR record(s) of the option on the node sample of rate q', M rows, noise calibrated to
``ratio`` of ε_in (or the paper's in reference mode). ``plan_dpar``: the artifact's records and DP-SGD's (Poisson
rate batch_size/(q'·|train|), d = max_rows + 2 occurrences, Features 1), DP-SGD calibrated on the whole ledger.
Pure and torch-free: nothing of the private graph or of the realised sample.
Details: docs/design/methods.md, section `nodedp.plans.dpar`.
"""

from __future__ import annotations

import math
from typing import Any

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
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.dpar import FEATURES, OPTIONS, DparHparams, appr_spec
from nodedp.plans import Plan, PublicInputs

__all__ = [
    "SOURCE_RULE",
    "dp_sgd_record",
    "num_rows",
    "paper_claim",
    "paper_noise",
    "plan_dp_appr",
    "plan_dpar",
    "plan_dpar_em0",
    "plan_dpar_em1",
    "plan_dpar_features",
    "plan_dpar_gm",
    "reference_ledger",
    "sgd_schedule",
]

# How sources are chosen and how many examples one removal changes (docs/design/methods.md, nodedp.methods.dpar).
SOURCE_RULE = RANKED_SOURCES


def num_rows(hp: DparHparams, num_train: int) -> int:
    """M: ``num_sources``, or 0: ⌈q'·|train|⌉ (the training-set size is public)."""
    return hp.num_sources or max(1, math.ceil(hp.sample_rate * num_train))


def sgd_schedule(hp: DparHparams, num_train: int) -> tuple[float, int]:
    """DP-SGD's public Poisson rate γ = batch_size/(q'·|train|) and its number of steps."""
    rate = min(1.0, hp.batch_size / (hp.sample_rate * num_train))
    return rate, hp.epochs * math.ceil(1 / rate)


def _private_option(method: str) -> str:
    if OPTIONS.get(method, "nodp") == "nodp":
        raise ValueError(
            f"{method!r} is not a private DPAR method; valid: {[m for m, o in OPTIONS.items() if o != 'nodp']}"
        )
    return OPTIONS[method]


def _occurrence_rule(option: str, hp: DparHparams) -> tuple[str, int]:
    """DP-SGD's (``occurrence_rule``, ``max_rows``): Features' examples are self rows only, so no example holds
    another node (max_rows 0, d = 1); the DP-APPR options' ``SOURCE_RULE`` with the cap (d = max_rows + 2)."""
    return (SELF_ONLY, 0) if option == FEATURES else (SOURCE_RULE, hp.max_rows)


def _paper_ratio(option: str, hp: DparHparams) -> float:
    """DP-APPR's share of the claimed ε in the paper's accounting: ``ratio``, or none for Features."""
    return FEATURES_RATIO if option == FEATURES else hp.ratio


def _clip(option: str, hp: DparHparams) -> float:
    return hp.gm_clip if option == "gm" else hp.em_clip


def _paper_dp_appr_noise(
    method: str, hp: DparHparams, *, num_train: int, epsilon: float, delta: float
) -> dict[str, float]:
    return paper_dp_appr_noise(
        option=_private_option(method),
        epsilon=epsilon,
        delta=delta,
        k=hp.k,
        m=num_rows(hp, num_train),
        sample_rate=hp.sample_rate,
        ratio=hp.ratio,
        value_share=hp.value_share,
    )


def paper_noise(method: str, hp: DparHparams, *, num_train: int, epsilon: float, delta: float) -> dict[str, Any]:
    """The noise DPAR's own accounting gives a run of ``method`` it claims is (``epsilon``, ``delta``)-DP.

    Pure: hyperparameters and the public number of training nodes only. "dp_appr": DP-APPR's noise
    (``paper_dp_appr_noise``: per-selection ``epsilon`` and em1's ``epsilon_value``, or GM's
    ``noise_multiplier`` of √2·C1; empty for Features, which runs none); "sgd_noise_multiplier": DP-SGD's
    (``paper_dp_sgd_noise_multiplier``) at the run's public Poisson rate and steps, with DP-APPR's share
    ``ratio`` of ε, or for Features ``FEATURES_RATIO`` = 0 (the whole ε and δ on DP-SGD).
    """
    option = _private_option(method)
    rate, steps = sgd_schedule(hp, num_train)
    appr = (
        {}
        if option == FEATURES
        else _paper_dp_appr_noise(method, hp, num_train=num_train, epsilon=epsilon, delta=delta)
    )
    return {
        "dp_appr": appr,
        "sgd_noise_multiplier": paper_dp_sgd_noise_multiplier(
            epsilon=epsilon,
            delta=delta,
            sample_rate=hp.sample_rate,
            ratio=_paper_ratio(option, hp),
            sampling_rate=rate,
            steps=steps,
        ),
    }


def paper_claim(epsilon: float, delta: float, *, option: str | None = None) -> Claim:
    """What the paper states for a reference run's noise: (ε, δ) by ``PAPER_RULE`` (Features:
    ``PAPER_FEATURES_RULE``, DP-SGD alone)."""
    rule = PAPER_FEATURES_RULE if option == FEATURES else PAPER_RULE
    return Claim(epsilon=epsilon, delta=delta, rule=rule, source=PAPER_SOURCE)


def _dp_appr_records(
    option: str, noise: dict[str, float], *, k: int, m: int, clip: float
) -> tuple[MechanismRecord, ...]:
    """The ledger records of DP-APPR with ``noise`` (``dp_appr_plan``'s keys), as suite mode records them."""
    if option == "gm":
        return (dp_appr_gm_record(noise_multiplier=noise["noise_multiplier"], k=k, m=m, clip=clip),)
    return dp_appr_em_records(
        option=option, epsilon=noise["epsilon"], k=k, m=m, clip=clip, epsilon_value=noise.get("epsilon_value")
    )


def dp_sgd_record(
    name: str, hp: DparHparams, *, option: str, sampling_rate: float, steps: int, noise_multiplier: float
) -> MechanismRecord:
    """DP-SGD's ledger record of a run of DPAR ``option``: the Gaussian mixed over ρ ~ Binomial(d, γ) changed
    examples, d = max_rows + 2 ("ranked_sources"), or d = 1 for Features ("self_only"; nodedp.methods.dpar)."""
    rule, max_rows = _occurrence_rule(option, hp)
    occurrences = occurrence_bound(rule=rule, max_rows=max_rows)
    if option == FEATURES:
        reason = (
            "every training example is its node's own features and label with weight 1 (Algorithm 2 with "
            "one-hot APPR rows: no DP-APPR matrix, no sources, no example holds another node), so "
            "removing a node changes exactly d = 1 example, its own; it is clipped to C, so the gradient "
            "sum moves by ≤ 2·C·ρ, ρ ~ Binomial(1, γ) in a Poisson batch"
        )
    else:
        reason = (
            f"given the released DP-APPR matrix, removing a node changes at most d = max_rows + 2 = "
            f"{occurrences} training examples: its own, the ≤ {max_rows} whose DP-APPR rows hold its "
            "column, and that of the one node that takes its source row (sources: the sampled nodes of "
            "smallest random priority, coupled so that every other source keeps its row; column ℓ1 "
            "factors computed over the released rows alone); each is clipped to C, so the gradient sum "
            "moves by ≤ 2·C·ρ, ρ ~ Binomial(d, γ) of them in a Poisson batch"
        )
    return MechanismRecord(
        name=name,
        kind="poisson_occurrence_gaussian",
        touches=("features", "labels"),
        params=poisson_occurrence_gaussian_params(
            sampling_rate=sampling_rate,
            max_rows=max_rows,
            noise_multiplier=noise_multiplier,
            clip_norm=hp.clip_norm,
            steps=steps,
            occurrence_rule=rule,
        ),
        sensitivity=2 * hp.clip_norm * occurrences,
        sensitivity_reason=reason,
        dp_event=None,
    )


def plan_dp_appr(public: PublicInputs, spec: RunSpec, hp: DparHparams, *, method: str) -> Plan:
    """The DP-APPR artifact's plan for DPAR ``method`` (a registry id; ``spec``: the target, δ, accountant).

    Its ledger is the artifact's; ``parts``: "option", "spec" (``appr_spec``), "num_rows" (M), "clip", "noise"
    (what the mechanism draws with: ``dp_appr_plan``'s or ``paper_noise``'s keys; empty for Features and the
    non-private option) and "claimed_epsilon_on_sample" (the paper's figure for that noise, Theorem 1 or 3;
    0 for Features, None without privacy)."""
    settings = appr_spec(method, hp)
    option = settings["option"]
    private = option != "nodp"
    epsilon, delta, accountant = spec.target_epsilon, spec.target_delta, spec.accountant
    if private != math.isfinite(epsilon):
        raise ValueError(f"{method}: target ε must be {'finite' if private else 'inf'}, got {epsilon}")
    num_train = public.num_train
    m = num_rows(hp, num_train)
    if hp.k > num_train and option != FEATURES:
        raise ValueError(f"k = {hp.k} exceeds the {num_train} training nodes (the column universe)")
    clip = _clip(option, hp)
    parts: dict[str, Any] = {"option": option, "spec": settings, "num_rows": m, "clip": clip}
    if option == FEATURES:
        claim = None
        if hp.accounting == "paper":
            claim = paper_claim(
                epsilon, paper_delta(public.dataset, num_train=num_train, sample_rate=hp.sample_rate), option=option
            )
        # Nothing is released but the sample, whose rate the ledger carries; DP-SGD's record joins it in training.
        ledger = Ledger(
            level="node",
            target_epsilon=epsilon,
            target_delta=delta,
            mechanisms=(),
            accountant=accountant,
            node_sample_rate=hp.sample_rate,
            claim=claim,
        )
        # not ``check``ed: a private ledger without mechanisms is incomplete until DP-SGD's record joins it
        return Plan(ledger, {**parts, "noise": {}, "claimed_epsilon_on_sample": 0.0})
    if not private:
        ledger = Ledger.non_private()
        ledger.check()
        return Plan(ledger, {**parts, "noise": {}, "claimed_epsilon_on_sample": None})
    inner_epsilon, inner_delta = inner_budget(target_epsilon=epsilon, target_delta=delta, sample_rate=hp.sample_rate)
    claim = None
    if hp.accounting == "paper":
        claim = paper_claim(epsilon, paper_delta(public.dataset, num_train=num_train, sample_rate=hp.sample_rate))
        noise = _paper_dp_appr_noise(method, hp, num_train=num_train, epsilon=epsilon, delta=claim.delta)
        records = _dp_appr_records(option, noise, k=hp.k, m=m, clip=clip)
        inner_delta = PAPER_DELTA_SHARE * claim.delta / hp.sample_rate  # the paper's δ_APPR on the sample
    else:
        noise, records = dp_appr_plan(
            option=option,
            epsilon=hp.ratio * inner_epsilon,
            delta=inner_delta,
            k=hp.k,
            m=m,
            clip=clip,
            value_share=hp.value_share,
            accountant=accountant,
        )
    claimed = claimed_dp_appr_epsilon(option=option, noise=noise, k=hp.k, m=m, delta=inner_delta)
    ledger = Ledger(
        level="node",
        target_epsilon=epsilon,
        target_delta=delta,
        mechanisms=records,
        accountant=accountant,
        node_sample_rate=hp.sample_rate,
        claim=claim,
    )
    ledger.check()
    return Plan(ledger, {**parts, "noise": noise, "claimed_epsilon_on_sample": claimed})


def plan_dpar(public: PublicInputs, spec: RunSpec, hp: DparHparams, *, method: str) -> Plan:
    """A private DPAR run's plan (``method`` its registry id; ``spec.method`` its name, which names DP-SGD's
    record). Its ledger: the artifact's records (``plan_dp_appr``, under "appr" in ``parts``) and DP-SGD's.
    ``parts`` also: "sampling_rate" γ, "steps", "noise_multiplier" z of DP-SGD, and "details" (what the run
    reports beside its ledger: DP-SGD's z, ε on the sample, the paper's or reference code's claimed figures),
    all from public inputs."""
    option = _private_option(method)
    appr = plan_dp_appr(public, spec, hp, method=method)
    rate, steps = sgd_schedule(hp, public.num_train)
    claim = appr.ledger.claim

    def ledger_of(z: float) -> Ledger:
        sgd = dp_sgd_record(
            f"dp-sgd:{spec.method}", hp, option=option, sampling_rate=rate, steps=steps, noise_multiplier=z
        )
        return Ledger(
            level="node",
            target_epsilon=spec.target_epsilon,
            target_delta=spec.target_delta,
            mechanisms=(*appr.ledger.mechanisms, sgd),
            accountant=spec.accountant,
            node_sample_rate=hp.sample_rate,
            claim=claim,
        )

    if claim is None:
        z = calibrate_ledger(target_epsilon=spec.target_epsilon, ledger_of=ledger_of)
    else:  # reference mode: DP-SGD's noise as the paper sizes it, at the claimed δ
        z = paper_dp_sgd_noise_multiplier(
            epsilon=spec.target_epsilon,
            delta=claim.delta,
            sample_rate=hp.sample_rate,
            ratio=_paper_ratio(option, hp),
            sampling_rate=rate,
            steps=steps,
        )
    ledger = ledger_of(z)
    ledger.check()
    details: dict[str, Any] = {"sgd_noise_multiplier": z, "epsilon_on_sample": ledger.composed_on_sample()[0]}
    if claim is None:
        inner_delta = spec.target_delta / hp.sample_rate
        # What the reference code would report: each part × q', never composed; DP-SGD by the plain subsampled
        # Gaussian (sensitivity C) at the planned rate batch/(q'·|train|), not the realised |S| (a count of the
        # private sample).
        reference_sgd = epsilon_of(
            subsampled_gaussian_event(noise_multiplier=z, sampling_rate=rate, steps=steps), delta=inner_delta
        )
        claimed_appr = appr.parts["claimed_epsilon_on_sample"]
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
            "claimed_epsilon_parts_on_sample": {
                "dp_appr": ratio * claim.epsilon / hp.sample_rate,
                "dp_sgd": (1 - ratio) * claim.epsilon / hp.sample_rate,
            },
        }
    return Plan(
        ledger, {"appr": appr, "sampling_rate": rate, "steps": steps, "noise_multiplier": z, "details": details}
    )


def plan_dpar_em0(public: PublicInputs, spec: RunSpec, hp: DparHparams) -> Plan:
    return plan_dpar(public, spec, hp, method="dpar-em0")


def plan_dpar_em1(public: PublicInputs, spec: RunSpec, hp: DparHparams) -> Plan:
    return plan_dpar(public, spec, hp, method="dpar-em1")


def plan_dpar_gm(public: PublicInputs, spec: RunSpec, hp: DparHparams) -> Plan:
    return plan_dpar(public, spec, hp, method="dpar-gm")


def plan_dpar_features(public: PublicInputs, spec: RunSpec, hp: DparHparams) -> Plan:
    return plan_dpar(public, spec, hp, method="dpar-features")


def reference_ledger(
    method: str,
    hp: DparHparams,
    *,
    num_train: int,
    target_epsilon: float,
    target_delta: float,
    claimed_delta: float,
    accountant: str = "rdp",
) -> Ledger:
    """The ledger of a reference run of ``method`` (its noise ``paper_noise`` for the claimed
    (``target_epsilon``, ``claimed_delta``)), without running it: ``composed()`` is its actual ε at the
    suite's ``target_delta``, ``actual_claim_epsilon()`` at the paper's δ. Public sizes only."""
    option = _private_option(method)
    noise = paper_noise(method, hp, num_train=num_train, epsilon=target_epsilon, delta=claimed_delta)
    rate, steps = sgd_schedule(hp, num_train)
    records = (
        ()
        if option == FEATURES
        else _dp_appr_records(option, noise["dp_appr"], k=hp.k, m=num_rows(hp, num_train), clip=_clip(option, hp))
    )
    sgd = dp_sgd_record(
        f"dp-sgd:{method}@paper",
        hp,
        option=option,
        sampling_rate=rate,
        steps=steps,
        noise_multiplier=noise["sgd_noise_multiplier"],
    )
    return Ledger(
        level="node",
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        mechanisms=(*records, sgd),
        accountant=accountant,
        node_sample_rate=hp.sample_rate,
        claim=paper_claim(target_epsilon, claimed_delta, option=option),
    )
