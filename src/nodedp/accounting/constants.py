"""The accounting's names that planning reads (config checks, the method registry's hyperparameters).

Plain values, no dp_accounting, scipy or numpy: listing and checking a grid must not pay for the
accountants. Each is imported from here by the modules that use it (``events``, ``dpar``, ``nip``).
"""

from __future__ import annotations

ACCOUNTANTS: tuple[str, ...] = ("rdp", "pld")
# What a config may ask for: an accountant, or "auto" (the method's own choice, ``MethodInfo.auto_accountant``:
# "pld" where its mixture mechanisms have a PLD and it is tighter, "rdp" elsewhere).
ACCOUNTANT_POLICIES: tuple[str, ...] = ("auto", *ACCOUNTANTS)

EM_VALUE_SHARE = 0.5  # em1: the share of DP-APPR's budget its Laplace values get (the paper does not say)

# How NAP's per-node budgets β_u are set (``nodedp.mechanisms.nip.nip_budget_weights``):
# "paper" Eq. 11 as printed; "capped" Eq. 11 and β_u ≤ D/D_u (the bound Theorem 3's proof uses);
# "uniform" β = 1 (plain Laplace, the paper's "w/o A-a" ablation).
BUDGET_SCHEMES: tuple[str, ...] = ("paper", "capped", "uniform")
