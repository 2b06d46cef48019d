"""`python -m snakemake` with one SIGTERM raised while its scheduler records the first finished training job.

That is the moment a scheduler's SIGTERM hangs Snakemake 9 unless the Snakefile defers its handler
(nodedp.signals): the scheduler holds its lock there, and its handler takes the same lock. Used by
tests/workflow/test_workflow.py with Snakemake's own command-line arguments.
"""

from __future__ import annotations

import signal
import sys

from snakemake.cli import main
from snakemake.scheduling.job_scheduler import JobScheduler

_finish_jobs = JobScheduler._finish_jobs
_sent: list[bool] = []


def _finish_jobs_after_a_sigterm(self):
    if not _sent and any(job.rule.name == "train" for job in self._tofinish):
        _sent.append(True)
        signal.raise_signal(signal.SIGTERM)  # the handler runs here, on this thread, inside the scheduler's lock
    return _finish_jobs(self)


if __name__ == "__main__":
    JobScheduler._finish_jobs = _finish_jobs_after_a_sigterm
    sys.argv[0] = "snakemake"
    main()
