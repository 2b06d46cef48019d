"""The workspace of a tiny study, run once for every workflow test that reads it."""

from __future__ import annotations

import pytest

from tests.workflow._snakemake import TINY, snakemake, write_config


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory):
    """A workspace that has run the TINY study (`snakemake demo`): (its folder, its config)."""
    workdir = tmp_path_factory.mktemp("tiny-study")
    config = write_config(workdir, TINY)
    result = snakemake(workdir, "demo", config=config)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, config
