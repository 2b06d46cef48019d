"""nodedp.signals: a SIGTERM handler that takes a lock the interrupted thread holds must not hang."""

from __future__ import annotations

import signal
import threading

import pytest

from nodedp.signals import defer_to_thread


@pytest.fixture
def restore_sigterm():
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def _locking_handler(lock: threading.Lock, outcome: list[str]):
    """A handler shaped like Snakemake's: it takes a lock the main thread may hold. It gives up after two seconds
    (recording 'blocked') where the plain handler would wait for ever."""

    def handler(signum, frame):
        if lock.acquire(timeout=2):
            outcome.append(threading.current_thread().name)
            lock.release()
        else:
            outcome.append("blocked")

    return handler


def test_the_plain_handler_blocks_on_a_lock_the_main_thread_holds(restore_sigterm):
    # What the wrapper is for: without it the handler runs inside the main thread's critical section.
    lock, outcome = threading.Lock(), []
    signal.signal(signal.SIGTERM, _locking_handler(lock, outcome))
    with lock:
        signal.raise_signal(signal.SIGTERM)
    assert outcome == ["blocked"]


def test_the_deferred_handler_runs_once_the_main_thread_lets_go(restore_sigterm):
    lock, outcome = threading.Lock(), []
    signal.signal(signal.SIGTERM, _locking_handler(lock, outcome))
    assert defer_to_thread(signal.SIGTERM)
    with lock:
        signal.raise_signal(signal.SIGTERM)
        assert outcome == []  # the main thread went on; the handler waits for the lock
    for thread in threading.enumerate():
        if thread.name == f"signal-{int(signal.SIGTERM)}":
            thread.join(timeout=5)
    assert outcome == [f"signal-{int(signal.SIGTERM)}"]


def test_it_wraps_once_and_leaves_the_default_disposition_alone(restore_sigterm):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert not defer_to_thread(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    calls = []
    signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    assert defer_to_thread(signal.SIGTERM)
    wrapped = signal.getsignal(signal.SIGTERM)
    assert not defer_to_thread(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is wrapped
    signal.raise_signal(signal.SIGTERM)
    for thread in threading.enumerate():
        if thread.name.startswith("signal-"):
            thread.join(timeout=5)
    assert calls == [signal.SIGTERM]  # run once: the wrapper did not wrap itself


def test_snakemakes_scheduler_still_takes_its_lock_in_its_sigterm_handler():
    # The hang this module avoids, read off the installed Snakemake: if a release stops taking the lock in the
    # handler, the wrapper is harmless but may go (and this test says so).
    import inspect

    from snakemake.scheduling.job_scheduler import JobScheduler

    source = inspect.getsource(JobScheduler.exit_gracefully)
    assert "self._lock" in source
