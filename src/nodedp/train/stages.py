"""Where a run's time and memory go: training, evaluation and everything else ("structure").

``benchmarks/scaling.py`` installs a ``StageRecorder``; the training loop and the evaluator mark their work with
``stage(...)``, which does nothing without a recorder. Design: docs/design/engine.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["STRUCTURE", "StageRecorder", "StageTiming", "peak_rss_mib", "reset_peak_rss", "rss_mib", "stage"]

STRUCTURE = "structure"
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Reset this process's resident high-water mark (Linux); False where that is not possible."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def _status_mib(field: str) -> float | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def rss_mib() -> float | None:
    """This process's resident memory now, in MiB (None where /proc is missing)."""
    return _status_mib("VmRSS:")


def peak_rss_mib() -> float:
    """This process's resident high-water mark in MiB (since the last reset, where resets work)."""
    peak = _status_mib("VmHWM:")
    if peak is not None:
        return peak
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


@dataclass(frozen=True)
class StageTiming:
    stage: str
    seconds: float
    peak_mib: float  # the process's resident peak during the stage
    start_mib: float | None  # its resident memory when the stage began: peak - start is what the stage added
    gpu_peak_mib: float | None


class StageRecorder:
    """Records consecutive segments of a run: each ``stage(name)`` block, and the gaps between them as
    ``STRUCTURE``. Use as a context manager around the run; ``timings`` holds the segments in order."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.timings: list[StageTiming] = []
        self._current: str | None = None
        self._start = 0.0
        self._start_mib: float | None = None

    def _cuda(self) -> bool:
        return self.device.type == "cuda" and torch.cuda.is_available()

    def _open(self, name: str) -> None:
        if self._cuda():
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        reset_peak_rss()
        self._start_mib = rss_mib()
        self._current, self._start = name, time.perf_counter()

    def _close(self) -> None:
        name = self._current
        if name is None:
            raise RuntimeError("no stage is open")
        if self._cuda():
            torch.cuda.synchronize(self.device)
        seconds = time.perf_counter() - self._start
        gpu = torch.cuda.max_memory_allocated(self.device) / 2**20 if self._cuda() else None
        self.timings.append(StageTiming(name, seconds, peak_rss_mib(), self._start_mib, gpu))
        self._current = None

    def switch(self, name: str) -> None:
        self._close()
        self._open(name)

    def __enter__(self) -> StageRecorder:
        global _RECORDER
        if _RECORDER is not None:
            raise RuntimeError("a StageRecorder is already recording")
        _RECORDER = self
        self._open(STRUCTURE)
        return self

    def __exit__(self, *exc: object) -> None:
        global _RECORDER
        self._close()
        _RECORDER = None

    def totals(self) -> dict[str, StageTiming]:
        """Per stage: the summed seconds and the largest peaks of its segments."""
        out: dict[str, StageTiming] = {}
        for t in self.timings:
            prev = out.get(t.stage)
            if prev is None:
                out[t.stage] = t
                continue
            gpu = None if t.gpu_peak_mib is None else max(t.gpu_peak_mib, prev.gpu_peak_mib or 0.0)
            starts = [m for m in (prev.start_mib, t.start_mib) if m is not None]
            out[t.stage] = StageTiming(
                t.stage, prev.seconds + t.seconds, max(prev.peak_mib, t.peak_mib), min(starts) if starts else None, gpu
            )
        return out


_RECORDER: StageRecorder | None = None


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Mark a block as stage ``name`` for an installed recorder (nested marks count as the outer stage)."""
    recorder = _RECORDER
    if recorder is None or recorder._current != STRUCTURE:
        yield
        return
    recorder.switch(name)
    try:
        yield
    finally:
        recorder.switch(STRUCTURE)
