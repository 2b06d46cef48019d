"""Privacy accounting: mechanisms as DpEvents (or RDP curves of their own), noise calibration, the δ policy and the ledger.

Torch-free by design (numpy, scipy and dp_accounting only), so that ledgers
can be verified and aggregated without a deep-learning stack.
"""

from __future__ import annotations

from nodedp.accounting.calibration import calibrate, calibrate_dp_gnn, calibrate_dpsgd, calibrate_noise_multiplier
from nodedp.accounting.delta import default_delta, resolve_delta
from nodedp.accounting.dpar import (
    EM_OPTIONS,
    advanced_composition_epsilon,
    amplified,
    dp_appr_em_epsilon,
    dp_appr_em_records,
    dp_appr_gm_event,
    dp_appr_gm_record,
    gm_sensitivity,
    gumbel_topk_epsilon,
    gumbel_topk_rdp,
    paper_composition_epsilon,
    reference_understated,
)
from nodedp.accounting.events import (
    ACCOUNTANTS,
    RDP_ORDERS,
    compose,
    epsilon_of,
    event_from_dict,
    event_to_dict,
    gaussian_event,
    subsampled_gaussian_event,
)
from nodedp.accounting.gap import calibrate_gap, gap_event, nap_event, progap_edge_epsilon, progap_eq11_epsilon
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_epsilon,
    hypergeometric_gaussian_params,
    hypergeometric_gaussian_rdp,
    max_occurrences,
)
from nodedp.accounting.ledger import (
    LEVELS,
    MECHANISM_KINDS,
    RDP_CURVES,
    TOUCHABLE,
    Ledger,
    MechanismRecord,
    PrivacyBudgetExceeded,
    UnchargedRead,
    read_ledger,
    verify_ledger_dict,
    write_ledger,
)

__all__ = [
    "ACCOUNTANTS",
    "EM_OPTIONS",
    "LEVELS",
    "MECHANISM_KINDS",
    "RDP_CURVES",
    "RDP_ORDERS",
    "TOUCHABLE",
    "Ledger",
    "MechanismRecord",
    "PrivacyBudgetExceeded",
    "UnchargedRead",
    "advanced_composition_epsilon",
    "amplified",
    "calibrate",
    "calibrate_dp_gnn",
    "calibrate_dpsgd",
    "calibrate_gap",
    "calibrate_noise_multiplier",
    "compose",
    "default_delta",
    "dp_appr_em_epsilon",
    "dp_appr_em_records",
    "dp_appr_gm_event",
    "dp_appr_gm_record",
    "epsilon_of",
    "event_from_dict",
    "event_to_dict",
    "gap_event",
    "gaussian_event",
    "gm_sensitivity",
    "gumbel_topk_epsilon",
    "gumbel_topk_rdp",
    "hypergeometric_gaussian_epsilon",
    "hypergeometric_gaussian_params",
    "hypergeometric_gaussian_rdp",
    "max_occurrences",
    "nap_event",
    "paper_composition_epsilon",
    "progap_edge_epsilon",
    "progap_eq11_epsilon",
    "read_ledger",
    "reference_understated",
    "resolve_delta",
    "subsampled_gaussian_event",
    "verify_ledger_dict",
    "write_ledger",
]
