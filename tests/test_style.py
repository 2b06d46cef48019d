"""Module docstrings summarise: proofs and design notes live in docs/design/, not at the top of a module."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "nodedp"
MAX_LINES = 15


def test_every_module_docstring_is_at_most_15_lines():
    long = {}
    for path in sorted(SRC.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is not None and doc.count("\n") + 1 > MAX_LINES:
            long[str(path.relative_to(SRC))] = doc.count("\n") + 1
    assert not long, f"module docstrings over {MAX_LINES} lines (move the detail to docs/design/): {long}"


def test_the_walk_sees_the_package():
    assert len(list(SRC.rglob("*.py"))) > 50
