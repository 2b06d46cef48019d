"""envs/*.yaml (for `--sdm conda`) must list what pyproject.toml requires."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]
# conda-forge names that differ from PyPI's
CONDA_NAMES = {"torch": "pytorch"}


def names(requirements) -> set[str]:
    return {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def test_conda_env_matches_pyproject_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {CONDA_NAMES.get(n, n) for n in names(project["dependencies"])}
    env = yaml.safe_load((ROOT / "envs/nodedp.yaml").read_text())
    listed: set[str] = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            listed |= names(dep.get("pip", []))
        else:
            listed |= names([dep])
    assert wanted <= listed, f"missing from envs/nodedp.yaml: {sorted(wanted - listed)}"
