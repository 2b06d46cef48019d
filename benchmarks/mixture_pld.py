"""Noise multiplier z = σ/C needed by the mixture mechanisms under RDP and under PLD, and calibration time.

For DPAR-like Poisson schedules (issue 14, item 6: δ = 1e-4) it calibrates z
to the target ε under
  * "RDP": the existing Binomial-mixture RDP curve (``poisson_occurrence_gaussian_rdp_of_params``);
  * "PLD revealed": the same revealed-ρ pair (2C per occurrence) under PLD;
  * "PLD hybrid": ``nodedp.accounting.mixture_pld`` (own coin hidden when it is the whole difference);
  * "plain C": Poisson DP-SGD at sensitivity C (dp_accounting's PLD accountant), the d = 1 reference;
and for a DP-GNN schedule (fixed-size batches) RDP against the revealed PLD.
Run: python benchmarks/mixture_pld.py
"""

from __future__ import annotations

import time

import numpy as np
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.stats import binom

from nodedp.accounting.calibration import calibrate, calibrate_dpsgd
from nodedp.accounting.hypergeometric import (
    hypergeometric_gaussian_params,
    hypergeometric_gaussian_rdp_of_params,
    poisson_occurrence_gaussian_params,
    poisson_occurrence_gaussian_rdp_of_params,
)
from nodedp.accounting.mixture_pld import calibrate_mixture_pld, revealed_gaussian_mixture_pld
from nodedp.accounting.orders import RDP_ORDERS

DELTA = 1e-4
ROWS = [(1, 0.114, 176, 1.0), (6, 0.296, 800, 8.0), (21, 0.114, 176, 4.0), (30, 0.05, 1000, 4.0)]


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def rdp_z(curve, params, target):
    def eps(z):
        p = dict(params, noise_multiplier=z, noise_std=z * params["clip_norm"])
        return compute_epsilon(list(RDP_ORDERS), list(curve(p, RDP_ORDERS)), DELTA)[0]

    return calibrate(target_epsilon=target, epsilon_of_sigma=eps)


def revealed_z(d, gamma, steps, target, unit):
    """The RDP curve's own pair (2C per occurrence, ρ revealed) under PLD; the search starts at ``unit``."""
    rho = np.arange(d + 1)

    def eps(scale):
        one = revealed_gaussian_mixture_pld(
            shifts=2.0 * rho / (unit * scale), weights=binom.pmf(rho, d, gamma), value_discretization_interval=1e-3
        )
        return one.self_compose(steps).get_epsilon_for_delta(DELTA)

    return unit * calibrate(target_epsilon=target, epsilon_of_sigma=eps)


def main() -> None:
    print(f"δ = {DELTA}; z = σ/C; seconds per calibration in brackets")
    columns = " ".join(f"{name:>13}" for name in ("RDP", "PLD revealed", "PLD hybrid", "plain C"))
    print(f"{'d':>3} {'γ':>6} {'T':>5} {'ε':>4} | {columns}")
    for d, gamma, steps, target in ROWS:
        params = poisson_occurrence_gaussian_params(
            sampling_rate=gamma, max_rows=d - 1, noise_multiplier=1.0, clip_norm=1.0, steps=steps
        )
        rdp = timed(lambda: rdp_z(poisson_occurrence_gaussian_rdp_of_params, params, target))
        cells = [
            rdp,
            timed(lambda: revealed_z(d, gamma, steps, target, rdp[0])),
            timed(
                lambda: calibrate_mixture_pld(
                    "poisson_occurrence_gaussian", params, target_epsilon=target, target_delta=DELTA
                )
            ),
            timed(
                lambda: calibrate_dpsgd(
                    target_epsilon=target, target_delta=DELTA, sampling_rate=gamma, steps=steps, accountant="pld"
                )
            ),
        ]
        text = " ".join(f"{z:6.2f} [{s:4.1f}]" for z, s in cells)
        print(f"{d:>3} {gamma:>6} {steps:>5} {target:>4g} | {text}")

    print("\nDP-GNN (fixed-size batches, revealed ρ ~ Hypergeometric(N, N(K, r), m)):")
    print(f"{'N':>6} {'m':>5} {'K':>2} {'r':>2} {'T':>5} {'ε':>4} | {'RDP':>13} {'PLD revealed':>13}")
    for n, m, k, r, steps, target in [(10000, 1000, 2, 2, 500, 4.0), (2000, 200, 3, 1, 300, 1.0)]:
        params = hypergeometric_gaussian_params(
            num_examples=n, max_degree=k, num_layers=r, batch_size=m, noise_multiplier=1.0, clip_norm=1.0, steps=steps
        )
        cells = [
            timed(lambda: rdp_z(hypergeometric_gaussian_rdp_of_params, params, target)),
            timed(
                lambda: calibrate_mixture_pld(
                    "hypergeometric_gaussian", params, target_epsilon=target, target_delta=DELTA
                )
            ),
        ]
        text = " ".join(f"{z:6.2f} [{s:4.1f}]" for z, s in cells)
        print(f"{n:>6} {m:>5} {k:>2} {r:>2} {steps:>5} {target:>4g} | {text}")


if __name__ == "__main__":
    main()
