"""Shared fixtures of the analysis tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list:
    """The figures that would have been saved (nothing is written)."""
    import matplotlib.figure

    figures: list = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    return figures
