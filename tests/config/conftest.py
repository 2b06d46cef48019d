from __future__ import annotations

import pytest
import yaml

from tests.config._grids import ROOT


@pytest.fixture()
def config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())
