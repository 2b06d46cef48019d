"""Running the project's Snakefile from tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# A study that trains in about a minute: two private methods (one a variant, for a sweep figure), one in
# reference mode, two non-private ones; a quick audit of two of them.
TINY = {
    "studies": {
        "demo": {
            "datasets": ["csbm-tiny"],
            "methods": ["mlp", "dp-mlp", "mlp-1layer", "dp-mlp@paper", "dp-mlp-wide"],
            "epsilons": [1, 8],
            "seeds": [0, 1],
            "sweeps": ["hidden_dim"],  # dp-mlp (64) against dp-mlp-wide (96): paper/demo/figures/sweep-hidden_dim.png
            "note": "The reader's first line: ε = 8, `quoted` and $(not run).",  # shown atop paper/demo/index.md
            # The demo's quick audit: paper/demo/tables/audit.{md,tex}, paper/demo/figures/audit.png.
            "audit": {"methods": ["dp-mlp", "dp-mlp@paper"], "epsilons": [8], "canaries": 40},
        }
    },
    "methods": {
        "mlp": {"epochs": 3},
        "dp-mlp": {"epochs": 2, "batch_size": 32},
        "mlp-1layer": {"base": "mlp", "num_layers": 1},  # a variant: runs under its own name
        "dp-mlp-wide": {"base": "dp-mlp", "hidden_dim": 96},
    },
}


def snakemake(workdir: Path, *args: str, config: Path | None = None, timeout: int = 600):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
    ]
    cmd += list(args)
    if config is not None:  # last: options with several values would swallow a target after them
        cmd += ["--configfile", str(config)]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=timeout)


def write_config(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
