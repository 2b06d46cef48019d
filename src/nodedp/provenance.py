"""Version stamps for every output: Snakemake does not notice edits to an imported package."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from nodedp import __version__


@functools.cache
def provenance() -> dict[str, str | bool | None]:
    """The package version and, when running from a git checkout, its commit and dirtiness."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"nodedp": __version__, "git_commit": commit, "git_dirty": bool(status) if commit else None}
