"""`snakemake --report` on the tiny study: it works on every target, and a reader browsing it in headless
Chromium finds the tables, the figures with their captions, the ledger summary and the configuration page."""

from __future__ import annotations

import base64
import re

import pytest

from tests.workflow._chromium import CHROMIUM, browse, screenshot
from tests.workflow._snakemake import TINY, snakemake, write_config

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def report(tiny_study):
    """The report of the default target, under a config with one more study that has never run."""
    workdir, _ = tiny_study
    grid = {**TINY, "studies": {**TINY["studies"], "later": {**TINY["studies"]["demo"], "epsilons": [2], "sweeps": []}}}
    (workdir / "with-later").mkdir(exist_ok=True)
    config = write_config(workdir / "with-later", grid)
    path = workdir / "report.html"
    result = snakemake(workdir, "--report", str(path), config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    return path, result.stdout + result.stderr


def data_uri_bytes(uri: str) -> bytes:
    head, _, payload = uri.partition(",")
    assert head.endswith(";base64"), head
    return base64.b64decode(payload)


def test_the_report_of_the_default_target_holds_what_exists_and_says_what_it_leaves_out(report):
    path, output = report
    assert "not redrawing study later: 6 of its 10 runs have not run" in output
    text = path.read_text(encoding="utf-8")
    for name in (
        "accuracy.html",
        "claims.html",
        "ledgers.html",
        "accuracy_vs_epsilon.png",
        "frontier.png",
        "sweep-hidden_dim.png",
        "about.html",
    ):
        assert name in text, name


def test_a_study_target_and_the_demo_target_report_too(tiny_study, tmp_path):
    workdir, config = tiny_study
    for target in ("demo", "paper/demo/index.md"):
        out = tmp_path / f"{target.replace('/', '-')}.html"
        result = snakemake(workdir, target, "--report", str(out), config=config)
        assert result.returncode == 0, result.stderr[-4000:]
        assert "frontier.png" in out.read_text(encoding="utf-8")


def shown(page: dict, tag: str) -> list[str]:
    return [item["text"] for item in page["shown"] if item["tag"] == tag]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package `chromium`) to render the report")
def test_a_reader_finds_tables_figures_captions_ledgers_and_configuration_in_chromium(report, tiny_study, tmp_path):
    path, _ = report
    workdir, _ = tiny_study

    menu = browse(path, [], tmp_path)
    links = shown(menu, "a")
    assert {"demo", "Configuration and version"} <= set(links), links

    figures = browse(path, ["demo", "Figures"], tmp_path)
    assert figures["log"] == ["clicked demo", "clicked Figures"]
    cells = shown(figures, "td")
    assert {"accuracy_vs_epsilon", "frontier", "sweep-hidden_dim"} <= set(cells) and "demo" in cells  # labels
    assert {"study", "figure"} <= set(shown(figures, "th"))

    # Viewing a figure shows the very PNG the workflow drew.
    viewed = browse(path, ["demo", "Figures", "row:frontier:0"], tmp_path)
    images = [src for src in shown(viewed, "img") if "filename=frontier.png" in src]
    assert images and data_uri_bytes(images[0]) == (workdir / "paper/demo/figures/frontier.png").read_bytes()

    # Its caption states the confidence level and the seed count of the cells drawn.
    info = browse(path, ["demo", "Figures", "row:accuracy_vs_epsilon:1"], tmp_path)
    caption = " ".join(t for t in shown(info, "p") if "against the privacy budget" in t)
    assert re.search(r"mean over 2 seeds per cell with 95% percentile-bootstrap intervals", caption), caption

    # Tables are tables: the accuracy table's frame holds an HTML table with the study's cells.
    tables = browse(path, ["demo", "Tables", "row:accuracy:0"], tmp_path)
    frames = [src for src in shown(tables, "iframe") if "filename=accuracy.html" in src]
    assert frames, shown(tables, "iframe")
    page = data_uri_bytes(frames[0]).decode("utf-8")
    assert "<table>" in page and "<td>csbm-tiny</td>" in page and "dp-mlp-wide" in page

    # The ledger summary: one row per cell, with what its ledgers spent.
    ledgers = browse(path, ["demo", "Ledgers", "row:ledger summary:0"], tmp_path)
    frames = [src for src in shown(ledgers, "iframe") if "filename=ledgers.html" in src]
    page = data_uri_bytes(frames[0]).decode("utf-8")
    assert "<th>epsilon_max</th>" in page and "<th>guarantee</th>" in page
    rows = re.findall(r"<tr><td>csbm-tiny</td><td>([^<]+)</td><td>([^<]+)</td>", page)
    assert ("dp-mlp", "1") in rows and ("dp-mlp-wide", "8") in rows and ("mlp", "inf") in rows

    # The configuration page: version, commit and the studies as configured.
    about = browse(path, ["Configuration and version", "row:about:0"], tmp_path)
    frames = [src for src in shown(about, "iframe") if "filename=about.html" in src]
    page = data_uri_bytes(frames[0]).decode("utf-8")
    assert "nodedp version" in page and "git commit" in page and "csbm-tiny" in page and "hidden_dim" in page

    # And the page a reader sees with a figure open is not blank.
    from PIL import Image

    shot = screenshot(path, ["demo", "Figures", "row:frontier:0"], tmp_path, tmp_path / "shot.png")
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100
