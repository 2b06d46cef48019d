"""One audited run end to end on the tiny graph: canaries planted, DP-MLP trained once, every canary scored."""

from __future__ import annotations

import pytest
import torch

from nodedp.audit.run import audit_run, canary_degree_bound, canary_scores
from nodedp.contract.base import RunSpec
from nodedp.contract.registry import get_method

BOUNDS = {"in-degree": 16, "out-degree": 8, "degree": 8}  # public degree bounds (K, D, D) for the tiny graph


def spec(method: str, epsilon: float) -> RunSpec:
    return RunSpec(dataset="csbm-tiny", method=method, seed=0, target_epsilon=epsilon, target_delta=1e-3)


def test_a_correct_dp_mlp_stays_below_its_ledger_epsilon(tiny_inputs):
    hp = get_method("dp-mlp").parse_hparams({"epochs": 5, "batch_size": 32})
    result = audit_run(tiny_inputs, spec("dp-mlp", 2.0), hp, method="dp-mlp", bounds=BOUNDS, m=60, seed=1)
    assert result.canaries == 60 and 0 < result.included < 60
    assert 1.9 < result.claimed_epsilon <= 2.0 and result.delta == pytest.approx(1e-3)
    assert result.ledger_epsilon == result.claimed_epsilon and result.accounting == "suite"
    assert result.canary_degree_bound == BOUNDS["out-degree"]
    assert 0.0 <= result.one_run.epsilon <= result.claimed_epsilon and not result.violated
    assert 0.0 <= result.auc <= 1.0 and 0.0 <= result.test_accuracy <= 1.0
    row = result.as_dict()
    assert row["epsilon_lower_one_run"] == result.one_run.epsilon and row["violated"] is False


def test_methods_without_a_node_level_epsilon_are_refused(tiny_inputs):
    with pytest.raises(ValueError, match="not private"):
        audit_run(
            tiny_inputs,
            spec("mlp", float("inf")),
            get_method("mlp").parse_hparams({}),
            method="mlp",
            bounds=BOUNDS,
            m=20,
        )
    with pytest.raises(ValueError, match="edge-level"):
        audit_run(
            tiny_inputs,
            spec("edgerand", 1.0),
            get_method("edgerand").parse_hparams({}),
            method="edgerand",
            bounds=BOUNDS,
            m=20,
        )


def test_canaries_are_wired_within_the_identity_bound_of_every_bounding_the_method_runs():
    bounds = {"in-degree": 9, "out-degree": 6, "degree": 5}
    assert canary_degree_bound(("in-degree",), bounds) == 4  # Algorithm 1 keeps every edge up to ⌊K/2⌋
    assert canary_degree_bound(("out-degree",), bounds) == 6
    assert canary_degree_bound(("degree", "in-degree"), bounds) == 4
    assert canary_degree_bound((), bounds) == 6 and canary_degree_bound(("dp-appr",), bounds) == 6


def test_a_canary_scores_the_log_probability_of_its_own_label():
    logits = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 5.0]])
    scores = canary_scores(logits, torch.tensor([1, 2]), torch.tensor([1, 1]))
    expected = torch.log_softmax(logits, dim=1)[[1, 2], [1, 1]]
    assert torch.allclose(scores, expected) and scores[1] > scores[0]
    with pytest.raises(ValueError, match="do not cover"):
        canary_scores(logits, torch.tensor([3]), torch.tensor([0]))


@pytest.fixture(scope="module")
def csbm_inputs(tmp_path_factory):
    """csbm-homophilous (3000 nodes) with its seed-0 split: big enough for 300 canaries."""
    from nodedp.contract.base import RunInputs
    from nodedp.data import load_graph
    from nodedp.data.registry import build_dataset, make_split
    from nodedp.io import read_json

    folder = tmp_path_factory.mktemp("audit") / "csbm-homophilous"
    build_dataset("csbm-homophilous", folder)
    return RunInputs(
        graph=load_graph(folder),
        split=make_split(folder, seed=0),
        num_classes=read_json(folder / "meta.json")["num_classes"],
    )


CSBM_BOUNDS = {"in-degree": 10, "out-degree": 20, "degree": 20}  # csbm-homophilous's public K and D


def divide_dp_sgd_noise(monkeypatch, divisor: float) -> None:
    """A deliberately broken DP-MLP, made here only: its ledger as before, its noise std divided."""
    import dataclasses

    import nodedp.plans.mlp as mlp_module  # DP-MLP plans its DP-SGD there

    correct = mlp_module.plan_dpsgd

    def broken(**kwargs):
        plan = correct(**kwargs)
        config = plan.privacy_config
        object.__setattr__(
            plan, "privacy_config", lambda: dataclasses.replace(config(), noise_std=config().noise_std / divisor)
        )
        return plan

    monkeypatch.setattr(mlp_module, "plan_dpsgd", broken)


def test_dp_sgd_with_its_noise_divided_by_ten_is_caught_and_the_correct_one_is_not(csbm_inputs, monkeypatch):
    # A linear DP-MLP trained with plain SGD: each canary's own column is moved by its own gradient alone.
    hp = get_method("dp-mlp").parse_hparams(
        {"epochs": 100, "batch_size": 64, "num_layers": 1, "optimizer": "sgd", "lr": 0.5}
    )
    run_spec = RunSpec(dataset="csbm-homophilous", method="dp-mlp", seed=0, target_epsilon=1.0, target_delta=1e-4)

    def audit():
        return audit_run(csbm_inputs, run_spec, hp, method="dp-mlp", bounds=CSBM_BOUNDS, m=300, seed=0)

    correct = audit()
    assert correct.one_run.epsilon <= correct.claimed_epsilon and not correct.violated
    divide_dp_sgd_noise(monkeypatch, 10.0)
    broken = audit()
    assert broken.claimed_epsilon == correct.claimed_epsilon  # the same ledger ...
    assert broken.violated and broken.one_run.epsilon > broken.claimed_epsilon  # ... caught at 95%
    assert broken.auc > 0.9 > correct.auc


def test_a_graph_method_is_audited_with_its_structure_built_on_the_private_graph(tiny_inputs):
    # DP-GCN reads the in-degree bounding: canaries within ⌊K/2⌋, so Algorithm 1 keeps every canary edge.
    # K is the hyperparameters' (the plan's, which the structure must match): BOUNDS, as structure_bounds gives it.
    hp = get_method("dp-gcn").parse_hparams(
        {"epochs": 3, "batch_size": 32, "hidden_dim": 16, "in_degree_bound": BOUNDS["in-degree"]}
    )
    result = audit_run(tiny_inputs, spec("dp-gcn", 4.0), hp, method="dp-gcn", bounds=BOUNDS, m=40, seed=2)
    assert result.canary_degree_bound == BOUNDS["in-degree"] // 2
    assert result.canaries == 40 == len(result.scores) == len(result.inclusion)
    assert sum(result.inclusion) == result.included
    assert 3.9 < result.claimed_epsilon <= 4.0 and result.guarantee == "conditional"
    assert not result.violated


def test_gap_with_the_papers_root_d_noise_is_caught_by_its_nap_release_where_the_own_row_matters(csbm_inputs):
    # D = 1 and R = 20: Δ = √401 against the papers' √1. The reference run claims ε = 1 at the papers' δ (1e-4
    # here); its NAP release, audited white-box, refutes it. The suite's own calibration is not refuted.
    settings = {"out_degree_bound": 1, "row_clip": 20.0, "epochs": 2, "encoder_epochs": 2, "batch_size": 256}
    bounds = {**CSBM_BOUNDS, "out-degree": 1}

    def audit(accounting: str):
        hp = get_method("gap").parse_hparams({**settings, "accounting": accounting})
        name = "gap@paper" if accounting == "paper" else "gap"
        run_spec = RunSpec(dataset="csbm-homophilous", method=name, seed=0, target_epsilon=1.0, target_delta=1e-4)
        return audit_run(csbm_inputs, run_spec, hp, method="gap", bounds=bounds, m=100, seed=0)

    paper = audit("paper")
    release = paper.releases.get("nap")
    assert paper.accounting == "paper" and release is not None and release.target == "nap-release"
    assert release.claimed_epsilon == 1.0 and release.ledger_epsilon > 10  # the ledger knows: actual ε > 10
    assert release.bound == "runs" and release.violated and release.lower_bound > 1.0
    suite = audit("suite").releases.get("nap")
    assert suite is not None and not suite.violated and suite.lower_bound <= suite.claimed_epsilon


def test_dpar_claiming_q_times_its_sample_epsilon_is_caught_by_its_dp_sgd_release(csbm_inputs):
    # DPAR's Features in reference mode: DP-SGD sized for ε/q' on the q' = 9% node sample, the run claiming ε = 1
    # at the paper's δ (1/⌈q'·train⌉ ≈ 5e-3, where every one-run bound is 0); its DP-SGD release, audited over
    # independent simulated runs, refutes the claim. The suite's calibration of the same method is not refuted.
    def audit(accounting: str):
        hp = get_method("dpar-features").parse_hparams({"accounting": accounting, "epochs": 20})
        name = "dpar-features@paper" if accounting == "paper" else "dpar-features"
        run_spec = RunSpec(dataset="csbm-homophilous", method=name, seed=0, target_epsilon=1.0, target_delta=1e-4)
        return audit_run(
            csbm_inputs,
            run_spec,
            hp,
            method="dpar-features",
            bounds=CSBM_BOUNDS,
            m=100,
            seed=0,
            dataset="csbm-homophilous",
        )

    paper = audit("paper")
    release = paper.releases.get("dpsgd")
    assert release is not None and release.bound == "runs" and release.target == "dpsgd-release"
    assert release.claimed_epsilon == 1.0 and release.delta > 1e-3 and release.ledger_epsilon > 10
    assert release.violated and release.lower_bound == release.threshold.epsilon > 1.0
    assert "nap" not in paper.releases and paper.as_dict()["releases"]["dpsgd"]["bound"] == "runs"
    assert paper.as_dict()["releases"]["dpsgd"]["label"] == "DP-SGD release"
    suite = audit("suite").releases.get("dpsgd")
    assert suite is not None and not suite.violated and suite.lower_bound <= suite.claimed_epsilon


@pytest.mark.parametrize("method", ["gap", "dp-gcn"])
def test_a_graph_method_with_its_noise_divided_by_ten_is_caught_at_epsilon_1_and_the_correct_one_is_not(
    csbm_inputs, method
):
    # GAP executing its NAP at a tenth of the noise, DP-GCN its DP-SGD (benchmarks/audit_graph_methods.py makes
    # them), ledgers unchanged; the default hyperparameters and canaries, ε = 1 at δ = 1e-4. The release audit
    # draws with what the run executed (its noise trace), so the broken run is audited as it ran.
    from tests._benchmarks import load_benchmark

    release, breaks = load_benchmark("audit_graph_methods").BROKEN[method]
    hp = get_method(method).parse_hparams({})
    run_spec = RunSpec(dataset="csbm-homophilous", method=method, seed=0, target_epsilon=1.0, target_delta=1e-4)

    def audit():
        return audit_run(csbm_inputs, run_spec, hp, method=method, bounds=CSBM_BOUNDS, seed=0)

    correct = audit()
    ok = correct.releases[release]
    assert not correct.violated and not ok.violated and ok.lower_bound <= ok.claimed_epsilon
    with breaks(10.0):
        broken = audit()
    caught = broken.releases[release]
    assert broken.claimed_epsilon == correct.claimed_epsilon and caught.claimed_epsilon == ok.claimed_epsilon
    assert caught.executed["noise_std"] == pytest.approx(ok.executed["noise_std"] / 10)
    assert caught.bound == "runs" and caught.violated and caught.lower_bound > 1.0  # ε̂ > the claimed ε = 1, at 95%
