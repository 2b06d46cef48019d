"""Running the project's Snakefile from tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def snakemake(workdir: Path, *args: str, config: Path | None = None, timeout: int = 600):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), "--cores", "2"]
    cmd += list(args)
    if config is not None:  # last: options with several values would swallow a target after them
        cmd += ["--configfile", str(config)]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=timeout)


def write_config(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
