"""The shape of the source: module docstrings summarise (proofs and design notes live in docs/design/, not at the
top of a module); functions stay short enough to read at once (at most 100 lines, 60 in the analysis stage); the
analysis modules share no private names."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "nodedp"
MAX_LINES = 15
# The longest a function may be, from its `def` line to its last (decorators left out, docstring in): anywhere, and
# in the analysis stage, whose figures and tables are a drawing step each.
MAX_FUNCTION_LINES = 100
MAX_ANALYSIS_FUNCTION_LINES = 60


def test_every_module_docstring_is_at_most_15_lines():
    long = {}
    for path in sorted(SRC.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is not None and doc.count("\n") + 1 > MAX_LINES:
            long[str(path.relative_to(SRC))] = doc.count("\n") + 1
    assert not long, f"module docstrings over {MAX_LINES} lines (move the detail to docs/design/): {long}"


def test_the_walk_sees_the_package():
    assert len(list(SRC.rglob("*.py"))) > 50


def function_lengths(root: Path) -> dict[str, int]:
    """``path::name`` (nested functions as ``outer.inner``) -> lines from its ``def`` to its last line."""
    lengths = {}

    def walk(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                lengths[f"{path}::{name}"] = child.end_lineno - child.lineno + 1
                walk(child, path, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, path, f"{prefix}{child.name}.")
            else:
                walk(child, path, prefix)

    for path in sorted(root.rglob("*.py")):
        walk(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(SRC)), "")
    return lengths


def test_no_function_is_longer_than_100_lines_nor_60_in_the_analysis_stage():
    lengths = function_lengths(SRC)
    long = {f: n for f, n in lengths.items() if n > MAX_FUNCTION_LINES}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into helpers that do one thing): {long}"
    analysis = {f: n for f, n in lengths.items() if f.startswith("analysis/") and n > MAX_ANALYSIS_FUNCTION_LINES}
    assert not analysis, f"analysis functions over {MAX_ANALYSIS_FUNCTION_LINES} lines: {analysis}"


def test_the_length_walk_sees_methods_and_nested_functions():
    lengths = function_lengths(SRC)
    assert "analysis/style.py::method_style" in lengths
    assert "analysis/bootstrap.py::summarize" in lengths
    assert any("." in f.split("::")[1] for f in lengths)  # a method or a nested function


def test_analysis_modules_import_no_private_name_of_another_module():
    private = []
    for path in sorted((SRC / "analysis").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nodedp"):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not private, f"private names shared across modules (make them public where they live): {private}"
