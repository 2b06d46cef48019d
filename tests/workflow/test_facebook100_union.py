"""Facebook100 unions through the workflow: declared in a grid (named schools, or every school a mirror serves),
downloaded by the local rule from a loopback mirror, preprocessed as ProGAP's FB-100, trained, tabulated with
their schools named, and drawn in the regime figure."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.data.conftest import SHARED_DATASETS, serve_directory
from tests.workflow._snakemake import snakemake, write_config

pytestmark = [pytest.mark.workflow, pytest.mark.shared]

FB_PATH = "github.com/sisaman/pyg-datasets/raw/main/datasets/facebook100"
FAST = {"dp-mlp": {"epochs": 2, "batch_size": 64}, "gap": {"epochs": 2, "encoder_epochs": 2, "batch_size": 64}}


def test_unions_train_and_their_tables_name_the_schools(tmp_path):
    if not (SHARED_DATASETS / FB_PATH).is_dir():
        pytest.skip("needs ../shared beside the checkout (datasets mirror)")
    # A mirror that serves two schools only: `served` takes those two, and leaves the other 98 out.
    root = tmp_path / "mirror"
    (root / FB_PATH).mkdir(parents=True)
    for school in ("Caltech36", "Reed98"):
        shutil.copy(SHARED_DATASETS / FB_PATH / f"{school}.mat", root / FB_PATH / f"{school}.mat")
    work = tmp_path / "work"
    work.mkdir()
    with serve_directory(root, log_path=tmp_path / "mirror.log") as mirror:
        config = {
            "datasets": {
                "fb-caltech": {"facebook100": ["Caltech36"]},
                "fb-served": {"facebook100": "served"},
            },
            "studies": {
                "demo": {
                    "datasets": ["fb-caltech", "fb-served"],
                    "methods": ["dp-mlp", "gap"],
                    "epsilons": [8],
                    "seeds": [0, 1],
                    "regime": True,
                }
            },
            "download": {"mirror": mirror},
            "methods": FAST,
        }
        result = snakemake(work, "demo", config=write_config(tmp_path, config), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    served = json.loads((work / "resources/graphs/fb-served/meta.json").read_text())
    assert served["source"]["schools"] == ["Caltech36", "Reed98"] and served["num_classes"] == 6
    assert served["source"]["preprocessing"]["protocol"] == "gap-fb100-partial"
    table = (work / "paper/demo/tables/accuracy.md").read_text()
    assert "fb-served: a union of 2 of the 100 Facebook100 schools, not ProGAP's FB-100" in table
    assert "Caltech36, Reed98." in table and "fb-caltech: a union of 1 of the 100" in table
    assert "fb-served: a union of 2" in (work / "paper/demo/tables/accuracy.tex").read_text()
    regime = (work / "paper/demo/tables/regime.md").read_text()
    assert "gap − dp-mlp (pp)" in regime and "| fb-served |" in regime
    assert (work / "paper/demo/figures/regime.png").stat().st_size > 10_000
    assert "minus dp-mlp's" in (work / "paper/demo/figures/regime.caption.txt").read_text()
