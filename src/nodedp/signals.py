"""A SIGTERM that stops Snakemake gracefully at any moment, also while it finishes a job.

Snakemake's scheduler (9.x) handles SIGTERM by taking its own scheduler lock in the signal handler, on the main
thread. When the signal lands while the main thread holds that lock (it does while it records a finished job), the
handler waits for a lock its own thread holds and Snakemake hangs for good. ``defer_to_thread`` wraps the handler
so that it runs in a helper thread, which takes the lock once the main thread lets go. The Snakefile's ``onstart``
installs it. Torch-free.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["defer_to_thread"]

_DEFERRED = "__nodedp_deferred__"


def defer_to_thread(signum: int = signal.SIGTERM) -> bool:
    """Run the handler installed for ``signum`` in a new daemon thread when the signal arrives, never inside the
    interrupted frame. Returns whether a handler was wrapped (False for the default or ignore disposition, or a
    handler wrapped already). Call it from the main thread."""
    handler = signal.getsignal(signum)
    if not callable(handler) or getattr(handler, _DEFERRED, False):
        return False
    original: Callable[[int, FrameType | None], Any] = handler

    def deferred(sig: int, frame: FrameType | None) -> None:
        threading.Thread(target=original, args=(sig, None), name=f"signal-{sig}", daemon=True).start()

    setattr(deferred, _DEFERRED, True)
    signal.signal(signum, deferred)
    return True
