"""DP-MLP's plan: Poisson-sampled DP-SGD over the training nodes, one node one example (``nodedp.methods.mlp``).

Reference mode (``dp-mlp@paper``) is the same DP-SGD calibrated by RDP at GAP/ProGAP's δ (10^−digits of N).
"""

from __future__ import annotations

from nodedp.accounting import Claim, Ledger
from nodedp.accounting.gap import gap_paper_delta
from nodedp.contract.base import RunSpec
from nodedp.contract.specs.mlp import DpMlpHparams
from nodedp.plans import Plan, PublicInputs
from nodedp.plans.dpsgd import plan_dpsgd


def plan_mlp(public: PublicInputs, spec: RunSpec, hp: DpMlpHparams) -> Plan:
    claim = None
    delta, accountant = spec.target_delta, spec.accountant
    if hp.accounting == "paper":
        delta, accountant = gap_paper_delta(public.num_nodes), "rdp"
        claim = Claim(
            epsilon=spec.target_epsilon,
            delta=delta,
            rule=(
                f"Poisson-sampled DP-SGD, its noise multiplier calibrated by RDP to ε at δ = {delta:g} "
                "(the suite's own accounting; only δ is the papers')"
            ),
            source=(
                "GAP/ProGAP's DP-MLP baseline (ProGAP §5.3: δ below 1/N); public code "
                "core/methods/node/mlp/mlp_dp.py: NoisySGD calibrated by autodp, delta 'auto' = "
                "1/10**len(str(N))"
            ),
        )
    dpsgd = plan_dpsgd(
        name=f"dp-sgd:{spec.method}",
        num_examples=public.num_train,
        batch_size=hp.batch_size,
        epochs=hp.epochs,
        clip_norm=hp.clip_norm,
        target_epsilon=spec.target_epsilon,
        target_delta=delta,
        accountant=accountant,
        touches=("features", "labels"),
        sensitivity_reason=(
            "each training node is exactly one example (its own features and label, no edges); "
            "adding or removing it changes the sum of per-example gradients clipped to C by ≤ C"
        ),
    )
    ledger = Ledger(
        level="node",
        target_epsilon=spec.target_epsilon,
        target_delta=spec.target_delta,
        mechanisms=(dpsgd.record,),
        accountant=spec.accountant,
        claim=claim,
    )
    ledger.check()
    return Plan(ledger, {"dpsgd": dpsgd})
