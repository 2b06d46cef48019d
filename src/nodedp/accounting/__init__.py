"""Privacy accounting: mechanisms as DpEvents (or RDP curves of their own), noise calibration, the δ policy
and the ledger.

Torch-free by design (numpy, scipy and dp_accounting only), so that ledgers
can be verified and aggregated without a deep-learning stack. The names below
load lazily (PEP 562): planning (``default_delta``, ``resolve_delta``,
``ACCOUNTANTS``) reads torch-free modules only and never pays for
dp_accounting or scipy; every name imports as before.
"""

from __future__ import annotations

from nodedp._lazy import lazy_exports

# submodule -> the public names it provides here
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "calibration": (
        "calibrate",
        "calibrate_dp_gnn",
        "calibrate_dpsgd",
        "calibrate_ledger",
        "calibrate_noise_multiplier",
    ),
    "constants": ("ACCOUNTANTS", "ACCOUNTANT_POLICIES", "BUDGET_SCHEMES", "EM_VALUE_SHARE"),
    "delta": ("default_delta", "resolve_delta"),
    "dpar": (
        "EM_OPTIONS",
        "advanced_composition_epsilon",
        "amplified",
        "calibrate_gumbel_topk",
        "claimed_dp_appr_epsilon",
        "dp_appr_em_records",
        "dp_appr_gm_event",
        "dp_appr_gm_record",
        "dp_appr_plan",
        "gm_sensitivity",
        "gumbel_topk_epsilon",
        "inner_budget",
        "paper_composition_epsilon",
        "reference_understated",
    ),
    "events": (
        "compose",
        "epsilon_of",
        "event_from_dict",
        "event_to_dict",
        "gaussian_event",
        "subsampled_gaussian_event",
    ),
    "gap": ("calibrate_gap", "gap_event", "nap_event", "progap_edge_epsilon", "progap_eq11_epsilon"),
    "heter_poisson": (
        "calibrate_heter_poisson",
        "check_heter_poisson_params",
        "heter_poisson_epsilon_of_params",
        "heter_poisson_mixture",
        "heter_poisson_pld_of_params",
        "heter_poisson_step_pld",
    ),
    "hypergeometric": (
        "dpar_occurrences",
        "hypergeometric_gaussian_epsilon",
        "hypergeometric_gaussian_params",
        "hypergeometric_gaussian_rdp",
        "max_occurrences",
        "poisson_occurrence_gaussian_params",
        "poisson_occurrence_gaussian_rdp",
    ),
    "ledger": (
        "DEGREE_BOUND_KINDS",
        "GUARANTEE_CLASSES",
        "LEVELS",
        "MECHANISM_KINDS",
        "PLD_CURVES",
        "RDP_CURVES",
        "TOUCHABLE",
        "Claim",
        "DegreeBound",
        "Ledger",
        "MechanismRecord",
        "PrivacyBudgetExceeded",
        "UnchargedRead",
        "read_ledger",
        "verify_ledger_dict",
        "write_ledger",
    ),
    "nip": (
        "nip_aggregation_record",
        "nip_edge_record",
        "nip_label_record",
    ),
    "nip_bounds": ("aggregation_sensitivity", "edge_randomization_epsilon", "min_keep_parameter", "split_budget"),
    "gumbel": ("gumbel_topk_rdp",),
    "orders": ("RDP_ORDERS",),
    "rebuild": ("MECHANISMS", "RecordMismatch", "check_record"),
    "structured": (
        "calibrate_structured",
        "check_structured_params",
        "structured_count_law",
        "structured_epsilon_of_params",
        "structured_pld_of_params",
        "structured_step_pld",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _SUBMODULES, globals())
