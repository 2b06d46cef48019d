"""nodedp.grid: the workflow's plan of a grid (cells, targets, audits, what a redraw or report draws)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from nodedp import grid

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "src" / "nodedp" / "config" / "config.schema.yaml"

GRID = {
    "studies": {
        "demo": {
            "datasets": ["csbm-tiny"],
            "methods": ["mlp", "dp-mlp", "dp-mlp-wide"],
            "epsilons": [1, 8],
            "seeds": [0, 1],
            "sweeps": ["hidden_dim"],
            "audit": {"methods": ["dp-mlp"], "epsilons": [8], "canaries": 40},
        },
        "later": {"datasets": ["csbm-tiny", "csbm-homophilous"], "methods": ["mlp"], "epsilons": [2], "seeds": [3]},
    },
    "methods": {"dp-mlp": {"batch_size": 32}, "dp-mlp-wide": {"base": "dp-mlp", "hidden_dim": 96}},
}


def resolved(config: dict) -> dict:
    """``config`` with the schema's defaults filled in, as the workflow reads it."""
    from snakemake.utils import validate

    config = copy.deepcopy(config)
    validate(config, str(SCHEMA))
    return config


@pytest.fixture
def config() -> dict:
    return resolved(GRID)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty working directory (the workflow's paths are relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def touch(*paths: str) -> None:
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("x")


def test_private_methods_run_at_every_epsilon_and_the_others_at_infinity(config):
    cells = list(grid.study_cells(config, "demo"))
    assert len(cells) == (2 * 2 + 1) * 2  # dp-mlp and its variant at ε = 1, 8; mlp at ∞; two seeds
    assert ("csbm-tiny", "mlp", "inf", 1) in cells and ("csbm-tiny", "dp-mlp-wide", "8", 0) in cells
    assert {eps for _, m, eps, _ in cells if m == "mlp"} == {"inf"}
    assert grid.run_targets(config, "later", "csbm-homophilous") == [
        "results/runs/csbm-homophilous/mlp/eps~inf/seed~3/metrics.json"
    ]
    assert len(grid.run_targets(config, "later")) == 2


def test_figures_tables_and_index_of_a_study(config):
    assert grid.study_figures(config, "demo") == ["accuracy_vs_epsilon", "frontier", "sweep-hidden_dim"]
    assert grid.study_figures(config, "later") == ["accuracy_vs_epsilon"]  # no private method: no frontier
    drawn = grid.study_drawn(config, "later")
    assert "paper/later/tables/claims.tex" in drawn and "paper/later/report/ledgers.html" in drawn
    targets = grid.paper_targets(config, "demo", "run")
    assert targets[-1] == "paper/demo/index.md" and "paper/demo/figures/audit.png" in targets
    listed = grid.study_outputs(config, "demo", "run")
    assert "paper/demo/figures/frontier.caption.txt" in listed and "paper/demo/index.md" not in listed
    with pytest.raises(ValueError, match="grid.yaml has no study 'nope'"):
        grid.study_drawn(config, "nope", config_name="grid.yaml")


def test_data_targets_cut_every_seed_in_both_settings(config):
    targets = grid.data_targets(config)
    assert len(targets) == 2 * 2 * 3 + 2  # datasets × settings × seeds {0, 1, 3}, and each stability report
    assert "results/splits/csbm-homophilous/inductive/seed~3.pt" in targets
    assert targets[-2:] == [f"resources/graphs/{d}/stability.json" for d in ("csbm-homophilous", "csbm-tiny")]
    assert grid.split_path("csbm-tiny", 2) == f"results/splits/csbm-tiny/{grid.dataset_setting('csbm-tiny')}/seed~2.pt"


def test_audits_and_their_cells(config):
    assert set(grid.audits(config)) == {"demo"}
    # the study's datasets, its first seed (the audit block's defaults), the methods and ε it names
    assert grid.audit_cell_paths(config, "demo") == ["results/audit/csbm-tiny/dp-mlp/eps~8/seed~0/canaries~40.json"]
    assert grid.all_audit_targets(config) == grid.audit_targets("demo")
    with pytest.raises(ValueError, match="no `audit:` block in my.yaml"):
        grid.audit_cell_paths(config, "later", config_name="my.yaml")


def test_a_study_shows_its_audit_where_the_mode_allows_it(config, workspace):
    outputs = [*grid.audit_targets("demo"), "paper/demo/report/audit.html"]
    assert grid.study_audit_outputs(config, "demo", "run") == outputs  # a run audits first
    assert grid.study_audit_outputs(config, "later", "run") == []
    assert grid.study_audit_outputs(config, "demo", "redraw") == []  # a redraw never audits
    assert grid.study_audit_outputs(config, "demo", "report") == []  # a report shows only what is drawn
    touch(*grid.audit_cell_paths(config, "demo"))
    assert grid.study_audit_outputs(config, "demo", "redraw") == outputs
    assert grid.study_audit_outputs(config, "demo", "report") == []
    touch(*outputs)
    assert grid.study_audit_outputs(config, "demo", "report") == outputs
    with pytest.raises(ValueError, match="mode 'dry'"):
        grid.study_audit_outputs(config, "demo", "dry")


def test_a_redraw_draws_complete_studies_and_says_what_it_leaves_out(config, workspace):
    targets, notes = grid.redraw_targets(config, mode="redraw")
    assert targets == [grid.ABOUT_PAGE]
    assert "not redrawing study demo: 10 of its 10 runs have not run" in notes[0]
    assert notes[-1] == "no study of config.yaml to redraw has all its runs: nothing to redraw"
    touch(*grid.run_targets(config, "demo"), *grid.run_targets(config, "later")[:1])
    assert grid.complete_studies(config) == ["demo"]
    targets, notes = grid.redraw_targets(config, mode="redraw")
    assert targets == [*grid.paper_targets(config, "demo", "redraw"), grid.ABOUT_PAGE]
    assert not any(t.startswith("paper/demo/tables/audit") for t in targets)  # its audit has not run
    assert notes == [
        "not redrawing study later: 1 of its 2 runs have not run (`snakemake paper/later/index.md` trains them)"
    ]
    targets, notes = grid.redraw_targets(config, mode="redraw", only=["later"])
    assert targets == [grid.ABOUT_PAGE] and len(notes) == 2


def test_paper_tables_are_drawn_once_all_their_studies_have_run(workspace):
    config = resolved({**GRID, "studies": {**GRID["studies"], "dpar-gap-setting": GRID["studies"]["later"]}})
    assert grid.configured_paper_tables(config) == ["dpar-t1"]
    assert grid.paper_table_studies(config, "dpar-t1") == ["dpar-gap-setting"]
    assert {"paper/tables/dpar-t1.html", "paper/main.tex", grid.ABOUT_PAGE} <= set(grid.all_targets(config))
    targets, notes = grid.redraw_targets(config, mode="redraw")
    assert "paper/main.tex" not in targets
    assert "not redrawing paper/tables/dpar-t1: needs the runs of ['dpar-gap-setting']" in notes
    touch(*grid.run_targets(config, "dpar-gap-setting"))
    targets, _ = grid.redraw_targets(config, mode="redraw")
    assert [*grid.paper_tables_targets(["dpar-t1"]), "paper/main.tex"] == targets[-5:-1]
    assert "paper/main.tex" not in grid.all_targets(resolved(GRID))


def test_only_studies_names_a_study_the_grid_lacks(config):
    assert grid.only_studies(config, "") == []
    assert grid.only_studies(config, "later,demo") == ["later", "demo"]
    with pytest.raises(ValueError, match=r"g.yaml has no study 'x'; studies: \['demo', 'later'\]"):
        grid.only_studies(config, "demo,x", config_name="g.yaml")


def test_a_report_leaves_out_a_study_not_wholly_drawn(config, workspace):
    demo = grid.paper_targets(config, "demo", "report")
    touch(*demo, grid.ABOUT_PAGE)
    kept, notes = grid.reportable(config, [*demo, grid.ABOUT_PAGE])
    assert notes == ["the report leaves out demo: not drawn yet (`make paper` draws it once its runs have finished)"]
    assert kept == [grid.ABOUT_PAGE]  # its figures' captions are missing
    touch(*(f"paper/demo/figures/{f}.caption.txt" for f in grid.study_figures(config, "demo")))
    assert grid.reportable(config, [*demo, grid.ABOUT_PAGE]) == ([*demo, grid.ABOUT_PAGE], [])


def test_the_about_page_is_redrawn_only_for_another_grid(config, workspace):
    assert grid.draw_about_page(config, config_name="a.yaml")
    page = Path(grid.ABOUT_PAGE).read_text(encoding="utf-8")
    assert "csbm-tiny" in page and "a.yaml" in page
    assert not grid.draw_about_page(config, config_name="a.yaml")
    other = resolved({**GRID, "studies": {"later": GRID["studies"]["later"]}})
    assert grid.draw_about_page(other, config_name="b.yaml")


def test_structure_inputs_of_a_cell(config):
    methods = ["gap", "dpar-em0", "dpar-em0-lr", "dpar-k3"]
    dpar = resolved(
        {
            "studies": {"s": {"datasets": ["csbm-tiny"], "methods": methods, "epsilons": [4], "seeds": [0]}},
            "methods": {
                "gap": {"batch_size": 32},
                "dpar-em0-lr": {"base": "dpar-em0", "lr": 0.05},  # training only: shares the artifact
                "dpar-k3": {"base": "dpar-em0", "k": 3},  # a DP-APPR setting: an artifact of its own
            },
        }
    )
    keys = grid.dp_appr_keys(dpar)
    assert len(keys) == 2 and sorted(keys.values()) == ["dpar-em0", "dpar-k3"]
    key = grid.dp_appr_key(dpar, "dpar-em0-lr")[0]
    assert key == grid.dp_appr_key(dpar, "dpar-em0")[0] and key.startswith("em0-")
    setting = grid.dataset_setting("csbm-tiny")
    kinds = grid.structure_kinds(dpar, "csbm-tiny", "dpar-em0")
    assert kinds == (("dp-appr", None),)
    assert grid.cell_structure("csbm-tiny", 0, "4", kinds, key) == [
        f"results/structure/csbm-tiny/{setting}/seed~0/dp-appr/{key}/eps~4.pt"
    ]
    ((kind, bound),) = grid.structure_kinds(dpar, "csbm-tiny", "gap")
    assert kind == "out-degree" and isinstance(bound, int) and bound > 0
    assert grid.cell_structure("csbm-tiny", 1, "4", ((kind, bound),), None) == [
        f"results/structure/csbm-tiny/{setting}/seed~1/out-degree~{bound}.pt"
    ]
    assert grid.structure_kinds(config, "csbm-tiny", "mlp") == ()


def test_params_of_jobs(config):
    assert json.loads(grid.hparams_json(config, "dp-mlp-wide"))["hidden_dim"] == 96
    assert json.loads(grid.hparams_json(config, "dp-mlp"))["batch_size"] == 32
    limits = json.loads(str(grid.SizeLimits(config, "csbm-tiny", config_name="g.yaml")))
    assert limits["config"] == "g.yaml" and limits["dataset"] == "csbm-tiny"
    # the largest batch any cell on the dataset draws from its training nodes, and the method that draws it
    assert limits["batch"] == {"field": "methods.dp-mlp.batch_size", "method": "dp-mlp", "size": 32, "study": "demo"}
    assert limits["node"]["method"] == "dp-mlp" and limits["edge"] is None
    assert grid.figure_kind_option("frontier") == "--kind frontier"
    assert grid.figure_kind_option("sweep-hidden_dim") == "--kind sweep --parameter hidden_dim"


def test_a_report_caption_is_escaped_for_restructuredtext(tmp_path):
    path = tmp_path / "f.caption.txt"
    assert grid.report_caption(path) == ""
    path.write_text("ε *marked* cells\n  [95%] `a|b`")
    assert grid.report_caption(path) == r"ε \*marked\* cells \[95%\] \`a\|b\`"


def test_a_study_draws_the_regime_of_another_study_once_both_have_run(workspace):
    studies = {**GRID["studies"], "headline": {**GRID["studies"]["later"], "regime": "demo"}}
    config = resolved({**GRID, "studies": studies})
    assert grid.study_figures(config, "headline")[-1] == "regime"
    assert "paper/headline/tables/regime.md" in grid.study_drawn(config, "headline")
    assert "regime" not in grid.study_figures(config, "demo")
    touch(*grid.run_targets(config, "headline"))  # its own runs alone: the regime's are missing
    assert "headline" not in grid.complete_studies(config)
    _, notes = grid.redraw_targets(config, mode="redraw", only=["headline"])
    assert "not redrawing study headline: 10 of its 12 runs have not run" in notes[0]
    touch(*grid.run_targets(config, "demo"))
    assert {"demo", "headline"} <= set(grid.complete_studies(config))


def test_epsilons_that_agree_to_six_digits_train_in_two_folders_at_their_own_epsilon():
    config = resolved({**GRID, "studies": {"fine": {**GRID["studies"]["later"], "methods": ["dp-mlp"]}}})
    config["studies"]["fine"]["epsilons"] = [1.2345678, 1.2345679]
    targets = grid.run_targets(config, "fine", "csbm-tiny")
    assert targets == [f"results/runs/csbm-tiny/dp-mlp/eps~{e}/seed~3/metrics.json" for e in ("1.2345678", "1.2345679")]
